"""Event DAG invariants, critical path, JSON round trip, networkx."""

import itertools

import networkx as nx
import numpy as np
import pytest
import trace_fixtures as fx

from tfpgo.errors import UserError
from tfpgo.trace.dag import (
    DagEvents,
    EdgeKind,
    _merge_edges,
    assign_levels,
    build_dag,
    level_edges,
    unique_pairs,
)
from tfpgo.trace.dag_json import read_dag, write_dag
from tfpgo.trace.events import TableBuilder
from tfpgo.trace.readers import read_trace


def synthetic_table(intervals, flows=()):
    """A table of (start, duration, track) events named e<i>:Op (all TF ops)."""
    builder = TableBuilder("synthetic", "test")
    for index, (start, duration, track) in enumerate(intervals):
        track_id = builder.track_id("h", "/host:CPU", f"t{track}")
        builder.add_columns(
            track_id,
            np.array([builder.name_id(f"e{index}:Op")]),
            np.array([start]),
            np.array([duration]),
        )
    builder.flow_pairs.extend(flows)
    return builder.build()


def check_invariants(dag):
    edges = dag.edges
    assert (edges[:, 0] < edges[:, 1]).all()  # ids are a topological order: acyclic
    assert len({tuple(e) for e in edges.tolist()}) == len(edges)
    starts, ends = dag.table.start_ps, dag.table.end_ps
    assert (np.diff(starts) >= 0).all()
    for level in np.unique(dag.level):
        members = np.flatnonzero(dag.level == level)
        # inside a level every event overlaps an earlier one: a chain of overlaps
        running = np.maximum.accumulate(ends[members])
        assert (starts[members][1:] < running[:-1]).all()
        if level > 0:
            before = np.flatnonzero(dag.level == level - 1)
            assert starts[members].min() >= ends[before].max()
    time_edges = edges[dag.edge_kind == EdgeKind.TIME]
    assert len(time_edges) <= 2 * len(dag)
    assert (np.diff(dag.level[time_edges], axis=1) == 1).all()


@pytest.mark.parametrize("events", list(DagEvents))
def test_real_trace_invariants(events):
    table = read_trace(fx.XPLANE)
    dag = build_dag(table, events)
    check_invariants(dag)
    expected = len(table) if events is DagEvents.ALL else int(table.is_op_mask().sum())
    assert len(dag) == expected
    if events is DagEvents.ALL:
        assert (dag.edge_kind == EdgeKind.FLOW).any()


def test_wide_levels_have_linear_edges():
    # two levels of 1000 parallel events each: all pairs would be a million edges
    width = 1000
    intervals = [(0, 100 + i, i) for i in range(width)] + [(2000, 50, i) for i in range(width)]
    dag = build_dag(synthetic_table(intervals))
    check_invariants(dag)
    assert dag.level.max() == 1
    assert len(dag.edges) == 2 * width - 1
    # the critical path runs through each level's longest event
    assert dag.critical_path_ps == (100 + width - 1) + 50


def test_levels_follow_overlap_chains():
    # a..b overlap, b..c overlap (a and c do not): one level; d starts after all
    dag = build_dag(synthetic_table([(0, 10, 0), (5, 10, 1), (12, 5, 0), (20, 1, 1)]))
    assert dag.level.tolist() == [0, 0, 0, 1]
    assert dag.critical_path.tolist() in ([0, 3], [1, 3])


def test_flow_edges_and_critical_path_match_networkx():
    intervals = [(0, 10, 0), (2, 3, 1), (6, 3, 1), (12, 4, 0), (13, 9, 1)]
    dag = build_dag(synthetic_table(intervals, flows=[(1, 2), (2, 4), (4, 0)]))
    check_invariants(dag)
    kinds = {tuple(e): EdgeKind(k) for e, k in zip(dag.edges.tolist(), dag.edge_kind, strict=True)}
    assert kinds[(1, 2)] is EdgeKind.FLOW and kinds[(2, 4)] is EdgeKind.FLOW
    assert (4, 0) not in kinds  # a flow against time order is dropped
    graph = dag.to_networkx()
    assert nx.is_directed_acyclic_graph(graph)
    weight = {n: d["duration"] for n, d in graph.nodes(data=True)}
    best = max(sum(weight[n] for n in path) for path in _all_paths(graph))
    assert dag.critical_path_ps == best
    path = dag.critical_path.tolist()
    assert all(graph.has_edge(a, b) for a, b in itertools.pairwise(path))
    assert sum(weight[n] for n in path) == best
    assert [n for n, d in graph.nodes(data=True) if d["critical"]] == sorted(path)


