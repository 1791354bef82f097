"""The Proposer's A/B: a candidate TensorFlow step against the baseline, in blocks
of steps, and its verdict (the result record and its texts: tfpgo.ab).

Timing (`interleave`): both steps are warmed up first (unmeasured steps of
each arm: tracing, XLA compilation), then run in `repetitions` blocks of
`steps` steps each, the baseline and the candidate taking turns block by
block (tfpgo.ab.turns: AB, BA, AB, ...), so a slow phase of the
shared machine falls on both arms and neither always runs right after the
other. Each step's outputs are
fetched to host before the next starts; each step's wall time is kept.

Statistic (`judge`, a pure function of the stored samples): the samples of one
block are not independent (they share the block's machine state), so the unit
is the block: its mean step time. A repetition's two blocks run side by side,
so the unit of comparison is their pair: log(candidate block / baseline block).
The ratio is the 20% trimmed mean of the pairs' log-ratios, exponentiated; its
interval Student's t with the trimmed mean's standard error
(tfpgo.ab.trimmed). A slow phase of the machine falls on both blocks of
a pair, and a block a thread off its core makes twice as long is trimmed where
a mean of the blocks would follow it: on TensorFlow A/As of the zoo models
(10 blocks of 10 steps, two runs of 20 each), the median half-width was
narrower than Welch's t on the log block means in 9 of 10 (1.5x at the median),
covering 1 in 15-19 of 20 where Welch's covered it in 17-20 (docs/benchmarks.md,
"The Proposer's A/B").

Verdict: `helps` when the whole interval lies below 1 and the ratio is below
1 − `noise`; `hurts` when the whole interval lies above 1 and the ratio is
above 1 + `noise`; otherwise `no measurable effect`. `noise` (default 5%)
keeps changes too small to matter on a shared machine from being called
either way even when the interval is tight.

A second A/B (`wants_second`, `judge_twice`): a gain between `CONFIRM_FLOOR`
(3%) and `noise`, its whole interval below 1, is measured once more, and the
change helps only when both A/Bs help at the floor (each interval wholly below 1,
each ratio below 1 − floor); otherwise the one that does not help counts. A slow
drift of the machine can put a null change there within one run, rarely twice in
a row.

Several tests of one question (`holm_confidence`): a rule that narrows its change
and measures it again until one is advised tests up to m changes; each is judged
at Holm's level, α / (m − r) with r the earlier rejections, so that the chance of
advising any change that does not help stays under α = 1 − `CONFIDENCE`.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tfpgo.ab.intervals import CONFIDENCE, ratio_interval
from tfpgo.ab.result import ABResult, Verdict, decide
from tfpgo.ab.trimmed import trimmed
from tfpgo.ab.turns import turn_order

# The least effect either way a verdict names: on a shared machine, a TensorFlow
# step's changes under 5% are not worth advising even when the interval is tight.
NOISE = 0.05
# The statistic `judge` computes, as optimize.json's `method` records it: a
# document of an earlier statistic has its verdicts judged again by this one.
STATISTIC = (
    "ratio: the 20% trimmed mean of the log-ratios of each repetition's two blocks "
    "(mean step times), exponentiated; interval: Student's t with its Tukey-McLaughlin "
    "standard error"
)
# The gain a second A/B may confirm (module docstring). In the IREE tuning loop,
# O2 on MobileNetV2 measured 0.966 (interval 0.943-0.989) in one run and 1.006 in
# the next: one A/B alone does not settle a gain under NOISE.
CONFIRM_FLOOR = 0.03


@dataclass(frozen=True)
class ABSamples:
    """Per-step wall times (ns) of each block, and which arm ran first in it."""

    baseline_ns: tuple[tuple[int, ...], ...]
    candidate_ns: tuple[tuple[int, ...], ...]
    order: tuple[str, ...]  # "AB" (baseline first) or "BA", one per repetition

    def to_json(self) -> dict[str, Any]:
        return {
            "order": list(self.order),
            "baseline_ns": [list(block) for block in self.baseline_ns],
            "candidate_ns": [list(block) for block in self.candidate_ns],
        }

    @classmethod
    def from_json(cls, document: dict[str, Any]) -> ABSamples:
        return cls(
            tuple(tuple(int(x) for x in block) for block in document["baseline_ns"]),
            tuple(tuple(int(x) for x in block) for block in document["candidate_ns"]),
            tuple(document["order"]),
        )


def judge(samples: ABSamples, noise: float = NOISE, confidence: float = CONFIDENCE) -> ABResult:
    """The ratio, its interval and the verdict of stored samples (module docstring)."""
    logs_a = _log_block_means(samples.baseline_ns)
    logs_b = _log_block_means(samples.candidate_ns)
    if not logs_a or not logs_b:
        raise ValueError("A/B samples need at least one non-empty block on each side")
    pairs = [b - a for a, b in zip(logs_a, logs_b, strict=False)]
    ratio = math.exp(statistics.fmean(pairs))
    low = high = None
    if len(pairs) >= 2:
        estimate = trimmed(pairs)
        ratio, low, high = ratio_interval(estimate.log_ratio, estimate.se, estimate.df, confidence)
    return ABResult(
        ratio,
        low,
        high,
        decide(ratio, low, high, noise, noise),
        math.exp(statistics.fmean(logs_a)) / 1e6,
        math.exp(statistics.fmean(logs_b)) / 1e6,
        min(len(logs_a), len(logs_b)),
        confidence,
        noise,
    )


def wants_second(
    samples: ABSamples,
    noise: float = NOISE,
    floor: float = CONFIRM_FLOOR,
    confidence: float = CONFIDENCE,
) -> bool:
    """Whether the A/B shows a gain under `noise` that passes `floor` with its whole
    interval below 1: one a second A/B must confirm (`judge_twice`)."""
    return (
        judge(samples, noise, confidence).verdict is not Verdict.HELPS
        and judge(samples, floor, confidence).verdict is Verdict.HELPS
    )


def judge_twice(
    samples: ABSamples,
    again: ABSamples | None,
    noise: float = NOISE,
    floor: float = CONFIRM_FLOOR,
    confidence: float = CONFIDENCE,
) -> tuple[ABResult, ABResult | None]:
    """The verdict of an A/B, and of its second A/B when `wants_second` asked for
    one (`again`): then both are judged at `floor` and the worse counts: one that
    does not help, else the higher ratio. So the change helps only when both A/Bs
    help on their own; a lower second ratio whose interval reaches 1 confirms
    nothing. Returns the result that counts and the other (None without a second)."""
    if again is None:
        return judge(samples, noise, confidence), None
    first, second = judge(samples, floor, confidence), judge(again, floor, confidence)
    worse, better = sorted(
        (first, second), key=lambda result: (result.verdict is Verdict.HELPS, -result.ratio)
    )
    return worse, better


def holm_confidence(tests: int, rejected: int, confidence: float = CONFIDENCE) -> float:
    """The confidence of an interval that tests the next of `tests` hypotheses,
    `rejected` of those tested before it rejected: Holm's level α / (tests −
    rejected), α = 1 − `confidence`. Tested in turn, each only after the earlier
    ones, the first rejection is judged at α / tests as Holm's smallest p-value is,
    and every rejection made so is one Holm's procedure on all `tests` makes too
    (those never tested counted as not rejected): the chance of any false
    rejection stays under α. One test (`tests` = 1) keeps `confidence`."""
    if not 0 <= rejected < tests:
        raise ValueError(f"{rejected} rejected of {tests} tests: nothing is left to test")
    return 1 - (1 - confidence) / (tests - rejected)


def second_text(other: ABResult | None) -> str:
    """What a verdict adds when `judge_twice` measured twice: the other A/B's ratio."""
    return "" if other is None else f" (the worse of two A/Bs; the other {other.ratio:.3f})"


