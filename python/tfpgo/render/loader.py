"""Reads `mlir_graph.json` (event DAG) and `op_graph.json` (op graph) into a RenderGraph.

The formats are specified in docs/formats.md. This module is the only place the
renderer touches their JSON; it detects the document by its `format` field and
rejects anything else with one line naming the file.

Time metrics of the event DAG. Events carry only `duration`, so the loader
derives the others: `self` is the duration minus the part of each event
directly nested in it on the same (host, plane, line) that lies inside it — the
op profile's `nested_self_times`, the one rule behind every `self_ps` — `total`
is the duration, `mean` is the
mean duration of all events with the same name, and `share` is `self` over the
sum of `self` of all events.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from tfpgo.attribution.op_profile import nested_self_times
from tfpgo.documents import document_header, read_json
from tfpgo.errors import UserError
from tfpgo.render.model import (
    GraphKind,
    NodeState,
    NodeTiming,
    RenderEdge,
    RenderEdgeKind,
    RenderGraph,
    RenderNode,
)


def field(
    path: Path, where: str, record: Any, key: str, kinds: tuple[type, ...], optional: bool = False
) -> Any:
    """Fetches `record[key]`, checking its JSON type; errors name file, record and key."""
    if not isinstance(record, dict):
        raise UserError(f"{path}: {where} is not an object")
    value = record.get(key)
    if value is None and optional:
        return None
    if (
        value is None
        or not isinstance(value, kinds)
        or (isinstance(value, bool) and bool not in kinds)
    ):
        wanted = " or ".join(kind.__name__ for kind in kinds)
        raise UserError(f"{path}: {where}: field '{key}' must be {wanted}, got {value!r:.60}")
    return value


def list_field(path: Path, document: dict, key: str) -> list:
    return field(path, "document", document, key, (list,))


def load_graph(path: Path) -> RenderGraph:
    """Loads either graph document, detected by its format field."""
    return graph_from_document(path, read_json(path))


def graph_from_document(path: Path, document: Any) -> RenderGraph:
    """The graph of a document already read from `path` (`load_graph` without the read)."""
    fmt, _ = document_header(path, document)
    if fmt == GraphKind.EVENT_DAG.value:
        return _load_event_dag(path, document)
    if fmt == GraphKind.OP_GRAPH.value:
        return _load_op_graph(path, document)
    raise UserError(
        f"{path}: format '{fmt}' cannot be drawn; give mlir_graph.json "
        f"({GraphKind.EVENT_DAG.value}) or op_graph.json ({GraphKind.OP_GRAPH.value})"
    )


def _edge_kind(path: Path, where: str, raw: Any, default: RenderEdgeKind) -> RenderEdgeKind:
    if raw is None:
        return default
    try:
        return RenderEdgeKind(raw)
    except ValueError:
        raise UserError(f"{path}: {where}: unknown edge kind {raw!r}") from None


def _edges(
    path: Path,
    document: dict,
    nodes: list[RenderNode],
    ends: tuple[str, str],
    default: RenderEdgeKind,
) -> list[RenderEdge]:
    """The document's edges (`ends`: the keys of their source and target ids),
    once its node ids are known unique and every edge joins two of them."""
    ids = {node.id for node in nodes}
    if len(ids) != len(nodes):
        raise UserError(f"{path}: node ids are not unique")
    edges = []
    for index, raw in enumerate(list_field(path, document, "edges")):
        where = f"edges[{index}]"
        edge = RenderEdge(
            source=field(path, where, raw, ends[0], (int,)),
            target=field(path, where, raw, ends[1], (int,)),
            kind=_edge_kind(path, where, raw.get("kind"), default),
        )
        for end in (edge.source, edge.target):
            if end not in ids:
                raise UserError(
                    f"{path}: edges[{index}] refers to node {end}, which is not in nodes"
                )
        edges.append(edge)
    return edges


def _nested_self_times(raw_nodes: list[dict]) -> dict[int, int]:
    """Self time per event id, by the op profile's rule (`nested_self_times`):
    events on one host/plane/line nest."""
    lines: dict[tuple, int] = {}
    track = np.array(
        [lines.setdefault((raw.get("host"), raw.get("plane"), raw.get("line")), len(lines))
         for raw in raw_nodes],
        dtype=np.int64,
    )  # fmt: skip
    start = np.array([raw["ts"] for raw in raw_nodes], dtype=np.int64)
    duration = np.array([raw["duration"] for raw in raw_nodes], dtype=np.int64)
    selfs = nested_self_times(start, duration, track)
    return {raw["id"]: int(value) for raw, value in zip(raw_nodes, selfs, strict=True)}


def _load_event_dag(path: Path, document: dict) -> RenderGraph:
    meta = document["meta"]
    raw_nodes = list_field(path, document, "nodes")
    for index, raw in enumerate(raw_nodes):
        where = f"nodes[{index}]"
        field(path, where, raw, "name", (str,))
        field(path, where, raw, "id", (int,))
        field(path, where, raw, "ts", (int,))
        if field(path, where, raw, "duration", (int,)) < 0:
            raise UserError(f"{path}: {where}: negative duration")
    self_ps = _nested_self_times(raw_nodes)
    durations: dict[str, list[int]] = defaultdict(list)
    for raw in raw_nodes:
        durations[raw["name"]].append(raw["duration"])
    all_self = sum(self_ps.values()) or 1
    critical_path = tuple(meta.get("critical_path") or ())
    on_path = set(critical_path)
    nodes = []
    for raw in raw_nodes:
        same_name = durations[raw["name"]]
        timing = NodeTiming(
            self_ps=self_ps[raw["id"]],
            total_ps=raw["duration"],
            mean_ps=sum(same_name) // len(same_name),
            count=1,
            share=self_ps[raw["id"]] / all_self,
            first_start_ps=raw["ts"],
        )
        line = " ".join(str(raw[k]) for k in ("host", "plane", "line") if raw.get(k))
        details = tuple(
            (key, str(raw[key]))
            for key in ("id", "ts", "host", "plane", "line", "step", "level")
            if raw.get(key) is not None
        )
        nodes.append(
            RenderNode(
                id=raw["id"],
                name=raw.get("node") or raw["name"],
                op_type=raw.get("op_type") or "event",
                group=line or None,
                state=NodeState.EXECUTED,
                timing=timing,
                critical=bool(raw.get("critical")) or raw["id"] in on_path,
                details=details,
            )
        )
    edges = _edges(path, document, nodes, ("edgeFrom", "edgeTo"), RenderEdgeKind.TIME)
    groups = tuple(dict.fromkeys(node.group for node in nodes if node.group))
    return RenderGraph(
        kind=GraphKind.EVENT_DAG,
        source=path,
        nodes=tuple(nodes),
        edges=tuple(edges),
        critical_path=critical_path,
        critical_path_ps=meta.get("critical_path_ps"),
        groups=groups,
    )


_PROFILE_KEYS = ("ts", "dur", "count", "total", "self", "min", "max", "p50", "p95")


def _op_timing(path: Path, where: str, data: Any, device: bool) -> NodeTiming | None:
    """A node's timing: its host figures, or with `device` its device time."""
    if data is None:
        return None
    where = f"{where}.profiler_data"
    values = {key: field(path, where, data, key, (int,)) for key in _PROFILE_KEYS}
    if device:
        device_ps = field(path, where, data, "device_self", (int,), optional=True) or 0
        count = field(path, where, data, "device_count", (int,), optional=True) or 0
        share = field(path, where, data, "device_share", (int, float), optional=True) or 0.0
        return NodeTiming(
            self_ps=device_ps,
            total_ps=device_ps,
            mean_ps=device_ps // count if count else 0,
            count=count,
            share=float(share),
            first_start_ps=values["ts"],
        )
    share = field(path, where, data, "share", (int, float))
    return NodeTiming(
        self_ps=values["self"],
        total_ps=values["total"],
        mean_ps=values["dur"],
        count=values["count"],
        share=float(share),
        min_ps=values["min"],
        max_ps=values["max"],
        p50_ps=values["p50"],
        p95_ps=values["p95"],
        first_start_ps=values["ts"],
    )