def _all_paths(graph):
    sources = [n for n in graph if graph.in_degree(n) == 0]
    sinks = [n for n in graph if graph.out_degree(n) == 0]
    for source in sources:
        for sink in sinks:
            yield from nx.all_simple_paths(graph, source, sink) if source != sink else [[source]]


@pytest.mark.parametrize("events", list(DagEvents))
def test_json_round_trip_is_lossless(tmp_path, events):
    dag = build_dag(read_trace(fx.XPLANE), events)
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    write_dag(dag, first)
    back = read_dag(first)
    write_dag(back, second)
    assert first.read_bytes() == second.read_bytes()
    assert back.nodes() == dag.nodes()
    assert back.edge_records() == dag.edge_records()
    assert back.critical_path.tolist() == dag.critical_path.tolist()


def test_json_has_the_reference_fields(tmp_path):
    import json

    dag = build_dag(read_trace(fx.XPLANE))
    path = tmp_path / "mlir_graph.json"
    write_dag(dag, path)
    document = json.loads(path.read_text())
    meta = document["meta"]
    assert (meta["format"], meta["version"], meta["time_unit"]) == ("tfpgo.event_dag", 1, "ps")
    node = document["nodes"][0]
    assert {
        "name",
        "ts",
        "duration",
        "id",
        "adj",
        "node",
        "op_type",
        "host",
        "plane",
        "line",
        "step",
        "level",
        "critical",
        "stats",
    } == set(node)
    edge = document["edges"][0]
    assert set(edge) == {"edgeFrom", "edgeTo", "kind"}
    for node in document["nodes"]:
        targets = [e["edgeTo"] for e in document["edges"] if e["edgeFrom"] == node["id"]]
        assert node["adj"] == targets


def test_read_dag_rejects_other_documents(tmp_path):
    path = tmp_path / "x.json"
    path.write_text('{"format": "tfpgo.op_profile", "version": 1}')
    with pytest.raises(UserError, match=r"not a tfpgo\.event_dag document"):
        read_dag(path)
    path.write_text('{"meta": {"format": "tfpgo.event_dag", "version": 9}}')
    with pytest.raises(UserError, match="is newer than this tool reads"):
        read_dag(path)
    path.write_text('{"meta": {"format": "tfpgo.event_dag", "version": 1}, "nodes": [{}]}')
    with pytest.raises(UserError, match="malformed"):
        read_dag(path)


def test_level_edges_and_merge_equal_their_sorting_definitions():
    """The sort-free level edges and edge merge give exactly what sorting gives: every
    a -> head(next) and head -> b, distinct and sorted; a flow replacing a time edge."""
    rng = np.random.default_rng(11)
    for _ in range(500):
        count = int(rng.integers(1, 30))
        starts = np.sort(rng.integers(0, 40, count))
        durations = rng.integers(0, 6, count)
        level = assign_levels(starts, starts + durations)
        ids = np.arange(count)
        order = np.lexsort((ids, -durations, level))
        head = order[np.searchsorted(level[order], np.arange(int(level[-1]) + 1))]
        expected = unique_pairs(
            np.concatenate(
                [
                    np.stack([ids[level < level[-1]], head[level[level < level[-1]] + 1]], 1),
                    np.stack([head[level[level > 0] - 1], ids[level > 0]], 1),
                ]
            )
        )
        time_edges = level_edges(level, durations)
        assert time_edges.tolist() == expected.tolist()
        flows = rng.integers(0, count, (int(rng.integers(0, 6)), 2))
        flows = unique_pairs(flows[flows[:, 0] < flows[:, 1]])
        edges, kinds = _merge_edges(time_edges, flows)
        both = np.concatenate([flows, time_edges]).reshape(-1, 2)
        keys = (both[:, 0] << 32) | both[:, 1]
        _, first = np.unique(keys, return_index=True)
        assert edges.tolist() == both[first].tolist()
        assert kinds.tolist() == [int(EdgeKind.FLOW) if i < len(flows) else 0 for i in first]
