"""`--lower iree`: the lowered program compiled by IREE, run on the profiled
inputs and compared with TensorFlow, its dispatches profiled with IREE's HAL
profiling and attributed to tf ops (real compiler and runtime, a small model)."""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest
from pgo_process import run_pgo

from tfpgo.errors import UserError
from tfpgo.flow.conservation import check_output
from tfpgo.flow.stages import FlowOptions, run_flow
from tfpgo.iree import executable_sources, output_check
from tfpgo.iree import run as iree_run
from tfpgo.iree.profile_document import BY_EXECUTABLE, BY_PROGRAM, IreeProfile, Site
from tfpgo.iree.program import Workload, check_outputs, profile_program
from tfpgo.iree.run import DispatchTiming
from tfpgo.iree.sites import IN_NESTED_LOOPS, OUTSIDE_LOOPS, SiteOps, compile_sites
from tfpgo.iree.tools import run_tool
from tfpgo.mlir.lowering import write_generic_stablehlo

STEPS = 3


@pytest.fixture(scope="module")
def flow(tmp_path_factory):
    out = tmp_path_factory.mktemp("iree") / "out"
    options = FlowOptions(
        model="cnn", batch_size=4, steps=STEPS, warmup=1, lower=("stablehlo", "linalg", "iree"),
        output_dir=out, formats=("svg",),
    )  # fmt: skip
    run_flow(options)
    return out


def test_the_compiled_program_runs_and_its_dispatch_time_lands_on_tf_ops(flow):
    profile = IreeProfile.read(flow / "iree_profile.json")
    assert (profile.runs, profile.warmup) == (STEPS, 1) and profile.dispatches
    assert all(d.count == STEPS for d in profile.dispatches)
    assert profile.outputs_max_abs <= output_check.ATOL + output_check.RTOL
    unattributed = sum(d.total_ps for d in profile.dispatches if not d.sources)
    assert profile.attributed_ps + unattributed == profile.dispatch_ps  # exact sums
    # Every dispatch is traced to its tf ops, whatever each took.
    assert [d.name for d in profile.dispatches if not d.sources] == []
    assert sum(profile.op_ps.values()) == profile.attributed_ps
    assert {d.found_in for d in profile.dispatches} <= {"compute", "bindings"}
    conv = [d for d in profile.dispatches if "conv_4x16x16x64" in d.name]
    assert conv and conv[0].sources == ("cnn_1/conv_big_1/Relu",)  # fused into the Relu kernel
    assert conv[0].tf_self_ps > 0
    report = (flow / "report.md").read_text()
    assert "## TensorFlow kernels vs IREE dispatches" in report and conv[0].name in report
    assert "### By layer scope" in report and "| cnn_1/conv_big_1 |" in report
    graph = json.loads((flow / "op_graph.iree.json").read_text())
    timed = [n for n in graph["nodes"] if n["profiler_data"]]
    # Each tf op's dispatch time is on its linalg ops once, in parts: per source,
    # the parts sum to its `iree_ps` from iree_profile.json.
    per_source: dict[str, int] = {}
    for node in timed:
        for source, ps in iree_run.source_parts(node["profiler_data"]).items():
            per_source[source] = per_source.get(source, 0) + ps
    unplaced = {entry["source"] for entry in graph["unplaced"]}
    assert per_source == {s: ps for s, ps in profile.op_ps.items() if s not in unplaced}
    # The convolution does the fused kernel's work, and is the one marked hot.
    conv_ops = [n for n in timed if n["profiler_data"]["source"] == "cnn_1/conv_big_1/Relu"]
    hottest = max(conv_ops, key=lambda n: n["profiler_data"]["self"])
    assert hottest["op"] == "linalg.conv_2d_nhwc_hwcf" and hottest["hot"]
    assert (flow / "op_graph.iree.svg").is_file()
    dispatches = (flow / "model.dispatches.mlir").read_text()
    assert 'source = "cnn_1/conv_big_1/Relu"' in dispatches
    assert f"source_iree_self = {profile.op_ps['cnn_1/conv_big_1/Relu']} : i64" in dispatches
    assert "hal.executable" in dispatches


