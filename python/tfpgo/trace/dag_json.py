"""`mlir_graph.json` (format `tfpgo.event_dag` v1): write and read an EventDag.

The layout is the reference's (nodes with `name`, `ts`, `duration`, `id`,
`adj`; edges with `edgeFrom`, `edgeTo`) plus the fields listed in
docs/formats.md. Reading gives back the same EventDag: writing what was read
reproduces the file byte for byte.

The writer streams: strings that repeat (names, hosts, lines) are escaped once
per unique value, and the rows are rendered from the columns by a native
kernel (`tfpgo.kernels.render_rows`) a chunk at a time, so two million nodes
become neither two million dicts nor twenty million Python strings.
"""

from __future__ import annotations

import functools
import json
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import IO, Any

import numpy as np

import tfpgo
from tfpgo.atomic import atomic_output_file
from tfpgo.documents import new_header, read_versioned
from tfpgo.kernels import IntLists, Ints, Lookup, Segment, StringTable, render_rows
from tfpgo.trace.dag import EdgeKind, EventDag
from tfpgo.trace.events import NO_STEP, ColumnStats, EventTable, StepMarker, Track

FORMAT = "tfpgo.event_dag"
VERSION = 1
_CHUNK = 32_768  # rows rendered at a time: about 15 MB of text


def _meta_json(dag: EventDag) -> bytes:
    """The compact `meta` object; the critical path, which can hold most of the nodes,
    is rendered by the kernel between the keys before it and those after it."""
    table = dag.table
    compact = functools.partial(json.dumps, separators=(",", ":"))
    before = {
        **new_header(FORMAT, VERSION, dag.meta.get("source", table.source)),
        "source_kind": dag.meta.get("source_kind", table.source_kind),
        "generator": f"tfpgo {tfpgo.__version__}",
        "events": dag.meta.get("events", "ops"),
        "node_count": len(dag),
        "edge_count": int(dag.edges.shape[0]),
        "levels": int(dag.level[-1]) + 1 if len(dag) else 0,
    }
    after = {
        "critical_path_ps": dag.critical_path_ps,
        "steps": [
            {"host": m.host, "step": m.step, "start_ps": m.start_ps, "end_ps": m.end_ps}
            for m in table.steps
        ],
    }
    path = dag.critical_path
    ids = render_rows([IntLists(np.array([0, path.size]), path)], 1, "")
    head, tail = compact(before)[:-1].encode(), compact(after)[1:].encode()
    return b"".join([head, b',"critical_path":[', ids, b"],", tail])


def write_dag(dag: EventDag, path: Path) -> None:
    """Writes `dag` to `path` atomically."""
    table = dag.table
    dumps = json.dumps
    heads = StringTable([f'{{"name":{dumps(name)},"ts":' for name in table.names])
    ops = StringTable(
        [
            f'],"node":{dumps(op[0])},"op_type":{dumps(op[1])},'
            if op
            else '],"node":null,"op_type":null,'
            for op in table.op_names
        ]
    )
    tracks = StringTable(
        [
            f'"host":{dumps(t.host)},"plane":{dumps(t.plane)},"line":{dumps(t.line)},"step":'
            for t in table.tracks
        ]
    )
    flags = StringTable([',"critical":false,"stats":', ',"critical":true,"stats":'])
    kinds = StringTable([f',"kind":"{kind.label}"}}' for kind in sorted(EdgeKind)])
    indptr, targets = dag.adjacency()
    critical = dag.critical_mask()
    column_stats = table.stats if isinstance(table.stats, ColumnStats) else None
    ordered = iter(sorted(table.stats.items()) if column_stats is None else ())
    pending = next(ordered, None)
    with atomic_output_file(path, "wb") as file, _BackgroundWriter(file) as handle:
        handle.write(b'{"meta":' + _meta_json(dag) + b',\n"nodes":[')
        count = len(dag)
        for begin in range(0, count, _CHUNK):
            end = min(begin + _CHUNK, count)
            rows = slice(begin, end)
            if column_stats is not None:  # rendered from the columns
                chunk_stats, texts = column_stats.json_texts(begin, end)
            else:  # a dict of stats, read once in row order
                chunk_rows, texts = [], []
                while pending is not None and pending[0] < end:
                    chunk_rows.append(pending[0])
                    texts.append(dumps(pending[1], separators=(",", ":")))
                    pending = next(ordered, None)
                chunk_stats = np.array(chunk_rows, dtype=np.int64)
            stats = StringTable(["{}", *texts])
            stats_index = np.zeros(end - begin, np.int64)
            stats_index[chunk_stats - begin] = np.arange(1, chunk_stats.size + 1)
            low = indptr[begin]
            name_id = table.name_id[rows]
            segments: list[Segment] = [
                Lookup(heads, name_id),
                Ints(table.start_ps[rows]),
                ',"duration":',
                Ints(table.duration_ps[rows]),
                ',"id":',
                Ints(np.arange(begin, end)),
                ',"adj":[',
                IntLists(indptr[begin : end + 1] - low, targets[low : indptr[end]]),
                Lookup(ops, name_id),
                Lookup(tracks, table.track_id[rows]),
                Ints(table.step[rows], null=NO_STEP),
                ',"level":',
                Ints(dag.level[rows]),
                Lookup(flags, critical[rows]),
                Lookup(stats, stats_index),
                "}",
            ]
            handle.write(b"\n" if begin == 0 else b",\n")
            handle.write(render_rows(segments, end - begin, ",\n"))
        handle.write((("\n" if count else "") + '],\n"edges":[').encode())
        edge_count = int(dag.edges.shape[0])
        for begin in range(0, edge_count, _CHUNK):
            end = min(begin + _CHUNK, edge_count)
            edge_segments: list[Segment] = [
                '{"edgeFrom":',
                Ints(dag.edges[begin:end, 0]),
                ',"edgeTo":',
                Ints(dag.edges[begin:end, 1]),
                Lookup(kinds, dag.edge_kind[begin:end]),
            ]
            handle.write(b"\n" if begin == 0 else b",\n")
            handle.write(render_rows(edge_segments, end - begin, ",\n"))
        handle.write((("\n" if edge_count else "") + "]}\n").encode())


class _BackgroundWriter:
    """Writes buffers in order on one thread, at most `depth` waiting: the copy into
    the page cache (about 1.5 s per GB here) overlaps the rendering of the next
    chunk, which runs in C without the GIL."""

    def __init__(self, handle: IO[bytes], depth: int = 2) -> None:
        self._handle = handle
        self._depth = depth
        self._pool = ThreadPoolExecutor(max_workers=1)
        self._pending: deque[Future[int]] = deque()

    def write(self, data: bytes | memoryview) -> None:
        self._pending.append(self._pool.submit(self._handle.write, data))
        while len(self._pending) > self._depth:
            self._pending.popleft().result()

    def __enter__(self) -> _BackgroundWriter:
        return self

    def __exit__(self, *failure: object) -> None:
        try:
            while self._pending:
                self._pending.popleft().result()
        finally:
            self._pool.shutdown(cancel_futures=True)


def read_dag(path: Path) -> EventDag:
    """Reads `mlir_graph.json` back into an EventDag (UserError on bad input)."""
    return read_versioned(path, FORMAT, _dag_from_document)


def _dag_from_document(document: dict[str, Any]) -> EventDag:
    meta, nodes, edges = document["meta"], document["nodes"], document["edges"]
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
