"""The event DAG: trace events ordered by time, plus the causal links they record.

Exact semantics (the contract behind `mlir_graph.json`, docs/formats.md):

Nodes. The selected events (`DagEvents.OPS`: TF op events, the HLO
instruction events of XLA-compiled steps and every device event (kernels,
copies, memsets: `tfpgo.trace.device`), the default; `DagEvents.ALL`: every
event). Node ids are 0..n-1 in the order
(start, longer first, track, source order), so every edge goes from a smaller
to a larger id: the DAG is acyclic by construction.

Levels. An event is an interval [ts, ts + duration). Walking nodes in id
order, a node opens a new level when it starts at or after the end of every
earlier node; otherwise it joins the current level. A level is thus a maximal
group of overlapping (potentially parallel) events, and every event of level
k + 1 starts after every event of level k has ended.

Time edges (`kind: "time"`). Level k precedes level k + 1 entirely, but
linking all pairs would be quadratic. Each level has a *head*: its longest
event (ties: smallest id). Between consecutive levels A and B there are edges
a -> head(B) for every a in A, and head(A) -> b for every b in B (|A| + |B| - 1
edges). Every edge is a true happens-before relation; every node has an
incoming edge from the previous level and an outgoing one to the next; the
edge count is below 2n.

Flow edges (`kind: "flow"`). Causal links recorded by the trace: XPlane
producer/consumer context stats (`_p`/`_c`), Chrome flow events, and a host
launch to the device events of its `correlation_id` (`device.link_launches`). When an
endpoint is not a node (e.g. `ThreadpoolListener::Record` in an ops-only
DAG), it is lifted to the nearest node on the same line: the producer to the
last node that started at or before it (the op that scheduled the work), the
consumer to the first node starting at or after it (the first op the picked
up work ran). Lifted endpoints must lie in the same step. A flow that would
point backwards in id order (clock skew between threads) or at itself is
dropped; a flow duplicating a time edge replaces it (one edge per pair).

Critical path. The longest path by summed node duration over all edges,
computed in one pass in id order (`tfpgo.kernels.critical_path`: a node's
best incoming total is replaced only by a strictly larger one, so ties go to
the smallest predecessor; the path ends at the first node of largest total);
its nodes are marked `critical`.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from tfpgo import kernels
from tfpgo.trace.device import device_rows, hlo_event_rows
from tfpgo.trace.events import ColumnStats, Event, EventTable
from tfpgo.trace.ordering import lexsort


class DagEvents(enum.Enum):
    """Which events become DAG nodes."""

    OPS = "ops"
    ALL = "all"


class EdgeKind(enum.IntEnum):
    TIME = 0
    FLOW = 1

    @property
    def label(self) -> str:
        return self.name.lower()


@dataclass(frozen=True)
class DagNode:
    """One node as it appears in `mlir_graph.json`."""

    id: int
    name: str
    ts: int
    duration: int
    adj: tuple[int, ...]
    node: str | None
    op_type: str | None
    host: str
    plane: str
    line: str
    step: int | None
    level: int
    critical: bool
    stats: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class DagEdge:
    source: int
    target: int
    kind: EdgeKind


@dataclass
class EventDag:
    """Columnar DAG: node i is row i of `table` (rows sorted in id order)."""

    table: EventTable
    level: np.ndarray
    edges: np.ndarray  # (m, 2) int64, sorted by (source, target)
    edge_kind: np.ndarray  # (m,) int8, EdgeKind values
    critical_path: np.ndarray  # node ids, in path order
    critical_path_ps: int
    meta: dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.table)

    def adjacency(self) -> tuple[np.ndarray, np.ndarray]:
        """CSR of outgoing edges: targets of node i are targets[indptr[i]:indptr[i+1]]."""
        indptr = np.zeros(len(self) + 1, dtype=np.int64)
        np.cumsum(np.bincount(self.edges[:, 0], minlength=len(self)), out=indptr[1:])
        return indptr, self.edges[:, 1]

    def critical_mask(self) -> np.ndarray:
        mask = np.zeros(len(self), dtype=bool)
        mask[self.critical_path] = True
        return mask

    def node(self, index: int) -> DagNode:
        """The typed record of node `index` (O(degree) per call after the first)."""
        indptr, targets = self.adjacency()
        return self._record(index, self.table.event(index), indptr, targets, self.critical_mask())

    def nodes(self) -> list[DagNode]:
        indptr, targets = self.adjacency()
        critical = self.critical_mask()
        return [
            self._record(index, event, indptr, targets, critical)
            for index, event in enumerate(self.table.events())
        ]

    def _record(
        self,
        index: int,
        event: Event,
        indptr: np.ndarray,
        targets: np.ndarray,
        critical: np.ndarray,
    ) -> DagNode:
        return DagNode(
            index,
            event.name,
            event.start_ps,
            event.duration_ps,
            tuple(targets[indptr[index] : indptr[index + 1]].tolist()),
            event.node,
            event.op_type,
            event.host,
            event.plane,
            event.line,
            event.step,
            int(self.level[index]),
            bool(critical[index]),
            dict(event.stats),
        )

    def edge_records(self) -> list[DagEdge]:
        return [
            DagEdge(int(a), int(b), EdgeKind(int(k)))
            for (a, b), k in zip(self.edges.tolist(), self.edge_kind.tolist(), strict=True)
        ]

    def to_networkx(self) -> Any:
        """A `networkx.DiGraph`: node attributes as in the JSON, edge attribute `kind`."""
        import networkx as nx

        graph: nx.DiGraph[int] = nx.DiGraph(**self.meta)
        for node in self.nodes():
            attributes = {k: v for k, v in node.__dict__.items() if k not in ("id", "adj")}
            graph.add_node(node.id, **attributes)
        for edge in self.edge_records():
            graph.add_edge(edge.source, edge.target, kind=edge.kind.label)
        return graph


def build_dag(table: EventTable, events: DagEvents = DagEvents.OPS) -> EventDag:
    """Builds the DAG of `table` in O(n log n) (see the module doc)."""
    if events is DagEvents.OPS:
        selected = table.is_op_mask()
        selected[hlo_event_rows(table)] = True
        selected[device_rows(table)] = True
    else:
        selected = np.ones(len(table), bool)
    rows = np.flatnonzero(selected)
    order = lexsort((table.track_id[rows], -table.duration_ps[rows], table.start_ps[rows]))
    rows = rows[order]
    node_of_row = np.full(len(table), -1, dtype=np.int32 if rows.size < 2**31 else np.int64)
    node_of_row[rows] = np.arange(rows.size)
    nodes = _take(table, rows, node_of_row)
    level = assign_levels(nodes.start_ps, nodes.end_ps)
    flow_edges = lift_flows(table, rows, node_of_row)
    del node_of_row
    edges, kinds = _merge_edges(level_edges(level, nodes.duration_ps), flow_edges)
    del flow_edges
    path, length = kernels.critical_path(nodes.duration_ps, edges)
    return EventDag(
        nodes,
        level,
        edges,
        kinds,
        path,
        length,
        {"source": table.source, "source_kind": table.source_kind, "events": events.value},
    )


def _take(table: EventTable, rows: np.ndarray, node_of_row: np.ndarray) -> EventTable:
    """Rows of `table` in the given order (`node_of_row` its inverse, -1 elsewhere),
    flows dropped (they become edges)."""
    stats: Mapping[int, dict[str, Any]]
    if isinstance(table.stats, ColumnStats):
        stats = table.stats.take(rows, node_of_row)  # vectorized: millions of device events
    else:
        by_node: dict[int, dict[str, Any]] = {}
        if table.stats:
            has_stats = np.zeros(len(table), dtype=bool)
            has_stats[np.fromiter(table.stats, np.int64, len(table.stats))] = True
            for new in np.flatnonzero(has_stats[rows]).tolist():
                found = table.stats[int(rows[new])]
                if found:
                    by_node[new] = found
        stats = by_node
    return EventTable(
        table.source,
        table.source_kind,
        table.names,
        table.tracks,
        table.name_id[rows],
        table.track_id[rows],
        table.start_ps[rows],
        table.duration_ps[rows],
        table.step[rows],
        np.zeros((0, 2), np.int64),
        stats,
        table.steps,
        table._ops,
        jax=table.jax,
    )


def assign_levels(starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Level of each node (nodes in id order): a new level starts past all earlier ends."""
    if starts.size == 0:
        return np.zeros(0, dtype=np.int64)
    running_end = np.maximum.accumulate(ends)
    opens = np.ones(starts.size, dtype=bool)
    opens[1:] = starts[1:] >= running_end[:-1]
    return np.cumsum(opens) - 1


