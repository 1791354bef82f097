"""The numerics check an in-process candidate passes before it is timed: one
step of the baseline and one of the candidate from the same state must give
the same outputs (the loss of a training step) within a tolerance.

Both steps read and update the same variables (a candidate shares the loaded
model), so every variable the step captures is saved first and restored after
each of the two steps: the check leaves the model as it found it. XLA
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

    def describe(self) -> str:
        verdict = "same outputs" if self.passed else "different outputs"
        return (
            f"{verdict}: max |Δ| {self.max_abs:.3g} over {self.outputs} output values "
            f"(tolerance {RTOL:g} relative + {ATOL:g})"
        )


def check_numerics(baseline: ModelCase, candidate: ModelCase) -> NumericsCheck:
    import numpy as np
    import tensorflow as tf

    variables = list(baseline.concrete_function().variables)
    saved = [tf.identity(variable) for variable in variables]

    def one_step(case: ModelCase) -> np.ndarray:
        try:
            outputs = tf.nest.flatten(case.step())
            return np.concatenate([np.ravel(np.asarray(t, dtype=np.float64)) for t in outputs])
        finally:
            for variable, value in zip(variables, saved, strict=True):
                variable.assign(value)

    expected, actual = one_step(baseline), one_step(candidate)
    if expected.shape != actual.shape:
        return NumericsCheck(False, float("inf"), float("inf"), int(expected.size))
    difference = np.abs(actual - expected)
    scaled = difference / (ATOL + RTOL * np.abs(expected))
    worst = float(scaled.max()) if scaled.size else 0.0
    max_abs = float(difference.max()) if difference.size else 0.0
    finite = bool(np.isfinite(actual).all() == np.isfinite(expected).all())
    return NumericsCheck(finite and worst <= 1.0, worst, max_abs, int(expected.size))