def test_a_tf_op_no_linalg_op_carries_is_unplaced_with_what_became_of_it(flow, tmp_path):
    """IREE's op graph lists the dispatch time of a tf op the linalg level lost
    in `unplaced`, with the linalg level's reason (tfpgo.mlir.lost_ops)."""
    profile = IreeProfile.read(flow / "iree_profile.json")
    ghost = dataclasses.replace(profile, op_ps={**profile.op_ps, "ghost/Neg": 7, "other": 5})
    reason = "folded by canonicalize: into a constant, or into its operand"
    out = tmp_path / "op_graph.iree.json"
    iree_run.write_iree_op_graph(flow / "op_graph.linalg.json", ghost, out, {"ghost/Neg": reason})
    unplaced = json.loads(out.read_text())["unplaced"]
    assert {(e["source"], e["ps"], e["reason"]) for e in unplaced} == {
        ("ghost/Neg", 7, reason),
        ("other", 5, "no op of the linalg module carries it"),
    }


def test_a_tf_op_tensorflow_timed_at_zero_gets_its_dispatch_time_by_name(flow, tmp_path):
    """A transpose Grappler folded into a matmul's flags runs as no kernel of its
    own (0 ps, no record at linalg), but IREE runs it as a dispatch: its time goes
    on the linalg ops that compute and whose location names it, not `unplaced`."""
    graph = json.loads((flow / "op_graph.linalg.json").read_text())
    carried = next(n for n in graph["nodes"] if n["op"] == "linalg.generic" and n["profiler_data"])
    source = carried["profiler_data"]["source"]
    for node in graph["nodes"]:
        if (node.get("profiler_data") or {}).get("source") == source:
            node["profiler_data"], node["name"] = None, source
    untimed = tmp_path / "op_graph.linalg.json"
    untimed.write_text(json.dumps(graph))
    profile = IreeProfile.read(flow / "iree_profile.json")
    out = tmp_path / "op_graph.iree.json"
    iree_run.write_iree_op_graph(untimed, profile, out)
    written = json.loads(out.read_text())
    assert written["unplaced"] == []
    placed = [n for n in written["nodes"] if (n["profiler_data"] or {}).get("source") == source]
    assert placed and all(n["op"].startswith("linalg.") for n in placed)
    assert sum(n["profiler_data"]["self"] for n in placed) == profile.op_ps[source]
    total = sum((n["profiler_data"] or {}).get("self", 0) for n in written["nodes"])
    assert total == sum(profile.op_ps.values())


def test_every_level_of_the_run_conserves_time(flow):
    """The law, from documents other than the one checked (tfpgo.attribution.
    conservation): every op graph, the dispatch sources, every Model Explorer
    file, the CSV, trace and speedscope exports and every graph collapsed by
    plot_graph --depth charge each picosecond once."""
    sums = {s.file: s for s in check_output(flow)}
    assert {"op_graph.json", "op_graph.stablehlo.json", "op_graph.linalg.json",
            "op_graph.iree.json", "model.dispatches.mlir", "model_explorer.json",
            "model_explorer.stablehlo.json", "model_explorer.linalg.json",
            "op_profile.csv", "mlir_graph.json", "trace.json", "speedscope.json",
            "op_graph.linalg.json --depth 2", "op_graph.stablehlo.json --depth 3",
            "op_graph.iree.json --depth 1"} <= set(sums)  # fmt: skip
    assert all(s.holds and s.charged_ps > 0 for s in sums.values())


