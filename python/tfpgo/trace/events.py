"""Trace events: a typed record per event over a columnar table.

Every reader produces an `EventTable`: numpy columns (start, duration, name,
track, step) plus a table of unique names and of tracks (host, plane, line).
Two million XPlane events fit in ~60 MB this way; `Event` records are built
on demand (`table.event(i)`, `table.events()`) for users and small inputs.

TensorFlow op events are named `node_name:OpType` (the executor's TraceMe);
that form is recognized once per unique name (`parse_op_name`), so runtime
events such as `ExecutorState::Process`, `ThreadpoolListener::Record` or
`EagerLocalExecute: __inference_f_12` are never taken for ops.

Times: `start_ps` counts from the earliest event of the source (the profile
start), so every file tfpgo writes has `ts` >= 0.
"""

from __future__ import annotations

import json
import re
from collections.abc import ItemsView, Iterator, Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

import numpy as np

if TYPE_CHECKING:
    from tfpgo.trace.readers.hlo_metadata import HloModule

# TF node names: see tensorflow/core/framework/node_def_util.cc (kNodeNameRegexp),
# op types: op_def_util.cc. A runtime name like `A::B` fails on the second colon.
_OP_NAME = re.compile(r"([A-Za-z0-9.][A-Za-z0-9_.\-/>]*):([A-Za-z_][A-Za-z0-9_]*)")

NO_STEP = -1
_BLOCK = 1 << 20  # events handled at once where a whole temporary column is not needed


def parse_op_name(name: str) -> tuple[str, str] | None:
    """`(node, op_type)` if `name` is a TensorFlow op event name, else None."""
    match = _OP_NAME.fullmatch(name)
    if match is None:
        return None
    return match.group(1), match.group(2)


@dataclass(frozen=True)
class Track:
    """Where events were recorded: host, plane (device) and line (thread)."""

    host: str
    plane: str
    line: str


@dataclass(frozen=True)
class Event:
    """One trace event. `node`/`op_type` are set only for TF op events."""

    index: int
    name: str
    node: str | None
    op_type: str | None
    host: str
    plane: str
    line: str
    start_ps: int
    duration_ps: int
    step: int | None
    stats: Mapping[str, Any] = field(default_factory=dict)

    @property
    def end_ps(self) -> int:
        return self.start_ps + self.duration_ps

    @property
    def is_op(self) -> bool:
        return self.node is not None


@dataclass(frozen=True)
class StepMarker:
    """A profiled step (`Trace(..., step_num=i)`) on one host, in table time."""

    host: str
    step: int
    start_ps: int
    end_ps: int


