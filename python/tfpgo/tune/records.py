"""What `--tune` takes from the tuning database and gives back (`tfpgo.tune.db`).

Tune once, build many (LLVM's `-fprofile-use`, MIOpen's databases). A run
records, per program (its structure: `db_records.program_key`) and target:
every candidate it measured (a `CandidateRecord`, keyed by the program it was
measured on); what it ended with (a `ProgramRun`: the final flags, the tuning
spec's text, the tiles, and the program it compiled, stored by digest beside
the database under `<db>.programs/`); each dispatch its tile search climbed on
(a `TileRecord`, by root op); and this machine's limit, once per CPU. A later
run on the same target:

- after a finished run of the same program, compiles the stored program again
  (for the same weights the same bytes: the same vmfb) and checks it, then
  confirms it against the original by one A/B; `--tune-budget 0` writes it with
  no A/B at all;
- after a run of it the budget cut short, starts from the program it had kept,
  and no candidate already measured on this exact program is measured again;
- in any program, gives a dispatch whose root op has a tile record its recorded
  winner with no search. `--retune` ignores every record.
"""

from __future__ import annotations

import functools
import hashlib
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tfpgo.atomic import atomic_output_file
from tfpgo.errors import UserError
from tfpgo.iree.run import DEVICE
from tfpgo.tune.candidates import Variant
from tfpgo.tune.db import TuningDb, open_or_none
from tfpgo.tune.db_records import (
    CandidateRecord,
    ProgramRun,
    RootOp,
    Target,
    TileRecord,
    program_key,
    program_values,
    root_ops,
)
from tfpgo.tune.dispatch_tiles import Search
from tfpgo.tune.document import CandidateTrial
from tfpgo.tune.roofline import MachineLimit, measure
from tfpgo.tune.tile_climb import Prior, TileTrial
from tfpgo.tune.tile_configs import SPEC, SPEC_FLAG, without_spec

PROGRAMS = ".programs"  # suffix of the directory beside the database: the programs kept
# What a run's key adds when it allowed a lower precision (Records.open).
LOWER_PRECISION = "--precision=bf16"
SEEDS = 2  # records of the same op at other sizes a climb starts from