def test_the_whole_program_is_written_and_compiles(flow, tmp_path):
    """model.stablehlo.mlirbc holds every weight: IREE compiles it to the same program."""
    from iree.compiler.tools.binaries import find_tool

    vmfb = tmp_path / "again.vmfb"
    command = [find_tool("iree-compile"), *iree_run.IREE_FLAGS]
    command += [str(flow / "model.stablehlo.mlirbc"), "-o", str(vmfb)]
    subprocess.run(command, check=True, capture_output=True)
    assert vmfb.stat().st_size > 0 and (flow / "model.iree.vmfb").stat().st_size > 0
    assert "dense_resource<__elided__>" in (flow / "model.linalg.mlir").read_text()


def test_two_runs_of_the_model_build_the_same_bytes(tmp_path):
    """Issue 64: what IREE compiles carries no measured number, so two profiled
    runs of one model (each its own times) build the very same program. Each
    runs in its own process, as `pgo` does: within one, TensorFlow numbers each
    trace's functions anew (`__inference_pruned_182`, then `_365`), and the entry
    function's name is part of the program."""
    outs = [tmp_path / name for name in ("first", "second")]
    for out in outs:
        run_pgo(["--model", "cnn", "--batch-size", "4", "--steps", str(STEPS), "--warmup", "1",
                 "--lower", "iree", "--formats", "svg", "--output-dir", str(out)])  # fmt: skip
    for name in ("model.iree.vmfb", "model.stablehlo.mlirbc"):
        assert (outs[0] / name).read_bytes() == (outs[1] / name).read_bytes(), name


def _carried(ps: int) -> str:
    """A record as tf-annotate-operations-profile carry-in-location=true leaves it."""
    return f'fused<{{profiler_data = {{count = 2 : i64, self = {ps} : i64, source = "square"}}}}>'


RECORDED = """
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.multiply %x, %x : tensor<4xf32> loc(RECORD["square"])
  %1 = stablehlo.add %0, %x : tensor<4xf32> loc(RECORD["square"])
  return %1 : tensor<4xf32>
}
"""


def test_a_program_compiles_to_the_same_bytes_whatever_profile_it_carries(tmp_path):
    """Two profiles of one program: its vmfb, bytecode and executable sources are
    the same bytes, and the dispatch is still the carried op's."""
    x = np.arange(4, dtype=np.float32)
    np.save(tmp_path / "x.npy", x)
    workload = Workload("main", (tmp_path / "x.npy",), (x * x + x,), 1, 0, {"square": 10}, {})
    built = []
    for ps in (1000, 2345):
        directory = tmp_path / str(ps)
        directory.mkdir()
        stablehlo = directory / "program.mlir"  # in generic form, as the flow writes it
        write_generic_stablehlo(RECORDED.replace("RECORD", _carried(ps)), stablehlo)
        program = profile_program(stablehlo, (), directory / "iree", workload, "tiny.vmfb")
        assert set(program.profile.op_ps) == {"square"}
        built.append(program)
    first, second = built
    for attribute in ("vmfb", "bytecode"):
        assert getattr(first, attribute).read_bytes() == getattr(second, attribute).read_bytes()
    sources = [p.vmfb.with_name("executable_sources.mlir").read_text() for p in built]
    assert sources[0] == sources[1] and "profiler_data" not in sources[0]


TINY = """
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.multiply %x, %x : tensor<4xf32> loc("square")
  return %0 : tensor<4xf32>
}
"""


