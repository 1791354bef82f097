"""The annotated module survives TensorFlow 2.21's own tf dialect.

tfpgo-opt annotates real TF 2.21 exports (tests/data/tf2_21) with upstream
MLIR, where tf ops are unregistered. These tests hand its output back to
TensorFlow, where every tf op is registered (and, with the patch series,
carries the ProfileAnnotation trait), and check that:
  * TensorFlow parses it and runs `tf-standard-pipeline` on it: the
    `profiler_data` DictionaryAttr is an ordinary discardable attribute there;
  * annotations on ops the pipeline keeps are preserved (canonicalization may
    fold or rewrite a few ops and drop theirs);
  * after `tf-strip-profile-annotations` nothing of ours is left, and the
    stripped module is what TensorFlow made of the unannotated one.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tfpgo import toolpaths
from tfpgo.errors import UserError

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
tf = pytest.importorskip("tensorflow")

REPO = Path(__file__).resolve().parents[2]
SCENARIOS = ("train", "gru", "cond")


def _runfile(*parts: str) -> Path | None:
    for variable in ("TEST_SRCDIR", "RUNFILES_DIR"):
        if root := os.environ.get(variable):
            candidate = Path(root, "tfpgo", *parts)
            if candidate.exists():
                return candidate
    return None


def _tfpgo_opt() -> Path:
    try:
        return toolpaths.tfpgo_opt()
    except UserError as missing:
        pytest.skip(str(missing))


def _data(scenario: str, name: str) -> Path:
    return (
        _runfile("tests", "data", "tf2_21", scenario, name)
        or REPO / "tests/data/tf2_21" / scenario / name
    )


def _opt(args: list[str], source: str) -> str:
    done = subprocess.run(
        [str(_tfpgo_opt()), "--allow-unregistered-dialect", *args, "-"],
        input=source,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def _annotate(scenario: str) -> str:
    profile = _data(scenario, "op_profile.json")
    pipeline = f"enable-profile=true path-to-profile={profile} top-k=3"
    return _opt(
        [f"--tf-profile-guided-pipeline={pipeline}"], _data(scenario, "module.mlir").read_text()
    )


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_annotated_module_survives_tf_standard_pipeline(scenario):
    annotated = _annotate(scenario)
    annotated_ops = annotated.count("profiler_data = {")
    assert annotated_ops > 0
    assert annotated.count("profiler_hot = ") == 3

    optimized = tf.mlir.experimental.run_pass_pipeline(annotated, "tf-standard-pipeline")

    # In the real tf dialect the ops are registered: the pretty printer of
    # func.func and registered tf ops ran, and our attributes are still there.
    assert '"tf.' in optimized
    kept = optimized.count("profiler_data = {")
    assert kept >= 0.9 * annotated_ops, (kept, annotated_ops)
    assert "share = " in optimized


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_strip_leaves_nothing_of_ours(scenario):
    annotated = _annotate(scenario)
    stripped = _opt(["--tf-strip-profile-annotations"], annotated)
    assert "profiler_" not in stripped

    # Stripping gives back the unannotated module, op for op.
    original = _opt([], _data(scenario, "module.mlir").read_text())
    assert stripped == original

    optimized = tf.mlir.experimental.run_pass_pipeline(stripped, "tf-standard-pipeline")
    assert "profiler_" not in optimized
    reference = tf.mlir.experimental.run_pass_pipeline(original, "tf-standard-pipeline")
    assert optimized == reference
