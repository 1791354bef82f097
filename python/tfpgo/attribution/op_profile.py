"""Per-op profile: TF op events aggregated per runtime node name.

The document (`op_profile.json`, format `tfpgo.op_profile`) is specified
in docs/formats.md; the MLIR pass `tf-annotate-operations-profile` reads it.
Names stay exactly as executed (`while/body/_1/...`, the node a fused kernel
is named after): mapping them onto MLIR ops is the pass's job.

Self time: a TF op event's duration minus the time of TF op events directly
nested in it on the same line (a function-call op running its body inline).
This is what xprof's framework_op_stats reports as self time.

XLA-compiled steps run HLO instructions instead of TF op kernels: each HLO
event's time is split over the TF nodes it came from (`tfpgo.attribution.xla_attribution`)
and every part becomes an execution of that node, its origin (module,
instruction, fusion or not) recorded in the entry's `xla`. HLO events are ops
for self times (an `_XlaRun` op's self time excludes them) and for `non_op_ps`.
Instructions without a TF node are listed in `xla_inserted`.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np

from tfpgo import kernels
from tfpgo.attribution.device_attribution import DeviceAttribution, attribute_device
from tfpgo.attribution.device_profile import (
    DeviceCopies,
    DeviceKernel,
    DeviceProfile,
    DeviceStep,
    DeviceTime,
    build_device_profile,
)
from tfpgo.attribution.xla_attribution import (
    HloAttribution,
    XlaInserted,
    XlaOrigin,
    attribute,
    inserted_instructions,
    origins_by_node,
)
from tfpgo.documents import (
    expect_format,
    malformed_as_error,
    new_header,
    read_json,
    write_compact_json,
)
from tfpgo.trace.device import device_track_mask
from tfpgo.trace.events import NO_STEP, EventTable, distinct_values
from tfpgo.trace.ordering import lexsort, sort_within_groups

FORMAT = "tfpgo.op_profile"
_BLOCK = 1 << 20  # events at a time where a whole temporary column is not needed
VERSION = 3


class Durations(Sequence[int]):
    """An op's execution durations in ps, ascending: an int64 array (a slice of one
    array shared by all ops) where a tuple takes ~40 bytes an execution (10M-event
    traces have millions). Equal to any sequence of the same ints."""

    __slots__ = ("array",)

    def __init__(self, values: Sequence[int] | np.ndarray = ()) -> None:
        self.array = np.asarray(values, dtype=np.int64)

    def __len__(self) -> int:
        return int(self.array.shape[0])

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return Durations(self.array[index])
        return int(self.array[index])

    def __iter__(self) -> Iterator[int]:
        return iter(self.array.tolist())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Durations):
            return bool(np.array_equal(self.array, other.array))
        if isinstance(other, tuple | list):
            return self.array.tolist() == list(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.array.tobytes())

    def __repr__(self) -> str:
        return f"Durations({self.array.tolist()})"


@dataclass(frozen=True)
class OpStats:
    """Aggregate of every execution of one runtime node name."""

    name: str
    op_types: tuple[str, ...]
    count: int
    total_ps: int
    self_ps: int
    mean_ps: int
    min_ps: int
    max_ps: int
    p50_ps: int
    p95_ps: int
    first_start_ps: int
    durations_ps: Durations
    # HLO instructions this entry's time came from, the largest first; () for TF op kernels.
    xla: tuple[XlaOrigin, ...] = ()
    # Device time (version 3): kernels and copies attributed to this node, all devices;
    # per device only when the trace has several.
    device_self_ps: int = 0
    device_count: int = 0
    devices: tuple[DeviceTime, ...] = ()

    def xla_summary(self) -> dict[str, str]:
        """`xla_module`/`xla_fusion` of the entry's largest origin (the annotate pass
        copies them into `profiler_data`); {} without XLA origin."""
        if not self.xla:
            return {}
        top = self.xla[0]
        return {"xla_module": top.module, "xla_fusion": top.instruction if top.fusion else ""}


@dataclass(frozen=True)
class Totals:
    wall_ps: int
    op_total_ps: int
    op_self_ps: int
    non_op_ps: int
    op_events: int
    events: int
    # XLA: all HLO instruction time, the part split onto TF nodes, the XLA-inserted rest.
    hlo_ps: int = 0
    hlo_attributed_ps: int = 0
    xla_inserted_ps: int = 0
    hlo_events: int = 0
    # Device planes (version 3): every device event's time, kernels, copies and memsets,
    # the part attributed to nodes, and inside the steps the busy and idle device time.
    device_ps: int = 0
    device_kernel_ps: int = 0
    device_copy_ps: int = 0
    device_attributed_ps: int = 0
    device_busy_ps: int = 0
    device_idle_ps: int = 0
    device_events: int = 0


@dataclass(frozen=True)
class OpProfile:
    source: str
    hosts: tuple[str, ...]
    steps: tuple[int, ...]
    totals: Totals
    ops: tuple[OpStats, ...]
    # The wall time of each of `steps`: the span of its markers over all hosts.
    # Empty when a step has no marker (or for documents written without it).
    step_wall_ps: tuple[int, ...] = ()
    xla_inserted: tuple[XlaInserted, ...] = ()
    # Device planes (version 3; empty without them): kernels grouped by name and the
    # instruction they ran (those with no `ops` are the unattributed device time),
    # copies by direction, busy/idle per device and step.
    device_kernels: tuple[DeviceKernel, ...] = ()
    device_copies: tuple[DeviceCopies, ...] = ()
    device_steps: tuple[DeviceStep, ...] = ()

    @property
    def has_device(self) -> bool:
        return self.totals.device_events > 0

    def to_json(self) -> dict[str, Any]:
        return self._document(plain_durations=True)

    def _document(self, plain_durations: bool) -> dict[str, Any]:
        return {
            **new_header(FORMAT, VERSION, self.source),
            "hosts": list(self.hosts),
            "steps": list(self.steps),
            "step_wall_ps": list(self.step_wall_ps),
            "totals": asdict(self.totals),
            "ops": [_op_json(op, plain_durations) for op in self.ops],
            "xla_inserted": [asdict(entry) for entry in self.xla_inserted],
            "device_kernels": [asdict(entry) for entry in self.device_kernels],
            "device_copies": [asdict(entry) for entry in self.device_copies],
            "device_steps": [asdict(entry) for entry in self.device_steps],
        }

    def write(self, path: Path) -> None:
        """Writes the document atomically (no half-written file on failure); an op's
        durations become Python ints only while that op is encoded."""
        write_compact_json(path, self._document(plain_durations=False), _durations_json)

    def by_name(self) -> dict[str, OpStats]:
        return {op.name: op for op in self.ops}

    @staticmethod
    def from_json(document: Any, origin: str = "<op profile>") -> OpProfile:
        expect_format(origin, document, FORMAT)
        with malformed_as_error(origin, FORMAT):
            ops = tuple(_op_from_json(op) for op in document["ops"])
            return OpProfile(
                document["source"],
                tuple(document["hosts"]),
                tuple(document["steps"]),
                Totals(**document["totals"]),
                ops,
                tuple(document.get("step_wall_ps", ())),
                tuple(XlaInserted(**entry) for entry in document.get("xla_inserted", ())),
                tuple(
                    DeviceKernel(
                        **{
                            **entry,
                            "ops": tuple(entry["ops"]),
                            "folded": tuple(entry.get("folded", ())),
                        }
                    )
                    for entry in document.get("device_kernels", ())
                ),
                tuple(DeviceCopies(**entry) for entry in document.get("device_copies", ())),
                tuple(DeviceStep(**entry) for entry in document.get("device_steps", ())),
            )

    @staticmethod
    def read(path: Path) -> OpProfile:
        return OpProfile.from_json(read_json(path), str(path))


_OPTIONAL_FIELDS = ("xla", "device_self_ps", "device_count", "devices")
_PLAIN_FIELDS = tuple(f.name for f in fields(OpStats) if f.name not in _OPTIONAL_FIELDS)


def _op_json(op: OpStats, plain_durations: bool = True) -> dict[str, Any]:
    # field by field: dataclasses.asdict deep-copies every durations tuple
    entry = {name: _plain(getattr(op, name)) for name in _PLAIN_FIELDS}
    if not plain_durations:
        entry["durations_ps"] = op.durations_ps
    entry["device_self_ps"] = op.device_self_ps
    entry["device_count"] = op.device_count
    if op.devices:
        entry["devices"] = [asdict(device) for device in op.devices]
    if op.xla:
        entry["xla"] = [asdict(origin) for origin in op.xla]
        entry.update(op.xla_summary())
    return entry


def _op_from_json(entry: dict[str, Any]) -> OpStats:
    plain = {name: entry[name] for name in _PLAIN_FIELDS}
    plain["op_types"] = tuple(plain["op_types"])
    durations = plain["durations_ps"]
    if not isinstance(durations, list) or not all(type(d) is int for d in durations):
        raise TypeError("'durations_ps' must be a list of integers")
    plain["durations_ps"] = Durations(durations)
    return OpStats(
        **plain,
        xla=tuple(XlaOrigin(**o) for o in entry.get("xla", ())),
        device_self_ps=entry.get("device_self_ps", 0),
        device_count=entry.get("device_count", 0),
        devices=tuple(DeviceTime(**d) for d in entry.get("devices", ())),
    )


def _durations_json(value: object) -> list[int]:
    """json.dumps' `default` for the durations `OpProfile.write` leaves as they are."""
    if isinstance(value, Durations):
        return value.array.tolist()
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def _plain(value: Any) -> Any:
    if isinstance(value, Durations):
        return value.array.tolist()
    return list(value) if isinstance(value, tuple) else value


