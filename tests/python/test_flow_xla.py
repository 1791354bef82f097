"""`pgo` end to end on jit-compiled Keras hooks (tests/data/xla): the HLO time
lands on tf ops, with the default --min-coverage, and fusions show in the report
and the op graph picture. Each run is its own process, as `bazel run //:pgo` is:
the mixed hook turns XLA auto-clustering on for its whole process."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from pgo_process import run_pgo

from tfpgo.attribution.op_profile import OpProfile
from tfpgo.mlir import annotate

HOOKS = Path(__file__).resolve().parents[1] / "data" / "xla"

# (hook, mode, batch size): the training batch keeps XLA's weight copies, which
# no TF node owns, well under 1% (see tests/data/xla/train_adam.py).
RUNS = {
    "train_adam": ("train", "256"),
    "infer": ("infer", "32"),
    "mixed": ("infer", "32"),
}


@pytest.fixture(scope="module", params=sorted(RUNS))
def run(request, tmp_path_factory):
    name = request.param
    mode, batch = RUNS[name]
    out = tmp_path_factory.mktemp(name) / "out"
    flags = ["--model", str(HOOKS / f"{name}.py"), "--mode", mode, "--batch-size", batch]
    # Two warmup steps: in the first steps XLA's buffers are new, and page faults
    # lengthen its small copies.
    flags += ["--steps", "3", "--warmup", "2", "--output-dir", str(out)]
    done = run_pgo(flags)
    return name, out, done.stderr


def test_hlo_time_lands_on_tf_ops(run):
    _, out, _ = run
    profile = OpProfile.read(out / "op_profile.json")
    assert profile.totals.hlo_ps > 0
    attribution = annotate.read_attribution(out / "attribution.json").with_xla_launch(profile)
    totals = profile.totals
    # Every HLO picosecond lands on a tf node or is listed as XLA-inserted.
    assert totals.hlo_attributed_ps + totals.xla_inserted_ps == totals.hlo_ps
    # What came from a tf node lands on a tf op of the module, all of it: no
    # entry with HLO time is unresolved (decided by names, not by the times).
    missed = {entry.name for entry in attribution.unresolved + attribution.removed}
    assert not [op.name for op in profile.ops if op.xla and op.name in missed]
    annotated = annotate.xla_annotated_ps(profile, attribution)
    assert annotated == sum(origin.total_ps for op in profile.ops for origin in op.xla)
    # The share of the whole step is not asserted here: an instruction with no
    # named neighbour stays XLA-inserted, and a copy whose thread loses its core
    # runs for milliseconds (18% of a step once, under load). test_xla checks
    # the >= 99% share on stored real traces.
    report = (out / "report.md").read_text()
    shown = re.search(r"([\d.]+)% annotated onto tf ops of the module", report)
    assert shown and float(shown[1]) == pytest.approx(100 * annotated / totals.hlo_ps, abs=0.01)


def test_fusions_in_report_and_picture(run):
    _, out, _ = run
    report = (out / "report.md").read_text()
    for section in ("## XLA", "### XLA modules", "### Top XLA fusions"):
        assert section in report
    hlo = json.loads((out / "hlo_profile.json").read_text())
    top = max(
        (i for m in hlo["modules"] for i in m["instructions"] if i["fusion"]),
        key=lambda i: i["total_ps"],
    )
    assert f"| {top['name']} |" in report
    assert top["tf_nodes"][0]["name"] in report
    assert "XLA fusion " in (out / "op_graph.svg").read_text()
    annotated = (out / "model.annotated.mlir").read_text()
    assert "xla_module = " in annotated and "xla_fusion = " in annotated


@pytest.mark.parametrize("run", ["mixed"], indirect=True)
def test_mixed_step_attributes_both_worlds(run):
    _, out, _ = run
    profile = OpProfile.read(out / "op_profile.json")
    kernels = [op for op in profile.ops if not op.xla and op.op_types != ("_XlaRun",)]
    compiled = [op for op in profile.ops if op.xla]
    assert any(op.name == "Unique" for op in kernels)
    modules = {origin.module.split("__")[0] for op in compiled for origin in op.xla}
    assert any(m.startswith("cluster_") for m in modules)  # auto-clustering
    assert any(m.startswith("a_inference_compiled_head") for m in modules)  # jit_compile
    report = (out / "report.md").read_text()
    assert "**XLA launch ops**" in report and "StatefulPartitionedCall" in report
