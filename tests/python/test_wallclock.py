"""tfpgo.runtime.wallclock on constructed calls and an injected clock: the order
the arms are called in, how long it runs, and the median's interval."""

import math

import pytest

from tfpgo.runtime.wallclock import WARMUP_CALLS, interleaved, summary


def test_arms_take_turns_each_round_starting_from_another():
    calls: list[str] = []
    now = [0.0]

    def clock() -> float:
        return now[0]

    def arm(name: str, cost: float):
        def call() -> None:
            calls.append(name)
            now[0] += cost

        return call

    timed = interleaved({"a": arm("a", 1.0), "b": arm("b", 3.0)}, seconds=40.0, clock=clock)
    measured = calls[2 * WARMUP_CALLS :]
    assert measured[:6] == ["a", "b", "b", "a", "a", "b"]  # the order rotates
    # 40 s of injected time at 4 s a round: 10 rounds, each arm's own cost each call.
    assert timed["a"].calls == timed["b"].calls == 10
    assert (timed["a"].median_s, timed["b"].median_s) == (1.0, 3.0)


def test_at_least_five_rounds_however_slow():
    now = [0.0]

    def slow() -> None:
        now[0] += 100.0

    timed = interleaved({"only": slow}, seconds=1.0, clock=lambda: now[0])
    assert timed["only"].calls == 5


def test_the_medians_interval_is_the_binomial_order_statistics():
    result = summary([float(value) for value in range(100, 0, -1)])
    assert result.median_s == 50.5
    # n = 100: k = floor(50 - 1.96 * 5) = 40, so the 40th and 61st of the sorted values.
    assert (result.low_s, result.high_s) == (40.0, 61.0)
    assert summary([2.0]).low_s == summary([2.0]).high_s == 2.0
    assert math.isclose(summary([1.0, 3.0]).median_s, 2.0)


@pytest.mark.parametrize("n", [5, 30, 1000])
def test_the_interval_holds_the_median(n):
    result = summary([float(value) for value in range(n)])
    assert result.low_s <= result.median_s <= result.high_s