def nearest_rank(sorted_values: Sequence[int] | np.ndarray, q: float) -> int:
    """Nearest-rank percentile: sorted[ceil(q*n) - 1] (n >= 1). The one rule for
    every percentile tfpgo writes (the C++ passes use the same, in integers)."""
    rank = max(math.ceil(q * len(sorted_values)), 1)
    return int(sorted_values[rank - 1])


def self_times(table: EventTable, rows: np.ndarray) -> np.ndarray:
    """Self time of each event in `rows` (indices of TF op events)."""
    return nested_self_times(table.start_ps[rows], table.duration_ps[rows], table.track_id[rows])


def nested_self_times(
    start_ps: np.ndarray, duration_ps: np.ndarray, track: np.ndarray
) -> np.ndarray:
    """Self time of each event: its duration minus the part of every event
    directly nested in it on the same track that lies inside it (a nested event
    outlasting its parent is clipped at the parent's end). The one self-time
    rule of tfpgo; it is xprof's (`framework_op_stats` agrees, tested).

    The walk keeps a stack of the enclosing events per track, in (track, start,
    longer first) order: a native kernel (`tfpgo.kernels.nested_self_times`).
    """
    order = lexsort((-duration_ps, start_ps, track))
    starts = start_ps[order]
    ends = starts + duration_ps[order]
    return kernels.nested_self_times(starts, ends, track[order], order, duration_ps)


