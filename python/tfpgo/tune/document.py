"""`tune.json` (format `tfpgo.tune`, version 1; docs/formats.md): what `--tune`
tried, measured and kept, as typed records the loop writes and the report reads."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tfpgo.ab.result import ABResult
from tfpgo.documents import new_header, read_versioned, write_compact_json
from tfpgo.iree.output_check import FLOAT32
from tfpgo.iree.program import PROGRAM_VMFB
from tfpgo.iree.run import DEVICE

FORMAT = "tfpgo.tune"
VERSION = 1
TUNE_DOCUMENT = "tune.json"


@dataclass(frozen=True)
class CandidateTrial:
    """One candidate: what it changes, and what became of it."""

    name: str
    change: str
    outcome: str  # "kept", "rejected", "skipped" or "not tried"
    reason: str
    result: ABResult | None = None  # against the best program before it
    max_abs: float | None = None  # |IREE - TensorFlow| over the outputs of one run

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "change": self.change,
            "outcome": self.outcome,
            "reason": self.reason,
            "ab": self.result.to_json() if self.result else None,
            "max_abs": self.max_abs,
        }

    @classmethod
    def from_json(cls, document: dict[str, Any]) -> CandidateTrial:
        result = document["ab"]
        return cls(
            document["name"],
            document["change"],
            document["outcome"],
            document["reason"],
            ABResult.from_json(result) if result is not None else None,
            document["max_abs"],
        )


@dataclass(frozen=True)
class Decision:
    """One change at one place: the dispatch it targets ("" for a whole-program
    option), the tf ops that dispatch ran, what changed, the time there over the
    profiled runs before and after (None: the candidate was rejected before its
    program was profiled), and whether it was kept."""

    candidate: str
    dispatch: str
    tf_ops: tuple[str, ...]
    change: str
    before_ps: int
    after_ps: int | None
    kept: bool

    def to_json(self) -> dict[str, Any]:
        return {**vars(self), "tf_ops": list(self.tf_ops)}

    @classmethod
    def from_json(cls, document: dict[str, Any]) -> Decision:
        return cls(**{**document, "tf_ops": tuple(document["tf_ops"])})


@dataclass(frozen=True)
class EndToEnd:
    """The tuned program against the original, timed in the same run: a run's
    time (geometric mean of the A/B blocks), the ratio and its 95% interval, and
    the largest |IREE - TensorFlow| over the tuned program's outputs."""

    baseline_ps: int
    tuned_ps: int
    ratio: float
    ci_low: float | None
    ci_high: float | None
    max_abs: float
    verdict: str  # "helps": the tuned program is kept; otherwise the original stays

    @classmethod
    def of(cls, result: ABResult, max_abs: float) -> EndToEnd:
        return cls(
            round(result.baseline_ms * 1e9),
            round(result.candidate_ms * 1e9),
            result.ratio,
            result.low,
            result.high,
            max_abs,
            result.verdict.value,
        )


@dataclass(frozen=True)
class OpChange:
    """A tf op's compiled time over the profiled runs before and after tuning."""

    name: str
    tf_self_ps: int
    before_ps: int
    after_ps: int


@dataclass(frozen=True)
class Tuned:
    """The kept program, its profile, per tf op its time before and after, and
    IREE's CPU driver it runs on."""

    vmfb: str
    profile: str
    ops: tuple[OpChange, ...]  # largest saving first
    driver: str = DEVICE  # "local-task" in documents before the driver was tuned


@dataclass(frozen=True)
class HeldBack:
    """A hot dispatch of the program --tune leaves that runs below 85% of its
    roofline bound: the fraction it reached, what sets the bound ("memory" or
    "compute"), and what was tried on it, one line each with its measured
    ratio (tile variants on its benchmark and in place, whole-program options)."""

    dispatch: str
    fraction: float
    bound_by: str
    tries: tuple[str, ...]


