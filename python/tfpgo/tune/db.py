"""The tuning database (issue 39): what `--tune` measured, kept for later runs,
other models and other machines of the same target, in one SQLite file.

`TuningDb.open` opens (or creates, with its directories) the file at
`default_path()` or the one named; a file that is not one (not SQLite, or
SQLite of another schema, or corrupt) is one `TuningDbError` line and is left
as it is; `open_or_none` turns that into a note so that a run goes on without a
database. The records in and out are `tfpgo.tune.db_records`' typed ones, each
stored under its `Target`'s key: the reuse queries (`exact_records`,
`seed_records`, `decisions`, `last_run`) return only rows of the target asked
for, so a record of another CPU, compiler version or code generation flags is
never applied; `summaries` lists them, `stale` those of other targets.

Several processes may write one file at once (two `--tune` runs, a team's
machines merged): every write is one transaction begun `IMMEDIATE` (the write
lock taken first, so two writers never deadlock upgrading a read), under a
busy timeout, in WAL mode where the file system has it (readers never wait on
the writer). A row is identified by a digest of its table, target and record:
writing it twice, or merging a database that has it, adds nothing.

The schema (tables `meta`, `targets`, `tiles`, `decisions`, `runs`,
`limits`; format `tfpgo.tuning_db`, version 1): docs/formats.md.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

from tfpgo.errors import UserError
from tfpgo.tune.db_records import (
    CandidateRecord,
    ProgramRun,
    RootOp,
    Target,
    TileRecord,
    digest,
    from_json,
    to_json,
)
from tfpgo.tune.roofline import MachineLimit
from tfpgo.tune.tile_configs import RootConfig, spec_text

FORMAT = "tfpgo.tuning_db"
VERSION = 1
FILE = "tuning.db"
BUSY_TIMEOUT_S = 60.0  # a writer waits this long for another's transaction
_SQLITE_HEADER = b"SQLite format 3\x00"
Read = TypeVar("Read")
_SCHEMA = """
CREATE TABLE meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE targets (key TEXT PRIMARY KEY, cpu TEXT NOT NULL, features TEXT NOT NULL,
  compiler TEXT NOT NULL, flags TEXT NOT NULL);
CREATE TABLE tiles (id INTEGER PRIMARY KEY, target TEXT NOT NULL, form TEXT NOT NULL,
  root TEXT NOT NULL, dispatch TEXT NOT NULL, model TEXT NOT NULL, program TEXT NOT NULL,
  winner INTEGER NOT NULL, when_s REAL NOT NULL, record TEXT NOT NULL,
  digest TEXT NOT NULL UNIQUE);
CREATE INDEX tiles_by_form ON tiles (target, form, root);
CREATE TABLE decisions (id INTEGER PRIMARY KEY, target TEXT NOT NULL, program TEXT NOT NULL,
  name TEXT NOT NULL, when_s REAL NOT NULL, record TEXT NOT NULL, digest TEXT NOT NULL UNIQUE);
CREATE INDEX decisions_by_program ON decisions (target, program, name);
CREATE TABLE runs (id INTEGER PRIMARY KEY, target TEXT NOT NULL, program TEXT NOT NULL,
  model TEXT NOT NULL, finished INTEGER NOT NULL, when_s REAL NOT NULL, record TEXT NOT NULL,
  digest TEXT NOT NULL UNIQUE);
CREATE INDEX runs_by_program ON runs (target, program, when_s);
CREATE TABLE limits (cpu TEXT NOT NULL, features TEXT NOT NULL, when_s REAL NOT NULL,
  document TEXT NOT NULL, PRIMARY KEY (cpu, features))