def build_op_profile(
    table: EventTable,
    xla: HloAttribution | None = None,
    device: DeviceAttribution | None = None,
) -> OpProfile:
    """Aggregates the TF op events, the HLO events and the device events of `table`
    (see the module doc); `xla` is `tfpgo.attribution.xla_attribution.attribute(table)` and
    `device` `tfpgo.attribution.device_attribution.attribute_device(table)` if the caller
    has them already."""
    xla = xla or attribute(table)
    device = device or attribute_device(table)
    on_device = build_device_profile(table, device)
    nodes = _profiled_nodes(table, xla, device)
    rows = _host_op_rows(table, nodes, device)
    hlo_rows = np.array([event.index for event in xla.events], dtype=np.int64)
    # HLO events nest in the ops that ran them (`_XlaRun`): they count as ops for self time.
    timed_rows = np.concatenate([rows, hlo_rows])
    executions = _node_executions(table, rows, timed_rows, xla, nodes)
    types = _node_types(table, xla, device, nodes)
    ops = _op_entries(nodes, executions, types, xla, device, on_device)
    # device time first where there is any (the host only launched it)
    ops.sort(key=lambda op: (-op.device_self_ps, -op.self_ps, op.name))
    totals = Totals(
        _wall(table),
        executions.total_ps,
        executions.total_self_ps,
        non_op_time(table, timed_rows),
        int(rows.size) + len(xla.events) - len(xla.inserted),
        len(table),
        xla.hlo_ps,
        xla.attributed_ps,
        xla.inserted_ps,
        len(xla.events),
        on_device.device_ps,
        on_device.kernel_ps,
        on_device.copy_ps,
        on_device.attributed_ps,
        on_device.busy_ps,
        on_device.idle_ps,
        on_device.events,
    )
    steps = tuple(int(s) for s in distinct_values(table.step) if s != NO_STEP)
    hosts = sorted({table.tracks[t].host for t in distinct_values(table.track_id).tolist()})
    return OpProfile(
        table.source,
        tuple(hosts),
        steps,
        totals,
        tuple(ops),
        _step_walls(table, steps),
        inserted_instructions(xla),
        on_device.kernels,
        on_device.copies,
        on_device.steps,
    )


@dataclass(frozen=True)
class _ProfiledNodes:
    """The runtime node names the profile can have an entry for: those of TF op
    events, of HLO parts and of device parts, sorted."""

    names: list[str]
    index: dict[str, int]
    # per event name id: the index of its TF op's node, -1 for a name no TF op has
    of_name: np.ndarray


