"""A step as the user's loop sees it: wall-clock per call, engines interleaved.

Dispatch time summed is not what a training loop waits for: each call also
pays the runtime's overhead, the arguments' conversion, and the threads'
wake-up. `interleaved` times whole Python calls (`time.perf_counter` around
each, conversion included) of several engines in one process, one call of each
in turn, so that what the machine does meanwhile falls on all of them alike;
its summary is the median with a distribution-free 95% interval (the order
statistics a binomial gives, no assumption on the spikes' shape).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from tfpgo.ab.turns import turn_order

# Calls of each arm before timing: traces, compiles, caches, thread pools.
WARMUP_CALLS = 3


@dataclass(frozen=True)
class WallClock:
    """One arm's calls: how many, their median and its 95% interval (seconds)."""

    calls: int
    median_s: float
    low_s: float
    high_s: float

    def text(self) -> str:
        return f"{self.median_s * 1e3:.3f} ms [{self.low_s * 1e3:.3f}, {self.high_s * 1e3:.3f}]"


def interleaved(
    arms: Mapping[str, Callable[[], Any]],
    seconds: float,
    clock: Callable[[], float] = time.perf_counter,
    max_rounds: int = 100_000,
) -> dict[str, WallClock]:
    """Each arm called in turn (tfpgo.ab.turns: the order rotating every round,
    so no arm always follows the same one) until `seconds` have passed, at least
    5 rounds; each call timed alone."""
    names = list(arms)
    for name in names:
        for _ in range(WARMUP_CALLS):
            arms[name]()
    samples: dict[str, list[float]] = {name: [] for name in names}
    ends = clock() + seconds
    for round_index in range(max_rounds):
        for name in (names[arm] for arm in turn_order(round_index, len(names))):
            started = clock()
            arms[name]()
            samples[name].append(clock() - started)
        if round_index >= 4 and clock() >= ends:
            break
    return {name: summary(times) for name, times in samples.items()}


def summary(times: list[float]) -> WallClock:
    """The median of `times` and its 95% interval: the order statistics k and
    n-k+1, k from the normal approximation of a Binomial(n, 1/2) at every n,
    rounded down, and at least 1. Rounding down makes it conservative: from
    n = 6 on it covers the median at least 95% of the time (the extremes, 97%
    to 99.8%, up to n = 10; 96.5% at n = 100, 95.4% at 1,000). Below n = 6 it
    is the extremes, which cover less (93.75% at n = 5, the fewest calls
    `interleaved` makes)."""
    ordered = sorted(times)
    n = len(ordered)
    middle = n // 2
    median = ordered[middle] if n % 2 else (ordered[middle - 1] + ordered[middle]) / 2
    k = max(1, math.floor(n / 2 - 1.96 * math.sqrt(n) / 2))
    return WallClock(n, median, ordered[k - 1], ordered[n - k])


def tensorflow_arm(function: Any, inputs: tuple[Any, ...]) -> Callable[[], Any]:
    """A call of the `tf.function` as a user's loop makes it: numpy in, its
    outputs fetched to numpy (what `Step` returns)."""
    import tensorflow as tf

    def call() -> Any:
        return tf.nest.map_structure(lambda tensor: tensor.numpy(), function(*inputs))

    return call


def variable_values(function: Any, inputs: tuple[Any, ...]) -> Callable[[], None]:
    """Snapshots the variables `function` captures; the returned callable puts
    them back (a timed training step changes them)."""
    concrete = function.get_concrete_function(*inputs)
    saved = [(variable, variable.numpy()) for variable in concrete.variables]

    def restore() -> None:
        for variable, value in saved:
            variable.assign(value)

    return restore
