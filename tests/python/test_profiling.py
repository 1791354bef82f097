"""Real profiles of built-in models: logdir layout, steps, hot spot, MLIR names."""

import re
from pathlib import Path

import pytest

from tfpgo import models
from tfpgo.attribution.op_profile import build_op_profile
from tfpgo.errors import UserError
from tfpgo.models import profiling
from tfpgo.trace.readers import read_trace

# Nodes the runtime adds or that exist only around a function call: never in the MLIR.
RUNTIME_ONLY = re.compile(r"^(_|Func/|.*_RetVal$|.*_Arg$)")
RECORDED_MLP = Path(__file__).resolve().parents[1] / "data" / "trace_reader" / "mlp_infer.xplane.pb"


@pytest.fixture(scope="module")
def mlp_profile(tmp_path_factory):
    case = models.load_model("mlp", "infer", batch_size=8)
    logdir = tmp_path_factory.mktemp("logdir")
    run = profiling.profile(case, logdir, steps=3, warmup=1)
    return case, run


def test_profile_writes_tensorboard_layout(mlp_profile):
    _, run = mlp_profile
    assert run.run_dir.parent == run.logdir / "plugins" / "profile"
    assert [p.suffixes[-2:] for p in run.xplane_paths] == [[".xplane", ".pb"]]
    assert len(run.step_wall_ns) == 3 and all(t > 0 for t in run.step_wall_ns)
    assert run.levels == profiling.ProfilerLevels(3, 0, 1)


def test_profile_marks_steps_and_excludes_warmup(mlp_profile):
    _, run = mlp_profile
    table = read_trace(run.logdir)
    assert [m.step for m in table.steps] == [0, 1, 2]
    assert {m.host for m in table.steps} == set(table.hosts)
    profile = build_op_profile(table)
    assert profile.steps == (0, 1, 2)
    # every op ran once per profiled step: the warmup step is not in the profile
    assert {op.count for op in profile.ops} == {3}


def test_default_model_has_a_clear_hot_spot():
    """On a recorded profile of the same model (built-in mlp, batch 8): a share of
    a live run's time moves with the machine's load, the recorded one does not."""
    profile = build_op_profile(read_trace(RECORDED_MLP))
    hottest = profile.ops[0]
    assert hottest.name.endswith("wide_1/Relu")  # the fused 1024x4096 dense layer
    assert hottest.self_ps > 0.5 * profile.totals.op_self_ps


def test_mlir_names_match_trace_names(mlp_profile):
    case, run = mlp_profile
    mlir = profiling.export_mlir(case)
    assert "tf.MatMul" in mlir and "func.func" in mlir
    locations = set(re.findall(r'loc\("([^"]+)"', mlir))
    profile = build_op_profile(read_trace(run.logdir))
    executed = {op.name for op in profile.ops if not RUNTIME_ONLY.match(op.name)}
    assert executed, "the profile holds no TF op"
    assert executed <= locations, sorted(executed - locations)


def test_training_profile_has_gradient_ops(tmp_path):
    case = models.load_model("cnn", "train", batch_size=2)
    run = profiling.profile(case, tmp_path, steps=2, warmup=1)
    profile = build_op_profile(read_trace(run.logdir))
    names = [op.name for op in profile.ops]
    assert any("gradient_tape" in name for name in names)
    assert [m.step for m in read_trace(run.logdir).steps] == [0, 1]


def test_bad_profiling_arguments(tmp_path):
    case = models.load_model("mlp", "infer", batch_size=1)
    with pytest.raises(UserError, match="at least 1"):
        profiling.profile(case, tmp_path, steps=0)
    with pytest.raises(UserError, match="host_tracer_level"):
        profiling.ProfilerLevels(host_tracer_level=7)
