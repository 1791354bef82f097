"""`mlir_graph.json` (format `tfpgo.event_dag` v1): write and read an EventDag.

The layout is the reference's (nodes with `name`, `ts`, `duration`, `id`,
`adj`; edges with `edgeFrom`, `edgeTo`) plus the fields listed in
docs/formats.md. Reading gives back the same EventDag: writing what was read
reproduces the file byte for byte.

The writer streams: strings that repeat (names, hosts, lines) are escaped once
per unique value, and each node is one formatted line, so two million nodes
do not become two million dicts.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

import tfpgo
from tfpgo.atomic import atomic_output_file
from tfpgo.documents import new_header, read_document
from tfpgo.errors import UserError
from tfpgo.trace.dag import EdgeKind, EventDag
from tfpgo.trace.events import NO_STEP, EventTable, StepMarker, Track

FORMAT = "tfpgo.event_dag"
VERSION = 1
_CHUNK = 20_000


def dag_meta(dag: EventDag) -> dict[str, Any]:
    table = dag.table
    return {
        **new_header(FORMAT, VERSION, dag.meta.get("source", table.source)),
        "source_kind": dag.meta.get("source_kind", table.source_kind),
        "generator": f"tfpgo {tfpgo.__version__}",
        "events": dag.meta.get("events", "ops"),
        "node_count": len(dag),
        "edge_count": int(dag.edges.shape[0]),
        "levels": int(dag.level[-1]) + 1 if len(dag) else 0,
        "critical_path": dag.critical_path.tolist(),
        "critical_path_ps": dag.critical_path_ps,
        "steps": [
            {"host": m.host, "step": m.step, "start_ps": m.start_ps, "end_ps": m.end_ps}
            for m in table.steps
        ],
    }


def write_dag(dag: EventDag, path: Path) -> None:
    """Writes `dag` to `path` atomically."""
    table = dag.table
    dumps = json.dumps
    names = [dumps(name) for name in table.names]
    ops = [(dumps(op[0]), dumps(op[1])) if op else ("null", "null") for op in table.op_names]
    tracks = [
        f'"host":{dumps(t.host)},"plane":{dumps(t.plane)},"line":{dumps(t.line)}'
        for t in table.tracks
    ]
    indptr, targets = dag.adjacency()
    indptr_list, target_list = indptr.tolist(), targets.tolist()
    critical = dag.critical_mask().tolist()
    columns = zip(
        table.name_id.tolist(),
        table.track_id.tolist(),
        table.start_ps.tolist(),
        table.duration_ps.tolist(),
        table.step.tolist(),
        dag.level.tolist(),
        strict=True,
    )
    with atomic_output_file(path) as handle:
        handle.write('{"meta":' + dumps(dag_meta(dag), separators=(",", ":")) + ',\n"nodes":[')
        nodes = _ArrayWriter(handle)
        for index, (name, track, ts, duration, step, level) in enumerate(columns):
            adj = ",".join(map(str, target_list[indptr_list[index] : indptr_list[index + 1]]))
            stats = table.stats.get(index)
            node, op_type = ops[name]
            nodes.add(
                f'{{"name":{names[name]},"ts":{ts},"duration":{duration},"id":{index},'
                f'"adj":[{adj}],"node":{node},"op_type":{op_type},{tracks[track]},'
                f'"step":{"null" if step == NO_STEP else step},"level":{level},'
                f'"critical":{"true" if critical[index] else "false"},'
                f'"stats":{dumps(stats, separators=(",", ":")) if stats else "{}"}}}'
            )
        nodes.close()
        handle.write('],\n"edges":[')
        edges = _ArrayWriter(handle)
        labels = {int(kind): kind.label for kind in EdgeKind}
        for (source, target), kind in zip(dag.edges.tolist(), dag.edge_kind.tolist(), strict=True):
            edges.add(f'{{"edgeFrom":{source},"edgeTo":{target},"kind":"{labels[kind]}"}}')
        edges.close()
        handle.write("]}\n")


class _ArrayWriter:
    """Writes JSON array items one per line, buffered in chunks."""

    def __init__(self, handle: Any) -> None:
        self._handle = handle
        self._lines: list[str] = []
        self._first = True

    def add(self, item: str) -> None:
        self._lines.append(item)
        if len(self._lines) >= _CHUNK:
            self._flush()

    def close(self) -> None:
        self._flush()
        if not self._first:
            self._handle.write("\n")

    def _flush(self) -> None:
        if not self._lines:
            return
        self._handle.write(("\n" if self._first else ",\n") + ",\n".join(self._lines))
        self._lines = []
        self._first = False


def read_dag(path: Path) -> EventDag:
    """Reads `mlir_graph.json` back into an EventDag (UserError on bad input)."""
    document = read_document(path, FORMAT)
    meta = document["meta"]
    try:
        return _dag_from_document(meta, document["nodes"], document["edges"])
    except (KeyError, TypeError, ValueError) as error:
        raise UserError(f"{path}: malformed {FORMAT} document ({error})") from None


def _dag_from_document(meta: dict[str, Any], nodes: list[Any], edges: list[Any]) -> EventDag:
    names: dict[str, int] = {}
    tracks: dict[Track, int] = {}
    count = len(nodes)
    name_id = np.empty(count, np.int32)
    track_id = np.empty(count, np.int32)
    columns = np.empty((4, count), np.int64)
    stats: dict[int, dict[str, Any]] = {}
    adjacency: list[tuple[int, int]] = []
    for index, node in enumerate(nodes):
        if node["id"] != index:
            raise ValueError(f"node {index} has id {node['id']}; ids must be 0..n-1 in order")
        name_id[index] = names.setdefault(node["name"], len(names))
        track = Track(node["host"], node["plane"], node["line"])
        track_id[index] = tracks.setdefault(track, len(tracks))
        step = node["step"]
        columns[:, index] = (
            node["ts"],
            node["duration"],
            NO_STEP if step is None else step,
            node["level"],
        )
        if node["stats"]:
            stats[index] = node["stats"]
        adjacency.extend((index, target) for target in node["adj"])
    kinds = {kind.label: int(kind) for kind in EdgeKind}
    edge_array = np.array([(e["edgeFrom"], e["edgeTo"]) for e in edges], dtype=np.int64).reshape(
        -1, 2
    )
    edge_kind = np.array([kinds[e["kind"]] for e in edges], dtype=np.int8)
    if sorted(map(tuple, edge_array.tolist())) != sorted(adjacency):
        raise ValueError("node adj lists and edges disagree")
    table = EventTable(
        meta["source"],
        meta["source_kind"],
        list(names),
        list(tracks),
        name_id,
        track_id,
        columns[0],
        columns[1],
        columns[2],
        np.zeros((0, 2), np.int64),
        stats,
        [StepMarker(**marker) for marker in meta.get("steps", [])],
    )
    extra: dict[str, Any] = {k: meta[k] for k in ("source", "source_kind", "events") if k in meta}
    return EventDag(
        table,
        columns[3].copy(),
        edge_array,
        edge_kind,
        np.asarray(meta["critical_path"], dtype=np.int64),
        int(meta["critical_path_ps"]),
        extra,
    )