@dataclass(frozen=True)
class Records:
    """The database as one `--tune` run of `original` sees it: this host's target,
    the original program's key, and whether `--retune` ignores what is recorded."""

    db: TuningDb
    target: Target
    original: str
    values: str  # the original's weights (program_values)
    retune: bool
    model: str = ""  # what tile records name their model by (the output directory)
    # Each program's key once a run: reading a large program (ResNet50's weights)
    # for every candidate it meets would cost seconds each time. A run's program
    # files are written once, before they are keyed.
    _keys: dict[tuple[Path, tuple[str, ...], str], str] = field(
        default_factory=dict, compare=False, repr=False
    )
    # The dispatches whose climb the budget cut short this run: the run is then not
    # finished, and the next one resumes them.
    _cut: set[str] = field(default_factory=set, compare=False, repr=False)

    @classmethod
    def open(
        cls,
        path: Path,
        original: Path,
        retune: bool,
        note: Callable[[str], None],
        model: str = "",
        lower_precision: bool = False,
    ) -> Records | None:
        """The records of `path` (one note line and None when the file cannot be a
        tuning database: the run goes on without one). Runs that allowed a
        `lower_precision` (--precision bf16) are recorded apart, so that a run
        that does not never builds what they kept."""
        db = open_or_none(path, note)
        if db is None:
            return None
        allowed = (LOWER_PRECISION,) if lower_precision else ()
        key, values = program_key(original, allowed), program_values(original)
        return cls(db, Target.host(), key, values, retune, model)

    def last_run(self) -> ProgramRun | None:
        """The last recorded run of the original program on this target (None with
        `--retune`)."""
        return None if self.retune else self.db.last_run(self.target, self.original)

    def stale(self) -> tuple[str, ...]:
        """The database's targets of another CPU or iree-compile version, one line
        each (what differs, and what they hold): never applied here."""
        here = self.target
        return tuple(
            f"{s.target.differences(here)}: {s.tiles} tile records, {s.decisions} decisions, "
            f"{s.runs} runs"
            for s in self.db.stale(here)
            if (s.target.cpu, s.target.features, s.target.compiler)
            != (here.cpu, here.features, here.compiler)
        )

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

    def prior(self, dispatch: str, configurations: Path, flags: tuple[str, ...]) -> Prior | None:
        """What is recorded of a dispatch's root op on this target and flags, any
        model (`tile_climb.Recorded`): the newest record of the same op
        (name, indexing maps, element types, loop ranges) gives, when its search
        ended, its outcome with no search; when the time cut it short, a climb
        resumed from the best any record of the op reached, past every variant
        they timed. With none, records of the op at other loop ranges with a
        winner (nearest in size first: `nearest_first`; at most SEEDS) seed the
        climb. None with `--retune`, or when nothing is recorded."""
        if self.retune:
            return None
        root = _root_ops(configurations).get(dispatch)
        if root is None:
            return None
        target = Target.host(flags)
        exact = self.db.exact_records(target, root)
        if exact and exact[0].finished:
            newest = exact[0]
            winner = _winner(newest)
            outcome = "IREE's own tiles" if winner is None else f"{winner.ratio:.3f}"
            return Prior(f"from a record of {_whence(newest)}, {outcome})", True, winner)
        if exact:
            winners = [w for w in map(_winner, exact) if w is not None]
            seen = frozenset(v.config for record in exact for v in record.variants)
            return Prior(
                f"resumed from {len(exact)} search(es) the time cut short, the newest of "
                f"{_whence(exact[0])}), past {len(seen)} variants",
                winner=min(winners, key=lambda w: w.ratio, default=None),
                seen=seen,
            )
        seeds = [
            (record, winner.config)
            for record in nearest_first(root, self.db.seed_records(target, root))
            if (winner := _winner(record)) is not None
        ][:SEEDS]
        if not seeds:
            return None
        sizes = ", ".join("x".join(map(str, r.root.loops)) for r, _ in seeds)
        return Prior(
            f"seeded from records of the op at {sizes} (newest of {_whence(seeds[0][0])}))",
            seeds=tuple((record.iree_config(), winner) for record, winner in seeds),
        )

    def cut(self) -> frozenset[str]:
        """The dispatches whose climb the budget cut short so far this run."""
        return frozenset(self._cut)

    def record_search(
        self, found: Search, configurations: Path, flags: tuple[str, ...], program: Path
    ) -> None:
        """One tile record per dispatch the search climbed on, for its root op."""
        roots, now = _root_ops(configurations), time.time()
        key = self._key(program, flags)
        self._cut.update(found.cut)
        for dispatch in found.tried:
            if dispatch in roots and dispatch not in found.reused:
                record = TileRecord.of_search(
                    found, dispatch, roots[dispatch], self.model, key, now
                )
                self.db.add_tiles(Target.host(flags), record)

    def decided(self, variant: Variant) -> dict[str, CandidateRecord]:
        """Per candidate name, what was recorded of it on this exact program ({}
        with `--retune`)."""
        if self.retune:
            return {}
        key = self._key(variant.stablehlo, variant.flags, variant.driver)
        return {d.name: d for d in self.db.decisions(self.target, key)}

    def record(
        self,
        measured: Sequence[tuple[CandidateTrial, Variant, tuple[str, ...], bool]],
        final: Variant,
        original: Path,
        run: RunSummary,
    ) -> None:
        """Each trial measured (with the program it was measured on, the flags it
        added, whether the final program kept it), and the run: finished when
        `run` says so (every candidate tried) and no climb was cut short."""
        now = time.time()
        for trial, on, added, kept in measured:
            key = self._key(on.stablehlo, on.flags, on.driver)
            self.db.add_decision(
                self.target, CandidateRecord.of_trial(trial, key, added, kept, now)
            )
        kept = bool(
            final.flags or final.tiles or final.stablehlo != original or final.driver != DEVICE
        )
        stored = self._store(final.stablehlo) if kept else ""
        spec = next((f for f in final.flags if f.startswith(SPEC_FLAG)), "")
        self.db.add_run(
            self.target,
            ProgramRun(
                self.original, run.model, run.finished and not self._cut,
                tuple(f"{SPEC_FLAG}{SPEC}" if f == spec else f for f in final.flags),
                Path(spec.removeprefix(SPEC_FLAG)).read_text() if spec else "",
                final.tiles, run.ratio, run.tune_s, run.untried, (), now, stored,
                self.values, final.stablehlo != original, final.driver, run.vmfb if kept else "",
            ),
        )  # fmt: skip

    def rebuild_text(self, run: ProgramRun, vmfb: Path) -> str:
        """Whether `vmfb`, built again from `run`'s record, is the program that run
        kept, byte for byte, and if not, why (its record is of this target: the same
        CPU and iree-compile)."""
        if not run.vmfb:
            return (
                "not compared with it (its record, made before builds were compared, has no digest)"
            )
        if file_digest(vmfb) == run.vmfb:
            return "byte-identical to the program it kept"
        if run.values != self.values:
            return "not byte-identical to the program it kept: the model's weights differ"
        return (
            "not byte-identical to the program it kept, although the model, its weights, the "
            f"flags, the spec, iree-compile {self.target.compiler} and the CPU are the same: "
            "IREE's compile of this program is not deterministic"
        )

    def elsewhere(self) -> str:
        """The other targets (CPU, iree-compile) the database holds runs of this
        program for, as a clause ("" if none): why a run here finds no record."""
        others = [
            s.target.differences(self.target)
            for s in self.db.stale(self.target)
            if self.db.runs(s.target, self.original)
        ]
        return f"; it holds runs of it for {' and for '.join(others)}" if others else ""

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
        return Variant(stablehlo, tuple(flags), run.tiles, driver=run.driver)

    def _key(self, stablehlo: Path, flags: tuple[str, ...], driver: str = DEVICE) -> str:
        """`program_key`, computed once a program, flags and driver this run."""
        if (stablehlo, flags, driver) not in self._keys:
            self._keys[stablehlo, flags, driver] = program_key(stablehlo, flags, driver)
        return self._keys[stablehlo, flags, driver]

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
    vmfb: str = ""  # the digest (file_digest) of the vmfb it kept


