"""Constructed A/B samples for --tune's loop, in place of measured ones: tests
whose subject is what the loop decides from a ratio, not the machine's times."""

from __future__ import annotations

from tfpgo.proposer.ab import ABSamples
from tfpgo.tune import loop


def samples(ratio: float) -> ABSamples:
    """Five blocks an arm, the candidate `ratio` times the baseline's time."""
    baseline = (10.0, 10.1, 9.9, 10.05, 9.95)
    return ABSamples(
        tuple((int(ms * 1e6),) for ms in baseline),
        tuple((int(ms * ratio * 1e6),) for ms in reversed(baseline)),
        ("AB", "BA", "AB", "BA", "AB"),
    )


def injected_abs(monkeypatch, *ratios: float) -> list[ABSamples]:
    """The loop's first A/Bs return these ratios; later ones are measured."""
    results = [samples(ratio) for ratio in ratios]
    measured = loop._ab
    monkeypatch.setattr(loop, "_ab", lambda *args: results.pop(0) if results else measured(*args))
    return results
