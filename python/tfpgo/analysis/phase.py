"""Breakdown by phase of a training step: forward, backward, optimizer, other.

The phase of an op comes from its runtime node name, the only thing the op
profile knows about it:

* backward: under a gradient scope. TensorFlow names every op a GradientTape
  (or tf.gradients) emits `gradient_tape/<forward op's name>/<grad op>`
  (`gradients/...`), so stripping that first component folds a gradient op
  onto the forward scope it differentiates (`fold_gradient_scope`).
  Also backward: the `AddN` ops with which the tape sums the gradients of a
  tensor used more than once. They carry the default name (`AddN`, `AddN_<n>`)
  in the scope `tape.gradient` was called in, the top level in a training step.
* optimizer: under a Keras optimizer's scope (`sgd`, `adam_1`, `sgd_1_1`: the
  optimizer's lowercase class name; Keras and TensorFlow each append `_<n>` to
  a repeated name, so there may be several).
* forward: in a top-level scope the tape differentiated (some backward op
  folds into it: the model), or every op of a profile with no backward ops
  (an inference step).
* other: the rest: loss and step bookkeeping outside the model's scope (the
  loss reduction, the iteration counter).

Besides op time, a step has time during which no op ran on the host (the op
profile's `non_op_ps`): reported next to the phases, never inside one.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping
from dataclasses import dataclass

from tfpgo.attribution.op_profile import OpProfile
from tfpgo.models.case import without_uniquifier

GRADIENT_SCOPES = frozenset({"gradient_tape", "gradients"})

# Lowercase class names of the optimizers Keras 3 ships (keras.optimizers).
OPTIMIZER_SCOPES = frozenset(
    {
        "sgd",
        "adam",
        "adamw",
        "adamax",
        "adagrad",
        "adadelta",
        "adafactor",
        "rmsprop",
        "nadam",
        "ftrl",
        "lion",
        "lamb",
        "muon",
        "loss_scale_optimizer",
    }
)
_GRADIENT_SUM = re.compile(r"^AddN(?:_\d+)?$")


class Phase(enum.Enum):
    FORWARD = "forward"
    BACKWARD = "backward"
    OPTIMIZER = "optimizer"
    OTHER = "other"


def fold_gradient_scope(name: str) -> str:
    """`gradient_tape/model/dense/MatMul/MatMul` -> `model/dense/MatMul/MatMul`:
    a gradient op's name without its gradient scope; other names unchanged."""
    head, sep, rest = name.partition("/")
    return rest if sep and head in GRADIENT_SCOPES else name


def is_optimizer_scope(component: str) -> bool:
    return without_uniquifier(component).lower() in OPTIMIZER_SCOPES


class PhaseClassifier:
    """Assigns a phase to each op name of one profile: from the op graph's
    structure where the caller has it (`structural`, runtime name -> phase:
    `tfpgo.analysis.structure`), else by the name rules above (the forward
    scopes depend on which scopes the profile's backward ops fold into)."""

    def __init__(self, names: list[str], structural: Mapping[str, Phase] | None = None) -> None:
        backward = [fold_gradient_scope(name) for name in names if is_gradient_name(name)]
        self.inference = not backward
        # Top-level scopes (not bare top-level ops) that some gradient op folds into.
        self.forward_scopes = frozenset(name.split("/")[0] for name in backward if "/" in name)
        self.structural = structural or {}

    def phase(self, name: str) -> Phase:
        found = self.structural.get(name)
        if found is not None:
            return found
        if is_gradient_name(name) or (not self.inference and _GRADIENT_SUM.match(name)):
            return Phase.BACKWARD
        top = name.split("/")[0]
        if is_optimizer_scope(top) and "/" in name:
            return Phase.OPTIMIZER
        if self.inference or ("/" in name and top in self.forward_scopes):
            return Phase.FORWARD
        return Phase.OTHER


def is_gradient_name(name: str) -> bool:
    """Whether the gradient tape (or tf.gradients) named this op."""
    head, sep, _ = name.partition("/")
    return bool(sep) and head in GRADIENT_SCOPES


@dataclass(frozen=True)
class PhaseRow:
    phase: Phase
    self_ps: int
    total_ps: int
    count: int  # op executions (events)
    ops: int  # distinct runtime names


@dataclass(frozen=True)
class PhaseBreakdown:
    rows: tuple[PhaseRow, ...]  # every Phase, in Phase order
    non_op_ps: int  # time in the steps during which no op ran (op profile totals)


def phase_breakdown(
    profile: OpProfile, structural: Mapping[str, Phase] | None = None
) -> PhaseBreakdown:
    """Sums each op's self/total time and count into its phase."""
    classifier = PhaseClassifier([op.name for op in profile.ops], structural)
    sums = {phase: [0, 0, 0, 0] for phase in Phase}
    for op in profile.ops:
        row = sums[classifier.phase(op.name)]
        row[0] += op.self_ps
        row[1] += op.total_ps
        row[2] += op.count
        row[3] += 1
    rows = tuple(PhaseRow(phase, *sums[phase]) for phase in Phase)
    return PhaseBreakdown(rows, profile.totals.non_op_ps)