def file_digest(path: Path) -> str:
    """The sha256 of a file's bytes (hex): how a stored program and a kept vmfb are named."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def from_record(decision: CandidateRecord) -> str:
    """A trial's reason when its outcome was taken from the database."""
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(decision.when))
    return f"as recorded on {when} for this program (--retune measures again): {decision.reason}"


def nearest_first(root: RootOp, records: Sequence[TileRecord]) -> list[TileRecord]:
    """Records of `root`'s form at other loop ranges, those whose ranges are
    nearest first: fewest loops of another range (the same matmul at another
    batch changes one), then the least sum of |log ratio| over the loops; the
    newest first among equals (`records`' order, kept by a stable sort)."""

    def distance(record: TileRecord) -> tuple[int, float]:
        pairs = list(zip(record.root.loops, root.loops, strict=True))
        changed = sum(1 for theirs, ours in pairs if theirs != ours)
        return changed, sum(abs(math.log(max(t, 1) / max(o, 1))) for t, o in pairs)

    return sorted(records, key=distance)


def _winner(record: TileRecord) -> TileTrial | None:
    """A record's winner as the search chose it (in place when timed there)."""
    config, timing = record.winner_config(), record.winner_in_place or record.winner_alone
    if config is None or timing is None:
        return None
    return TileTrial(config, timing.ps, timing.iree_ps)


def _whence(record: TileRecord) -> str:
    """ "<model> (<day>" of a record: the report's and tiles.json's words for it."""
    day = time.strftime("%Y-%m-%d", time.localtime(record.when))
    return f"{record.model or 'a model'} ({day}"


@functools.cache
def _root_ops(configurations: Path) -> dict[str, RootOp]:
    """The root ops of one search's dumped configurations, read once."""
    return root_ops(configurations)
