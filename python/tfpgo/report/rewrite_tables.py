"""The report's tables of what the lowering rewrote (`--lower`).

The loop table: each `while` loop of the step, its trips, its time a trip in
TensorFlow and in IREE's program, and what the lowering did with it
(tfpgo.mlir.iree_loops: unrolled, counted, or left, and why).

A loop's time is that of its tf nodes: those its ops carry (its control and its
body, nested loops included) and those of its scope (`while/...`, the body's
ops wherever a lowering moved them): TensorFlow's self time of those nodes and
IREE's dispatch time placed on them, each a step, divided by the trips. Trips are the
module's where it fixes them, else the trip count the profile measured.

The gradient table: each convolution filter gradient, its shapes, its time a step
in TensorFlow and in IREE's program, and the form it took
(tfpgo.mlir.conv_gradients)."""

from __future__ import annotations

from collections.abc import Sequence

from tfpgo.attribution.op_profile import OpProfile
from tfpgo.iree.profile_document import IreeProfile
from tfpgo.mlir.conv_gradients import GradientForm
from tfpgo.mlir.iree_loops import LoopDecision
from tfpgo.mlir.lowering import Loop
from tfpgo.render.metrics import format_ps

LOOP_TITLE = "Loops: what the lowering did with each"
LOOP_HEADER = ["loop (tf node)", "trips", "TF a trip", "IREE a trip", "IREE / TF", "lowering"]
GRADIENT_TITLE = "Convolution gradients: the form each took"
GRADIENT_HEADER = ["gradient (tf node)", "shapes", "TF a step", "IREE a step", "IREE / TF",
                   "form"]  # fmt: skip


def loop_rows(
    decisions: Sequence[LoopDecision],
    measured: Sequence[Loop],
    profile: OpProfile,
    tf_steps: int,
    iree: IreeProfile | None,
) -> list[list[str]]:
    """One row a loop, in the module's order."""
    self_ps = {op.name: op.self_ps for op in profile.ops}
    trip_counts = {loop.name: loop.trip_count for loop in measured}
    rows = []
    for decision in decisions:
        trips: float | None = decision.trips
        if trips is None:
            trips = trip_counts.get(decision.name)
        tf_ps = sum(ps for name, ps in self_ps.items() if _in_loop(name, decision))
        tf = tf_ps / max(tf_steps, 1)
        iree_ps = None
        if iree is not None:
            placed = sum(ps for name, ps in iree.op_ps.items() if _in_loop(name, decision))
            iree_ps = placed / max(iree.runs, 1)
        rows.append(
            [
                decision.name,
                "unknown" if trips is None else f"{trips:g}",
                _a_trip(tf, trips),
                "–" if iree_ps is None else _a_trip(iree_ps, trips),
                f"{iree_ps / tf:.2f}x" if iree_ps is not None and tf else "–",
                f"{decision.action}: {decision.why}",
            ]
        )
    return rows


def _in_loop(name: str, decision: LoopDecision) -> bool:
    """Whether tf node `name` is the loop's: one its ops carry, or one of its scope
    (an op of the body a lowering moved out of the loop is still the loop's work)."""
    return name in decision.names or name.startswith(decision.name + "/")


def _a_trip(step_ps: float, trips: float | None) -> str:
    """A step's time over the trips (a step's time where none ran or none are known)."""
    if not trips:
        return f"{format_ps(round(step_ps))} a step"
    return format_ps(round(step_ps / trips))


def gradient_rows(
    forms: Sequence[GradientForm], profile: OpProfile, tf_steps: int, iree: IreeProfile | None
) -> list[list[str]]:
    """One row a filter gradient, in the module's order."""
    self_ps = {op.name: op.self_ps for op in profile.ops}
    rows = []
    for gradient in forms:
        tf = self_ps.get(gradient.name, 0) / max(tf_steps, 1)
        iree_ps = None if iree is None else iree.op_ps.get(gradient.name, 0) / max(iree.runs, 1)
        form = f"{gradient.form}: {gradient.why}" if gradient.why else gradient.form
        if gradient.alone_ps:
            form += "; alone " + ", ".join(
                f"{name} {format_ps(round(ps))}" for name, ps in gradient.alone_ps
            )
        rows.append(
            [
                gradient.name,
                gradient.shapes,
                format_ps(round(tf)),
                "–" if iree_ps is None else format_ps(round(iree_ps)),
                f"{iree_ps / tf:.2f}x" if iree_ps is not None and tf else "–",
                form,
            ]
        )
    return rows