def _load_op_graph(path: Path, document: dict) -> RenderGraph:
    functions = [
        field(path, f"functions[{index}]", raw, "name", (str,))
        for index, raw in enumerate(list_field(path, document, "functions"))
    ]
    nodes = []
    raw_nodes = list_field(path, document, "nodes")
    device = any(
        isinstance(raw, dict) and (raw.get("profiler_data") or {}).get("device_count")
        for raw in raw_nodes
    )
    for index, raw in enumerate(raw_nodes):
        where = f"nodes[{index}]"
        node_id = field(path, where, raw, "id", (int,))
        op = field(path, where, raw, "op", (str,))
        timing = _op_timing(path, where, raw.get("profiler_data"), device)
        fused_into = field(path, where, raw, "fused_into", (str,), optional=True)
        xla = raw.get("profiler_data") or {}
        xla_where = f"{where}.profiler_data"
        xla_module = field(path, xla_where, xla, "xla_module", (str,), optional=True)
        xla_fusion = field(path, xla_where, xla, "xla_fusion", (str,), optional=True)
        state = (
            NodeState.EXECUTED
            if timing
            else NodeState.FUSED
            if fused_into
            else NodeState.NEVER_EXECUTED
        )
        nodes.append(
            RenderNode(
                id=node_id,
                name=field(path, where, raw, "name", (str,), optional=True) or f"{op}#{node_id}",
                op_type=op,
                group=field(path, where, raw, "function", (str,), optional=True),
                state=state,
                timing=timing,
                fused_into=fused_into,
                xla_fusion=xla_fusion or None,
                parent=field(path, where, raw, "parent", (int,), optional=True),
                trip_count=field(path, where, raw, "trip_count", (int, float), optional=True),
                hot=bool(raw.get("hot")),
                hot_rank=field(path, where, raw, "hot_rank", (int,), optional=True),
                details=(("id", str(node_id)),)
                + ((("XLA module", xla_module),) if xla_module else ()),
            )
        )
    edges = _edges(path, document, nodes, ("from", "to"), RenderEdgeKind.DATA)
    ids = {node.id for node in nodes}
    for node in nodes:
        if node.parent is not None and node.parent not in ids:
            raise UserError(f"{path}: node {node.id} has parent {node.parent}, not in nodes")
    groups = tuple(dict.fromkeys([*functions, *(n.group for n in nodes if n.group)]))
    return RenderGraph(
        kind=GraphKind.OP_GRAPH,
        source=path,
        nodes=tuple(nodes),
        edges=tuple(edges),
        groups=groups,
        device=device,
    )