@dataclass(frozen=True)
class TuneDocument:
    budget_s: float
    runs: int  # the profiled runs Decision and OpChange times cover
    trials: tuple[CandidateTrial, ...]
    decisions: tuple[Decision, ...]
    flags: tuple[str, ...]  # iree-compile flags of the kept program
    tuned: Tuned | None  # None: nothing won, or the whole was not confirmed
    end_to_end: EndToEnd | None  # whenever a change was kept and the final A/B ran
    # Why the kept changes could not be timed against the original (an IREE tool
    # killed: a hang, or the stage's deadline); "" when they were, or none was kept.
    unconfirmed: str = ""
    # Each hot dispatch of the original program and the fraction of this machine's
    # limit (its roofline bound over its time) it reached; () when not known.
    at_limit: tuple[tuple[str, float], ...] = ()
    tune_s: float = 0.0  # what the stage took, wall-clock (0 in documents before it)
    # The tuning database's records of another CPU or compiler version, one line
    # each: never applied (`Records.stale`).
    stale: tuple[str, ...] = ()
    # The original program's fraction of this machine's limit as a whole
    # (`roofline.model_fraction`); None when the limit is not known.
    limit_fraction: float | None = None
    # The hot dispatches of the program --tune leaves still below 85% of their
    # bound, and why (empty when the limit is not known, or none is).
    held_back: tuple[HeldBack, ...] = ()
    # What the kept program computes in (output_check.program_precision); the
    # budget --precision bf16 allowed (None: float32 only), and where the kept
    # program computes in less, its outputs' error against TensorFlow's
    # relative to their largest magnitude.
    precision: str = FLOAT32
    max_output_error: float | None = None
    output_error: float | None = None

    @property
    def kept(self) -> tuple[str, ...]:
        return tuple(trial.name for trial in self.trials if trial.outcome == "kept")

    def to_json(self) -> dict[str, Any]:
        tuned = self.tuned
        return {
            **new_header(FORMAT, VERSION, PROGRAM_VMFB),
            "budget_s": self.budget_s,
            "runs": self.runs,
            "trials": [trial.to_json() for trial in self.trials],
            "decisions": [decision.to_json() for decision in self.decisions],
            "kept": list(self.kept),
            "flags": list(self.flags),
            "tuned": None
            if tuned is None
            else {
                "vmfb": tuned.vmfb,
                "profile": tuned.profile,
                "driver": tuned.driver,
                "ops": [vars(op) for op in tuned.ops],
            },
            "end_to_end": vars(self.end_to_end) if self.end_to_end else None,
            "unconfirmed": self.unconfirmed,
            "at_limit": [{"dispatch": name, "fraction": f} for name, f in self.at_limit],
            "tune_s": self.tune_s,
            "stale": list(self.stale),
            "limit_fraction": self.limit_fraction,
            "held_back": [vars(held) for held in self.held_back],
            "precision": self.precision,
            "max_output_error": self.max_output_error,
            "output_error": self.output_error,
        }

    def write(self, path: Path) -> None:
        write_compact_json(path, self.to_json())

    @classmethod
    def read(cls, path: Path) -> TuneDocument:
        return read_versioned(path, FORMAT, cls.from_json)

    @classmethod
    def from_json(cls, document: dict[str, Any]) -> TuneDocument:
        tuned = document["tuned"]
        return cls(
            float(document["budget_s"]),
            int(document["runs"]),
            tuple(CandidateTrial.from_json(trial) for trial in document["trials"]),
            tuple(Decision.from_json(decision) for decision in document["decisions"]),
            tuple(document["flags"]),
            None
            if tuned is None
            else Tuned(
                tuned["vmfb"],
                tuned["profile"],
                tuple(OpChange(**op) for op in tuned["ops"]),
                str(tuned.get("driver", DEVICE)),
            ),
            EndToEnd(**document["end_to_end"]) if document["end_to_end"] else None,
            document.get("unconfirmed", ""),
            tuple(
                (item["dispatch"], float(item["fraction"])) for item in document.get("at_limit", ())
            ),
            float(document.get("tune_s", 0.0)),
            tuple(document.get("stale", ())),
            _optional_float(document.get("limit_fraction")),
            tuple(
                HeldBack(h["dispatch"], float(h["fraction"]), h["bound_by"], tuple(h["tries"]))
                for h in document.get("held_back", ())
            ),
            str(document.get("precision", FLOAT32)),
            _optional_float(document.get("max_output_error")),
            _optional_float(document.get("output_error")),
        )


def _optional_float(value: Any) -> float | None:
    return None if value is None else float(value)