@dataclass
class EventTable:
    """Columnar events of one source (possibly several hosts).

    Columns have one entry per event; `name_id` indexes `names`, `track_id`
    indexes `tracks`. `flows` is an (m, 2) array of (producer, consumer) event
    indices: causal links the trace recorded. `stats` maps an event index to
    its stats (only events that have any). `hlo_modules` maps the name of each
    XLA module the trace's metadata plane describes to its instructions.
    """

    source: str
    source_kind: str
    names: list[str]
    tracks: list[Track]
    name_id: np.ndarray
    track_id: np.ndarray
    start_ps: np.ndarray
    duration_ps: np.ndarray
    step: np.ndarray
    flows: np.ndarray
    stats: Mapping[int, dict[str, Any]]
    steps: list[StepMarker]
    _ops: list[tuple[str, str] | None] | None = None
    hlo_modules: Mapping[str, HloModule] = field(default_factory=dict)
    # every module by (name, XLA's program id): two compilations may share a name
    hlo_programs: Mapping[tuple[str, int], HloModule] = field(default_factory=dict)
    # JAX recorded it: no TensorFlow executor ran, so no event is a TF op event
    jax: bool = False

    def hlo_module(self, name: str, program_id: int = -1) -> HloModule | None:
        """The module an event names (`hlo_module`, `program_id` stats): the compilation
        with that program id, else the last module of that name."""
        return self.hlo_programs.get((name, program_id)) or self.hlo_modules.get(name)

    def __len__(self) -> int:
        return int(self.start_ps.shape[0])

    @property
    def hosts(self) -> list[str]:
        return sorted({track.host for track in self.tracks})

    @property
    def op_names(self) -> list[tuple[str, str] | None]:
        """`parse_op_name` of every unique name, computed once. None for all in a JAX
        trace: there, names of the `node:Type` shape are the runtime's TraceMes
        (`ThenExecuteCallback:GetEventForComputeStreamSyncPoint`), not ops."""
        if self._ops is None:
            self._ops = [None if self.jax else parse_op_name(name) for name in self.names]
        return self._ops

    def rows_with_stat(self, name: str) -> np.ndarray:
        """Indices of the events that have the stat `name`, ascending (one
        vectorized pass when the reader kept its stats as columns)."""
        if isinstance(self.stats, ColumnStats):
            return self.stats.rows_with(name)
        return np.array(sorted(i for i, s in self.stats.items() if name in s), dtype=np.int64)

    def stat_column(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """(rows, values) of the stat `name`: the events that have it, ascending, and
        its value on each (an object array: ints, strings, floats as decoded)."""
        if isinstance(self.stats, ColumnStats):
            return self.stats.column(name)
        rows = self.rows_with_stat(name)
        return rows, object_array([self.stats[row][name] for row in rows.tolist()])

    def stat_codes(self, name: str) -> tuple[np.ndarray, np.ndarray, list[Any]]:
        """(rows, codes, distinct values) of the stat `name`: each row's value as an
        index into the distinct values (see `ColumnStats.codes`)."""
        if isinstance(self.stats, ColumnStats):
            return self.stats.codes(name)
        rows, values = self.stat_column(name)
        known: dict[Any, int] = {}
        codes = np.array([known.setdefault(v, len(known)) for v in values.tolist()], np.int64)
        return rows, codes, list(known)

    def is_op_mask(self) -> np.ndarray:
        """Boolean column: which events are TF op events."""
        by_name = np.fromiter(
            (op is not None for op in self.op_names), dtype=bool, count=len(self.names)
        )
        return by_name[self.name_id] if len(self.names) else np.zeros(len(self), bool)

    @property
    def end_ps(self) -> np.ndarray:
        return self.start_ps + self.duration_ps

    def event(self, index: int) -> Event:
        """The typed record of event `index`."""
        name_id = int(self.name_id[index])
        track = self.tracks[int(self.track_id[index])]
        op = self.op_names[name_id]
        step = int(self.step[index])
        return Event(
            index,
            self.names[name_id],
            op[0] if op else None,
            op[1] if op else None,
            track.host,
            track.plane,
            track.line,
            int(self.start_ps[index]),
            int(self.duration_ps[index]),
            None if step == NO_STEP else step,
            self.stats.get(index, {}),
        )

    def events(self) -> Iterator[Event]:
        for index in range(len(self)):
            yield self.event(index)

    def subset(self, keep: np.ndarray) -> EventTable:
        """The events where `keep` is true; flows between kept events survive."""
        kept = np.flatnonzero(keep)
        remap = np.full(len(self), -1, dtype=np.int64)
        remap[kept] = np.arange(kept.shape[0])
        flows = remap[self.flows] if self.flows.size else self.flows
        flows = flows[(flows >= 0).all(axis=1)] if flows.size else flows.reshape(0, 2)
        stats = {int(remap[i]): s for i, s in self.stats.items() if remap[i] >= 0}
        return EventTable(
            self.source,
            self.source_kind,
            self.names,
            self.tracks,
            self.name_id[kept],
            self.track_id[kept],
            self.start_ps[kept],
            self.duration_ps[kept],
            self.step[kept],
            flows,
            stats,
            self.steps,
            self._ops,
            self.hlo_modules,
            self.hlo_programs,
            self.jax,
        )


class ColumnStats(Mapping[int, dict[str, Any]]):
    """Events' kept stats as columns: a row, a name and an int64 value per stat. A
    string value (a ref stat's name, a str stat) is an id into `strings`, marked
    as such; other values (doubles, uint64s) aside, by position. An event's dict
    is built when asked for, so millions of events with stats cost ~21 bytes a stat
    instead of a dict (or a string object) each. Parts are added in row order,
    each part's rows non-decreasing."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self._name_ids: dict[str, int] = {}
        self.strings: list[str] = []
        self._string_ids: dict[str, int] = {}
        self._parts: list[tuple[np.ndarray, ...]] = []
        self._other: dict[int, Any] = {}  # position -> a value that is not an int64
        self._count = 0
        self._rows = np.zeros(0, np.int64)  # per stat
        self._keys = np.zeros(0, np.int32)
        self._values = np.zeros(0, np.int64)
        self._is_string = np.zeros(0, bool)  # the value is an id into `strings`
        self._event_rows = np.zeros(0, np.int64)  # per event with stats
        self._bounds = np.zeros(1, np.int64)  # its first stat; one past the last at the end
        self._json_cache = np.zeros(0, object)

    def name_id(self, name: str) -> int:
        if (found := self._name_ids.get(name)) is None:
            found = self._name_ids[name] = len(self.names)
            self.names.append(name)
        return found

    def string_id(self, text: str) -> int:
        if (found := self._string_ids.get(text)) is None:
            found = self._string_ids[text] = len(self.strings)
            self.strings.append(text)
        return found

    def add(
        self,
        rows: np.ndarray,
        name_ids: np.ndarray,
        values: np.ndarray,
        other: dict[int, Any],
        is_string: np.ndarray | None = None,
    ) -> None:
        """Appends stats; `other` maps a position in this part to a value that is not an
        int64; `is_string` marks the positions whose value is a `string_id`."""
        self._other.update({self._count + at: value for at, value in other.items()})
        strings = np.zeros(rows.shape[0], bool) if is_string is None else is_string
        self._parts.append((rows.astype(np.int64), name_ids.astype(np.int32), values, strings))
        self._count += int(rows.shape[0])

    def _decoded(self, low: int, high: int) -> list[Any]:
        """The values of positions [low, high) as Python values."""
        values = self._values[low:high].tolist()
        for at in np.flatnonzero(self._is_string[low:high]).tolist():
            values[at] = self.strings[values[at]]
        if self._other:
            for at, value in self._other.items():
                if low <= at < high:
                    values[at - low] = value
        return values

    def rows_with(self, name: str) -> np.ndarray:
        """Rows that have the stat `name`, ascending."""
        self._joined()
        key = self._name_ids.get(name)
        if key is None:
            return np.zeros(0, np.int64)
        return np.unique(self._rows[self._keys == key])

    def _positions(self, name: str) -> np.ndarray:
        """Positions of the stat `name`, one per row (a row's last), in row order."""
        self._joined()
        key = self._name_ids.get(name)
        if key is None:
            return np.zeros(0, np.int64)
        positions = np.flatnonzero(self._keys == key)
        rows = self._rows[positions]
        return positions[np.append(rows[1:] != rows[:-1], True)]

    def _other_at(self, positions: np.ndarray) -> np.ndarray:
        """Which of `positions` hold a value kept aside in `_other`."""
        if not self._other:
            return np.zeros(positions.shape[0], bool)
        other_at = np.fromiter(self._other, dtype=np.int64, count=len(self._other))
        return np.isin(positions, other_at)

    def column(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """(rows, values) of the stat `name`, rows ascending (the last value of a row
        that has it twice); values an object array (see `EventTable.stat_column`)."""
        positions = self._positions(name)
        values = self._values[positions].astype(object)
        strings = self._is_string[positions]
        if strings.any():
            values[strings] = object_array(self.strings)[self._values[positions[strings]]]
        for at in np.flatnonzero(self._other_at(positions)).tolist():
            values[at] = self._other[int(positions[at])]
        return self._rows[positions], values

    def codes(self, name: str) -> tuple[np.ndarray, np.ndarray, list[Any]]:
        """(rows, codes, distinct values) of the stat `name`: each row's value as an
        index into the distinct values, found without a Python object per row."""
        positions = self._positions(name)
        values = self._values[positions]
        codes = np.zeros(positions.shape[0], np.int64)
        distinct: list[Any] = []
        strings = self._is_string[positions]
        aside = self._other_at(positions)
        for mask, is_string in ((~strings & ~aside, False), (strings, True)):
            unique, inverse = np.unique(values[mask], return_inverse=True)
            codes[mask] = inverse.ravel() + len(distinct)
            found = unique.tolist()
            distinct += [self.strings[v] for v in found] if is_string else found
        known: dict[Any, int] = {}
        for at in np.flatnonzero(aside).tolist():
            value = self._other[int(positions[at])]
            if value not in known:
                known[value] = len(distinct)
                distinct.append(value)
            codes[at] = known[value]
        return self._rows[positions], codes, distinct

    def columns(
        self,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[int, Any], np.ndarray]:
        """All stats as (rows, name ids, int64 values, position -> other value, string
        marks): what `add` takes, to move them into another table (a multi-host merge;
        string ids index `strings`)."""
        self._joined()
        return self._rows, self._keys, self._values, dict(self._other), self._is_string

    def json_texts(self, begin: int, end: int) -> tuple[np.ndarray, list[str]]:
        """The rows in [begin, end) that have stats, and each one's stats as compact JSON:
        the text `json.dumps(self[row], separators=(",", ":"))` gives, rendered from the
        columns a stat at a time (an event DAG of millions of device events)."""
        self._joined()
        first, last = np.searchsorted(self._event_rows, [begin, end]).tolist()
        low, high = int(self._bounds[first]), int(self._bounds[last])
        rows = self._event_rows[first:last]
        if low == high:
            return rows, []
        starts = self._bounds[first:last] - low
        keys = self._keys[low:high]
        strings = self._is_string[low:high]
        # object arrays of str: numpy concatenates them elementwise, no per-stat loop
        names = object_array([json.dumps(name) + ":" for name in self.names])
        values = object_array(list(map(str, self._values[low:high].tolist())))
        if strings.any():
            values[strings] = self._json_strings()[self._values[low:high][strings]]
        for at, value in self._other.items() if self._other else ():
            if low <= at < high:
                values[at - low] = json.dumps(value)
        ends = np.zeros(high - low, bool)
        ends[np.append(starts[1:], high - low) - 1] = True
        pieces = names[keys] + values + np.where(ends, "}", ",").astype(object)
        texts = ("{" + np.add.reduceat(pieces, starts)).tolist()
        # a row with a stat twice is a dict with one entry: rendered as the dict it is
        per_row = np.repeat(np.arange(last - first), np.diff(self._bounds[first : last + 1]))
        packed = per_row * (len(self.names) + 1) + keys
        repeated = np.unique(per_row[np.flatnonzero(np.diff(np.sort(packed)) == 0)])
        for slot in repeated.tolist():
            texts[slot] = json.dumps(self._stats(first + slot), separators=(",", ":"))
        return rows, texts

    def _json_strings(self) -> np.ndarray:
        """`strings` as JSON string literals, an object array (cached until one is added)."""
        if self._json_cache.shape[0] != len(self.strings):
            self._json_cache = object_array([json.dumps(text) for text in self.strings])
        return self._json_cache

    def take(self, rows: np.ndarray, new_of_row: np.ndarray) -> ColumnStats:
        """The stats of `rows` (distinct event indices) as a new ColumnStats whose row
        k is `rows[k]` (`new_of_row` maps every event to its k, -1 if not taken): one
        vectorized pass (an event DAG's nodes)."""
        self._joined()
        taken = ColumnStats()
        taken.names, taken._name_ids = self.names, self._name_ids
        taken.strings, taken._string_ids = self.strings, self._string_ids
        if not self._rows.size or not rows.size:
            return taken
        new = new_of_row[self._rows]
        kept = np.flatnonzero(new >= 0)
        kept = kept[np.argsort(new[kept], kind="stable")]  # in the new row order
        other = {}
        if self._other:
            moved = np.full(self._rows.shape[0], -1, np.int64)
            moved[kept] = np.arange(kept.shape[0])
            other = {int(moved[at]): v for at, v in self._other.items() if moved[at] >= 0}
        taken.add(new[kept], self._keys[kept], self._values[kept], other, self._is_string[kept])
        return taken

    def _joined(self) -> None:
        if not self._parts:
            return
        parts = [(self._rows, self._keys, self._values, self._is_string), *self._parts]
        self._parts = []
        self._rows, self._keys, self._values, self._is_string = (
            np.concatenate(c) for c in zip(*parts, strict=True)
        )
        starts = np.flatnonzero(np.diff(self._rows, prepend=-1))
        self._event_rows = self._rows[starts]
        self._bounds = np.append(starts, self._rows.shape[0])

    def __len__(self) -> int:
        self._joined()
        return int(self._event_rows.shape[0])

    def __iter__(self) -> Iterator[int]:
        self._joined()
        return iter(self._event_rows.tolist())

    def __contains__(self, row: object) -> bool:
        return isinstance(row, int | np.integer) and self._slot(int(row)) >= 0

    def __getitem__(self, row: int) -> dict[str, Any]:
        slot = self._slot(row)
        if slot < 0:
            raise KeyError(row)
        return self._stats(slot)

    def items(self) -> ItemsView[int, dict[str, Any]]:
        return _ColumnStatsItems(self)

    def _slot(self, row: int) -> int:
        self._joined()
        slot = int(np.searchsorted(self._event_rows, row))
        found = slot < self._event_rows.shape[0] and int(self._event_rows[slot]) == row
        return slot if found else -1

    def _stats(self, slot: int) -> dict[str, Any]:
        low, high = int(self._bounds[slot]), int(self._bounds[slot + 1])
        names, other = self.names, self._other
        keys = self._keys[low:high].tolist()
        values = self._values[low:high].tolist()
        for at in np.flatnonzero(self._is_string[low:high]).tolist():
            values[at] = self.strings[values[at]]
        if other:
            values = [
                other.get(at, value) for at, value in zip(range(low, high), values, strict=True)
            ]
        return {names[key]: value for key, value in zip(keys, values, strict=True)}


_ITEMS_BLOCK = 1 << 16  # events whose stats are listed at once when iterating


class _ColumnStatsItems(ItemsView[int, dict[str, Any]]):
    """(row, stats) in row order, without a search per row."""

    def __init__(self, stats: ColumnStats) -> None:
        super().__init__(stats)
        self._column_stats = stats

    def __iter__(self) -> Iterator[tuple[int, dict[str, Any]]]:
        stats = self._column_stats
        stats._joined()
        events = stats._event_rows.shape[0]
        names = object_array(stats.names)
        for first in range(0, events, _ITEMS_BLOCK):  # blocks: bounded lists
            last = min(first + _ITEMS_BLOCK, events)
            low, high = int(stats._bounds[first]), int(stats._bounds[last])
            keys = names[stats._keys[low:high]].tolist()
            values = stats._decoded(low, high)
            bounds = (stats._bounds[first : last + 1] - low).tolist()
            rows = stats._event_rows[first:last].tolist()
            for index, row in enumerate(rows):
                begin, end = bounds[index], bounds[index + 1]
                yield row, dict(zip(keys[begin:end], values[begin:end], strict=True))


class TableBuilder:
    """Accumulates columns from a reader; `build()` normalizes time and steps."""

    def __init__(self, source: str, source_kind: str) -> None:
        self.source = source
        self.source_kind = source_kind
        self._names: dict[str, int] = {}
        self._tracks: dict[Track, int] = {}
        self._chunks: list[tuple[np.ndarray, ...]] = []
        self._count = 0
        self.stats: dict[int, dict[str, Any]] = {}
        self.column_stats = ColumnStats()  # readers that decode stats as columns
        self.flow_pairs: list[tuple[int, int]] = []
        self._flow_chunks: list[Any] = []  # (m, 2) int arrays, or futures of them
        self.step_events: list[tuple[int, int]] = []  # (event index, step number)
        self.hlo_modules: dict[str, HloModule] = {}
        self.hlo_programs: dict[tuple[str, int], HloModule] = {}
        self.jax = False  # JAX recorded the trace (EventTable.jax)

    def add_hlo_module(self, module: HloModule) -> None:
        self.hlo_modules[module.name] = module
        self.hlo_programs[(module.name, module.program_id)] = module

    @property
    def count(self) -> int:
        return self._count

    @property
    def flow_chunks(self) -> list[np.ndarray]:
        """(m, 2) flow arrays (after `flow_pairs`) in the order they were added; those
        still being computed (`add_flows_later`) are waited for here."""
        for at, chunk in enumerate(self._flow_chunks):
            if isinstance(chunk, Future):
                self._flow_chunks[at] = chunk.result()
        return cast(list[np.ndarray], self._flow_chunks)

    def add_flows_later(self, pending: Future[np.ndarray]) -> None:
        """A flow chunk being computed on another thread, in its place in the order."""
        self._flow_chunks.append(pending)

    def name_id(self, name: str) -> int:
        return self._names.setdefault(name, len(self._names))

    def track_id(self, host: str, plane: str, line: str) -> int:
        return self._tracks.setdefault(Track(host, plane, line), len(self._tracks))

    def names(self) -> list[str]:
        """The names added so far, in id order (ids are handed out in insertion order)."""
        return list(self._names)

    def tracks(self) -> list[Track]:
        """The tracks added so far, in id order."""
        return list(self._tracks)

    def column_chunks(self) -> list[tuple[int, np.ndarray, np.ndarray, np.ndarray]]:
        """(track, name ids, starts, durations) of each `add_columns` call, in order."""
        return [
            (int(run[0]), names, starts, durations)
            for run, names, starts, durations in self._chunks
        ]

    def add_columns(
        self, track: int, name_ids: np.ndarray, start_ps: np.ndarray, duration_ps: np.ndarray
    ) -> int:
        """Appends events of one track; returns the index of the first one."""
        first = self._count
        size = int(start_ps.shape[0])
        self._chunks.append(
            (
                np.array([track, size], dtype=np.int64),  # expanded in build()
                name_ids.astype(np.int32, copy=False),
                start_ps.astype(np.int64, copy=False),
                duration_ps.astype(np.int64, copy=False),
            )
        )
        self._count += size
        return first

    def _all_stats(self) -> Mapping[int, dict[str, Any]]:
        """The column stats, or the dict readers filled (or both, merged)."""
        if not len(self.column_stats):
            return self.stats
        if not self.stats:
            return self.column_stats
        return {**dict(self.column_stats.items()), **self.stats}

    def build(self) -> EventTable:
        if self._chunks:
            # Column by column, each column's chunks freed as it is joined: the
            # events are held about once, not twice, at the peak.
            columns = [list(column) for column in zip(*self._chunks, strict=True)]
            self._chunks = []
            runs = np.stack(columns[0])
            columns[0] = []
            track_id = np.repeat(runs[:, 0].astype(np.int32), runs[:, 1])
            name_id, start, duration = (join_chunks(columns, i) for i in range(1, 4))
        else:
            track_id = name_id = np.zeros(0, np.int32)
            start = duration = np.zeros(0, np.int64)
        self._chunks = []
        if start.size:
            start -= start.min()
        np.maximum(duration, 0, out=duration)
        # Ids are handed out as setdefault(key, len(dict)): insertion order is id order.
        names = list(self._names)
        tracks = list(self._tracks)
        table = EventTable(
            self.source,
            self.source_kind,
            names,
            tracks,
            name_id,
            track_id,
            start,
            duration,
            np.full(start.shape[0], NO_STEP, dtype=np.int32),  # step numbers fit
            np.zeros((0, 2), np.int64),
            self._all_stats(),
            [],
            hlo_modules=self.hlo_modules,
            hlo_programs=self.hlo_programs,
            jax=self.jax,
        )
        _assign_steps(table, self.step_events)
        # last: flows still being paired on a thread (XPlane) had all the above to finish
        table.flows = np.concatenate(
            [
                np.asarray(self.flow_pairs, dtype=np.int64).reshape(-1, 2),
                *(chunk.astype(np.int64).reshape(-1, 2) for chunk in self.flow_chunks),
            ]
        )
        return table


def join_chunks(columns: list[list[np.ndarray]], index: int) -> np.ndarray:
    """Column `index`'s chunks joined into one array, the chunks freed as it is
    built (so the events are held about once at the peak, not twice)."""
    joined = np.concatenate(columns[index])
    columns[index] = []
    return joined


def distinct_values(column: np.ndarray) -> np.ndarray:
    """The distinct values of an integer column, sorted: marked in a table when their
    range is narrow (ids, step numbers, context types: no sorted copy of the
    column), else np.unique."""
    if column.size == 0:
        return column[:0]
    low, high = int(column.min()), int(column.max())
    if high - low >= _BLOCK:
        return np.unique(column)
    present = np.zeros(high - low + 1, dtype=bool)
    for at in range(0, column.size, _BLOCK):
        present[column[at : at + _BLOCK] - low] = True
    return np.flatnonzero(present) + low


def object_array(strings: list[str]) -> np.ndarray:
    """A numpy object array of strings: indexing it by an id column is one C loop."""
    array = np.empty(len(strings), dtype=object)
    array[:] = strings
    return array


def _assign_steps(table: EventTable, step_events: list[tuple[int, int]]) -> None:
    """Marks every event with the step whose marker on the same host contains its start."""
    if not step_events:
        return
    host_of_track = np.array([track.host for track in table.tracks], dtype=object)
    markers = [
        StepMarker(
            host_of_track[table.track_id[i]],
            step,
            int(table.start_ps[i]),
            int(table.start_ps[i] + table.duration_ps[i]),
        )
        for i, step in step_events
    ]
    markers.sort(key=lambda m: (m.host, m.start_ps))
    table.steps = markers
    for host in {m.host for m in markers}:
        mine = [m for m in markers if m.host == host]
        starts = np.array([m.start_ps for m in mine], dtype=np.int64)
        ends = np.array([m.end_ps for m in mine], dtype=np.int64)
        numbers = np.array([m.step for m in mine], dtype=np.int64)
        on_host = host_of_track == host  # per track, then per event: no object compares
        if on_host.all():  # one host: every event, a block at a time (no index column)
            for at in range(0, len(table), _BLOCK):
                block_starts = table.start_ps[at : at + _BLOCK]
                slot = np.searchsorted(starts, block_starts, side="right") - 1
                stepped = np.flatnonzero(slot >= 0)
                stepped = stepped[block_starts[stepped] < ends[slot[stepped]]]
                table.step[at + stepped] = numbers[slot[stepped]]
            continue
        rows = np.flatnonzero(on_host[table.track_id])
        slot = np.searchsorted(starts, table.start_ps[rows], side="right") - 1
        inside = slot >= 0
        inside[inside] &= table.start_ps[rows[inside]] < ends[slot[inside]]
        table.step[rows[inside]] = numbers[slot[inside]]
