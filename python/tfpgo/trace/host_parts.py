"""One host's part of a multi-host logdir (`tfpgo.trace.hosts`): the file read on
its own into a `HostPart` (the map, run in a worker process or on a Dask worker)
and the parts merged in host order into one builder (the reduce). Both the local
pool (`hosts`) and the Dask cluster (`hosts_dask`) use these; neither imports the
other's module for them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tfpgo.trace.events import TableBuilder, Track
from tfpgo.trace.readers import paused_gc
from tfpgo.trace.readers.base import Progress
from tfpgo.trace.readers.hlo_metadata import HloModule
from tfpgo.trace.readers.xplane_columns import add_xplane_file

_SUFFIX = ".xplane.pb"


@dataclass(frozen=True)
class HostReading:
    """How the hosts of a logdir are read.

    `workers`: local processes (None: one per host up to the CPU count, serial
    below POOL_MIN_BYTES of host files; 1: serial, in this process). `scheduler`:
    the address of a Dask distributed scheduler (`tcp://host:8786`); the hosts
    are then read on its workers, which must import tfpgo and see the logdir at
    the same path. `connect_timeout_s` bounds connecting and waiting for a worker.
    """

    workers: int | None = None
    scheduler: str | None = None
    connect_timeout_s: float = 10.0


@dataclass
class HostPart:
    """One host file's events, numbered as if it were read alone.

    `chunks` are (track, name ids, starts, durations) per line, ids local to
    `names`/`tracks`; starts in ps from `base_ns`. `stats`, `column_stats` (as
    `ColumnStats.columns()`, name ids local to `stat_names`, string ids to
    `stat_strings`), `flow_pairs`,
    `flow_chunks` and `step_events` use indices local to this host's events.
    """

    path: str
    base_ns: int
    count: int
    names: list[str] = field(default_factory=list)
    tracks: list[Track] = field(default_factory=list)
    chunks: list[tuple[int, np.ndarray, np.ndarray, np.ndarray]] = field(default_factory=list)
    stats: dict[int, dict[str, Any]] = field(default_factory=dict)
    stat_names: list[str] = field(default_factory=list)
    column_stats: tuple[np.ndarray, np.ndarray, np.ndarray, dict[int, Any], np.ndarray] | None = (
        None
    )
    stat_strings: list[str] = field(default_factory=list)
    flow_pairs: list[tuple[int, int]] = field(default_factory=list)
    flow_chunks: list[np.ndarray] = field(default_factory=list)
    step_events: list[tuple[int, int]] = field(default_factory=list)
    hlo_modules: list[HloModule] = field(default_factory=list)
    jax: bool = False


def read_host(path: str, source: str) -> HostPart:
    """The map: one `.xplane.pb` into a HostPart (run in a worker process)."""
    file = Path(path)
    with paused_gc():
        builder = TableBuilder(source, "xplane")
        base_ns = add_xplane_file(builder, file, file.name.removesuffix(_SUFFIX))
    return HostPart(
        path,
        base_ns,
        builder.count,
        builder.names(),
        builder.tracks(),
        builder.column_chunks(),
        builder.stats,
        list(builder.column_stats.names),
        builder.column_stats.columns(),
        list(builder.column_stats.strings),
        builder.flow_pairs,
        builder.flow_chunks,
        builder.step_events,
        list(builder.hlo_programs.values()),
        builder.jax,
    )


def merge_parts(parts: Sequence[HostPart], source: str) -> TableBuilder:
    """The reduce: the parts, in host-file order, into one builder exactly as the
    serial read fills it (ids handed out in the same order, times from the
    first host's base)."""
    builder = TableBuilder(source, "xplane")
    base_ns = parts[0].base_ns if parts else 0
    for part in parts:
        first = builder.count
        shift_ps = (part.base_ns - base_ns) * 1000
        names = np.array([builder.name_id(name) for name in part.names], dtype=np.int32)
        tracks = [builder.track_id(t.host, t.plane, t.line) for t in part.tracks]
        for track, name_ids, starts, durations in part.chunks:
            shifted = starts + shift_ps if shift_ps else starts
            builder.add_columns(tracks[track], names[name_ids], shifted, durations)
        builder.stats.update((first + index, stats) for index, stats in part.stats.items())
        if part.column_stats is not None and part.column_stats[0].size:
            rows, keys, values, other, is_string = part.column_stats
            ids = np.array([builder.column_stats.name_id(n) for n in part.stat_names], np.int32)
            if is_string.any():  # this host's string ids, as the merged table's
                strings = [builder.column_stats.string_id(s) for s in part.stat_strings]
                values = values.copy()
                values[is_string] = np.array(strings, np.int64)[values[is_string]]
            builder.column_stats.add(rows + first, ids[keys], values, other, is_string)
        builder.flow_pairs.extend((first + a, first + b) for a, b in part.flow_pairs)
        builder.flow_chunks.extend(chunk + first for chunk in part.flow_chunks)
        builder.step_events.extend((first + index, step) for index, step in part.step_events)
        for module in part.hlo_modules:
            builder.add_hlo_module(module)
        builder.jax |= part.jax
    return builder


def report_part(progress: Progress | None, part: HostPart | None) -> None:
    if progress and part is not None:
        progress(f"read {Path(part.path).name} ({part.count:,} events)")
