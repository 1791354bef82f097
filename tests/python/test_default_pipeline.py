"""MLIR exported with TensorFlow's defaults (`tf-standard-pipeline`: CSE, folding,
canonicalization) against a profile of the same step: every runtime name lands
on the op that absorbed it, or is listed with the reason it has none."""

from pathlib import Path

import pytest

from tfpgo.flow import trace_reader
from tfpgo.mlir import annotate
from tfpgo.models import load_model, profiling

HOOK = Path(__file__).resolve().parents[1] / "data" / "models" / "optimizer_step.py"


@pytest.mark.parametrize(
    ("optimizer", "mode"), [("adam", "train"), ("momentum", "train"), ("", "infer")]
)
def test_default_pipeline_export_attributes_every_name(tmp_path, monkeypatch, optimizer, mode):
    import tensorflow as tf

    monkeypatch.setenv("TFPGO_OPTIMIZER", optimizer)
    case = load_model(str(HOOK), mode, 4)
    run = profiling.profile(case, tmp_path / "profile", steps=3, warmup=1)
    profile = tmp_path / "op_profile.json"
    trace_reader.run(run.logdir, op_profile_out=profile, build_graph=False)
    module = tmp_path / "default.mlir"
    # convert_function's own default pass pipeline: tf-standard-pipeline.
    module.write_text(
        tf.mlir.experimental.convert_function(case.concrete_function(), show_debug_info=True)
    )
    attribution = annotate.annotate_module(
        module, profile, tmp_path / "a.mlir", tmp_path / "g.json", tmp_path / "attribution.json"
    )
    # Every name lands on an op (by names, whatever the run's times).
    assert not attribution.unresolved and not attribution.removed, (
        attribution.unresolved[:5],
        attribution.removed[:5],
    )
    accounted = attribution.attributed_self_ps + sum(
        entry.self_ps for entry in attribution.unresolved + attribution.removed
    )
    assert accounted == attribution.profile_self_ps
    if mode == "train":
        # The optimizer's per-variable copies of one subexpression ran one by one
        # and CSE kept one: those names are merged, not lost.
        assert any(entry.merged_by == "name" for entry in attribution.merged)
