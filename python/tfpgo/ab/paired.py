"""An A/B as precise as this machine allows: paired calls, several processes, a
sequential decision.

Samples (`Rounds`, made by tfpgo.iree.alternation): in each process both
programs are loaded and run in turn, forward and reversed by rounds (A B, B A,
B A, A B, ...), each a block of a few timed calls, so each round is a pair of
neighbouring blocks. A block opens with `SWITCH_CALLS` untimed calls when the
program's call takes less than 100 ms (alternation's `switch_calls` and
`SWITCH_FREE_S`), with none when it takes 100 ms or more; where it opens with
them, it does so whichever program ran the block before (the same one where a
reversed round follows a forward one, or a forward one a reversed one).
A pair's log-ratio, log(t_B / t_A) of the blocks' median calls, is the unit:
the machine's slow phases fall on both blocks of a pair, and a drift cancels
over the alternating order.

One process: the 30% trimmed mean of its pairs' log-ratios, with its
standard error (`estimate`, tfpgo.ab.trimmed: robust to the calls a thread off
its core makes twice as long; why 30%: docs/tuning.md).

Several processes: memory layout can favour the program loaded first by several
percent (Mytkowicz et al., ASPLOS 2009), so the processes load them in random
order, and their estimates are combined with a random-effects model
(DerSimonian-Laird): `between` is the spread of the processes' true ratios
beyond what each one's own noise explains, and it widens the interval. With as
few as three processes that spread is itself uncertain, so the standard error
is never below the processes' own scatter about the mean (Hartung-Knapp) and
the interval takes Student's t with one degree of freedom fewer than the
processes. No single layout decides.

Sequential decision (`run`): after each process from `MIN_PROCESSES` on, the
combined interval is looked at; the A/B stops as soon as it says

- helps: the whole interval below 1, and the ratio at least `MIN_GAIN` below it;
- hurts: the whole interval above 1;
- no measurable effect: the whole interval within ±`EQUIVALENT` (2%);

or when the planned processes have run (then what the interval says, else no
measurable effect). Looking several times would raise the chance of a false
verdict; every look uses Pocock's constant boundary for the planned looks
(`boundary`), the z that a two-sided test crosses at any look with
probability `ALPHA` when nothing changed (a group-sequential design;
computed by simulating the looks' correlated statistics, fixed seed), at its
nominal level with Student's t.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from tfpgo.ab.intervals import ratio_interval
from tfpgo.ab.result import ABResult, Verdict, decide
from tfpgo.ab.trimmed import Estimate, trimmed

ALPHA = 0.05
TRIM = 0.3  # of each end of a process's pairs (module docstring)
EQUIVALENT = 0.02
MIN_GAIN = 0.01
MIN_PROCESSES = 3
# Untimed calls that open each program's block in a round, for a call under
# alternation.SWITCH_FREE_S (module docstring).
SWITCH_CALLS = 1
# Simulated sets of looks to find the boundary from (its Monte Carlo error on
# the level: about ±0.001).
BOUNDARY_DRAWS = 40_000


@dataclass(frozen=True)
class Rounds:
    """One process's calls: per round, each arm's median timed call (ns, by arm
    index), in the order `turns.mirrored_order` gives round r."""

    times_ns: tuple[tuple[int, ...], ...]
    load_order: tuple[int, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "times_ns": [list(row) for row in self.times_ns],
            "load_order": list(self.load_order),
        }

    @classmethod
    def from_json(cls, document: dict[str, Any]) -> Rounds:
        return cls(
            tuple(tuple(int(t) for t in row) for row in document["times_ns"]),
            tuple(int(i) for i in document["load_order"]),
        )


@dataclass(frozen=True)
class Combined:
    """The processes' estimates combined (module docstring)."""

    log_ratio: float
    se: float
    between: float  # the between-process standard deviation of the log-ratio
    processes: int
    pairs: int


def pair_logs(rounds: Rounds, baseline: int = 0, candidate: int = 1) -> list[float]:
    """Each round's log(t_candidate / t_baseline)."""
    return [math.log(row[candidate] / row[baseline]) for row in rounds.times_ns]


def estimate(rounds: Rounds, baseline: int = 0, candidate: int = 1) -> Estimate:
    """One process's log-ratio of `candidate` over `baseline` (module docstring)."""
    return trimmed(pair_logs(rounds, baseline, candidate), TRIM)


def combine(estimates: Sequence[Estimate]) -> Combined:
    """DerSimonian-Laird random effects over the processes' estimates."""
    if not estimates:
        raise ValueError("no process to combine")
    pairs = sum(e.pairs for e in estimates)
    weights = [1 / max(e.se, 1e-12) ** 2 for e in estimates]
    total = sum(weights)
    fixed = sum(w * e.log_ratio for w, e in zip(weights, estimates, strict=True)) / total
    q = sum(w * (e.log_ratio - fixed) ** 2 for w, e in zip(weights, estimates, strict=True))
    k = len(estimates)
    scale = total - sum(w * w for w in weights) / total
    tau2 = max(0.0, (q - (k - 1)) / scale) if k > 1 and scale > 0 else 0.0
    weights = [1 / (max(e.se, 1e-12) ** 2 + tau2) for e in estimates]
    total = sum(weights)
    mean = sum(w * e.log_ratio for w, e in zip(weights, estimates, strict=True)) / total
    se2 = 1 / total
    if k > 1:  # Hartung-Knapp: the processes' own spread, never below DerSimonian-Laird's
        spread = sum(w * (e.log_ratio - mean) ** 2 for w, e in zip(weights, estimates, strict=True))
        se2 = max(se2, spread / ((k - 1) * total))
    return Combined(mean, math.sqrt(se2), math.sqrt(tau2), k, pairs)


