"""The numerics check a candidate passes before it is timed: one step of the
baseline and one of the candidate from the same state must give the same
outputs (the loss of a training step) within a tolerance.

The same state is every variable the step captures: weights, optimizer slots,
and the random-generator states a training step advances (a Keras
`SeedGenerator`'s state for dropout and stochastic depth, a `tf.random.Generator`'s
state), saved before the check and restored before each step, so the baseline
and the candidate draw the same dropout masks and the check leaves the model as
it found it. Worker processes each load the model fresh (`tfpgo.models.load_model`
seeds Python, NumPy, TensorFlow and Keras first: the same weights and the same
generator seeds) and report their first step's outputs twice, from the same
restored state.

The baseline runs twice first: a step whose two runs from the same state
differ (stateful random ops such as `RandomUniform` keep a hidden counter in
their kernel; some kernels are not deterministic) cannot be checked, and says
so with the reason, instead of failing the candidate with a misleading number.
A change that draws other random numbers for the same seeds (XLA generates
`StatelessRandom*` with its own algorithm) is not comparable either on a step
that draws any: it fails only where no random op could explain it.

Tolerances follow the change (`Proposal.rtol`/`atol`): exact for a change that
runs the same kernels (`threads`), 1e-3 where float sums are reassociated (XLA,
oneDNN), bfloat16's for a precision policy.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from tfpgo.models import ModelCase

RTOL = 1e-3
ATOL = 1e-5
# How `NumericsCheck.describe` starts: the check passed, failed, or could not decide.
SAME_OUTPUTS, DIFFERENT_OUTPUTS, NOT_CHECKED = (
    "same outputs",
    "different outputs",
    "numerics not checked",
)

# Stateful random ops: their kernel advances a hidden generator on every run, so
# restoring the variables does not replay them. The rest of the random ops draw
# from a seed or a captured state (stateless ops, tf.random.Generator's ops).
_HIDDEN_STATE_RANDOM_OPS = frozenset(
    {
        "Multinomial",
        "ParameterizedTruncatedNormal",
        "RandomGamma",
        "RandomPoisson",
        "RandomPoissonV2",
        "RandomShuffle",
        "RandomStandardNormal",
        "RandomUniform",
        "RandomUniformInt",
        "TruncatedNormal",
    }
)
# Ops that read or advance a tf.random.Generator's state variable.
_GENERATOR_STATE_OPS = frozenset({"RngReadAndSkip", "RngSkip"})


class NumericsStatus(enum.Enum):
    PASSED = "passed"
    FAILED = "failed"
    NONDETERMINISTIC = "nondeterministic"  # the baseline differs from itself
    NOT_COMPARABLE = "not_comparable"  # the change draws other random numbers


@dataclass(frozen=True)
class NumericsCheck:
    status: NumericsStatus
    worst: float  # max |b − a| / (atol + rtol·|a|) over every output element; ≤ 1 passes
    max_abs: float  # max |b − a|
    outputs: int  # output elements compared
    rtol: float = RTOL
    atol: float = ATOL
    restored: str = ""  # what was restored before each step
    reason: str = ""  # why a check that is neither passed nor failed could not decide

    @property
    def passed(self) -> bool:
        return self.status is NumericsStatus.PASSED

    @property
    def checked(self) -> bool:
        """Whether the check decided (passed or failed)."""
        return self.status in (NumericsStatus.PASSED, NumericsStatus.FAILED)

    def describe(self) -> str:
        restored = f"; restored {self.restored}" if self.restored else ""
        if not self.checked:
            return f"{NOT_CHECKED}: {self.reason}{restored}"
        verdict = SAME_OUTPUTS if self.passed else DIFFERENT_OUTPUTS
        exact = self.rtol == 0 and self.atol == 0
        tolerance = "exact" if exact else f"tolerance {self.rtol:g} relative + {self.atol:g}"
        return (
            f"{verdict}: max |Δ| {self.max_abs:.3g} over {self.outputs} output values "
            f"({tolerance}){restored}"
        )


def allows_timing(described: str) -> bool:
    """Whether a check, as `describe` wrote it, let its change be timed and
    advised: it passed, or it could not decide (timed only with
    --optimize-unchecked, and its text says so). An empty text (a document from
    before rivals were checked) or different outputs do not."""
    return described.startswith((SAME_OUTPUTS, NOT_CHECKED))


def repeated_first_step(case: ModelCase) -> tuple[list[float], list[float], str]:
    """The outputs of one step from the current state, twice (the state restored
    before each), and what was restored; the state is left as it was."""
    first, again = _steps_from_one_state(case, (case, case))
    return first, again, describe_state(list(case.concrete_function().variables))


def check_numerics(
    baseline: ModelCase,
    candidate: ModelCase,
    rtol: float = RTOL,
    atol: float = ATOL,
    other_random_numbers: bool = False,
) -> NumericsCheck:
    """Baseline twice, then the candidate, each step from the same saved state (the
    candidate shares the baseline's variables). `other_random_numbers`: the
    candidate draws other numbers for the same seeds."""
    first, again, outputs = _steps_from_one_state(baseline, (baseline, baseline, candidate))
    check = judge_outputs(
        first, again, outputs, random_op_types(baseline), rtol, atol, other_random_numbers
    )
    return replace(check, restored=describe_state(list(baseline.concrete_function().variables)))


def _steps_from_one_state(owner: ModelCase, cases: tuple[ModelCase, ...]) -> list[list[float]]:
    """One step of each of `cases`, the variables `owner` captures restored after each."""
    import tensorflow as tf

    variables = list(owner.concrete_function().variables)
    saved = [tf.identity(variable) for variable in variables]
    outputs = []
    for case in cases:
        try:
            outputs.append(flat_outputs(case.step()))
        finally:
            for variable, value in zip(variables, saved, strict=True):
                variable.assign(value)
    return outputs


def judge_outputs(
    first: list[float],
    again: list[float],
    candidate: list[float],
    random_ops: Iterable[str],
    rtol: float = RTOL,
    atol: float = ATOL,
    other_random_numbers: bool = False,
) -> NumericsCheck:
    """The check from the baseline's two runs and the candidate's run."""
    random_ops = sorted(set(random_ops))
    repeat = compare_outputs(first, again, 0.0, 0.0)
    if not repeat.passed:
        hidden = [op for op in random_ops if op in _HIDDEN_STATE_RANDOM_OPS]
        cause = (
            f"its stateful random ops ({', '.join(hidden)}) advance a generator no variable holds"
            if hidden
            else "a kernel of the step is not deterministic"
        )
        return _undecided(
            NumericsStatus.NONDETERMINISTIC,
            repeat,
            rtol,
            atol,
            f"the baseline step differs from itself from the same restored state (max |Δ| "
            f"{repeat.max_abs:.3g}): {cause}",
        )
    compared = compare_outputs(first, candidate, rtol, atol)
    if not compared.passed and other_random_numbers and random_ops:
        return _undecided(
            NumericsStatus.NOT_COMPARABLE,
            compared,
            rtol,
            atol,
            f"the step draws random numbers ({', '.join(random_ops)}) and the change draws "
            f"others for the same seeds (max |Δ| {compared.max_abs:.3g} says nothing about it)",
        )
    return compared


def _undecided(
    status: NumericsStatus, measured: NumericsCheck, rtol: float, atol: float, reason: str
) -> NumericsCheck:
    return NumericsCheck(
        status, measured.worst, measured.max_abs, measured.outputs, rtol, atol, reason=reason
    )


def random_op_types(case: ModelCase) -> set[str]:
    """The random op types of the step's graph, function bodies included."""
    return {op for op in _op_types(case) if _is_random(op)}


def _is_random(op_type: str) -> bool:
    return (
        op_type in _HIDDEN_STATE_RANDOM_OPS
        or op_type in _GENERATOR_STATE_OPS
        or op_type.startswith(("StatelessRandom", "StatefulUniform", "StatefulStandardNormal"))
        or op_type.startswith(("StatefulTruncatedNormal", "StatelessTruncatedNormal"))
    )


def _op_types(case: ModelCase) -> set[str]:
    definition = case.concrete_function().graph.as_graph_def()
    types = {node.op for node in definition.node}
    for function in definition.library.function:
        types.update(node.op for node in function.node_def)
    return types


def describe_state(variables: list[Any]) -> str:
    """'N captured variables (K random-generator states: names)'."""
    generators = sorted(
        variable.name for variable in variables if _is_generator_state(variable.name)
    )
    text = f"{len(variables)} captured variables"
    if generators:
        shown = ", ".join(generators[:3]) + (", ..." if len(generators) > 3 else "")
        states = "state" if len(generators) == 1 else "states"
        text += f" ({len(generators)} random-generator {states}: {shown})"
    return text


def _is_generator_state(name: str) -> bool:
    # Keras 3 SeedGenerator states are named so; tf.random.Generator's state
    # variable is whatever the user named it: counted by name only.
    return "seed_generator" in name or "rng_state" in name or "generator_state" in name


def flat_outputs(outputs: Any) -> list[float]:
    """Every element of a step's outputs, in order, as floats."""
    import numpy as np
    import tensorflow as tf

    arrays = [np.ravel(np.asarray(t, dtype=np.float64)) for t in tf.nest.flatten(outputs)]
    return np.concatenate(arrays).tolist() if arrays else []


def compare_outputs(
    expected: Any, actual: Any, rtol: float = RTOL, atol: float = ATOL
) -> NumericsCheck:
    """Element-wise comparison of two flattened step outputs (numpy arrays)."""
    import numpy as np

    expected = np.asarray(expected, dtype=np.float64)
    actual = np.asarray(actual, dtype=np.float64)
    failed, passed = NumericsStatus.FAILED, NumericsStatus.PASSED
    if expected.shape != actual.shape:
        return NumericsCheck(failed, float("inf"), float("inf"), int(expected.size), rtol, atol)
    # equal values (infinities and NaNs in the same places included) differ by 0
    same = (actual == expected) | (np.isnan(actual) & np.isnan(expected))
    with np.errstate(divide="ignore", invalid="ignore"):
        difference = np.where(same, 0.0, np.abs(actual - expected))
        scaled = np.where(same, 0.0, difference / (atol + rtol * np.abs(expected)))
    worst = float(scaled.max()) if scaled.size else 0.0
    max_abs = float(difference.max()) if difference.size else 0.0
    status = passed if worst <= 1.0 else failed  # a NaN difference is never <= 1
    return NumericsCheck(status, worst, max_abs, int(expected.size), rtol, atol)
