"""Profile a ModelCase with the TensorFlow profiler and export its MLIR.

The profile lands in TensorBoard's logdir layout
(`<logdir>/plugins/profile/<run>/<host>.xplane.pb`), so TensorBoard and xprof
open the very profile tfpgo analyses. Warmup steps run before the profiler
starts (tracing, variable creation and Grappler rewrites stay out of the
profile); each profiled step is wrapped in
`tf.profiler.experimental.Trace(<mode>, step_num=i, _r=1)`, the step marker
TensorFlow's own tools recognize.

Host tracer level 3 is the default: at level 2 TensorFlow drops cheap ops
from the trace, and the per-op profile would miss them.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tfpgo.errors import UserError
from tfpgo.models import ModelCase

# Only the conversion from the executor graph to functional tf ops. TF's default
# export pipeline (tf-standard-pipeline) canonicalizes: it merges duplicate
# ReadVariableOps and rewrites e.g. Sub+Square into SquaredDifference, so ops that
# ran would vanish from the MLIR and their time could not be attributed.
EXPORT_PIPELINE = "func.func(tf-executor-to-functional-conversion)"


@dataclass(frozen=True)
class ProfilerLevels:
    """`tf.profiler.experimental.ProfilerOptions` tracer levels."""

    host_tracer_level: int = 3
    python_tracer_level: int = 0
    device_tracer_level: int = 1

    def __post_init__(self) -> None:
        for name, value, top in (
            ("host_tracer_level", self.host_tracer_level, 3),
            ("python_tracer_level", self.python_tracer_level, 1),
            ("device_tracer_level", self.device_tracer_level, 1),
        ):
            if not 0 <= value <= top:
                raise UserError(f"{name} must be in 0..{top}, got {value}")


@dataclass(frozen=True)
class ProfileRun:
    """Where a profile was written and how long each profiled step took."""

    logdir: Path
    run_dir: Path
    xplane_paths: tuple[Path, ...]
    step_names: str
    step_wall_ns: tuple[int, ...]
    warmup: int
    levels: ProfilerLevels


def profile(
    case: ModelCase,
    logdir: Path,
    steps: int = 3,
    warmup: int = 2,
    levels: ProfilerLevels | None = None,
    progress: Callable[[str], None] | None = None,
) -> ProfileRun:
    """Runs `warmup` unprofiled and `steps` profiled steps of `case` into `logdir`.

    Each step's outputs are fetched to host before the next step starts, so
    steps do not overlap and the per-step wall times are honest. `progress`
    hears about every tenth of the profiled steps.
    """
    import tensorflow as tf

    if steps < 1:
        raise UserError(f"profiled steps must be at least 1, got {steps}")
    if warmup < 0:
        raise UserError(f"warmup steps must be non-negative, got {warmup}")
    levels = levels or ProfilerLevels()
    case.concrete_function()  # trace outside the profile, even without warmup
    for _ in range(warmup):
        _fetch(case.step())
    profile_root = logdir / "plugins" / "profile"
    before = set(profile_root.iterdir()) if profile_root.is_dir() else set()
    options = tf.profiler.experimental.ProfilerOptions(
        host_tracer_level=levels.host_tracer_level,
        python_tracer_level=levels.python_tracer_level,
        device_tracer_level=levels.device_tracer_level,
    )
    walls = []
    tf.profiler.experimental.start(str(logdir), options=options)
    try:
        for step in range(steps):
            with tf.profiler.experimental.Trace(case.mode.value, step_num=step, _r=1):
                start = time.perf_counter_ns()
                _fetch(case.step())
                walls.append(time.perf_counter_ns() - start)
            if progress and (step + 1) % max(1, steps // 10) == 0:
                progress(f"step {step + 1}/{steps}: {walls[-1] / 1e6:.1f} ms")
    finally:
        tf.profiler.experimental.stop()
    runs = sorted(set(profile_root.iterdir()) - before) if profile_root.is_dir() else []
    if not runs:
        raise UserError(f"{logdir}: the profiler wrote no run directory")
    run_dir = runs[-1]
    xplanes = tuple(sorted(run_dir.glob("*.xplane.pb")))
    if not xplanes:
        raise UserError(f"{run_dir}: the profiler wrote no .xplane.pb")
    return ProfileRun(logdir, run_dir, xplanes, case.mode.value, tuple(walls), warmup, levels)


def export_mlir(case: ModelCase) -> str:
    """The profiled concrete function as `tf` dialect MLIR with debug locations.

    `show_debug_info=True` gives every op a NameLoc with its graph node name,
    the join key between the trace (`node:OpType` events) and the MLIR.
    """
    import tensorflow as tf

    return without_own_frames(
        tf.mlir.experimental.convert_function(
            case.concrete_function(), pass_pipeline=EXPORT_PIPELINE, show_debug_info=True
        )
    )


def without_own_frames(module_text: str) -> str:
    """`module_text` with the file locations of tfpgo's own Python frames (the flow
    that built and traced the model: bazel runfiles paths) made `loc(unknown)`: the
    call stacks in an export are the model's, not the tool's."""
    package = Path(__file__).parents[1]  # python/tfpgo, as imported (runfiles or not)
    roots = {str(package), str(package.resolve()), str(package.parents[1] / "tools")}
    roots |= {str(package.resolve().parents[1] / "tools")}
    pattern = "|".join(re.escape(root + "/") for root in sorted(roots))
    own = re.compile(r'loc\("(?:' + pattern + r')[^"]*":\d+:\d+\)')
    return own.sub("loc(unknown)", module_text)


def _fetch(outputs: object) -> None:
    """Copies every output tensor to host: the step is complete afterwards."""
    import tensorflow as tf

    for tensor in tf.nest.flatten(outputs):
        if hasattr(tensor, "numpy"):
            tensor.numpy()
