"""Rule `jit_compile`: compile the step with XLA when its time is spread over
many small ops or spent on no TF op at all.

XLA fuses elementwise ops into their producers and runs the step as a few
compiled kernels, removing per-op dispatch (the time between ops, which the
profile shows as time on no TF op). It does not make a big matrix product or
convolution faster, and its own kernels for them can be slower than oneDNN's:
the rule only says XLA *may* help; the A/B measurement decides.

Evidence, from the Analysis alone:
  * elementwise ops' share of op self time (op types in `ELEMENTWISE`);
  * small executions' share of op self time: op types whose mean execution
    (self time / executions) is under `SMALL_PS`;
  * time on no TF op as a share of op self time + non-op time.
The rule fires when any of them reaches `MIN_SHARE`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from tfpgo.analysis import Analysis
from tfpgo.models import ModelCase
from tfpgo.proposer.proposal import Evidence, EvidenceKind, NotApplicable, Proposal

RULE = "jit_compile"
MIN_SHARE = 0.2
SMALL_PS = 20_000_000  # 20 µs: on the order of one op's dispatch cost on a CPU
TOP_EVIDENCE = 5  # op types cited per figure

# TF ops XLA fuses as elementwise (loop) fusions: arithmetic, activations and
# their gradients, and the elementwise variable updates an optimizer runs (SGD's
# `var -= lr * grad` is a Mul and an AssignSubVariableOp over every weight: two
# memory-bound passes XLA fuses into one).
ELEMENTWISE = frozenset(
    {
        "Abs", "Add", "AddV2", "BiasAdd", "Cast", "Cos", "Div", "DivNoNan", "Elu", "EluGrad",
        "Erf", "Exp", "Gelu", "GeluGrad", "LeakyRelu", "LeakyReluGrad", "Log", "Log1p",
        "LogicalAnd", "Maximum", "Minimum", "Mul", "Neg", "Pow", "RealDiv", "Reciprocal",
        "Relu", "Relu6", "Relu6Grad", "ReluGrad", "Rsqrt", "RsqrtGrad", "Select", "SelectV2",
        "Sigmoid", "SigmoidGrad", "Sin", "Softplus", "Sqrt", "SqrtGrad", "Square",
        "SquaredDifference", "Sub", "Tanh", "TanhGrad", "ZerosLike", "OnesLike",
        "AssignAddVariableOp", "AssignSubVariableOp", "ResourceApplyGradientDescent",
        "ResourceApplyKerasMomentum", "ResourceApplyAdam",
    }
)  # fmt: skip


def propose(analysis: Analysis) -> list[Proposal]:
    found = fusion_evidence(analysis)
    if found is None:
        return []
    evidence, figures = found
    return [
        Proposal(
            rule=RULE,
            change="compile the step with XLA: tf.function(jit_compile=True)",
            reason=f"{figures} (the rule fires at {MIN_SHARE:.0%} of any): "
            "XLA fuses small ops and removes per-op dispatch",
            evidence=evidence,
            apply=with_jit_compile,
            # XLA generates StatelessRandom* with its own algorithm: other dropout masks
            other_random_numbers=True,
        )
    ]


def fusion_evidence(analysis: Analysis) -> tuple[tuple[Evidence, ...], str] | None:
    """The evidence that XLA's fusion may help (see the module doc) and its figures
    in words, or None when no figure reaches MIN_SHARE: the one reading of the
    profile for every XLA rule (`jit_compile`, `auto_clustering`)."""
    op_self = analysis.totals.op_self_ps
    if op_self <= 0:
        return None
    elementwise = [row for row in analysis.op_types if row.op_type in ELEMENTWISE]
    small = [row for row in analysis.op_types if row.count and row.self_ps / row.count < SMALL_PS]
    elementwise_share = sum(row.self_ps for row in elementwise) / op_self
    small_share = sum(row.self_ps for row in small) / op_self
    non_op = analysis.totals.non_op_ps
    non_op_share = non_op / (op_self + non_op)
    if max(elementwise_share, small_share, non_op_share) < MIN_SHARE:
        return None
    evidence = [
        Evidence(
            EvidenceKind.NON_OP,
            "time on no TF op",
            non_op_share,
            "of op self time + non-op time",
        ),
        Evidence(
            EvidenceKind.OP_TYPE,
            "elementwise ops",
            elementwise_share,
            f"{sum(row.count for row in elementwise)} executions of {len(elementwise)} op types",
        ),
        Evidence(
            EvidenceKind.OP_SIZE,
            f"op types under {SMALL_PS / 1e6:g} µs an execution",
            small_share,
            f"{sum(row.count for row in small)} executions of {len(small)} op types",
        ),
    ]
    for row in sorted(elementwise, key=lambda row: -row.self_ps)[:TOP_EVIDENCE]:
        mean_us = row.self_ps / row.count / 1e6
        evidence.append(
            Evidence(
                EvidenceKind.OP_TYPE,
                row.op_type,
                row.self_ps / op_self,
                f"{row.count} executions, {mean_us:.1f} µs each",
            )
        )
    figures = (
        f"elementwise {elementwise_share:.0%}, small ops {small_share:.0%}, "
        f"no TF op {non_op_share:.0%}"
    )
    return tuple(evidence), figures


def with_jit_compile(case: ModelCase) -> ModelCase:
    """The same Python step in a new tf.function with `jit_compile=True`; the
    model's variables are shared with the baseline."""
    import tensorflow as tf

    compiled = tf.function(python_step(case), jit_compile=True)
    return replace(case, name=f"{case.name} (jit_compile)", function=compiled)


def python_step(case: ModelCase) -> Callable[..., Any]:
    """The step's Python function, to trace again with XLA (`jit_compile`,
    `xla_regions`); NotApplicable for a SavedModel signature or a step compiled
    whole already."""
    python_function = getattr(case.function, "python_function", None)
    if python_function is None:
        raise NotApplicable(
            "the step is not a tf.function of Python code (a SavedModel signature): "
            "it cannot be recompiled"
        )
    if getattr(case.function, "_jit_compile", None):
        raise NotApplicable("the step is already compiled with jit_compile=True")
    return python_function