def _profiled_nodes(
    table: EventTable, xla: HloAttribution, device: DeviceAttribution
) -> _ProfiledNodes:
    op_names = table.op_names
    names = sorted(
        {op[0] for op in op_names if op is not None}
        | {p.node for p in xla.parts}
        | {node.name for node in device.nodes}
    )
    index = {node: i for i, node in enumerate(names)}
    of_name = np.array([index[op[0]] if op else -1 for op in op_names] or [-1], dtype=np.int64)
    return _ProfiledNodes(names, index, of_name)


def _host_op_rows(
    table: EventTable, nodes: _ProfiledNodes, device: DeviceAttribution
) -> np.ndarray:
    """The rows of the TF op events that ran on the host."""
    # a mask per name, then per event: no int64 column over every event (device
    # events are never host ops, whatever their name)
    host_op = (nodes.of_name >= 0)[table.name_id] if len(table) else np.zeros(0, bool)
    if device.rows.size:
        host_op &= ~device_track_mask(table)[table.track_id]
    return np.flatnonzero(host_op)


@dataclass(frozen=True)
class _NodeExecutions:
    """Every host execution of the nodes (TF op events and HLO parts), per node index."""

    # the durations grouped by node, ascending within a node; node i's are
    # sorted_durations[bounds[i] : bounds[i + 1]]
    sorted_durations: np.ndarray
    bounds: np.ndarray
    self_ps: np.ndarray
    first_start_ps: np.ndarray
    # over all nodes
    total_ps: int
    total_self_ps: int


