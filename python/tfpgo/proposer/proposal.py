"""The record a rule emits: one change to try, with the evidence that led to it."""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tfpgo.attribution.op_profile import OpProfile
from tfpgo.models import ModelCase


class EvidenceKind(enum.Enum):
    """What a piece of evidence measures in the analysis."""

    OP_TYPE = "op_type"  # a TF op type's share of op self time
    SCOPE = "scope"  # a layer scope's share of op self time
    NON_OP = "non_op"  # time on no TF op, as a share of op self + non-op time
    OP_SIZE = "op_size"  # executions shorter than a size limit, share of op self time
    CONCURRENCY = "concurrency"  # op self time / time some op runs (a ratio, not a share)
    CPU = "cpu"  # what the machine reported at run time (detail); share 1.0
    XLA_REGION = "xla_region"  # a region the xla-regions pass chose: its share of op time


@dataclass(frozen=True)
class Evidence:
    """One figure from the analysis a proposal rests on."""

    kind: EvidenceKind
    subject: str  # the op type, scope path or quantity
    share: float  # 0..1, of the base `kind` names (CONCURRENCY: the ratio itself)
    detail: str = ""  # how the figure was obtained, for the report

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind.value,
            "subject": self.subject,
            "share": self.share,
            "detail": self.detail,
        }


@dataclass(frozen=True)
class Rival:
    """Another candidate a proposal must beat to be advised: timed against the
    proposal's candidate in the same run, each in a worker process, after its
    outputs were compared with the baseline's (the same check as a proposal's).

    A rival is a broader change than the proposal's: it changes all the proposal
    changes and more (whole-program XLA compiles every op of a region set, and all
    the others). So the proposal's change is the simpler of the two, and is advised
    when their A/B cannot tell them apart (`tfpgo.proposer.trials.advised`)."""

    rule: str  # the rule whose change the rival is
    worker_flags: tuple[str, ...]
    rtol: float = 1e-3  # its numerics check's tolerance, as `Proposal.rtol`/`atol`
    atol: float = 1e-5
    other_random_numbers: bool = False  # as `Proposal.other_random_numbers`


# The suffix of a narrower proposal's rule (`Proposal.refine`): `xla_regions_kept`.
NARROWED = "_kept"


def family(rule: str) -> str:
    """The rule a narrowed proposal's rule comes from: `x_kept_2` -> `x`. The
    proposals of one family test one question in turn (`Proposal.tests`)."""
    return rule.partition(NARROWED)[0]


def narrowed(rule: str) -> str:
    """The rule of the proposal narrowed from `rule`'s: `x` -> `x_kept` ->
    `x_kept_2` -> `x_kept_3`, one name per round."""
    base, kept, round_text = rule.partition(NARROWED)
    if not kept:
        return rule + NARROWED
    return f"{base}{NARROWED}_{int(round_text.lstrip('_') or 1) + 1}"


class NotApplicable(Exception):
    """A proposal cannot be applied to the loaded step; the message says why."""


@dataclass(frozen=True)
class Proposal:
    """One change to the profiled step: what it is, why, and how to apply it.

    A change is applied one of two ways. `apply` builds the candidate from the
    loaded ModelCase in this process, without touching the baseline. A change
    TensorFlow only takes before its runtime starts (thread pools) cannot be
    made in this process honestly: `worker_flags` name it for
    `tfpgo.proposer.worker`, and baseline and candidate each run in a fresh
    process. Nothing here claims the change helps; only the A/B measurement in
    `tfpgo.proposer.blocks` decides.
    """

    rule: str  # the rule module that proposed it
    change: str  # what is changed, in words
    reason: str  # the rule's reading of the evidence
    evidence: tuple[Evidence, ...]
    apply: Callable[[ModelCase], ModelCase] | None = None
    worker_flags: tuple[str, ...] = ()
    # Tolerance of the numerics check (tfpgo.proposer.numerics): relative and
    # absolute; both 0 for a change that runs the same kernels (exact).
    rtol: float = 1e-3
    atol: float = 1e-5
    # The candidate draws other random numbers for the same seeds (XLA's generator):
    # on a step with random ops its numerics cannot be compared.
    other_random_numbers: bool = False
    # Candidates it must also beat, each a broader change (`xla_regions` against
    # whole-program XLA): a rival is advised instead only when measured faster
    # (tfpgo.proposer.trials).
    rivals: tuple[Rival, ...] = ()
    # How many proposals of its family (`family`: it and its narrowings) may be
    # measured: each is judged at Holm's level for that many tests (blocks.holm_confidence).
    tests: int = 1
    # When the candidate is not advised: a narrower proposal made from the baseline's
    # and the candidate's op profiles (written into the given directory), or why
    # there is none (`xla_regions` keeps the regions that won, re-profiled).
    refine: Callable[[OpProfile, OpProfile, Path], Proposal | str] | None = None

    def __post_init__(self) -> None:
        if (self.apply is None) == (not self.worker_flags):
            raise ValueError(f"{self.rule}: a proposal needs exactly one of apply, worker_flags")
        if self.rivals and not self.worker_flags:
            raise ValueError(f"{self.rule}: rivals run in worker processes, as the candidate")
        if self.tests < 1:
            raise ValueError(f"{self.rule}: a proposal is at least one test")

    def to_json(self) -> dict[str, Any]:
        return advice_json(self.rule, self.change, self.reason, self.evidence)


def advice_json(rule: str, change: str, reason: str, evidence: tuple[Evidence, ...]) -> dict:
    """What a proposal says, as written in optimize.json (proposals and trials alike)."""
    return {
        "rule": rule,
        "change": change,
        "reason": reason,
        "evidence": [item.to_json() for item in evidence],
    }