"""
# The tables of records, and the columns each has beyond `record` and `digest`.
_RECORDS = {
    "tiles": ("target", "form", "root", "dispatch", "model", "program", "winner", "when_s"),
    "decisions": ("target", "program", "name", "when_s"),
    "runs": ("target", "program", "model", "finished", "when_s"),
}


class TuningDbError(UserError):
    """A tuning database that cannot be opened, read or written: one line."""


def default_path() -> Path:
    """`$XDG_CACHE_HOME/tfpgo/tuning.db`, else `~/.cache/tfpgo/tuning.db`."""
    cache = os.environ.get("XDG_CACHE_HOME")
    base = Path(cache) if cache and Path(cache).is_absolute() else Path.home() / ".cache"
    return base / "tfpgo" / FILE


@dataclass(frozen=True)
class TargetSummary:
    """One target of a database and how many rows it has."""

    target: Target
    tiles: int
    winners: int  # tile records with a winner
    decisions: int
    runs: int


@dataclass(frozen=True)
class Merged:
    """What `merge` added: rows of each table not there before."""

    targets: int
    tiles: int
    decisions: int
    runs: int
    limits: int


class TuningDb:
    """An open tuning database (module docstring); a context manager closing it."""

    def __init__(self, path: Path, connection: sqlite3.Connection, journal: str) -> None:
        self.path = path
        self.journal = journal  # "wal", or the rollback journal where WAL is not had
        self._connection = connection

    @classmethod
    def open(cls, path: Path, create: bool = True, read_only: bool = False) -> TuningDb:
        """The database at `path`, created with its directories when missing (and
        `create`, not `read_only`). One TuningDbError line when it cannot be: not
        SQLite, SQLite of another schema or of a newer version, corrupt, or not
        writable; the file is then left as it is. `read_only`: nothing is ever
        written to it (a database merged from, one listed)."""
        _check_file(path, create and not read_only)
        name = f"{path.absolute().as_uri()}?mode=ro" if read_only else str(path)
        try:
            connection = sqlite3.connect(
                name, timeout=BUSY_TIMEOUT_S, isolation_level=None, uri=read_only
            )
        except (sqlite3.Error, OSError) as error:
            raise _error(path, f"cannot open it ({error})") from None
        try:
            journal = _prepared(path, connection, read_only)
        except BaseException:
            connection.close()
            raise
        return cls(path, connection, journal)

    def close(self) -> None:
        self._connection.close()

    def __enter__(self) -> TuningDb:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    # Writes.

    def add_tiles(self, target: Target, record: TileRecord) -> bool:
        """Stores a tile record; False if it was there already."""
        root = record.root
        columns = (root.form, root.key, record.dispatch, record.model, record.program)
        values = (*columns, record.winner is not None, record.when)
        return self._add("tiles", target, values, to_json(record))

    def add_decision(self, target: Target, decision: CandidateRecord) -> bool:
        """Stores a candidate's decision; False if it was there already."""
        values = (decision.program, decision.name, decision.when)
        return self._add("decisions", target, values, to_json(decision))

    def add_run(self, target: Target, run: ProgramRun) -> bool:
        """Stores a run of a program; False if it was there already."""
        values = (run.program, run.model, run.finished, run.when)
        return self._add("runs", target, values, to_json(run))

    def put_limit(self, target: Target, limit: MachineLimit, when: float | None = None) -> None:
        """Stores the limit of `target`'s machine (its CPU and features: a limit
        holds whatever the compiler), measured at `when` (Unix seconds; default
        now), replacing the one stored before."""
        if limit.target != target.machine:
            raise ValueError(f"a limit of {limit.target.cpu} is not one of {target.cpu}")
        document = json.dumps(limit.to_json(), sort_keys=True)
        with self._transaction() as connection:
            connection.execute(
                "INSERT OR REPLACE INTO limits VALUES (?, ?, ?, ?)",
                (target.cpu, target.features, time.time() if when is None else when, document),
            )

    def _add(self, table: str, target: Target, values: Sequence[Any], record: Any) -> bool:
        text = json.dumps(record, sort_keys=True, separators=(",", ":"))
        columns = ", ".join((*_RECORDS[table], "record", "digest"))
        marks = ", ".join("?" * (len(values) + 3))  # the target, the values, record, digest
        with self._transaction() as connection:
            _put_target(connection, target)
            added = connection.execute(
                f"INSERT OR IGNORE INTO {table} ({columns}) VALUES ({marks})",
                (target.key, *values, text, digest(table, target.key, text)),
            )
            return added.rowcount == 1

    # Queries: only rows of the target asked for.

    def exact_records(self, target: Target, root: RootOp) -> list[TileRecord]:
        """The tile records of `root` exactly (op, maps, types and loop ranges) on
        `target`, newest first: a search they make unnecessary."""
        rows = self._rows(
            "SELECT record FROM tiles WHERE target = ? AND root = ? ORDER BY when_s DESC, id DESC",
            (target.key, root.key),
        )
        return [r for r in (self._tile(row[0]) for row in rows) if r.root == root]

    def seed_records(self, target: Target, root: RootOp) -> list[TileRecord]:
        """The tile records on `target` of root ops of `root`'s form (op, maps,
        types) at other loop ranges, newest first: where a search may start."""
        rows = self._rows(
            "SELECT record FROM tiles WHERE target = ? AND form = ? AND root != ? "
            "ORDER BY when_s DESC, id DESC",
            (target.key, root.form, root.key),
        )
        found = (self._tile(row[0]) for row in rows)
        return [r for r in found if r.root.form == root.form and r.root.loops != root.loops]

    def tile_records(self, target: Target) -> list[TileRecord]:
        """Every tile record of `target`, newest first."""
        rows = self._rows(
            "SELECT record FROM tiles WHERE target = ? ORDER BY when_s DESC, id DESC",
            (target.key,),
        )
        return [self._tile(row[0]) for row in rows]

    def decisions(self, target: Target, program: str) -> list[CandidateRecord]:
        """The decisions measured on `program` on `target`: per candidate name the
        newest, in the order first measured."""
        rows = self._rows(
            "SELECT record FROM decisions WHERE target = ? AND program = ? ORDER BY when_s, id",
            (target.key, program),
        )
        newest: dict[str, CandidateRecord] = {}
        for row in rows:
            decision = self._record(CandidateRecord, row[0], "decisions")
            newest[decision.name] = decision
        return list(newest.values())

    def programs(self, target: Target) -> list[str]:
        """The programs `target` has decisions or runs of."""
        rows = self._rows(
            "SELECT program FROM decisions WHERE target = ?1 UNION "
            "SELECT program FROM runs WHERE target = ?1 ORDER BY program",
            (target.key,),
        )
        return [program for (program,) in rows]

    def runs(self, target: Target, program: str | None = None) -> list[ProgramRun]:
        """The runs on `target` (of `program` only, if given), newest first."""
        where, args = "target = ?", [target.key]
        if program is not None:
            where, args = f"{where} AND program = ?", [*args, program]
        rows = self._rows(
            f"SELECT record FROM runs WHERE {where} ORDER BY when_s DESC, id DESC", args
        )
        return [self._record(ProgramRun, row[0], "runs") for row in rows]

    def last_run(self, target: Target, program: str) -> ProgramRun | None:
        """The newest run of `program` on `target`, if any."""
        runs = self.runs(target, program)
        return runs[0] if runs else None

    def limit(self, target: Target) -> MachineLimit | None:
        """The stored limit of `target`'s CPU and features, if any."""
        rows = self._rows(
            "SELECT document FROM limits WHERE cpu = ? AND features = ?",
            (target.cpu, target.features),
        )
        return self._decode(MachineLimit.from_json, rows[0][0], "limits") if rows else None

    def summaries(self) -> list[TargetSummary]:
        """Every target the database has rows of, with their counts."""
        found = []
        for row in self._rows("SELECT key, cpu, features, compiler, flags FROM targets", ()):
            key = row[0]
            counts = self._rows(
                "SELECT (SELECT count(*) FROM tiles WHERE target = ?1), "
                "(SELECT count(*) FROM tiles WHERE target = ?1 AND winner), "
                "(SELECT count(*) FROM decisions WHERE target = ?1), "
                "(SELECT count(*) FROM runs WHERE target = ?1)",
                (key,),
            )[0]
            found.append(TargetSummary(self._target(row), *counts))
        return sorted(found, key=lambda s: (s.target.cpu, s.target.compiler, s.target.key))

    def stale(self, current: Target) -> list[TargetSummary]:
        """The targets other than `current` (another CPU, compiler version or code
        generation flags): rows never applied, listed as stale."""
        return [s for s in self.summaries() if s.target.key != current.key]

    def find_target(self, key: str) -> Target:
        """The target whose key is or starts with `key`; one TuningDbError line
        when none or several are."""
        found = [s.target for s in self.summaries() if s.target.key.startswith(key)]
        if len(found) != 1:
            which = "no target" if not found else f"{len(found)} targets"
            raise _error(self.path, f"{which} with a key starting '{key}'")
        return found[0]

    # Whole databases.

    def merge(self, other: Path) -> Merged:
        """Adds every row of the database at `other` not here (a team's machines):
        one transaction; `other` is only read."""
        tables = ("targets", *_RECORDS, "limits")
        with TuningDb.open(other, read_only=True) as source:
            rows = {
                t: source._rows(f"SELECT {', '.join(_columns(t))} FROM {t}", ()) for t in tables
            }
        added = {}
        with self._transaction() as connection:
            for table in tables:
                columns = _columns(table)  # not `id`: a row gets a new one here
                before = connection.total_changes
                connection.executemany(
                    f"INSERT OR IGNORE INTO {table} ({', '.join(columns)}) "
                    f"VALUES ({', '.join('?' * len(columns))})",
                    rows[table],
                )
                added[table] = connection.total_changes - before
        return Merged(**added)

    def prune(self, keep: Target) -> list[TargetSummary]:
        """Drops every row of a target other than `keep`, and the limits of other
        CPUs; returns the targets dropped with their counts. One transaction."""
        with self._transaction() as connection:
            dropped = self.stale(keep)
            for table in _RECORDS:
                connection.execute(f"DELETE FROM {table} WHERE target != ?", (keep.key,))
            connection.execute("DELETE FROM targets WHERE key != ?", (keep.key,))
            connection.execute(
                "DELETE FROM limits WHERE cpu != ? OR features != ?", (keep.cpu, keep.features)
            )
        return dropped

    def spec_records(
        self, target: Target
    ) -> tuple[list[TileRecord], list[tuple[str, tuple[int, ...]]]]:
        """The records whose winners `export_spec` writes (per root op, the winner
        with the best ratio to IREE's choice, the newest of equals), and the root
        ops left out: (op name, loop ranges) that root ops of other maps or
        element types share, which a spec's matcher does not tell apart."""
        best: dict[str, tuple[float, TileRecord]] = {}
        for record in self.tile_records(target):  # newest first: the first of equals stays
            ratio = record.winner_ratio
            held = best.get(record.root.key)
            if ratio is not None and (held is None or ratio < held[0]):
                best[record.root.key] = (ratio, record)
        by_match: dict[tuple[str, tuple[int, ...]], list[TileRecord]] = {}
        for _, record in best.values():
            by_match.setdefault((record.root.op, record.root.loops), []).append(record)
        chosen = [records[0] for records in by_match.values() if len(records) == 1]
        left_out = [match for match, records in by_match.items() if len(records) > 1]
        return sorted(chosen, key=lambda r: (r.root.op, r.root.loops)), sorted(left_out)

    def export_spec(self, target: Target) -> str:
        """One IREE tuning spec with every record's winner on `target`
        (`spec_records`); one TuningDbError line when there is none."""
        chosen, _ = self.spec_records(target)
        configs: list[RootConfig] = [c for c in (r.winner_config() for r in chosen) if c]
        if not configs:
            raise _error(self.path, f"no tile record with a winner for target {target.key}")
        return spec_text(configs)

    # The connection.

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction, begun IMMEDIATE; an SQLite failure is one line."""
        try:
            with self._connection:  # commits, or rolls back on an error
                self._connection.execute("BEGIN IMMEDIATE")
                yield self._connection
        except sqlite3.Error as error:
            raise _error(self.path, f"cannot write it ({error})") from None

    def _decode(self, read: Callable[[Any], Read], text: str, table: str) -> Read:
        """A row's JSON `read`, or one TuningDbError line for a malformed one."""
        try:
            return read(json.loads(text))
        except (ValueError, TypeError, KeyError, UserError) as error:
            raise _error(self.path, f"a malformed row in {table} ({error!r})") from None

    def _record(self, kind: type[Read], text: str, table: str) -> Read:
        return self._decode(lambda document: from_json(kind, document), text, table)

    def _tile(self, text: str) -> TileRecord:
        return self._record(TileRecord, text, "tiles")

    def _target(self, row: Sequence[Any]) -> Target:
        _, cpu, features, compiler, flags = row
        fields = {"cpu": cpu, "features": features, "compiler": compiler}
        return self._decode(lambda f: from_json(Target, {**fields, "flags": f}), flags, "targets")

    def _rows(self, query: str, args: Sequence[Any]) -> list[tuple[Any, ...]]:
        try:
            return self._connection.execute(query, args).fetchall()
        except sqlite3.Error as error:
            raise _error(self.path, f"cannot read it ({error})") from None