def test_outputs_that_differ_are_one_error_line(tmp_path):
    stablehlo = tmp_path / "tiny.mlir"
    stablehlo.write_text(TINY)
    vmfb, sources = tmp_path / "tiny.vmfb", tmp_path / "tiny.sources.mlir"
    iree_run.compile_module(stablehlo, vmfb, sources, tmp_path / "tiny.mlirbc")
    x = np.arange(4, dtype=np.float32)
    np.save(tmp_path / "x.npy", x)
    outputs = iree_run.run_outputs(vmfb, "main", [tmp_path / "x.npy"], 1, tmp_path)
    assert output_check.compare_outputs("main", outputs, [x * x]) == 0
    with pytest.raises(UserError) as error:
        output_check.compare_outputs("main", outputs, [x * x + 1])
    assert "\n" not in str(error.value)
    assert str(error.value).startswith("iree level: output 0 of main differs from TensorFlow's")
    with pytest.raises(UserError, match="differs from the original program's"):
        output_check.compare_outputs("main", outputs, [x * x + 1], output_check.ORIGINAL_PROGRAM)
    # A difference within 10x what jit_compile's own sums do to this output is
    # float reassociation: accepted; beyond it, refused with both figures.
    assert output_check.compare_outputs("main", outputs, [x * x + 1], reassociation=(0.2,)) == 1
    with pytest.raises(UserError) as beyond:
        output_check.compare_outputs("main", outputs, [x * x + 1], reassociation=(0.05,))
    assert "(max |Δ| 1; jit_compile's own max |Δ| 0.05, shapes (4,) and (4,), tolerance " in str(
        beyond.value
    )
    assert "or 10x jit_compile's)" in str(beyond.value)
    timings = iree_run.profile_dispatches(vmfb, "main", [tmp_path / "x.npy"], 4, tmp_path, 2)
    ((name, timing),) = timings.items()
    assert timing.count == 4 and timing.total_ps > 0  # 6 runs profiled, 2 warm-up runs dropped
    assert timing.invocation_ps == (timing.total_ps,)  # one site, invoked once a run
    parsed = executable_sources.parse_sources(sources)
    assert executable_sources.dispatch_sources(parsed)[name] == (("square",), "compute")


def test_a_program_that_may_differ_from_tensorflow_is_profiled_and_says_why(tmp_path):
    """Outputs that differ from TensorFlow's fail a program, unless the workload
    says why they may (random numbers drawn with other bits): then the profile
    records that reason and the program's own outputs, which variants are held to."""
    stablehlo = tmp_path / "tiny.mlir"
    stablehlo.write_text(TINY)
    x = np.arange(4, dtype=np.float32)
    np.save(tmp_path / "x.npy", x)
    workload = Workload("main", (tmp_path / "x.npy",), (x * x + 1,), 1, 0, {}, {})
    with pytest.raises(UserError, match="differs from TensorFlow's"):
        profile_program(stablehlo, (), tmp_path / "strict", workload, "tiny.vmfb")
    lenient = dataclasses.replace(workload, may_differ="it draws random numbers")
    program = profile_program(stablehlo, (), tmp_path / "lenient", lenient, "tiny.vmfb")
    assert program.profile.outputs_unchecked == "it draws random numbers"
    assert program.profile.outputs_max_abs == 1.0
    np.testing.assert_array_equal(program.outputs[0], x * x)
    held = lenient.held_to(program.outputs)
    assert check_outputs(program.vmfb, held, tmp_path, ()) == 0.0
    # Held to the original program, a variant's mismatch is no longer tolerated.
    off = dataclasses.replace(held, expected=(x * x + 1,))
    with pytest.raises(UserError, match="differs from the original program's"):
        profile_program(stablehlo, (), tmp_path / "variant", off, "tiny.vmfb")


def test_build_profile_splits_and_lists_unattributed_dispatches(tmp_path):
    timings = {
        "d0": DispatchTiming(2, 301),
        "d1": DispatchTiming(2, 100),
        "d2": DispatchTiming(2, 7),
    }
    sources = {"d0": (("a/conv", "a/Relu"), "compute"), "d1": (("a/Relu",), "bindings")}
    profile = iree_run.build_profile(
        "m.vmfb", "main", 2, 1, 0.0, timings, sources, {"a/Relu": 90}, {"a/conv": "a/Relu"}
    )
    by_name = {d.name: d for d in profile.dispatches}
    assert by_name["d0"].sources == ("a/Relu",) and by_name["d0"].tf_self_ps == 45  # 90 / 2
    assert by_name["d2"].sources == () and by_name["d2"].found_in == ""
    assert profile.op_ps == {"a/Relu": 401} and profile.attributed_ps == 401
    assert profile.op_tf_ps == {"a/Relu": 90}
    assert profile.dispatch_ps == 408
    profile.write(tmp_path / "iree_profile.json")
    assert IreeProfile.read(tmp_path / "iree_profile.json") == profile