def level_edges(level: np.ndarray, durations: np.ndarray) -> np.ndarray:
    """Time edges between consecutive levels through each level's head (longest node),
    sorted by (source, target) and distinct.

    Levels are contiguous id ranges, so no sort is needed: a level's head is its
    first node of the level's longest duration; a head points at every node of the
    next level (ids ascending), any other node at the next level's head only.
    """
    if level.size == 0 or level[-1] == 0:
        return np.zeros((0, 2), dtype=np.int64)
    starts = np.flatnonzero(np.diff(level, prepend=-1))  # first id of each level
    sizes = np.diff(starts, append=level.size)
    longest = np.maximum.reduceat(durations, starts)
    ties = np.flatnonzero(durations == longest[level])
    head = ties[np.diff(level[ties], prepend=-1) != 0]  # first longest node per level
    sources = np.arange(starts[-1])  # every node below the last level
    source_level = level[: starts[-1]]
    is_head = head[source_level] == sources
    fanout = np.where(is_head, sizes[source_level + 1], 1)
    edge_sources = np.repeat(sources, fanout)
    # a head's targets: the next level's ids in order; anyone else's: the next head
    within = np.arange(edge_sources.size) - np.repeat(np.cumsum(fanout) - fanout, fanout)
    next_level = source_level[edge_sources] + 1
    targets = np.where(is_head[edge_sources], starts[next_level] + within, head[next_level])
    del within, next_level
    return np.stack([edge_sources, targets], axis=1).astype(np.int64, copy=False)