def _log_block_means(blocks: tuple[tuple[int, ...], ...]) -> tuple[float, ...]:
    return tuple(math.log(statistics.fmean(block)) for block in blocks if block)


def interleave(
    baseline: Callable[[int], tuple[int, ...]],
    candidate: Callable[[int], tuple[int, ...]],
    repetitions: int,
    steps: int,
    progress: Callable[[str], None] | None = None,
) -> ABSamples:
    """Alternates blocks of the two arms. Each arm is a block runner: given a
    step count, it runs that many warmed-up steps and returns their wall times
    in ns (`step_timer` in this process, `tfpgo.proposer.worker` in another)."""
    if repetitions < 1 or steps < 1:
        raise ValueError("repetitions and steps must be positive")
    blocks: dict[str, list[tuple[int, ...]]] = {"A": [], "B": []}
    arms = {"A": baseline, "B": candidate}
    order = []
    for repetition in range(repetitions):
        first_second = "".join("AB"[arm] for arm in turn_order(repetition, 2))
        order.append(first_second)
        for arm in first_second:
            walls = tuple(arms[arm](steps))
            if len(walls) != steps:
                raise ValueError(f"a block of {steps} steps returned {len(walls)} times")
            blocks[arm].append(walls)
        if progress:
            a, b = (statistics.fmean(blocks[arm][-1]) / 1e6 for arm in "AB")
            progress(
                f"block {repetition + 1}/{repetitions}: baseline {a:.1f} ms, "
                f"candidate {b:.1f} ms a step"
            )
    return ABSamples(tuple(blocks["A"]), tuple(blocks["B"]), tuple(order))


def step_timer(step: Callable[[], Any], warmup: int) -> Callable[[int], tuple[int, ...]]:
    """A block runner for a step of this process, after running `warmup`
    unmeasured steps now (tracing, XLA compilation stay out of every block)."""
    for _ in range(warmup):
        _fetch(step())
    return lambda steps: time_steps(step, steps)


def time_steps(step: Callable[[], Any], steps: int) -> tuple[int, ...]:
    walls = []
    for _ in range(steps):
        start = time.perf_counter_ns()
        _fetch(step())
        walls.append(time.perf_counter_ns() - start)
    return tuple(walls)


def _fetch(outputs: Any) -> None:
    """Copies every output tensor to host: the step is complete afterwards."""
    import tensorflow as tf

    for tensor in tf.nest.flatten(outputs):
        if hasattr(tensor, "numpy"):
            tensor.numpy()
