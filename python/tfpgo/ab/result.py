"""What an A/B says: its verdict, its result record, and how both are written."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from tfpgo.ab.intervals import CONFIDENCE


class Verdict(enum.Enum):
    HELPS = "helps"
    NO_EFFECT = "no measurable effect"
    HURTS = "hurts"


def decide(
    ratio: float, low: float | None, high: float | None, min_gain: float, min_loss: float
) -> Verdict:
    """`helps` when the whole interval lies below 1 and the ratio at least
    `min_gain` below it; `hurts` when the whole interval lies above 1 and the
    ratio more than `min_loss` above it; else no measurable effect (also without
    an interval). Each A/B states its own thresholds."""
    if high is not None and high < 1 and ratio < 1 - min_gain:
        return Verdict.HELPS
    if low is not None and low > 1 and ratio > 1 + min_loss:
        return Verdict.HURTS
    return Verdict.NO_EFFECT


@dataclass(frozen=True)
class ABResult:
    """An A/B's result: the candidate's time over the baseline's and its interval,
    the verdict, and how it was measured."""

    ratio: float  # candidate over baseline, from the pairs' trimmed mean log-ratio
    low: float | None  # the interval of the ratio; None with fewer than 2 pairs
    high: float | None
    verdict: Verdict
    baseline_ms: float  # the baseline's typical time (each A/B says which statistic)
    candidate_ms: float
    pairs: int  # the paired samples: blocks side by side, or rounds of calls
    confidence: float
    min_gain: float  # the least gain the verdict calls `helps`
    processes: int = 0  # the paired A/B's processes (tfpgo.ab.paired); 0: one process
    threads: int = 0  # IREE's worker threads in them
    pinned: bool = True  # each worker pinned to a CPU, or left to the scheduler

    def to_json(self) -> dict[str, Any]:
        return {
            "ratio": self.ratio,
            "low": self.low,
            "high": self.high,
            "verdict": self.verdict.value,
            "baseline_ms": self.baseline_ms,
            "candidate_ms": self.candidate_ms,
            "pairs": self.pairs,
            "confidence": self.confidence,
            "min_gain": self.min_gain,
            "processes": self.processes,
            "threads": self.threads,
            "pinned": self.pinned,
        }

    @classmethod
    def from_json(cls, document: dict[str, Any]) -> ABResult:
        """A result `to_json` wrote; one written before the fields were renamed
        has `blocks` and `noise` for `pairs` and `min_gain`."""
        return cls(
            float(document["ratio"]),
            None if document["low"] is None else float(document["low"]),
            None if document["high"] is None else float(document["high"]),
            Verdict(document["verdict"]),
            float(document["baseline_ms"]),
            float(document["candidate_ms"]),
            int(document["pairs"] if "pairs" in document else document["blocks"]),
            float(document["confidence"]),
            float(document["min_gain"] if "min_gain" in document else document["noise"]),
            int(document.get("processes", 0)),
            int(document.get("threads", 0)),
            bool(document.get("pinned", True)),
        )


def interval_text(result: ABResult) -> str:
    """`[0.712, 0.771] (95%)`: the ratio's interval and its confidence (Holm's
    levels in full: `(98.75%)`); `–` without one."""
    return bounds_text(result.low, result.high, result.confidence) or "–"


def bounds_text(low: float | None, high: float | None, confidence: float = CONFIDENCE) -> str:
    """`[0.712, 0.771] (95%)`, or "" without an interval: the one way tfpgo writes
    an A/B's interval (the Proposer, the tuning loop, their report tables)."""
    if low is None or high is None:
        return ""
    return f"[{low:.3f}, {high:.3f}] ({confidence * 100:.4g}%)"


def ratio_text(result: ABResult) -> str:
    """`0.742 [0.712, 0.771] (95%)`: the ratio, then its interval when it has one."""
    interval = bounds_text(result.low, result.high, result.confidence)
    return f"{result.ratio:.3f} {interval}" if interval else f"{result.ratio:.3f}"
