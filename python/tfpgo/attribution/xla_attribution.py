"""XLA-compiled steps: HLO instruction time attributed to the TF nodes it came from.

Under XLA (`tf.function(jit_compile=True)`, Keras `jit_compile`, auto-clustering)
a step runs no TensorFlow op kernels: the trace holds one event per executed
HLO instruction instead (stats `hlo_op`, `hlo_module`, `program_id`), and the
`/host:metadata` plane holds each module's `HloProto`
(`tfpgo.trace.readers.hlo_metadata`). This module turns those events into typed
`HloEvent`s and splits their time over TF nodes:

  * a plain instruction goes to the node of its `metadata.op_name`;
  * a fusion is split over the distinct nodes of its fused instructions in
    equal parts; integer picoseconds, the remainder one ps each to the first
    nodes, so the parts sum exactly to the event. Equal, not cost-weighted:
    XLA's HloCostAnalysis is C++ only (not in the Python wheel), and counting
    fused instructions per node would weigh free broadcasts and constants
    like the arithmetic they feed;
  * an instruction without `op_name` (copies, XLA's own ops) takes the nodes of
    its nearest named user, else operand, in the HLO dataflow graph, marked
    `inferred_by` with the chain (`tfpgo.trace.readers.hlo_metadata`);
  * one with no named neighbour at all, or of a module the metadata plane does
    not describe, is XLA-inserted: listed with its time and name, never
    dropped. Attributed plus inserted time is all HLO time.

Node names get the runtime form the annotate pass resolves (the same rules as
TF op events): `op_name` is relative to the compiled function, so an
instruction that ran inside a call node of an outer graph (the executor's
`ExecutorState::ProcessAsync::Start` event, stat `name`, around it on its
thread) is prefixed with that call node's name (`StatefulPartitionedCall/...`).
Events on thread-pool lines take the call of their module's other events.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from tfpgo.attribution.device_attribution import DeviceAttribution
from tfpgo.attribution.parts import split_equally
from tfpgo.trace.device import hlo_event_rows
from tfpgo.trace.events import EventTable
from tfpgo.trace.readers.hlo_metadata import HloModule, TfNode

# The executor's event around an asynchronous kernel; stat `name` is its node.
CALL_EVENT = "ExecutorState::ProcessAsync::Start"
SPLIT_RULE = "equal"


@dataclass(frozen=True)
class HloEvent:
    """One execution of one HLO instruction. `call` is the runtime name of the
    call node the module ran under ("" when the compiled function was the step)."""

    index: int
    module: str
    instruction: str
    program_id: int
    is_fusion: bool
    call: str
    start_ps: int
    duration_ps: int


@dataclass(frozen=True)
class HloPart:
    """The share of one HLO event that one TF node gets."""

    node: str  # runtime node name: call prefix + op_name
    op_type: str
    event: HloEvent
    ps: int


@dataclass(frozen=True)
class HloAttribution:
    """Every HLO event of a table, split into parts per TF node, or XLA-inserted."""

    events: tuple[HloEvent, ...]
    parts: tuple[HloPart, ...]
    inserted: tuple[HloEvent, ...]
    modules: Mapping[str, HloModule]

    @property
    def hlo_ps(self) -> int:
        return sum(event.duration_ps for event in self.events)

    @property
    def attributed_ps(self) -> int:
        return sum(part.ps for part in self.parts)

    @property
    def inserted_ps(self) -> int:
        return sum(event.duration_ps for event in self.inserted)


@dataclass(frozen=True)
class XlaOrigin:
    """The HLO instruction some of an op entry's time came from."""

    module: str
    instruction: str
    fusion: bool
    count: int
    total_ps: int
    # The instruction has no op_name: its nodes came from the dataflow graph
    # (`nearest_user`/`nearest_operand`, tfpgo.trace.readers.hlo_metadata).
    inferred_by: str = ""


@dataclass(frozen=True)
class XlaInserted:
    """An HLO instruction no TF node is named for; `reason` says why.

    `no_op_name`: XLA inserted it (copies, its own ops); `no_hlo_proto`: the
    trace's metadata plane does not describe its module.
    """

    module: str
    instruction: str
    opcode: str
    reason: str
    count: int
    total_ps: int


def hlo_events(table: EventTable) -> tuple[HloEvent, ...]:
    """The typed HLO instruction events of `table`, in event order."""
    rows = hlo_event_rows(table)
    if rows.size == 0:
        return ()
    calls = _enclosing_calls(table, rows)
    events = []
    for row, call in zip(rows.tolist(), calls, strict=True):
        stats = table.stats[row]
        module_name = str(stats.get("hlo_module", ""))
        name = str(stats["hlo_op"])
        program_id = int(stats.get("program_id", -1))
        module = table.hlo_module(module_name, program_id)
        instruction = module.instructions.get(name) if module else None
        events.append(
            HloEvent(
                row,
                module_name,
                name,
                program_id,
                bool(instruction and instruction.is_fusion),
                call,
                int(table.start_ps[row]),
                int(table.duration_ps[row]),
            )
        )
    return tuple(events)


