"""`tune.json` (format `tfpgo.tune`, version 1; docs/formats.md): what `--tune`
tried, measured and kept, as typed records the loop writes and the report reads."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tfpgo.documents import expect_format, new_header, read_json, write_compact_json
from tfpgo.proposer.ab import ABResult

FORMAT = "tfpgo.tune"
VERSION = 1
TUNE_DOCUMENT = "tune.json"


@dataclass(frozen=True)
class Trial:
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
    def from_json(cls, document: dict[str, Any]) -> Trial:
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
class OpChange:
    """A tf op's compiled time over the profiled runs before and after tuning."""

    name: str
    tf_self_ps: int
    before_ps: int
    after_ps: int


@dataclass(frozen=True)
class Tuned:
    """The kept program against the original, timed in the same run and profiled."""

    vmfb: str
    profile: str
    result: ABResult
    max_abs: float
    ops: tuple[OpChange, ...]  # largest saving first


@dataclass(frozen=True)
class TuneDocument:
    budget_s: float
    runs: int  # the profiled runs OpChange times cover
    trials: tuple[Trial, ...]
    flags: tuple[str, ...]  # iree-compile flags of the kept program
    tuned: Tuned | None  # None: nothing won

    @property
    def kept(self) -> tuple[str, ...]:
        return tuple(trial.name for trial in self.trials if trial.outcome == "kept")

    def to_json(self) -> dict[str, Any]:
        tuned = self.tuned
        return {
            **new_header(FORMAT, VERSION, "model.iree.vmfb"),
            "budget_s": self.budget_s,
            "runs": self.runs,
            "trials": [trial.to_json() for trial in self.trials],
            "kept": list(self.kept),
            "flags": list(self.flags),
            "tuned": None
            if tuned is None
            else {
                "vmfb": tuned.vmfb,
                "profile": tuned.profile,
                "ab": tuned.result.to_json(),
                "max_abs": tuned.max_abs,
                "ops": [vars(op) for op in tuned.ops],
            },
        }

    def write(self, path: Path) -> None:
        write_compact_json(path, self.to_json())

    @classmethod
    def read(cls, path: Path) -> TuneDocument:
        document = read_json(path)
        expect_format(path, document, FORMAT)
        tuned = document["tuned"]
        return cls(
            float(document["budget_s"]),
            int(document["runs"]),
            tuple(Trial.from_json(trial) for trial in document["trials"]),
            tuple(document["flags"]),
            None
            if tuned is None
            else Tuned(
                tuned["vmfb"],
                tuned["profile"],
                ABResult.from_json(tuned["ab"]),
                float(tuned["max_abs"]),
                tuple(OpChange(**op) for op in tuned["ops"]),
            ),
        )
