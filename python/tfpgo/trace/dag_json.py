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
from tfpgo.trace.events import NO_STEP, EventTable, StepMarker, Track, object_array

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
    heads = object_array([f'{{"name":{dumps(name)},"ts":' for name in table.names])
    ops = object_array(
        [
            f'],"node":{dumps(op[0])},"op_type":{dumps(op[1])},'
            if op
            else '],"node":null,"op_type":null,'
            for op in table.op_names
        ]
    )
    tracks = object_array(
        [
            f'"host":{dumps(t.host)},"plane":{dumps(t.plane)},"line":{dumps(t.line)},"step":'
            for t in table.tracks
        ]
    )
    flags = object_array([',"critical":false,"stats":', ',"critical":true,"stats":'])
    indptr, targets = dag.adjacency()
    critical = dag.critical_mask()
    stats_rows = np.array(sorted(table.stats), dtype=np.int64)
    with atomic_output_file(path) as handle:
        handle.write('{"meta":' + dumps(dag_meta(dag), separators=(",", ":")) + ',\n"nodes":[')
        count = len(dag)
        for begin in range(0, count, _CHUNK):
            end = min(begin + _CHUNK, count)
            rows = slice(begin, end)
            low, high = int(indptr[begin]), int(indptr[end])
            stats = object_array(["{}"])[np.zeros(end - begin, np.int64)]
            for row in stats_rows[
                np.searchsorted(stats_rows, begin) : np.searchsorted(stats_rows, end)
            ].tolist():
                stats[row - begin] = dumps(table.stats[row], separators=(",", ":"))
            text = _interleave(
                end - begin,
                [
                    heads[table.name_id[rows]],
                    _decimal(table.start_ps[rows]),
                    ',"duration":',
                    _decimal(table.duration_ps[rows]),
                    ',"id":',
                    _decimal(np.arange(begin, end)),
                    ',"adj":[',
                    _adjacency(dag.edges[low:high, 0] - begin, targets[low:high], end - begin),
                    ops[table.name_id[rows]],
                    tracks[table.track_id[rows]],
                    _steps(table.step[rows]),
                    ',"level":',
                    _decimal(dag.level[rows]),
                    flags[critical[rows].astype(np.int64)],
                    stats,
                ],
                "}",
            )
            handle.write(("\n" if begin == 0 else ",\n") + text)
        handle.write(("\n" if count else "") + '],\n"edges":[')
        kinds = object_array([f',"kind":"{kind.label}"}}' for kind in sorted(EdgeKind)])
        edge_count = int(dag.edges.shape[0])
        for begin in range(0, edge_count, _CHUNK):
            end = min(begin + _CHUNK, edge_count)
            text = _interleave(
                end - begin,
                [
                    '{"edgeFrom":',
                    _decimal(dag.edges[begin:end, 0]),
                    ',"edgeTo":',
                    _decimal(dag.edges[begin:end, 1]),
                    kinds[dag.edge_kind[begin:end].astype(np.int64)],
                ],
                "",
            )
            handle.write(("\n" if begin == 0 else ",\n") + text)
        handle.write(("\n" if edge_count else "") + "]}\n")


def _decimal(values: np.ndarray) -> list[str]:
    return list(map(str, values.tolist()))


def _steps(steps: np.ndarray) -> np.ndarray:
    text = object_array(_decimal(steps))
    text[steps == NO_STEP] = "null"
    return text


def _adjacency(sources: np.ndarray, targets: np.ndarray, count: int) -> np.ndarray:
    """Each node's comma-joined targets ("" without any); `sources` sorted, 0-based."""
    adjacency = object_array([""])[np.zeros(count, np.int64)]
    if sources.size == 0:
        return adjacency
    same = sources[1:] == sources[:-1]
    parts: list[str] = [""] * (2 * sources.size - 1)
    parts[0::2] = _decimal(targets)
    parts[1::2] = object_array(["\0", ","])[same.astype(np.int64)].tolist()
    adjacency[np.unique(sources)] = "".join(parts).split("\0")
    return adjacency


def _interleave(count: int, columns: list[Any], last: str) -> str:
    """Rows of `count` items joined by ",\n": each row is its columns' items (a
    constant string, or a sequence with one item per row) concatenated, plus `last`."""
    width = len(columns) + 1
    parts: list[Any] = [None] * (width * count)
    for at, column in enumerate(columns):
        if isinstance(column, str):
            parts[at::width] = [column] * count
        else:
            parts[at::width] = column.tolist() if isinstance(column, np.ndarray) else column
    parts[width - 1 :: width] = [last + ",\n"] * count
    if count:
        parts[-1] = last
    return "".join(parts)


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