def _node_executions(
    table: EventTable,
    rows: np.ndarray,
    timed_rows: np.ndarray,
    xla: HloAttribution,
    nodes: _ProfiledNodes,
) -> _NodeExecutions:
    """Groups the TF op events `rows` and the HLO parts of `xla` by node; the self
    times are those among `timed_rows` (the op events, then the HLO events). Its
    columns over every execution go when it returns: the later steps peak without them."""
    selfs = self_times(table, timed_rows)[: rows.size]
    part_ps = np.array([part.ps for part in xla.parts], dtype=np.int64)
    node = np.concatenate(
        [nodes.of_name[table.name_id[rows]], [nodes.index[p.node] for p in xla.parts]]
    ).astype(np.int64)
    durations = np.concatenate([table.duration_ps[rows], part_ps])
    selfs = np.concatenate([selfs, part_ps])
    starts = np.concatenate([table.start_ps[rows], [p.event.start_ps for p in xla.parts]]).astype(
        np.int64
    )
    count = len(nodes.names)
    sorted_nodes, sorted_durations = sort_within_groups(node, durations)
    first = np.full(count, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(first, node, starts)
    return _NodeExecutions(
        sorted_durations,
        np.searchsorted(sorted_nodes, np.arange(count + 1)),
        np.bincount(node, weights=selfs, minlength=count),
        first,
        int(durations.sum()),
        int(selfs.sum()),
    )


def _node_types(
    table: EventTable, xla: HloAttribution, device: DeviceAttribution, nodes: _ProfiledNodes
) -> list[set[str]]:
    """Per node index, the op types its TF op events, HLO parts and device parts name."""
    types: list[set[str]] = [set() for _ in nodes.names]
    for op in table.op_names:
        if op is not None:
            types[nodes.index[op[0]]].add(op[1])
    for part in xla.parts:
        types[nodes.index[part.node]].add(part.op_type)
    for device_node in device.nodes:
        types[nodes.index[device_node.name]].add(device_node.op_type)
    return types


def _op_entries(
    nodes: _ProfiledNodes,
    executions: _NodeExecutions,
    types: list[set[str]],
    xla: HloAttribution,
    device: DeviceAttribution,
    on_device: DeviceProfile,
) -> list[OpStats]:
    """One entry per node with a host execution or device time, in node order."""
    origins = origins_by_node(xla, device)
    device_of = {nodes.index[node.name]: at for at, node in enumerate(device.nodes)}
    ops = []
    for i, name in enumerate(nodes.names):
        sorted_durations = executions.sorted_durations[
            executions.bounds[i] : executions.bounds[i + 1]
        ]
        count = int(sorted_durations.shape[0])
        on = device_of.get(i)
        device_count = int(on_device.node_count[on]) if on is not None else 0
        if count == 0 and device_count == 0:
            continue  # the name exists, but its events were filtered away
        total = int(sorted_durations.sum())
        ops.append(
            OpStats(
                name,
                tuple(sorted(t for t in types[i] if t)),
                count,
                total,
                round(executions.self_ps[i]),
                total // count if count else 0,
                int(sorted_durations[0]) if count else 0,
                int(sorted_durations[-1]) if count else 0,
                nearest_rank(sorted_durations, 0.5) if count else 0,
                nearest_rank(sorted_durations, 0.95) if count else 0,
                int(executions.first_start_ps[i]) if count else int(on_device.node_first_ps[on]),
                Durations(sorted_durations),
                origins.get(name, ()),
                int(on_device.node_ps[on]) if on is not None else 0,
                device_count,
                on_device.per_device.get(on, ()) if on is not None else (),
            )
        )
    return ops


def _step_walls(table: EventTable, steps: tuple[int, ...]) -> tuple[int, ...]:
    """Wall time of each step: its markers' span over all hosts; () if one lacks them."""
    spans: dict[int, tuple[int, int]] = {}
    for marker in table.steps:
        start, end = spans.get(marker.step, (marker.start_ps, marker.end_ps))
        spans[marker.step] = (min(start, marker.start_ps), max(end, marker.end_ps))
    if not steps or any(step not in spans for step in steps):
        return ()
    return tuple(spans[step][1] - spans[step][0] for step in steps)


def _wall(table: EventTable) -> int:
    if len(table) == 0:
        return 0
    end = max(
        int((table.start_ps[at : at + _BLOCK] + table.duration_ps[at : at + _BLOCK]).max())
        for at in range(0, len(table), _BLOCK)
    )
    return end - int(table.start_ps.min())


def non_op_time(table: EventTable, op_rows: np.ndarray) -> int:
    """Time inside the profiled steps during which no TF op ran on the host.

    Windows: the step markers of each host that has events (the whole span of
    the host's events if it has no markers). Summed over hosts.
    """
    host_of_track = np.array([t.host for t in table.tracks], dtype=object)
    total = 0
    for host in sorted(set(host_of_track[distinct_values(table.track_id)].tolist())):
        on_host = (host_of_track == host)[table.track_id]
        windows = [(m.start_ps, m.end_ps) for m in table.steps if m.host == host]
        if not windows:
            rows = np.flatnonzero(on_host)
            ends = table.start_ps[rows] + table.duration_ps[rows]
            windows = [(int(table.start_ps[rows].min()), int(ends.max()))]
        ops = op_rows[on_host[op_rows]]
        covered = _union(table.start_ps[ops], table.start_ps[ops] + table.duration_ps[ops])
        window_starts = np.array([start for start, _ in windows], dtype=np.int64)
        window_ends = np.array([end for _, end in windows], dtype=np.int64)
        total += int((window_ends - window_starts).sum())
        total -= _overlap(covered, window_starts, window_ends)
    return total


def _union(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Disjoint sorted intervals covering the union of [start, end). Runs at the op
    profile's memory peak: each temporary goes before the next is made (pass arrays
    nothing else holds and the unsorted ones go too)."""
    if starts.size == 0:
        return starts, ends
    order = np.argsort(starts, kind="stable")
    starts = starts[order]
    ends = ends[order]
    del order
    np.maximum.accumulate(ends, out=ends)  # each interval's end: the running end so far
    new = np.ones(starts.size, dtype=bool)
    new[1:] = starts[1:] > ends[:-1]
    firsts = np.flatnonzero(new)
    # a group's last running end is its own largest end (earlier groups end before it)
    return starts[firsts], ends[np.append(firsts[1:] - 1, starts.size - 1)]


def _overlap(
    union: tuple[np.ndarray, np.ndarray], window_starts: np.ndarray, window_ends: np.ndarray
) -> int:
    """Total length of `union` (disjoint sorted intervals) inside the windows.

    Binary search plus prefix sums: O((windows) log n) rather than a scan of
    every interval per window, which grew with steps × events on long profiles.
    """
    starts, ends = union
    if starts.size == 0:
        return 0
    prefix = np.concatenate(([0], np.cumsum(ends - starts)))
    first = np.searchsorted(ends, window_starts, side="right")  # first interval ending inside
    stop = np.searchsorted(starts, window_ends, side="left")  # intervals starting before end
    hit = first < stop
    first, stop = first[hit], stop[hit]
    inside = prefix[stop] - prefix[first]
    inside -= np.maximum(0, window_starts[hit] - starts[first])  # clip the first interval
    inside -= np.maximum(0, ends[stop - 1] - window_ends[hit])  # clip the last interval
    return int(inside.sum())
