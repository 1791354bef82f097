"""Device time onto framework ops: each kernel, copy and memset of a device plane
(`tfpgo.trace.device`) split over the TF nodes (XLA: the `op_name`s) it ran for.

One rule per source of truth, tried in this order:

  * `hlo_op` (XLA): the stat names an instruction of the module its `hlo_module` /
    `program_id` names in the trace's `HloProto`s; the instruction's nodes (a
    fusion: the nodes of every instruction inside it) get the event's time in
    equal integer parts (`tfpgo.attribution.parts.split_equally`, as on the CPU);
  * command buffers: `hlo_op` names no instruction of a known module (it is
    `command_buffer_N`): the kernel is matched inside its execution
    (`tfpgo.attribution.command_buffer`: by kernel name and XLA's kernel reuse,
    then by the schedule's library calls);
  * `tf_op` (TensorFlow's own GPU kernels): `"<node>:<type>"`, the op the
    executor's `AnnotatedTraceMe` wrapped the launch in (xprof reads the same);
  * else unattributed, with the reason: `no_framework_op` (nothing names an op:
    copies the runtime made, e.g. feeding inputs), `no_hlo_proto`, `no_op_name`
    (XLA's own instruction), `command_buffer_ambiguous: ...`,
    `command_buffer_no_correlation`. Never dropped: attributed plus unattributed
    is all device time.

Given the node names the annotated module has (`keep`), an event whose nodes are
partly absent from it (a broadcast XLA fused into a kernel and the module folded
away) is split over the nodes it has; the others are the resolution's `folded`.
An event none of whose nodes the module has keeps them all (they stay unresolved
there, with the reason the annotation gives).

Work is done once per distinct (kernel name, stats) signature and once per
distinct command-buffer execution, so millions of kernels cost numpy passes.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from tfpgo.attribution import command_buffer
from tfpgo.trace.device import CORRELATION_STAT, device_rows, kind_codes
from tfpgo.trace.events import EventTable, parse_op_name
from tfpgo.trace.readers.hlo_metadata import HloInstruction, TfNode

RULE_HLO_OP = "hlo_op"
RULE_TF_OP = "tf_op"
_STATS = ("hlo_op", "hlo_module", "program_id", "tf_op")


@dataclass(frozen=True)
class Resolution:
    """Where one kind of device event's time goes: `nodes` by `rule`, or, with no
    nodes, unattributed for `reason`. `module`/`instruction`: the HLO instruction
    it ran, when known."""

    rule: str
    nodes: tuple[TfNode, ...]
    module: str = ""
    instruction: str = ""
    reason: str = ""
    fusion: bool = False
    # Nodes of the instruction the annotated module does not have; their part went
    # to `nodes` (see the module doc).
    folded: tuple[str, ...] = ()

    def keeping(self, keep: Collection[str]) -> Resolution:
        """This resolution split only over the nodes in `keep`, when it has some
        there and some not; else as it is."""
        kept = tuple(node for node in self.nodes if node.name in keep)
        if not kept or len(kept) == len(self.nodes):
            return self
        folded = tuple(node.name for node in self.nodes if node.name not in keep)
        return replace(self, nodes=kept, folded=folded)


@dataclass(frozen=True)
class DeviceAttribution:
    """Every device event of a table and where its time went.

    Per event (position in `rows`): its kind (index into `device.KINDS`), device
    (index into `devices`) and resolution (index into `resolutions`). Parts: the
    (event position, node index into `nodes`, picoseconds) triples the events were
    split into; they sum exactly to the attributed events' time.
    """

    rows: np.ndarray
    kinds: np.ndarray
    device: np.ndarray
    devices: tuple[str, ...]
    resolution: np.ndarray
    resolutions: tuple[Resolution, ...]
    part_event: np.ndarray
    part_node: np.ndarray
    part_ps: np.ndarray
    nodes: tuple[TfNode, ...]

    def __len__(self) -> int:
        return int(self.rows.shape[0])

    def parts_by_node_and_resolution(self) -> list[tuple[TfNode, Resolution, int, int]]:
        """(node, resolution, parts, picoseconds) for every pair that has parts."""
        if not self.part_event.size:
            return []
        pairs = np.stack([self.part_node, self.resolution[self.part_event]], 1)
        unique, inverse = np.unique(pairs, axis=0, return_inverse=True)
        ps = np.bincount(inverse.ravel(), weights=self.part_ps, minlength=unique.shape[0])
        counts = np.bincount(inverse.ravel(), minlength=unique.shape[0])
        return [
            (self.nodes[node], self.resolutions[found], int(counts[at]), round(ps[at]))
            for at, (node, found) in enumerate(unique.tolist())
        ]

    def attributed_mask(self) -> np.ndarray:
        """Per event: whether its time went to nodes."""
        has_nodes = np.array([bool(r.nodes) for r in self.resolutions] or [False], bool)
        return has_nodes[self.resolution] if len(self) else np.zeros(0, bool)


def attribute_device(table: EventTable, keep: Collection[str] | None = None) -> DeviceAttribution:
    """Resolves every device event of `table` (see the module doc); `keep`: the node
    names the annotated module has, when known."""
    rows = device_rows(table)
    plane_of_track = [t.plane for t in table.tracks]
    devices = tuple(sorted({plane_of_track[t] for t in np.unique(table.track_id[rows]).tolist()}))
    device_index = {name: i for i, name in enumerate(devices)}
    track_device = np.array([device_index.get(p, -1) for p in plane_of_track] or [-1], np.int32)
    stats = {name: _StatOnRows(table, name, rows) for name in (*_STATS, CORRELATION_STAT)}
    interned = _Resolutions()
    first, inverse = distinct_rows(
        [table.name_id[rows].astype(np.int64), *(stats[name].codes for name in _STATS)]
    )
    per_signature = np.zeros(first.shape[0], np.int64)
    buffered = np.zeros(first.shape[0], bool)  # command-buffer kernels: per execution
    for at, row_at in enumerate(first.tolist()):
        values = {name: stats[name].value(row_at) for name in _STATS}
        found = _resolve(table, values)
        if found is None:
            buffered[at] = True
        else:
            per_signature[at] = interned.id(found)
    resolution = per_signature[inverse]
    in_buffer = buffered[inverse]
    if in_buffer.any():
        _resolve_command_buffers(table, rows, stats, in_buffer, resolution, interned)
    resolutions = interned.all
    if keep is not None:
        resolutions = [found.keeping(keep) for found in resolutions]
    nodes, part_event, part_node, part_ps = _split(table, rows, resolution, resolutions)
    return DeviceAttribution(
        rows,
        kind_codes(table, rows),
        track_device[table.track_id[rows]],
        devices,
        resolution,
        tuple(resolutions),
        part_event,
        part_node,
        part_ps,
        nodes,
    )


class _Resolutions:
    """Distinct resolutions, numbered in the order they are first seen."""

    def __init__(self) -> None:
        self.all: list[Resolution] = []
        self._ids: dict[Resolution, int] = {}

    def id(self, resolution: Resolution) -> int:
        if (found := self._ids.get(resolution)) is None:
            found = self._ids[resolution] = len(self.all)
            self.all.append(resolution)
        return found


class _StatOnRows:
    """One stat over the device events: a code per event (-1: absent) into its
    distinct values, so that no Python object is made per event."""

    def __init__(self, table: EventTable, name: str, rows: np.ndarray) -> None:
        self.codes = np.full(rows.shape[0], -1, np.int64)
        stat_rows, codes, self.distinct = table.stat_codes(name)
        if stat_rows.size and rows.size:
            slot = np.minimum(np.searchsorted(rows, stat_rows), rows.size - 1)
            hit = rows[slot] == stat_rows
            self.codes[slot[hit]] = codes[hit]

    def value(self, at: int) -> Any:
        code = int(self.codes[at])
        return None if code < 0 else self.distinct[code]


def distinct_rows(columns: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """(first index of each distinct row, each row's distinct index) of small
    non-negative-or--1 integer columns: packed into one int64 key when they fit."""
    if not columns[0].size:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    spans = [int(column.max()) + 2 for column in columns]  # codes -1.. max
    if np.prod(np.array(spans, dtype=float)) < 2.0**62:
        key = np.zeros(columns[0].shape[0], np.int64)
        for column, span in zip(columns, spans, strict=True):
            key = key * span + (column + 1)
        _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    else:
        _, first, inverse = np.unique(
            np.stack(columns, 1), axis=0, return_index=True, return_inverse=True
        )
    return first, inverse.ravel()


def _resolve(table: EventTable, stats: dict[str, object]) -> Resolution | None:
    """The resolution of one signature; None: a command-buffer kernel."""
    hlo_op, module_name = stats["hlo_op"], stats["hlo_module"]
    if hlo_op is not None:
        program_id = stats["program_id"]
        module = table.hlo_module(str(module_name or ""), int(program_id or -1))  # type: ignore[call-overload]
        if module is not None:
            instruction = module.instructions.get(str(hlo_op))
            if instruction is None:
                return None
            return _of_instruction(module.name, instruction, RULE_HLO_OP)
    tf_op = parse_op_name(str(stats["tf_op"])) if stats["tf_op"] is not None else None
    if tf_op is not None:
        return Resolution(RULE_TF_OP, (TfNode(*tf_op),))
    if hlo_op is not None:
        return Resolution("", (), str(module_name or ""), str(hlo_op), "no_hlo_proto")
    return Resolution("", (), reason="no_framework_op")


def _of_instruction(module: str, instruction: HloInstruction, rule: str) -> Resolution:
    if not instruction.nodes:
        return Resolution("", (), module, instruction.name, "no_op_name")
    return Resolution(rule, instruction.nodes, module, instruction.name, "", instruction.is_fusion)


def _resolve_command_buffers(
    table: EventTable,
    rows: np.ndarray,
    stats: dict[str, _StatOnRows],
    in_buffer: np.ndarray,
    resolution: np.ndarray,
    interned: _Resolutions,
) -> None:
    """Resolves the command-buffer kernels execution by execution (in place): an
    execution is the device events of one launch (host, `correlation_id`)."""
    correlation = stats[CORRELATION_STAT].codes
    has_correlation = correlation >= 0
    no_correlation = interned.id(Resolution("", (), reason="command_buffer_no_correlation"))
    resolution[in_buffer & ~has_correlation] = no_correlation
    hosts = np.unique(np.array([t.host for t in table.tracks], dtype=object), return_inverse=True)
    host = hosts[1].ravel()[table.track_id[rows]].astype(np.int64)
    launched = np.flatnonzero(has_correlation)
    _, execution = distinct_rows([host[launched], correlation[launched]])
    # executions holding a command-buffer kernel, each in start order
    wanted = np.zeros(execution.max() + 1 if execution.size else 0, bool)
    wanted[execution[in_buffer[launched]]] = True
    members = launched[wanted[execution]]
    member_execution = execution[wanted[execution]]
    order = np.lexsort((table.start_ps[rows[members]], member_execution))
    members, member_execution = members[order], member_execution[order]
    bounds = np.flatnonzero(np.diff(member_execution, prepend=-1, append=-2))
    cache: dict[tuple[object, ...], list[int]] = {}
    schedules: dict[int, command_buffer.Schedule] = {}
    for low, high in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True):
        order_list = members[low:high].tolist()
        names = tuple(table.names[int(table.name_id[rows[at]])] for at in order_list)
        annotated = tuple(
            None
            if in_buffer[at] or stats["hlo_op"].value(at) is None
            else str(stats["hlo_op"].value(at))
            for at in order_list
        )
        buffered = next(at for at in order_list if in_buffer[at])
        module = table.hlo_module(
            str(stats["hlo_module"].value(buffered) or ""),
            int(stats["program_id"].value(buffered) or -1),
        )
        signature = (id(module), names, annotated)
        if signature not in cache:
            assert module is not None  # a command-buffer signature has a known module
            if id(module) not in schedules:
                schedules[id(module)] = command_buffer.module_schedule(module)
            matches = command_buffer.resolve_execution(
                module, names, annotated, schedules[id(module)]
            )
            cache[signature] = [
                interned.id(
                    _of_instruction(module.name, m.instruction, m.rule)
                    if m.instruction is not None
                    else Resolution("", (), module.name, "", m.reason)
                )
                for m in matches
            ]
        for at, found in zip(order_list, cache[signature], strict=True):
            if in_buffer[at]:
                resolution[at] = found


def _split(
    table: EventTable, rows: np.ndarray, resolution: np.ndarray, resolutions: list[Resolution]
) -> tuple[tuple[TfNode, ...], np.ndarray, np.ndarray, np.ndarray]:
    """Each attributed event's duration in equal integer parts over its nodes (the
    remainder one ps each to the first nodes), as (event, node, ps) columns."""
    node_ids: dict[str, int] = {}
    nodes: list[TfNode] = []
    per_resolution: list[list[int]] = []
    for found in resolutions:
        ids = []
        for tf_node in found.nodes:
            if tf_node.name not in node_ids:
                node_ids[tf_node.name] = len(nodes)
                nodes.append(tf_node)
            ids.append(node_ids[tf_node.name])
        per_resolution.append(ids)
    widths = np.array([len(ids) for ids in per_resolution] or [0], np.int64)
    width = widths[resolution] if rows.size else np.zeros(0, np.int64)
    event = np.repeat(np.arange(rows.shape[0]), width)
    offsets = np.cumsum(np.append(0, widths))
    flat = np.array([i for ids in per_resolution for i in ids] or [0], np.int64)
    rank = np.arange(event.shape[0]) - np.repeat(np.cumsum(width) - width, width)
    node_of_part = flat[offsets[resolution[event]] + rank] if event.size else event
    duration = table.duration_ps[rows[event]]
    parts = width[event]
    share = duration // np.maximum(parts, 1) + (rank < duration % np.maximum(parts, 1))
    return tuple(nodes), event, node_of_part, share.astype(np.int64)