def lift_flows(table: EventTable, rows: np.ndarray, node_of_row: np.ndarray) -> np.ndarray:
    """Trace flows as node-id pairs, endpoints lifted onto nodes of the same line."""
    if table.flows.size == 0 or rows.size == 0:
        return np.zeros((0, 2), dtype=np.int64)
    producers, consumers = table.flows[:, 0], table.flows[:, 1]
    lines = _NodesByTrack(table, rows)
    source = lines.lift(node_of_row, producers, after=False)
    target = lines.lift(node_of_row, consumers, after=True)
    keep = (source >= 0) & (target >= 0) & (source < target)
    steps = table.step[rows]
    keep[keep] &= steps[source[keep]] == steps[target[keep]]
    pairs = np.stack([source[keep], target[keep]], axis=1)
    return unique_pairs(pairs)


class _NodesByTrack:
    """Node ids sorted by (track, start), made on first use, for lifting endpoints."""

    def __init__(self, table: EventTable, rows: np.ndarray) -> None:
        self.table = table
        self.rows = rows
        self.order = np.zeros(0, np.int64)
        self.starts = np.zeros(0, np.int64)
        self.bounds = np.zeros(0, np.int64)  # track t's nodes: order[bounds[t]:bounds[t+1]]

    def _sort(self) -> None:
        if self.bounds.size:
            return
        tracks = self.table.track_id[self.rows]
        self.order = lexsort((self.table.start_ps[self.rows], tracks))
        self.starts = self.table.start_ps[self.rows][self.order]
        self.bounds = np.searchsorted(tracks[self.order], np.arange(len(self.table.tracks) + 1))

    def lift(self, node_of_row: np.ndarray, events: np.ndarray, after: bool) -> np.ndarray:
        """Node id of each event, or of the nearest node on its track (-1 if none): the
        first starting at or after it (`after`), else the last at or before it."""
        result = node_of_row[events].astype(np.int64)
        missing = np.flatnonzero(result < 0)
        if missing.size == 0:
            return result
        self._sort()
        event_tracks = self.table.track_id[events[missing]]
        by_track = np.argsort(event_tracks, kind="stable")
        cuts = np.searchsorted(event_tracks[by_track], np.arange(len(self.table.tracks) + 1))
        side: Literal["left", "right"] = "left" if after else "right"
        for track in np.flatnonzero(np.diff(cuts)).tolist():
            lo, hi = int(self.bounds[track]), int(self.bounds[track + 1])
            if lo == hi:
                continue
            mine = missing[by_track[cuts[track] : cuts[track + 1]]]
            slot = np.searchsorted(self.starts[lo:hi], self.table.start_ps[events[mine]], side)
            slot = slot if after else slot - 1
            valid = (slot >= 0) & (slot < hi - lo)
            result[mine[valid]] = self.order[lo + slot[valid]]
        return result


def _merge_edges(time_edges: np.ndarray, flow_edges: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One edge per (source, target), sorted; a flow wins over a time edge on the same
    pair. Both inputs are sorted and distinct: a merge by insertion of one int64 key
    per pair, no sort and no copy of the pairs until the result."""
    if flow_edges.size == 0:
        edges = time_edges.astype(np.int64, copy=False).reshape(-1, 2)
        return edges, np.full(len(edges), EdgeKind.TIME, np.int8)
    time_keys, flow_keys = _pair_keys(time_edges.reshape(-1, 2)), _pair_keys(flow_edges)
    del time_edges  # the caller's copy goes too when it passes its last reference
    slot = np.minimum(np.searchsorted(time_keys, flow_keys), max(time_keys.size - 1, 0))
    replaced = np.zeros(time_keys.size, dtype=bool)
    if time_keys.size:
        replaced[slot[time_keys[slot] == flow_keys]] = True
    kept = time_keys[~replaced]
    del time_keys, slot, replaced
    at = np.searchsorted(kept, flow_keys)
    keys = np.insert(kept, at, flow_keys)
    kinds = np.insert(
        np.full(len(kept), EdgeKind.TIME, np.int8),
        at,
        np.full(len(flow_keys), EdgeKind.FLOW, np.int8),
    )
    del kept, at
    edges = np.empty((keys.size, 2), np.int64)
    np.right_shift(keys, 32, out=edges[:, 0])
    np.bitwise_and(keys, 0xFFFFFFFF, out=edges[:, 1])
    return edges, kinds


def _pair_keys(pairs: np.ndarray) -> np.ndarray:
    """(source, target) pairs as one sortable int64 (ids < 2**31)."""
    return (pairs[:, 0].astype(np.int64) << 32) | pairs[:, 1].astype(np.int64)


def unique_pairs(pairs: np.ndarray) -> np.ndarray:
    """Sorted distinct rows of an (m, 2) id array; much faster than np.unique(axis=0)."""
    if pairs.size == 0:
        return pairs.reshape(0, 2).astype(np.int64)
    _, first = np.unique(_pair_keys(pairs), return_index=True)
    return pairs[first].astype(np.int64)
