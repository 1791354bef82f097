"""Chrome trace-event JSON (xprof's trace viewer, PyTorch/Kineto, Perfetto).

Handled phases: `X` (complete), `B`/`E` (begin/end pairs per thread), `i`/`I`
(instant, zero duration), `M` (process and thread names), and flow events
`s`/`t`/`f`: `s` and `t` bind to the innermost slice enclosing them on their
thread, `f` to the next slice starting at or after it (or, with `"bp": "e"`,
to the enclosing one), as the Trace Event Format specifies. Times are
microseconds (floats).

Conventions of particular producers that carry meaning for tfpgo:
  * xprof names TF op events by their type and keeps `node:type` in
    `args.long_name`: the long name becomes the event name;
  * xprof's step markers carry `args.step_num`;
  * xprof links producer and consumer events with a shared `args.flow` id.
Hosts: the `host` of a Chrome trace is its process name up to the first
`/device:` or `/host:` part, or the file name if there is none.
"""

from __future__ import annotations

import bisect
import contextlib
import itertools
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from tfpgo.errors import UserError
from tfpgo.trace.events import TableBuilder
from tfpgo.trace.readers.base import TraceReader

_PS_PER_US = 1_000_000
# Times and durations must fit the event table's int64 picoseconds with room
# for sums and differences (end = ts + dur, dur = E - B): 2**61 ps, 26 days, is
# more than any trace spans.
_MAX_PS = 2**61


def is_chrome_trace(document: Any) -> bool:
    if isinstance(document, dict):
        return isinstance(document.get("traceEvents"), list)
    return isinstance(document, list) and all(
        isinstance(e, dict) and "ph" in e for e in document[:16]
    )


def read_chrome(path: Path, document: Any, builder: TableBuilder) -> None:
    """Appends the events of a Chrome trace document to `builder`."""
    events = document["traceEvents"] if isinstance(document, dict) else document
    processes: dict[Any, str] = {}
    threads: dict[tuple[Any, Any], str] = {}
    for event in events:
        if isinstance(event, dict) and event.get("ph") == "M":
            _check_ids(path, event)
            args = _args(path, event)
            if event.get("name") == "process_name":
                processes[event.get("pid")] = str(args.get("name", event.get("pid")))
            elif event.get("name") == "thread_name":
                threads[(event.get("pid"), event.get("tid"))] = str(args.get("name"))
    slices = _collect_slices(path, events)
    per_track: dict[int, list[tuple[int, int, int, int]]] = defaultdict(list)
    flow_ids: dict[str, list[int]] = defaultdict(list)
    flow_points: list[tuple[str, str, Any, Any, int, bool]] = []
    for key, (pid, tid, name, start, duration, args) in enumerate(slices):
        if name is None:  # a flow point, bound after the slices exist
            flow_points.append(args)
            continue
        process = processes.get(pid, str(pid))
        host, plane = _host_and_plane(process, path)
        track = builder.track_id(host, plane, threads.get((pid, tid), str(tid)))
        per_track[track].append((start, duration, builder.name_id(name), key))
    index_of: dict[int, int] = {}
    by_thread: dict[tuple[Any, Any], list[tuple[int, int, int]]] = defaultdict(list)
    for track, rows in per_track.items():
        rows.sort()
        starts = np.array([r[0] for r in rows], dtype=np.int64)
        first = builder.add_columns(
            track,
            np.array([r[2] for r in rows]),
            starts,
            np.array([r[1] for r in rows], dtype=np.int64),
        )
        for offset, row in enumerate(rows):
            index = first + offset
            index_of[row[3]] = index
            pid, tid, _, _, _, args = slices[row[3]]
            by_thread[(pid, tid)].append((row[0], row[0] + row[1], index))
            if args:
                _keep_args(builder, index, args, flow_ids)
    for ids in flow_ids.values():
        builder.flow_pairs.extend((ids[0], other) for other in ids[1:])
    _bind_flow_points(builder, flow_points, by_thread)


