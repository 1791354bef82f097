"""`--optimize-budget`: which measurements start, and in what order.

The rule is `--tune`'s: a measurement starts only while the time left has room
for it, by its estimate. Under a budget the proposals are measured in the order
of the gain their profile promises (`promised`), so what the budget leaves out is
what the profile expected least of. A trial without room is recorded as not
tried ("the budget was spent", `tfpgo.proposer.trials.BUDGET_SPENT`); so are a
narrowing (its profile and the narrowed trial, estimated together) and the best
candidate's profile diff. A measurement that started with room and runs past its
estimate overruns the budget by at most itself: the stage ends within its budget
plus one measurement.

The estimate (`trial_steps`, `profile_steps`) counts the steps a trial runs, each
at the baseline's step time (`step_seconds`: the profiled steps' mean wall time,
the profiler's overhead included), times the largest ratio of measured to
estimated time among the trials measured so far (worker start-up, a slower
candidate; 1 before the first):

* a trial: 2 arms × repetitions × steps for each A/B it may run (against the
  baseline, a second A/B of a small gain, and two for each rival: against the
  candidate, and the rival against the baseline), plus warmup + 2 steps for each
  of its arms (the baseline, the candidate, each rival: the warmup and the
  numerics check's first steps);
* a profile: warmup + the profiled steps.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

from tfpgo.attribution.op_profile import OpProfile
from tfpgo.proposer.measure import ABSettings
from tfpgo.proposer.proposal import EvidenceKind, Proposal

# Evidence that is a share of the op time a change acts on (the others: a
# concurrency, a machine's report).
_SHARES = (EvidenceKind.OP_TYPE, EvidenceKind.SCOPE, EvidenceKind.NON_OP, EvidenceKind.OP_SIZE)


def promised(proposal: Proposal) -> float:
    """The share of op time the change acts on, by its evidence: the largest of
    its shares (op types, scopes, time on no op, small ops), its XLA regions'
    shares summed, or for a measured concurrency c, 1 − 1/c (the share of op time
    that ran beside other ops)."""
    regions = sum(e.share for e in proposal.evidence if e.kind is EvidenceKind.XLA_REGION)
    shares = [e.share for e in proposal.evidence if e.kind in _SHARES]
    overlap = [
        1 - 1 / e.share
        for e in proposal.evidence
        if e.kind is EvidenceKind.CONCURRENCY and e.share > 0
    ]
    return max([regions, *shares, *overlap])


def trial_steps(proposal: Proposal, settings: ABSettings) -> int:
    """The steps a trial of `proposal` may run (module docstring)."""
    rivals = len(proposal.rivals)
    timed = (2 + 2 * rivals) * 2 * settings.repetitions * settings.steps
    return timed + (2 + rivals) * (settings.warmup + 2)


def profile_run_steps(steps: int, settings: ABSettings) -> int:
    """The steps a profile of `steps` steps runs."""
    return settings.warmup + steps


def step_seconds(profile: OpProfile) -> float:
    """The baseline's step time, in seconds, from its profile."""
    if profile.step_wall_ps:
        return statistics.fmean(profile.step_wall_ps) / 1e12
    return profile.totals.wall_ps / max(len(profile.steps), 1) / 1e12


class Budget:
    """The time an `--optimize` stage may take, from its start (`clock()` now)."""

    def __init__(
        self, seconds: float, step_s: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.seconds, self.step_s, self.clock = seconds, step_s, clock
        self.deadline = clock() + seconds
        self._ratios: list[float] = []  # measured / estimated, per trial measured

    def estimate_s(self, steps: int) -> float:
        """Seconds `steps` steps are expected to take (module docstring)."""
        return steps * self.step_s * max(self._ratios, default=1.0)

    def has_room(self, steps: int) -> bool:
        """Whether the time left has room for `steps` steps."""
        return self.clock() + self.estimate_s(steps) <= self.deadline

    def took(self, steps: int, seconds: float) -> None:
        """A measurement of `steps` steps took `seconds`: later estimates scale by it."""
        if steps > 0 and self.step_s > 0:
            self._ratios.append(seconds / (steps * self.step_s))
