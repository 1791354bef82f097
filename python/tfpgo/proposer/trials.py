"""What `--optimize` measured of each proposal (`Trial`, `RivalTrial`, as
optimize.json stores them) and what it advises: pure functions of the records,
so readers recompute the advice from the stored samples.

The advice of a proposal with rivals (`xla_regions` against whole-program XLA),
each interval at the trial's confidence (95%, or Holm's level in a family of
narrowed proposals, `blocks.holm_confidence`):

* the candidate is `advised` when it helps against the baseline and no rival was
  measured faster: the interval of candidate / rival wholly above 1. When that
  interval holds 1 there is no difference, and the candidate is the simpler of
  the two: a rival is a broader change (it changes all the candidate changes and
  more: whole-program XLA compiles every op of a region set and all the others),
  so the one with fewer ops under XLA is advised;
* a rival is advised instead (`advised_rival`) when the candidate is not, the
  rival helps against the baseline, its outputs passed the same numerics check as
  a candidate's (or could not be checked and `--optimize-unchecked` timed it,
  which its numerics text says), and it was measured faster than the candidate,
  or the candidate does not help and was not measured faster than it;
* otherwise nothing: the baseline stays.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from tfpgo.ab.result import ABResult, Verdict
from tfpgo.proposer.blocks import ABSamples
from tfpgo.proposer.numerics import allows_timing
from tfpgo.proposer.proposal import Evidence, advice_json, family

# Why a proposal was not measured although it could have been (`Trial.not_tried`).
BUDGET_SPENT = "the budget was spent"


class Difference(enum.Enum):
    """A candidate against a rival, by the interval of their A/B (candidate / rival)."""

    RIVAL_FASTER = "rival faster"  # wholly above 1
    NO_DIFFERENCE = "no difference"  # holds 1 (or no interval: fewer than 2 blocks)
    CANDIDATE_FASTER = "candidate faster"  # wholly below 1


@dataclass(frozen=True)
class RivalTrial:
    """A proposal's candidate timed against a rival's (`Proposal.rivals`): the A/B
    with the rival as the baseline arm, so a ratio below 1 says the candidate wins;
    and the rival timed against the baseline in the same run (`own_samples`, the
    baseline as arm A), so that it can be advised in the candidate's place. A rival
    whose numerics check forbade timing it has its `numerics` and no samples."""

    rule: str
    samples: ABSamples | None
    result: ABResult | None
    own_samples: ABSamples | None = None
    own_result: ABResult | None = None
    numerics: str = ""  # its outputs against the baseline's (NumericsCheck.describe)

    @property
    def difference(self) -> Difference | None:
        """How the candidate compares with it; None when it was not timed."""
        if self.result is None:
            return None
        if self.result.low is not None and self.result.low > 1:
            return Difference.RIVAL_FASTER
        if self.result.high is not None and self.result.high < 1:
            return Difference.CANDIDATE_FASTER
        return Difference.NO_DIFFERENCE

    @property
    def may_be_advised(self) -> bool:
        """It helps against the baseline, and its numerics allowed timing it."""
        own = self.own_result
        return own is not None and own.verdict is Verdict.HELPS and allows_timing(self.numerics)

    def to_json(self) -> dict[str, Any]:
        own = None
        if self.own_samples is not None and self.own_result is not None:
            own = {"samples": self.own_samples.to_json(), "result": self.own_result.to_json()}
        return {
            "rule": self.rule,
            "numerics": self.numerics,
            "samples": self.samples.to_json() if self.samples else None,
            "result": self.result.to_json() if self.result else None,
            "against_baseline": own,
            "difference": self.difference.value if self.difference else None,
        }


@dataclass(frozen=True)
class Trial:
    """One proposal and what came of it: measured, or the reason it was not."""

    rule: str
    change: str
    reason: str
    evidence: tuple[Evidence, ...]
    not_applicable: str = ""  # why it was not applied; "" when measured
    samples: ABSamples | None = None
    result: ABResult | None = None  # with a second A/B, the worse of the two
    numerics: str = ""  # the numerics check: what was restored, compared, found
    rivals: tuple[RivalTrial, ...] = ()
    # The second A/B of a gain under the noise floor (ab.wants_second), or None.
    samples_again: ABSamples | None = None
    not_tried: str = ""  # why an applicable proposal was not measured (BUDGET_SPENT)
    # Holm's bookkeeping (blocks.holm_confidence): the tests of its family, and how many
    # trials of the family measured before it helped; its results' confidence follows.
    tests: int = 1
    rejected_before: int = 0

    def to_json(self) -> dict[str, Any]:
        instead = advised_rival(self)
        return {
            **advice_json(self.rule, self.change, self.reason, self.evidence),
            "not_applicable": self.not_applicable,
            "not_tried": self.not_tried,
            "numerics": self.numerics,
            "samples": self.samples.to_json() if self.samples else None,
            "samples_again": self.samples_again.to_json() if self.samples_again else None,
            "result": self.result.to_json() if self.result else None,
            "multiple_testing": {
                "tests": self.tests,
                "rejected_before": self.rejected_before,
                "confidence": self.result.confidence if self.result else None,
            },
            "rivals": [rival.to_json() for rival in self.rivals],
            "advised": advised(self),
            "advised_instead": instead.rule if instead else None,
        }


def helps(trial: Trial) -> bool:
    return trial.result is not None and trial.result.verdict is Verdict.HELPS


def faster_rival(trial: Trial) -> RivalTrial | None:
    """The first rival measured faster than the trial's candidate (the interval of
    candidate / rival wholly above 1), or None."""
    return next((r for r in trial.rivals if r.difference is Difference.RIVAL_FASTER), None)


def advised(trial: Trial) -> bool:
    """Whether the trial's change is advised: it helps against the baseline and no
    rival was measured faster (module docstring: on no difference, the candidate
    is the simpler)."""
    return helps(trial) and faster_rival(trial) is None


def advised_rival(trial: Trial) -> RivalTrial | None:
    """The rival advised in place of a trial's change that is not (module
    docstring), the fastest against the baseline if several may be; or None."""
    if advised(trial):
        return None
    allowed = [Difference.RIVAL_FASTER]
    if not helps(trial):
        allowed.append(Difference.NO_DIFFERENCE)
    candidates = [r for r in trial.rivals if r.may_be_advised and r.difference in allowed]
    return min(candidates, key=lambda r: r.own_result.ratio if r.own_result else 1.0, default=None)


def rejected_before(trials: list[Trial], rule: str) -> int:
    """How many measured trials of `rule`'s family helped: Holm's rejections so far."""
    return sum(1 for trial in trials if family(trial.rule) == family(rule) and helps(trial))