def _collect_slices(path: Path, events: list[Any]) -> list[tuple[Any, ...]]:
    """(pid, tid, name, start_ps, dur_ps, args) per slice; flow points with name None."""
    slices: list[tuple[Any, ...]] = []
    open_slices: dict[tuple[Any, Any], list[tuple[str, int, dict[str, Any]]]] = defaultdict(list)
    for event in events:
        if not isinstance(event, dict):
            raise UserError(f"{path}: traceEvents holds a non-object entry; not a Chrome trace")
        phase = event.get("ph")
        if phase == "M" or phase is None:
            continue
        try:
            start = round(float(event.get("ts", 0)) * _PS_PER_US)
            duration = round(float(event.get("dur", 0)) * _PS_PER_US)
        except (TypeError, ValueError, OverflowError):  # OverflowError: inf
            raise UserError(
                f"{path}: event {event.get('name')!r} has a non-numeric ts or dur"
            ) from None
        if not (abs(start) < _MAX_PS and abs(duration) < _MAX_PS):
            raise UserError(f"{path}: event {event.get('name')!r} has a ts or dur beyond 26 days")
        _check_ids(path, event)
        thread = (event.get("pid"), event.get("tid"))
        name = str(event.get("name", ""))
        args = _args(path, event)
        if phase == "X":
            slices.append((*thread, _event_name(name, args), start, duration, args))
        elif phase in ("i", "I", "n"):
            slices.append((*thread, _event_name(name, args), start, 0, args))
        elif phase == "B":
            open_slices[thread].append((name, start, args))
        elif phase == "E" and open_slices[thread]:
            begin_name, begin, begin_args = open_slices[thread].pop()
            merged = {**begin_args, **args}
            slices.append((*thread, _event_name(begin_name, merged), begin, start - begin, merged))
        elif phase in ("s", "t", "f") and "id" in event:
            key = f"{event.get('cat', '')}:{event['id']}"
            slices.append(
                (*thread, None, start, 0, (key, phase, *thread, start, event.get("bp") == "e"))
            )
    return slices


def _check_ids(path: Path, event: dict[str, Any]) -> None:
    """pid and tid key dictionaries: an object or array there is no trace."""
    if isinstance(event.get("pid"), dict | list) or isinstance(event.get("tid"), dict | list):
        raise UserError(
            f"{path}: event {str(event.get('name'))[:80]!r} has a pid or tid that is "
            "neither a number nor a string; not a Chrome trace"
        )


def _args(path: Path, event: dict[str, Any]) -> dict[str, Any]:
    args = event.get("args") or {}
    if not isinstance(args, dict):
        raise UserError(
            f"{path}: event {str(event.get('name'))[:80]!r} has 'args' that are not an "
            "object; not a Chrome trace"
        )
    return args


def _event_name(name: str, args: dict[str, Any]) -> str:
    long_name = args.get("long_name")
    return long_name if isinstance(long_name, str) and ":" in long_name else name


def _host_and_plane(process: str, path: Path) -> tuple[str, str]:
    for marker in ("/device:", "/host:"):
        at = process.find(marker)
        if at > 0:
            return process[:at], process[at:]
        if at == 0:
            return path.name.split(".")[0], process
    return path.name.split(".")[0], process


def _keep_args(
    builder: TableBuilder, index: int, args: dict[str, Any], flow_ids: dict[str, list[int]]
) -> None:
    if "step_num" in args:
        # a step number that is no int64 is ignored, like one that is no number
        with contextlib.suppress(TypeError, ValueError, OverflowError):
            step = int(args["step_num"])
            if -(2**63) <= step < 2**63:
                builder.step_events.append((index, step))
    if "flow" in args:
        flow_ids[str(args["flow"])].append(index)
    builder.stats[index] = {k: v for k, v in args.items() if k not in ("long_name", "flow")}


def _bind_flow_points(
    builder: TableBuilder,
    points: list[tuple[Any, ...]],
    by_thread: dict[tuple[Any, Any], list[tuple[int, int, int]]],
) -> None:
    """Chains the slices bound to the `s`/`t`/`f` points of each flow id."""
    for rows in by_thread.values():
        rows.sort()
    starts = {thread: [r[0] for r in rows] for thread, rows in by_thread.items()}
    chains: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for key, phase, pid, tid, at, enclosing in points:
        rows = by_thread.get((pid, tid), [])
        thread_starts = starts.get((pid, tid), [])
        target = None
        if phase == "f" and not enclosing:
            # default binding of a flow end: the next slice that starts at or after it
            after = bisect.bisect_left(thread_starts, at)
            target = rows[after][2] if after < len(rows) else None
        else:
            # innermost enclosing slice: the latest-starting one that still covers `at`
            slot = bisect.bisect_right(thread_starts, at) - 1
            for candidate in range(slot, max(slot - 64, -1), -1):
                if rows[candidate][1] >= at:
                    target = rows[candidate][2]
                    break
        if target is not None:
            chains[key].append((at, target))
    for chain in chains.values():
        chain.sort()
        builder.flow_pairs.extend(
            (a[1], b[1]) for a, b in itertools.pairwise(chain) if a[1] != b[1]
        )


CHROME_READER = TraceReader(
    "chrome",
    "a Chrome trace-event JSON ('traceEvents', plain or gzip)",
    lambda source: is_chrome_trace(source.document),
    lambda source, builder, _: read_chrome(source.path, source.document, builder),
)
