"""Op profiles for the analysis and diff tests: committed fixtures of real
TensorFlow 2.21 runs (tests/data/tf2_21, see make_fixtures.py there) and fresh
profiles of a real small model."""

from __future__ import annotations

from pathlib import Path

from tfpgo.attribution.op_profile import OpProfile

TF2_21 = Path(__file__).resolve().parents[1] / "data" / "tf2_21"
TRAIN = TF2_21 / "train" / "op_profile.json"  # dense MLP training step, oneDNN kernels, SGD
CONV_TRAIN = TF2_21 / "conv_train" / "op_profile.json"
DENSE_INFER = TF2_21 / "dense" / "op_profile.json"


def profile_real_step(directory: Path, model: str = "transformer", mode: str = "train") -> Path:
    """Profiles 3 steps (after 1 warmup) of a built-in model at batch 2 and
    writes its op_profile.json into `directory`; returns that path."""
    from tfpgo.flow import trace_reader
    from tfpgo.models import load_model, profiling

    case = load_model(model, mode, batch_size=2)
    run = profiling.profile(case, directory / "profile", steps=3, warmup=1)
    path = directory / "op_profile.json"
    trace_reader.run(run.logdir, op_profile_out=path, build_graph=False)
    return path


def read(path: Path) -> OpProfile:
    return OpProfile.read(path)
