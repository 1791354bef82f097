"""What `--tune` takes from the tuning database and gives back (`tfpgo.tune.db`).

Tune once, build many (LLVM's `-fprofile-use`, MIOpen's databases): a run
records, per program and target, every candidate it measured (a `Decision`,
keyed by the program it was measured on) and what it ended with (a
`ProgramRun`: the final flags, the tuning spec's text, the tiles, and the
program itself when a pass rewrote it, stored by digest beside the database
under `<db>.programs/`). A later run of the same program on the same target:

- after a run that finished within its budget, builds the recorded program
  (one compile of the very program it compiled, stored beside the database by
  digest: the same vmfb, byte for byte; one numerics check) and, with a budget,
  confirms it against
  the original end to end; `--tune-budget 0` builds it with no A/B at all;
- after a run the budget cut short, starts from the program it had kept and
  measures only what it had not: a candidate already measured on this exact
  program is not measured again (`--retune` forces it all).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from tfpgo.atomic import atomic_output_file
from tfpgo.errors import UserError
from tfpgo.tune.candidates import Variant
from tfpgo.tune.db import TuningDb, open_or_none
from tfpgo.tune.db_records import Decision, ProgramRun, Target, program_key, program_values
from tfpgo.tune.dispatch_tiles import SPEC, SPEC_FLAG, without_spec
from tfpgo.tune.document import Trial
from tfpgo.tune.roofline import MachineLimit, measure

PROGRAMS = ".programs"  # suffix of the directory beside the database: the programs kept


@dataclass(frozen=True)
class Records:
    """The database as one `--tune` run of `original` sees it: this host's target,
    the original program's key, and whether `--retune` ignores what is recorded."""

    db: TuningDb
    target: Target
    original: str
    values: str  # the original's weights (program_values)
    retune: bool

    @classmethod
    def open(
        cls, path: Path, original: Path, retune: bool, note: Callable[[str], None]
    ) -> Records | None:
        """The records of `path` (one note line and None when the file cannot be a
        tuning database: the run goes on without one)."""
        db = open_or_none(path, note)
        if db is None:
            return None
        return cls(db, Target.host(), program_key(original, ()), program_values(original), retune)

    def last_run(self) -> ProgramRun | None:
        """The last recorded run of the original program on this target (None with
        `--retune`)."""
        return None if self.retune else self.db.last_run(self.target, self.original)

    def limit(self, note: Callable[[str], None]) -> MachineLimit | None:
        """This machine's limit: recorded for its CPU, else measured once now and
        recorded (`tfpgo.tune.roofline`); None, after one note line, when the
        roofline kernel cannot run."""
        found = self.db.limit(self.target)
        if found is not None:
            return found
        try:
            found = measure()
        except UserError as error:
            note(f"tune: this machine's limit is not known ({error}); bounds without it")
            return None
        self.db.put_limit(self.target, found)
        note(
            f"tune: this machine's limit, measured once: {found.peak_gflops.get('f32', 0):.0f} "
            f"GFLOP/s f32, {found.bandwidth_bytes_s / 1e9:.0f} GB/s"
        )
        return found

    def decided(self, variant: Variant) -> dict[str, Decision]:
        """Per candidate name, what was recorded of it on this exact program ({}
        with `--retune`)."""
        if self.retune:
            return {}
        key = program_key(variant.stablehlo, variant.flags)
        return {d.name: d for d in self.db.decisions(self.target, key)}

    def record(
        self,
        measured: Sequence[tuple[Trial, Variant, tuple[str, ...], bool]],
        final: Variant,
        original: Path,
        run: RunSummary,
    ) -> None:
        """Each trial measured (with the program it was measured on, the flags it
        added, whether the final program kept it), and the run."""
        now = time.time()
        for trial, on, added, kept in measured:
            key = program_key(on.stablehlo, on.flags)
            self.db.add_decision(self.target, Decision.of_trial(trial, key, added, kept, now))
        kept = bool(final.flags or final.tiles or final.stablehlo != original)
        stored = self._store(final.stablehlo) if kept else ""
        spec = next((f for f in final.flags if f.startswith(SPEC_FLAG)), "")
        self.db.add_run(
            self.target,
            ProgramRun(
                self.original, run.model, run.finished,
                tuple(f"{SPEC_FLAG}{SPEC}" if f == spec else f for f in final.flags),
                Path(spec.removeprefix(SPEC_FLAG)).read_text() if spec else "",
                final.tiles, run.ratio, run.tune_s, run.untried, (), now, stored,
                self.values, final.stablehlo != original,
            ),
        )  # fmt: skip

    def variant_of(self, run: ProgramRun, original: Path, directory: Path) -> Variant | None:
        """The program `run` ended with, ready to compile in `directory` (its spec
        written there). For the same weights, the very program it compiled (stored:
        the same bytes, so the same vmfb); for other weights (a model retrained),
        this `original` with its flags, spec and tiles, unless a pass had rewritten
        the program (then None, as when the stored program is gone)."""
        stablehlo = original
        stored = self._programs() / f"{run.stablehlo}.mlir"
        if run.stablehlo and run.values == self.values and stored.is_file():
            stablehlo = stored
        elif run.rewritten:
            return None
        flags = without_spec(run.flags)
        if run.spec:
            spec = directory / SPEC
            spec.write_text(run.spec)
            flags = (*flags, f"{SPEC_FLAG}{spec}")
        return Variant(stablehlo, tuple(flags), run.tiles)

    def _store(self, stablehlo: Path) -> str:
        """Keeps a program beside the database, by the digest of its bytes."""
        data = stablehlo.read_bytes()
        name = hashlib.sha256(data).hexdigest()
        path = self._programs() / f"{name}.mlir"
        if not path.is_file():
            path.parent.mkdir(parents=True, exist_ok=True)
            with atomic_output_file(path, "wb") as handle:
                handle.write(data)
        return name

    def _programs(self) -> Path:
        return self.db.path.with_name(self.db.path.name + PROGRAMS)


@dataclass(frozen=True)
class RunSummary:
    """What a run recorded of itself beside its final program."""

    model: str
    finished: bool
    ratio: float | None
    tune_s: float
    untried: tuple[str, ...]


def from_record(decision: Decision) -> str:
    """A trial's reason when its outcome was taken from the database."""
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(decision.when))
    return f"as recorded on {when} for this program (--retune measures again): {decision.reason}"
