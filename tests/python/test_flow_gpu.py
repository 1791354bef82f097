"""`pgo --from-trace` on the real H100 traces (tests/data/gpu): a StableHLO module of
the same run annotated with the device time, the report's device section, the op
graph colored by device time, and the errors a mismatched module gets."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from trace_fixtures import device_events, fused_op_names

from tfpgo import cli
from tfpgo.attribution.op_profile import OpProfile
from tfpgo.flow import pgo

DATA = Path(__file__).resolve().parents[1] / "data" / "gpu"


def _pgo(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    status = cli.run_main(pgo.main, args, prog="pgo")
    return status, capsys.readouterr().err


@pytest.fixture(scope="module")
def flows(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    found = {}
    for model in ("mlp", "conv"):
        out = tmp_path_factory.mktemp(model) / "out"
        status = cli.run_main(
            pgo.main,
            [
                "--from-trace",
                str(DATA / f"jax_gpu_{model}.xplane.pb"),
                "--mlir",
                str(DATA / f"jax_gpu_{model}.stablehlo.mlir"),
                "--output-dir",
                str(out),
            ],
            prog="pgo",
        )
        assert status == 0
        found[model] = out
    return found


@pytest.mark.parametrize("model", ["mlp", "conv"])
def test_stablehlo_of_the_run_holds_all_its_kernel_time(flows, model):
    out = flows[model]
    profile = OpProfile.read(out / "op_profile.json")
    annotated = (out / "model.annotated.mlir").read_text()
    # every entry with device time is some op's source, so all of it is reachable
    sources = set(re.findall(r'source = "((?:[^"\\]|\\.)*)"', annotated))
    sources = {json.loads(f'"{name}"') for name in sources}
    reached = sum(op.device_self_ps for op in profile.ops if op.name in sources)
    assert reached / profile.totals.device_attributed_ps >= 0.99
    assert profile.totals.device_kernel_ps <= profile.totals.device_attributed_ps
    assert "device_self = " in annotated and "profiler_hot = 1" in annotated
    graph = json.loads((out / "op_graph.json").read_text())
    hot = next(n for n in graph["nodes"] if n.get("hot_rank") == 1)
    assert hot["profiler_data"]["device_self"] == max(
        (n.get("profiler_data") or {}).get("device_self", 0) for n in graph["nodes"]
    )


def test_a_kernel_op_the_module_lacks_puts_its_time_on_the_ops_it_has(flows, tmp_path):
    """A module without one op of a fused kernel (as if folded away: no op carries its
    name): the kernel's time goes to its other ops, none of it stays unresolved.
    Oracle: the ops XLA fused into the kernel (the trace's HloProto), the kernel's
    durations in the trace's own events, and the unmodified run's attributed device
    time."""
    gone = "jit(step)/transpose(jvp())/broadcast_in_dim"
    text = (DATA / "jax_gpu_mlp.stablehlo.mlir").read_text()
    assert text.count(f'loc("{gone}"') == 2
    module = tmp_path / "folded.stablehlo.mlir"
    module.write_text(text.replace(f'loc("{gone}"', 'loc("folded_away"'))
    out = tmp_path / "out"
    flags = ["--from-trace", str(DATA / "jax_gpu_mlp.xplane.pb"), "--mlir", str(module)]
    assert cli.run_main(pgo.main, [*flags, "--output-dir", str(out)], prog="pgo") == 0
    profile = OpProfile.read(out / "op_profile.json")
    whole = OpProfile.read(flows["mlp"] / "op_profile.json")
    assert whole.by_name()[gone].device_self_ps > 0  # what was unresolved before
    assert gone not in profile.by_name()
    (kernel,) = [k for k in profile.device_kernels if k.name == "loop_exponential_multiply_fusion"]
    fused = fused_op_names(DATA / "jax_gpu_mlp.xplane.pb", kernel.instruction)
    assert kernel.folded == (gone,) and sorted(kernel.ops) == sorted(fused - {gone})
    on_ops = sum(
        origin.total_ps
        for name in kernel.ops
        for origin in profile.by_name()[name].xla
        if origin.instruction == kernel.instruction
    )
    assert (
        on_ops
        == sum(device_events(DATA / "jax_gpu_mlp.xplane.pb")[kernel.name])
        == (kernel.total_ps)
    )
    totals = profile.totals
    assert totals.device_attributed_ps == whole.totals.device_attributed_ps == totals.device_ps
    annotated = (out / "model.annotated.mlir").read_text()
    sources = {json.loads(f'"{n}"') for n in re.findall(r'source = "((?:[^"\\]|\\.)*)"', annotated)}
    assert sum(op.device_self_ps for op in profile.ops if op.name in sources) == (
        totals.device_attributed_ps
    )


def test_report_has_the_device_section(flows):
    report = (flows["conv"] / "report.md").read_text()
    assert "## Where the device time goes" in report
    assert "## Device time" in report and "### Top kernels and the ops they ran for" in report
    # The input copies, listed and on no op: the trace's own MemcpyH2D events.
    copies = device_events(DATA / "jax_gpu_conv.xplane.pb")["MemcpyH2D"]
    assert f"| memcpy_h2d | {len(copies)} | {sum(copies) / 1e6:.3g} µs | 0 ps |" in report
    assert "no_framework_op" in report
    assert "### Device busy and idle per step" in report
    assert "op graph, colored by device time" in report
    mlp = (flows["mlp"] / "report.md").read_text()
    assert "command_buffer_schedule" in mlp and "command_buffer_kernel_name" in mlp
    analysis = json.loads((flows["conv"] / "analysis.json").read_text())
    profile = OpProfile.read(flows["conv"] / "op_profile.json")
    device = analysis["device"]
    assert device["totals"]["op_self_ps"] == profile.totals.device_attributed_ps
    assert sum(row["self_ps"] for row in device["phases"]) == profile.totals.device_attributed_ps
    assert sum(row["self_ps"] for row in device["op_types"]) == profile.totals.device_attributed_ps
    types = {row["op_type"] for row in device["op_types"]}
    assert "conv_general_dilated" in types  # JAX ops typed by their primitive


def test_a_stablehlo_module_cannot_be_lowered_again(tmp_path, capsys):
    status, err = _pgo(
        [
            "--from-trace",
            str(DATA / "jax_gpu_mlp.xplane.pb"),
            "--mlir",
            str(DATA / "jax_gpu_mlp.stablehlo.mlir"),
            "--lower",
            "linalg",
            "--output-dir",
            str(tmp_path / "out"),
        ],
        capsys,
    )
    assert status == 1 and "is StableHLO already; drop --lower" in err
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "out").exists()


def test_the_module_of_another_run_fails_on_device_coverage(tmp_path, capsys):
    status, err = _pgo(
        [
            "--from-trace",
            str(DATA / "jax_gpu_mlp.xplane.pb"),
            "--mlir",
            str(DATA / "jax_gpu_conv.stablehlo.mlir"),
            "--output-dir",
            str(tmp_path / "out"),
        ],
        capsys,
    )
    assert status == 1 and "of the device time resolves to ops of" in err
    assert err.strip().splitlines()[-1].startswith("pgo: error:")
    assert not (tmp_path / "out").exists()


def test_profile_diff_compares_device_time(flows, tmp_path):
    from tfpgo.attribution.op_profile import build_op_profile
    from tfpgo.diff.compare import compare
    from tfpgo.diff.output import write_outputs
    from tfpgo.trace.readers import read_trace

    graph = OpProfile.read(flows["mlp"] / "op_profile.json")
    plain = build_op_profile(read_trace(DATA / "jax_gpu_mlp_nograph.xplane.pb"))
    diff = compare(graph, plain, "graph", "nograph")
    assert diff.device is not None
    assert diff.device.op_self_a_ps == graph.totals.device_attributed_ps
    assert diff.device.op_self_b_ps == plain.totals.device_attributed_ps
    deltas = {d.name: d for d in diff.device.ops}
    matmul = deltas["jit(step)/jvp(dense_2)/dot_general"]  # PDL: 4 µs -> 11 µs a kernel
    assert matmul.self_ps == plain.by_name()[matmul.name].device_self_ps - (
        graph.by_name()[matmul.name].device_self_ps
    )
    assert matmul.self_ps > 0
    markdown = write_outputs(diff, tmp_path)[0].read_text()
    assert "## Device time: ops with the largest change" in markdown
    # Every device event of either run is a kernel that lands on ops (no copies):
    # the device time on ops is the sum of the trace's own device events.
    with_graph, without = (
        sum(map(sum, device_events(DATA / f"jax_gpu_mlp{run}.xplane.pb").values()))
        for run in ("", "_nograph")
    )
    assert (with_graph, without) == (diff.device.op_self_a_ps, diff.device.op_self_b_ps)
    expected = f"{with_graph / 1e6:.3g} µs → {without / 1e9:.3g} ms"  # 964 µs, 1.05 ms
    assert f"- **device time**: {expected} on ops" in markdown