def open_or_none(path: Path, note: Callable[[str], None]) -> TuningDb | None:
    """`TuningDb.open(path)`, or None after one note line when it cannot be: the
    run goes on without a database."""
    try:
        return TuningDb.open(path)
    except TuningDbError as error:
        note(f"{error}; going on without one")
        return None


def _error(path: Path, problem: str) -> TuningDbError:
    return TuningDbError(f"tuning database {path}: {problem}")


def _check_file(path: Path, create: bool) -> None:
    """Refuses, before SQLite touches it, a path that is no database file."""
    if path.is_dir():
        raise _error(path, "is a directory; name a file")
    if not path.exists():
        if not create:
            raise _error(path, "no such file")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise _error(path, f"cannot create its directory ({error.strerror})") from None
        return
    try:
        with path.open("rb") as handle:
            header = handle.read(len(_SQLITE_HEADER))
    except OSError as error:
        raise _error(path, f"cannot read it ({error.strerror})") from None
    if header and header != _SQLITE_HEADER:
        raise _foreign(path, "not an SQLite file")


def _foreign(path: Path, why: str) -> TuningDbError:
    return _error(
        path,
        f"not a tfpgo tuning database ({why}); left as it is: move it away or name another file",
    )


def _prepared(path: Path, connection: sqlite3.Connection, read_only: bool) -> str:
    """`_prepare`, tried again while another process holds the lock it needs
    (changing the journal mode, creating the schema) until the busy timeout: not
    every step waits in SQLite's busy handler."""
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    while True:
        try:
            return _prepare(path, connection, read_only)
        except sqlite3.OperationalError as error:
            if time.monotonic() > deadline:
                raise _error(path, f"cannot open it ({error})") from None
            time.sleep(0.05)