def test_written_modules_keep_no_frames_of_tfpgo_itself(flow):
    """The call stacks in the locations are the model's: no frame of tfpgo's own flow
    (its package, bazel runfiles paths) in any module written, lowered ones included."""
    import tfpgo

    package = Path(tfpgo.__file__).parent
    owns = {str(package), str(package.resolve()), "pgo.runfiles/tfpgo/tools"}
    for module in sorted(flow.glob("model*.mlir")):
        text = module.read_text()
        assert not [own for own in owns if own in text], module.name
    assert "keras" in (flow / "model.mlir").read_text()  # the model's own frames stay


def test_a_program_iree_cannot_compile_is_one_line_naming_the_op(tmp_path):
    stablehlo = tmp_path / "custom.mlir"
    stablehlo.write_text(
        """
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.custom_call @tfpgo_no_such_target(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
"""
    )
    out = tmp_path / "never.vmfb"
    with pytest.raises(UserError) as error:
        iree_run.compile_module(stablehlo, out, tmp_path / "s.mlir", tmp_path / "b.mlirbc")
    message = str(error.value)
    assert message.startswith("iree level: iree-compile failed: ") and "\n" not in message
    assert "custom_call" in message and not out.exists()


@pytest.mark.parametrize(
    ("level", "module"), [("stablehlo", "stablehlo"), ("linalg", "linalg.explorer")]
)
def test_model_explorer_node_data_of_each_level_matches_its_adapter(flow, level, module):
    """Every key of model_explorer.<level>.json is a node id Model Explorer's own MLIR
    adapter gives the written module, on an op of the same name."""
    import ai_edge_model_explorer_adapter as adapter

    converted = json.loads(
        adapter.ConvertMlirToJson(adapter.VisualizeConfig(), str(flow / f"model.{module}.mlir"))
    )
    labels = {
        (graph["id"], node["id"]): node["label"]
        for collection in converted
        for graph in collection["subgraphs"]
        for node in graph["nodes"]
    }
    graph = json.loads((flow / f"op_graph.{level}.json").read_text())
    ops: dict[str, list[str]] = {}
    for node in sorted(graph["nodes"], key=lambda node: node["id"]):
        ops.setdefault(node["function"], []).append(node["op"])
    document = json.loads((flow / f"model_explorer.{level}.json").read_text())
    keys = [(graph_id, key) for graph_id, data in document.items() for key in data["results"]]
    assert keys
    for graph_id, key in keys:
        assert labels[graph_id, key] == ops[graph_id][int(key)].removeprefix("tf.")


# Two identical blocks: IREE compiles their matmul + tanh into one executable,
# run from two sites. A square first, so neither block is the run's first
# dispatch (which also waits for the runtime's workers to wake).
TWO_BLOCKS = """
func.func @main(%x: tensor<256x512xf32>, %w1: tensor<512x512xf32>, %w2: tensor<512x512xf32>)
    -> tensor<256x512xf32> {
  %s = stablehlo.multiply %x, %x : tensor<256x512xf32> loc("input/Square")
  %0 = stablehlo.dot_general %s, %w1, contracting_dims = [1] x [0]
    : (tensor<256x512xf32>, tensor<512x512xf32>) -> tensor<256x512xf32> loc("block1/MatMul")
  %1 = stablehlo.tanh %0 : tensor<256x512xf32> loc("block1/Tanh")
  %2 = stablehlo.dot_general %1, %w2, contracting_dims = [1] x [0]
    : (tensor<256x512xf32>, tensor<512x512xf32>) -> tensor<256x512xf32> loc("block2/MatMul")
  %3 = stablehlo.tanh %2 : tensor<256x512xf32> loc("block2/Tanh")
  return %3 : tensor<256x512xf32>
}
"""


