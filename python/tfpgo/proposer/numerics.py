"""The numerics check a candidate passes before it is timed: one step of the
baseline and one of the candidate from the same state must give the same
outputs (the loss of a training step) within a tolerance.

In this process both steps read and update the same variables (a candidate
shares the loaded model), so every variable the step captures is saved first
and restored after each of the two steps: the check leaves the model as it
found it. Worker processes each load the model fresh (the same seed, the same
weights) and report their first step's outputs (`compare_outputs`). XLA
reassociates float32 sums, so exact equality is not expected; `RTOL` allows
for that and catches a change that computes something else.
"""

from __future__ import annotations

from dataclasses import dataclass

from tfpgo.models import ModelCase

RTOL = 1e-3
ATOL = 1e-5


@dataclass(frozen=True)
class NumericsCheck:
    passed: bool
    worst: float  # max |b − a| / (ATOL + RTOL·|a|) over every output element; ≤ 1 passes
    max_abs: float  # max |b − a|
    outputs: int  # output elements compared
    rtol: float = RTOL

    def describe(self) -> str:
        verdict = "same outputs" if self.passed else "different outputs"
        return (
            f"{verdict}: max |Δ| {self.max_abs:.3g} over {self.outputs} output values "
            f"(tolerance {self.rtol:g} relative + {ATOL:g})"
        )


def check_numerics(baseline: ModelCase, candidate: ModelCase, rtol: float = RTOL) -> NumericsCheck:
    import tensorflow as tf

    variables = list(baseline.concrete_function().variables)
    saved = [tf.identity(variable) for variable in variables]

    def one_step(case: ModelCase) -> list[float]:
        try:
            return flat_outputs(case.step())
        finally:
            for variable, value in zip(variables, saved, strict=True):
                variable.assign(value)

    return compare_outputs(one_step(baseline), one_step(candidate), rtol)


def flat_outputs(outputs) -> list[float]:
    """Every element of a step's outputs, in order, as floats."""
    import numpy as np
    import tensorflow as tf

    arrays = [np.ravel(np.asarray(t, dtype=np.float64)) for t in tf.nest.flatten(outputs)]
    return np.concatenate(arrays).tolist() if arrays else []


def compare_outputs(expected, actual, rtol: float = RTOL) -> NumericsCheck:
    """Element-wise comparison of two flattened step outputs (numpy arrays)."""
    import numpy as np

    expected = np.asarray(expected, dtype=np.float64)
    actual = np.asarray(actual, dtype=np.float64)
    if expected.shape != actual.shape:
        return NumericsCheck(False, float("inf"), float("inf"), int(expected.size), rtol)
    difference = np.abs(actual - expected)
    scaled = difference / (ATOL + rtol * np.abs(expected))
    worst = float(scaled.max()) if scaled.size else 0.0
    max_abs = float(difference.max()) if difference.size else 0.0
    finite = bool(np.isfinite(actual).all() == np.isfinite(expected).all())
    return NumericsCheck(finite and worst <= 1.0, worst, max_abs, int(expected.size), rtol)
