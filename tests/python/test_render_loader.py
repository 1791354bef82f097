"""render.loader: both documents load into one model; bad input is one clear error."""

from __future__ import annotations

import json
import re

import pytest
from render_fixtures import (
    GRU_OP_GRAPH,
    MLP_EVENT_DAG,
    MLP_OP_GRAPH,
    MLP_OP_PROFILE,
    critical_path_span_ps,
    document_events,
    document_op,
    load,
    timing,
    write_variant,
)

from tfpgo.errors import UserError
from tfpgo.render import GraphKind, NodeState, load_graph
from tfpgo.render.model import RenderEdgeKind


def test_op_graph_states_and_timing():
    graph = load_graph(MLP_OP_GRAPH)
    assert graph.kind is GraphKind.OP_GRAPH
    by_name = {node.name: node for node in graph.nodes}
    relu = by_name["sequential_1/dense_1/Relu"]
    assert relu.state is NodeState.EXECUTED
    measured = document_op(MLP_OP_GRAPH, relu.name)
    assert timing(relu).self_ps == measured["self"] and timing(relu).count == measured["count"]
    assert timing(relu).mean_ps == measured["total"] // measured["count"]
    matmul = by_name["sequential_1/dense_1/MatMul"]
    assert matmul.state is NodeState.FUSED and matmul.fused_into == relu.name
    assert by_name["func.return#10"].state is NodeState.NEVER_EXECUTED
    assert graph.groups == ("__inference_f_76",)
    assert {edge.kind for edge in graph.edges} == {RenderEdgeKind.DATA}


def test_op_graph_regions_and_functions():
    graph = load_graph(GRU_OP_GRAPH)
    assert graph.groups == ("__inference_serve_512", "__inference_gru_cell_77")
    body = [node for node in graph.nodes if node.parent == 2]
    assert {node.name for node in body} >= {"while/body/_1/gru/MatMul", "sequential/gru/while/Less"}
    assert RenderEdgeKind.CALL in {edge.kind for edge in graph.edges}


def _span(node) -> tuple[int, int]:
    """(start, end) of an event, in ps."""
    start = timing(node).first_start_ps
    assert start is not None, f"{node.name} has no start"
    return start, start + timing(node).total_ps


def test_event_dag_self_time_excludes_nested_events():
    graph = load_graph(MLP_EVENT_DAG)
    assert graph.kind is GraphKind.EVENT_DAG
    call = next(n for n in graph.nodes if n.name == "StatefulPartitionedCall")
    nested = [
        n
        for n in graph.nodes
        if n.group == call.group
        and n.id != call.id
        and _span(call)[0] <= _span(n)[0]
        and _span(n)[1] <= _span(call)[1]
    ]
    assert len(nested) == 6
    assert timing(call).self_ps == timing(call).total_ps - sum(timing(n).total_ps for n in nested)
    # Events on other lines (the python step) do not count as nested.
    step = next(n for n in graph.nodes if n.op_type == "event")
    assert timing(step).self_ps == timing(step).total_ps
    assert abs(sum(timing(n).share for n in graph.nodes) - 1.0) < 1e-9


def test_event_dag_self_time_clips_an_event_outlasting_its_parent(tmp_path):
    """One self-time rule: the loader's is the op profile's (xprof's), which
    clips a nested event at its parent's end instead of subtracting it whole."""
    dag = tmp_path / "mlir_graph.json"
    nodes = [
        {"name": "outer:Op", "ts": 0, "duration": 100, "id": 0, "adj": [], "line": "l"},
        {"name": "inner:Op", "ts": 60, "duration": 70, "id": 1, "adj": [], "line": "l"},
        {"name": "other:Op", "ts": 10, "duration": 20, "id": 2, "adj": [], "line": "m"},
    ]
    dag.write_text(
        json.dumps(
            {"meta": {"format": "tfpgo.event_dag", "version": 1}, "nodes": nodes, "edges": []}
        )
    )
    graph = load_graph(dag)
    selfs = {node.name: timing(node).self_ps for node in graph.nodes}
    # inner runs 60..130: 40 ps of it lie inside outer (0..100).
    assert selfs == {"outer:Op": 60, "inner:Op": 70, "other:Op": 20}


def test_event_dag_critical_path_and_mean():
    graph = load_graph(MLP_EVENT_DAG)
    assert list(graph.critical_path) == load(MLP_EVENT_DAG)["meta"]["critical_path"]
    assert graph.critical_path_ps == critical_path_span_ps(MLP_EVENT_DAG)
    assert all(n.critical for n in graph.nodes if n.id in set(graph.critical_path))
    matmuls = [n for n in graph.nodes if n.name == "sequential/dense/MatMul"]
    durations = [event["duration"] for event in document_events(MLP_EVENT_DAG, matmuls[0].name)]
    assert len(durations) == 2  # one per step
    assert {timing(n).mean_ps for n in matmuls} == {sum(durations) // len(durations)}


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d["meta"].update(format="tfpgo.other"), "format 'tfpgo.other' cannot be drawn"),
        (lambda d: d["meta"].update(version=2), "version 2 is newer than this tool reads"),
        (lambda d: d.pop("meta"), "no 'format' field"),
        (lambda d: d["nodes"][0].update(duration="1"), "nodes[0]: field 'duration' must be int"),
        (lambda d: d["edges"][0].update(edgeTo=99999), "edges[0] refers to node 99999"),
        (lambda d: d["edges"][0].update(kind="bogus"), "unknown edge kind 'bogus'"),
    ],
)
def test_event_dag_rejects_bad_documents(tmp_path, edit, message):
    path = write_variant(tmp_path, MLP_EVENT_DAG, edit)
    with pytest.raises(UserError, match=re.escape(message)) as error:
        load_graph(path)
    assert str(path) in str(error.value) and "\n" not in str(error.value)


def test_op_graph_rejects_bad_profiler_data(tmp_path):
    path = write_variant(
        tmp_path, MLP_OP_GRAPH, lambda d: d["nodes"][6]["profiler_data"].pop("self")
    )
    with pytest.raises(UserError, match=r"nodes\[6\].profiler_data: field 'self' must be int"):
        load_graph(path)


def test_op_profile_is_not_a_graph():
    with pytest.raises(UserError, match=r"tfpgo\.op_profile' cannot be drawn"):
        load_graph(MLP_OP_PROFILE)


def test_missing_and_broken_files(tmp_path):
    with pytest.raises(UserError, match="no such file"):
        load_graph(tmp_path / "absent.json")
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    with pytest.raises(UserError, match="not valid JSON"):
        load_graph(broken)