def test_each_site_of_a_shared_executable_is_charged_to_its_own_ops(tmp_path):
    """The oracle is the program's text: each block's ops run from as many sites as
    the block has matmuls (one), each site once a run; each site is charged
    exactly its own invocations as IREE's events list them, so the second block's
    are not left at zero while the first takes both."""
    stablehlo = tmp_path / "two_blocks.mlir"
    stablehlo.write_text(TWO_BLOCKS)
    vmfb, sources = tmp_path / "m.vmfb", tmp_path / "m.sources.mlir"
    iree_run.compile_module(stablehlo, vmfb, sources, tmp_path / "m.mlirbc")
    sites = compile_sites(stablehlo, iree_run.IREE_FLAGS, tmp_path, 120)
    inputs = [tmp_path / "x.npy", tmp_path / "w1.npy", tmp_path / "w2.npy"]
    np.save(inputs[0], np.ones((256, 512), np.float32))
    for weight in inputs[1:]:
        np.save(weight, np.full((512, 512), 1e-3, np.float32))
    runs = 4
    timings = iree_run.profile_dispatches(vmfb, "main", inputs, runs, tmp_path, 1)
    tf_self = {"input/Square": 10, "block1/MatMul": 100, "block1/Tanh": 20,
               "block2/MatMul": 100, "block2/Tanh": 20}  # fmt: skip
    parsed = executable_sources.parse_sources(sources)
    code = executable_sources.dispatch_sources(parsed)
    profile = iree_run.build_profile(
        "m.vmfb", "main", runs, 1, 0.0, timings, code, tf_self, {}, sites,
    )  # fmt: skip
    (shared,) = [d for d in profile.dispatches if "matmul" in d.name]
    matmuls = {block: TWO_BLOCKS.count(f'loc("{block}/MatMul")') for block in ("block1", "block2")}
    for block, count in matmuls.items():
        own = [site for site in shared.sites if f"{block}/MatMul" in site.sources]
        assert len(own) == count == 1 and own[0].sources == (f"{block}/MatMul", f"{block}/Tanh")
    assert shared.sites_from == BY_PROGRAM and shared.count == runs * len(shared.sites)
    assert sum(site.total_ps for site in shared.sites) == shared.total_ps
    assert shared.tf_self_ps == 240  # the bound: both blocks' TensorFlow time
    # Each site holds exactly its own invocations: read here from IREE's events,
    # one submission a run, the matmul's two invocations in command order.
    listing = run_tool(
        "iree-profile",
        ["dispatch", "--dispatch_events", "--format=jsonl", str(tmp_path / "run.ireeprof")],
        "test",
    )
    runs_of: dict[int, list[tuple[int, int]]] = {}
    for line in listing.splitlines():
        event = json.loads(line)
        if event.get("type") == "host_dispatch_event" and event["key"] == shared.name:
            at = (event["command_index"], event["duration_ns"] * 1000)
            runs_of.setdefault(event["submission_id"], []).append(at)
    measured = [[ps for _, ps in sorted(run)] for _, run in sorted(runs_of.items())][-runs:]
    per_site = tuple(sum(run[i] for run in measured) for i in (0, 1))
    assert tuple(site.total_ps for site in shared.sites) == per_site
    # Two invocations a run, one a site (no ratio of their times: a scheduling
    # spike on a loaded machine lands on one run's site, as measured).
    assert [len(run) for run in measured] == [2] * runs
    assert profile.op_ps["block2/MatMul"] > 0
    assert sum(profile.op_ps.values()) == profile.attributed_ps == profile.dispatch_ps
    # The code names block1's ops; block2's time lands on the same ops through them.
    written = tmp_path / "m.dispatches.mlir"
    executable_sources.write_dispatch_sources(parsed, profile, {}, written, sites)
    text = written.read_text()
    assert 'site_sources = ["block1/MatMul", "block2/MatMul"]' in text
    charged = sum(int(ps) for ps in re.findall(r"[{ ,]iree_self = (\d+) : i64", text))
    assert charged == profile.attributed_ps