def _busy(error: sqlite3.OperationalError) -> bool:
    return getattr(error, "sqlite_errorcode", None) in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)


def _prepare(path: Path, connection: sqlite3.Connection, read_only: bool) -> str:
    """Checks the schema of an existing database, or writes it into a new one
    (unless `read_only`); returns the journal mode."""
    try:
        tables = _tables(connection)
        if tables and "meta" not in tables:
            raise _foreign(path, "SQLite with other tables")
        # WAL where the file system has it (journal_mode says what it got).
        wanted = "" if read_only else "=WAL"
        (journal,) = connection.execute(f"PRAGMA journal_mode{wanted}").fetchone()
        if not tables and not read_only:
            with connection:
                connection.execute("BEGIN IMMEDIATE")
                if not _tables(connection):  # another process may have been first
                    for statement in _SCHEMA.split(";"):
                        connection.execute(statement)
                    connection.executemany(
                        "INSERT INTO meta VALUES (?, ?)",
                        (("format", FORMAT), ("version", str(VERSION))),
                    )
        meta = dict(connection.execute("SELECT name, value FROM meta").fetchall())
    except sqlite3.OperationalError as error:
        if _busy(error):
            raise  # _prepared tries again
        raise _error(path, f"cannot open it ({error})") from None
    except sqlite3.Error as error:  # "file is not a database", "malformed"
        raise _foreign(path, f"SQLite says: {error}") from None
    if meta.get("format") != FORMAT:
        raise _foreign(path, f"format {meta.get('format')!r}, not {FORMAT!r}")
    if meta.get("version") != str(VERSION):
        raise _error(
            path,
            f"version {meta.get('version')} of {FORMAT}; this tfpgo reads version {VERSION} "
            "only: use the tfpgo that wrote it, or name another file",
        )
    return str(journal).lower()


def _tables(connection: sqlite3.Connection) -> set[str]:
    rows = connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
    return {name for (name,) in rows}


def _put_target(connection: sqlite3.Connection, target: Target) -> None:
    connection.execute(
        "INSERT OR IGNORE INTO targets VALUES (?, ?, ?, ?, ?)",
        (target.key, target.cpu, target.features, target.compiler, json.dumps(list(target.flags))),
    )


def _columns(table: str) -> tuple[str, ...]:
    if table == "targets":
        return ("key", "cpu", "features", "compiler", "flags")
    if table == "limits":
        return ("cpu", "features", "when_s", "document")
    return (*_RECORDS[table], "record", "digest")