@lru_cache(maxsize=64)
def boundary(looks: tuple[int, ...], alpha: float = ALPHA) -> float:
    """Pocock's boundary for looks after these numbers of processes: the z whose
    crossing, at any look, has probability `alpha` when nothing changed. The
    statistic at a look after k of K equal processes is the mean of k standard
    normals scaled to unit variance; the boundary is the (1 - alpha) quantile of
    its largest absolute value over the looks, drawn BOUNDARY_DRAWS times."""
    if len(looks) == 1:
        return statistics.NormalDist().inv_cdf(1 - alpha / 2)
    draw = random.Random(48)
    largest = []
    for _ in range(BOUNDARY_DRAWS):
        total, done, peak = 0.0, 0, 0.0
        for look in looks:
            while done < look:
                total += draw.gauss(0, 1)
                done += 1
            peak = max(peak, abs(total) / math.sqrt(look))
        largest.append(peak)
    largest.sort()
    return largest[math.ceil((1 - alpha) * BOUNDARY_DRAWS) - 1]


def verdict(low: float, high: float, ratio: float, final: bool) -> Verdict | None:
    """What an interval of the ratio says (module docstring); None: look again."""
    said = decide(ratio, low, high, MIN_GAIN, 0.0)
    if said is not Verdict.NO_EFFECT:
        return said
    if final or (low >= 1 - EQUIVALENT and high <= 1 + EQUIVALENT):
        return Verdict.NO_EFFECT
    return None


@dataclass(frozen=True)
class Plan:
    """The processes an A/B may run (each `process_s` of alternation) and the
    threads (pinned to `cpus`, or unpinned with `cpus` empty) they run with."""

    processes: int
    process_s: float
    threads: int
    cpus: tuple[int, ...] = ()
    calls: int = 1  # timed calls of each program in a round
    placements: int = 1  # copies of each program a process loads
    switch_calls: int = SWITCH_CALLS  # untimed calls of each program in a round

    def looks(self) -> tuple[int, ...]:
        first = min(MIN_PROCESSES, self.processes)
        return tuple(range(first, self.processes + 1))


@dataclass(frozen=True)
class Interval:
    """The ratio of the processes' calls (candidate over baseline), its interval
    at `confidence`, and how it was made."""

    ratio: float
    low: float
    high: float
    confidence: float
    combined: Combined


def interval(processes: Sequence[Rounds], confidence: float) -> Interval:
    """The processes' combined ratio and its interval (module docstring), at
    `confidence` (Student's t, one degree of freedom fewer than the processes)."""
    combined = combine([estimate(rounds) for rounds in processes])
    freedom = max(combined.processes - 1, 1)
    ratio, low, high = ratio_interval(combined.log_ratio, combined.se, freedom, confidence)
    return Interval(ratio, low, high, confidence, combined)


def judge(processes: Sequence[Rounds], plan: Plan, final: bool) -> ABResult | None:
    """The verdict of these processes at a look of `plan` (None: look again)."""
    confidence = 2 * statistics.NormalDist().cdf(boundary(plan.looks())) - 1
    found = interval(processes, confidence)
    said = verdict(found.low, found.high, found.ratio, final)
    if said is None:
        return None
    baseline = statistics.median(row[0] for r in processes for row in r.times_ns) / 1e6
    return ABResult(
        found.ratio, found.low, found.high, said, baseline, baseline * found.ratio,
        found.combined.pairs, confidence, MIN_GAIN, found.combined.processes, plan.threads,
        bool(plan.cpus),
    )  # fmt: skip


def replay(processes: Sequence[Rounds], plan: Plan) -> ABResult:
    """What `run` decides when its processes measure these, in this order (all
    of `plan`'s processes)."""
    looks = plan.looks()
    for count in looks:
        judged = judge(processes[:count], plan, final=count == plan.processes)
        if judged is not None:
            return judged
    raise AssertionError("the last look always decides")


def run(
    process: Callable[[tuple[int, int]], Rounds],
    plan: Plan,
    shuffle: random.Random | None = None,
) -> ABResult:
    """The sequential A/B (module docstring): `process(load_order)` runs one
    alternation process of the baseline (arm 0) and the candidate (arm 1);
    the load order of each is random."""
    shuffle = shuffle or random.Random()
    done: list[Rounds] = []
    looks = plan.looks()
    for index in range(plan.processes):
        order = (0, 1) if shuffle.random() < 0.5 else (1, 0)
        done.append(process(order))
        if len(done) not in looks:
            continue
        judged = judge(done, plan, final=index == plan.processes - 1)
        if judged is not None:
            return judged
    raise AssertionError("the last look always decides")