def test_sites_that_do_not_match_the_invocations_charge_the_dispatch_as_a_whole():
    """A run invoking a dispatch more often than it has sites (a loop) charges it to
    the ops its code names, as one site; a matching one charges each site."""
    sites: dict[str, tuple[SiteOps, ...]] = {
        "d": (SiteOps(("b1/MatMul",), (("b1/MatMul",),), "compute"),
              SiteOps(("b2/MatMul",), (("b2/MatMul",),), "compute")),
    }  # fmt: skip
    code: dict[str, tuple[tuple[str, ...], str]] = {"d": (("b1/MatMul",), "compute")}
    tf_self = {"b1/MatMul": 40, "b2/MatMul": 60}
    matched = iree_run.build_profile(
        "m", "main", 2, 0, 0.0, {"d": DispatchTiming(4, 70, (30, 40))}, code, tf_self, {}, sites
    )
    (dispatch,) = matched.dispatches
    assert dispatch.sites == (Site(("b1/MatMul",), 30, 40), Site(("b2/MatMul",), 40, 60))
    assert matched.op_ps == {"b1/MatMul": 30, "b2/MatMul": 40} and dispatch.tf_self_ps == 100
    looped = iree_run.build_profile(
        "m", "main", 2, 0, 0.0, {"d": DispatchTiming(6, 90, (30, 30, 30))}, code, tf_self, {}, sites
    )
    (dispatch,) = looped.dispatches
    assert dispatch.sites_from == BY_EXECUTABLE and dispatch.sites == (
        Site(("b1/MatMul",), 90, 40),
    )
    assert looped.op_ps == {"b1/MatMul": 90}


def test_sites_in_a_loop_body_are_charged_each_invocation_in_turn():
    """A dispatch with a site before a loop and two in its body: a run makes
    1 + 3 * 2 invocations, so the loop ran 3 iterations, and each invocation is
    charged to its own site (the body's sites in turn), with the count a run."""

    def site(name: str, loop: int) -> SiteOps:
        return SiteOps((name,), ((name,),), "compute", loop)

    sites: dict[str, tuple[SiteOps, ...]] = {
        "d": (site("pre/MatMul", OUTSIDE_LOOPS), site("w/a", 0), site("w/b", 0))
    }
    code: dict[str, tuple[tuple[str, ...], str]] = {"d": (("pre/MatMul",), "compute")}
    tf_self = {"pre/MatMul": 5, "w/a": 7, "w/b": 9}
    timing = DispatchTiming(7, 99, (1, 10, 20, 11, 21, 12, 24))
    profile = iree_run.build_profile(
        "m", "main", 1, 0, 0.0, {"d": timing}, code, tf_self, {}, sites
    )
    (dispatch,) = profile.dispatches
    assert dispatch.sites_from == BY_PROGRAM
    assert dispatch.sites == (
        Site(("pre/MatMul",), 1, 5, 1),
        Site(("w/a",), 33, 7, 3),
        Site(("w/b",), 65, 9, 3),
    )
    # What cannot be known is not guessed: counts that leave a remainder, and
    # sites of nested loops.
    assert iree_run.invocation_sites(sites["d"], 6) is None
    nested = (site("w/a", IN_NESTED_LOOPS), site("w/b", IN_NESTED_LOOPS))
    assert iree_run.invocation_sites(nested, 8) is None
    assert iree_run.invocation_sites(sites["d"], 3) == (0, 1, 2)


def test_a_profile_written_before_sites_reads_as_one_site_a_dispatch(tmp_path):
    profile = iree_run.build_profile(
        "m",
        "main",
        1,
        0,
        0.0,
        {"d": DispatchTiming(1, 7)},
        {"d": (("a",), "compute")},
        {"a": 3},
        {},
    )
    document = profile.to_json()
    for dispatch in document["dispatches"]:
        del dispatch["sites"], dispatch["sites_from"]
    assert IreeProfile.from_json(document, tmp_path / "old.json") == profile
