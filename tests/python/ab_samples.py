"""Constructed A/B samples for --tune's loop, in place of measured ones: tests
whose subject is what the loop decides from a ratio, not the machine's times."""

from __future__ import annotations

from pathlib import Path

from tfpgo.ab import paired
from tfpgo.ab.paired import Rounds
from tfpgo.ab.result import ABResult
from tfpgo.iree import alternation
from tfpgo.iree.alternation import Request
from tfpgo.tune import loop

# A constructed call's jitter: each round's calls a little apart, alike on both arms.
_JITTER = (1.0, 1.004, 0.997, 1.002, 0.999, 1.003, 0.998, 1.001)


def rounds(ratio: float, count: int = 24, order: tuple[int, ...] = (0, 1)) -> Rounds:
    """An alternation process whose candidate (arm 1) takes `ratio` times the
    baseline's 10 ms, each call jittered by a fraction of a percent."""
    rows = tuple(
        (
            round(10e6 * _JITTER[i % len(_JITTER)]),
            round(10e6 * ratio * _JITTER[(i + 3) % len(_JITTER)]),
        )
        for i in range(count)
    )
    return Rounds(rows, order)


def result(ratio: float) -> ABResult:
    """The paired A/B's result on constructed processes at `ratio`."""
    plan = paired.Plan(paired.MIN_PROCESSES, 1.0, 2)
    return paired.run(lambda order: rounds(ratio, order=order), plan)


def injected_abs(monkeypatch, *ratios: float) -> list[ABResult]:
    """The loop's first A/Bs return these ratios; later ones are measured."""
    results = [result(ratio) for ratio in ratios]
    measured = loop._ab
    monkeypatch.setattr(loop, "_ab", lambda *args: results.pop(0) if results else measured(*args))
    return results


def constructed_alternation(
    monkeypatch, baseline: Path, share: float, timed: list[Path] | None = None
) -> None:
    """Every alternation process returns constructed rounds: a call of `baseline`
    takes 10 ms, of any other program `share` of that (jittered as `rounds`);
    each process's vmfbs are appended to `timed`, arm by arm."""

    def alternate(request: Request, scratch: Path, what: str) -> Rounds:
        arms = [Path(arm.vmfb) for arm in request.arms]
        if timed is not None:
            timed.extend(arms)
        shares = [1.0 if vmfb == baseline else share for vmfb in arms]
        rows = tuple(
            tuple(
                round(10e6 * s * _JITTER[(i + 3 * a) % len(_JITTER)]) for a, s in enumerate(shares)
            )
            for i in range(24)
        )
        return Rounds(rows, request.load_order)

    monkeypatch.setattr(alternation, "alternate", alternate)