def attribute(table: EventTable) -> HloAttribution:
    """Splits every HLO event of `table` over its TF nodes (see the module doc)."""
    events = hlo_events(table)
    parts: list[HloPart] = []
    inserted: list[HloEvent] = []
    for event in events:
        nodes = _nodes_of(table, event)
        if not nodes:
            inserted.append(event)
            continue
        shares = split_equally(event.duration_ps, len(nodes))
        prefix = f"{event.call}/" if event.call else ""
        parts.extend(
            HloPart(prefix + node.name, node.op_type, event, share)
            for node, share in zip(nodes, shares, strict=True)
        )
    return HloAttribution(events, tuple(parts), tuple(inserted), table.hlo_modules)


def _nodes_of(table: EventTable, event: HloEvent) -> tuple[TfNode, ...]:
    module = table.hlo_module(event.module, event.program_id)
    instruction = module.instructions.get(event.instruction) if module else None
    return instruction.nodes if instruction else ()


def _enclosing_calls(table: EventTable, rows: np.ndarray) -> list[str]:
    """The call node each HLO event ran under (see the module doc); "" if none."""
    call_name_id = table.names.index(CALL_EVENT) if CALL_EVENT in table.names else -1
    call_rows = np.flatnonzero(table.name_id == call_name_id)
    found: list[str | None] = [None] * rows.size
    for track in np.unique(table.track_id[rows]).tolist():
        mine = np.flatnonzero(table.track_id[rows] == track)
        around = call_rows[table.track_id[call_rows] == track]
        if around.size == 0:
            continue
        around = around[np.argsort(table.start_ps[around], kind="stable")]
        starts = table.start_ps[rows[mine]]
        slot = np.searchsorted(table.start_ps[around], starts, side="right") - 1
        for at, position in zip(mine.tolist(), slot.tolist(), strict=True):
            call = int(around[position]) if position >= 0 else -1
            if call >= 0 and table.start_ps[rows[at]] < table.end_ps[call]:
                found[at] = str(table.stats.get(call, {}).get("name", "")) or None
    by_module: dict[str, set[str]] = defaultdict(set)
    modules = [str(table.stats[row].get("hlo_module", "")) for row in rows.tolist()]
    for module, call_name in zip(modules, found, strict=True):
        if call_name is not None:
            by_module[module].add(call_name)
    return [
        call
        if call is not None
        else (next(iter(by_module[module])) if len(by_module[module]) == 1 else "")
        for module, call in zip(modules, found, strict=True)
    ]


def origins_by_node(
    xla: HloAttribution, device: DeviceAttribution | None = None
) -> dict[str, tuple[XlaOrigin, ...]]:
    """Per runtime node name, the HLO instructions its parts came from (host HLO events
    and device kernels), largest first."""
    sums: dict[str, dict[tuple[str, str, bool], list[int]]] = {}
    for part in xla.parts:
        key = (part.event.module, part.event.instruction, part.event.is_fusion)
        count_ps = sums.setdefault(part.node, {}).setdefault(key, [0, 0])
        count_ps[0] += 1
        count_ps[1] += part.ps
    for node, found, count, ps in device.parts_by_node_and_resolution() if device else ():
        if found.instruction:
            key = (found.module, found.instruction, found.fusion)
            count_ps = sums.setdefault(node.name, {}).setdefault(key, [0, 0])
            count_ps[0] += count
            count_ps[1] += ps

    def inferred_by(module: str, instruction: str) -> str:
        known = xla.modules.get(module)
        found = known.instructions.get(instruction) if known else None
        return found.inferred_by if found else ""

    return {
        node: tuple(
            sorted(
                (
                    XlaOrigin(*key, count, ps, inferred_by(*key[:2]))
                    for key, (count, ps) in by_origin.items()
                ),
                key=lambda o: (-o.total_ps, o.module, o.instruction),
            )
        )
        for node, by_origin in sums.items()
    }


def inserted_instructions(xla: HloAttribution) -> tuple[XlaInserted, ...]:
    """The XLA-inserted instructions with their count and time, largest first."""
    sums: dict[tuple[str, str], list[int]] = {}
    for event in xla.inserted:
        count_ps = sums.setdefault((event.module, event.instruction), [0, 0])
        count_ps[0] += 1
        count_ps[1] += event.duration_ps
    entries = [
        XlaInserted(module, instruction, *_why_inserted(xla, module, instruction), count, ps)
        for (module, instruction), (count, ps) in sums.items()
    ]
    return tuple(sorted(entries, key=lambda e: (-e.total_ps, e.module, e.instruction)))


def _why_inserted(xla: HloAttribution, module: str, instruction: str) -> tuple[str, str]:
    """(opcode, reason) of an XLA-inserted instruction."""
    known = xla.modules.get(module)
    if known is None or instruction not in known.instructions:
        return "", "no_hlo_proto"
    return known.instructions[instruction].opcode, "no_op_name"
