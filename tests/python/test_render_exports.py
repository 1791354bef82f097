"""Exports: Model Explorer accepts our node data; trace events are well-formed; CSV rows."""

from __future__ import annotations

import csv
import io
import json

import ai_edge_model_explorer_adapter as adapter
import dacite
import pytest
from model_explorer import node_data_builder
from render_fixtures import (
    DENSE_MLIR,
    GRU_OP_GRAPH,
    MLP_EVENT_DAG,
    MLP_OP_GRAPH,
    MLP_OP_PROFILE,
    document_events,
    document_op,
    in_us,
    load,
    timing,
)

from tfpgo.attribution.op_profile import OpProfile
from tfpgo.errors import UserError
from tfpgo.render import (
    GraphKind,
    Metric,
    NodeState,
    RenderGraph,
    RenderNode,
    RenderOptions,
    load_graph,
    prepare,
)
from tfpgo.render.exports import EXPORT_FORMATS, ExportInput
from tfpgo.render.exports.csv_export import op_profile_rows, write_csv
from tfpgo.render.exports.model_explorer import model_explorer_node_data, ops_by_function
from tfpgo.render.exports.speedscope import speedscope_document
from tfpgo.render.exports.trace_events import trace_events
from tfpgo.render.model import NodeTiming
from tfpgo.render.style import HOT_FILL

STRICT = dacite.Config(strict=True)


def graph_node_data(document: dict) -> node_data_builder.GraphNodeData:
    """Builds Model Explorer's own dataclass; strict: unknown or mistyped fields fail."""
    return dacite.from_dict(node_data_builder.GraphNodeData, document, config=STRICT)


@pytest.mark.parametrize("metric", [Metric.SELF, Metric.SHARE])
def test_model_explorer_accepts_op_graph_node_data(metric):
    graph = prepare(load_graph(GRU_OP_GRAPH), RenderOptions(metric=metric))
    document = model_explorer_node_data(graph, metric)
    assert set(document) == {"__inference_serve_512", "__inference_gru_cell_77"}
    model = node_data_builder.ModelNodeData(
        graphsData={graph_id: graph_node_data(data) for graph_id, data in document.items()}
    )
    # The package writes the file back with nothing lost or renamed (plus its defaults).
    written = json.loads(model.to_json_string())
    for graph_id, data in document.items():
        assert {key: written[graph_id][key] for key in data} == data
    serve = document["__inference_serve_512"]
    assert serve["gradient"][0]["stop"] == 0 and serve["gradient"][-1]["stop"] == 1
    # Keys restart at 0 per function; never-executed ops carry no value.
    assert "0" in document["__inference_gru_cell_77"]["results"]
    assert "1" not in serve["results"]  # tf.Const sequential/gru/zeros never ran


def test_model_explorer_keys_match_its_mlir_adapter():
    """Model Explorer's MLIR adapter, run on the same module, has a node under each key."""
    converted = json.loads(adapter.ConvertMlirToJson(adapter.VisualizeConfig(), str(DENSE_MLIR)))
    me_graph = next(g for c in converted for g in c["subgraphs"] if g["id"] == "__inference_f_76")
    labels = {node["id"]: node["label"] for node in me_graph["nodes"]}
    graph = prepare(load_graph(MLP_OP_GRAPH), RenderOptions())
    document = model_explorer_node_data(graph, Metric.SELF)["__inference_f_76"]
    ops = {node.name: node for node in graph.nodes}
    key_of = {labels[key]: key for key in labels}
    identity = key_of["Identity"]
    assert document["results"][identity]["value"] == timing(ops["Identity"]).self_ps / 1e6
    assert all(
        labels[key] in {"ReadVariableOp", "Relu", "BiasAdd", "Identity", "MatMul"}
        for key in document["results"]
    )
    # The MatMul and BiasAdd ran inside the kernel named after the Relu: the
    # kernel's 17.8 µs is split over the three in exact parts (17.8 / 3 = 5.933...
    # µs each, the ns rounding of the display), none of them white, and the
    # values still sum to the kernel's time.
    kernel = ops["sequential_1/dense_1/Relu"]
    members = [kernel] + [n for n in graph.nodes if n.fused_into == kernel.name]
    assert len(members) >= 2
    keys = [str(index) for index, node in enumerate(ops_by_function(graph)["__inference_f_76"])
            if node in members]  # fmt: skip
    values = [document["results"][key]["value"] for key in keys]
    assert sum(values) == pytest.approx(timing(kernel).self_ps / 1e6, abs=1e-3 * len(keys))
    assert max(values) - min(values) <= 1e-3
    assert all(document["results"][key]["bgColor"] != "#ffffff" for key in keys)
    relu_key = key_of["Relu"]
    assert document["results"][relu_key]["bgColor"] == HOT_FILL


def test_kernel_labels_name_the_kernel_and_every_op_it_ran():
    import dataclasses

    from tfpgo.render.exports.model_explorer_kernels import kernel_labels

    graph = prepare(load_graph(MLP_OP_GRAPH), RenderOptions())
    profile = OpProfile.read(MLP_OP_PROFILE)
    fused = dataclasses.replace(
        profile.ops[0], name="sequential_1/dense_1/Relu", op_types=("_MklNativeFusedMatMul",)
    )
    labels = kernel_labels(graph, dataclasses.replace(profile, ops=(fused,)))
    results = labels["__inference_f_76"]["results"]
    # The kernel's whole time, as the op graph document has it on the op named after it.
    relu_ps = document_op(MLP_OP_GRAPH, "sequential_1/dense_1/Relu")["self"]
    relu = f"_MklNativeFusedMatMul: MatMul+BiasAdd+Relu, {in_us(relu_ps)}"
    assert [results[k]["value"] for k in ("4", "5", "6")] == [relu] * 3  # MatMul, BiasAdd, Relu
    bias_add_ps = document_op(MLP_OP_GRAPH, "sequential_1/dense_1_2/BiasAdd")["self"]
    assert results["7"]["value"] == f"BiasAdd: MatMul+BiasAdd, {in_us(bias_add_ps)}"  # no entry


def test_model_explorer_event_dag_is_keyed_by_node_name():
    graph = prepare(load_graph(MLP_EVENT_DAG), RenderOptions())
    document = model_explorer_node_data(graph, Metric.SELF)
    graph_node_data(document)
    matmul = document["results"]["sequential/dense/MatMul"]
    events = document_events(MLP_EVENT_DAG, "sequential/dense/MatMul")
    assert len(events) == 2  # the node's value is its events' time, in µs
    assert matmul["value"] == pytest.approx(sum(event["duration"] for event in events) / 1e6)


def test_trace_events_are_well_formed():
    graph = load_graph(MLP_EVENT_DAG)
    document = json.loads(json.dumps(trace_events(graph)))
    assert document["displayTimeUnit"] == "ns"
    events = document["traceEvents"]
    complete = [e for e in events if e["ph"] == "X"]
    assert len(complete) == len(graph.nodes)
    for event in complete:
        assert {"name", "ts", "dur", "pid", "tid", "args"} <= set(event)
        assert isinstance(event["ts"], float) and event["dur"] > 0
    matmul = next(e for e in complete if e["name"] == "sequential/dense/MatMul")
    first = min(document_events(MLP_EVENT_DAG, "sequential/dense/MatMul"), key=lambda e: e["ts"])
    # The trace event format counts in µs.
    assert matmul["dur"] == pytest.approx(first["duration"] / 1e6)
    assert matmul["ts"] == pytest.approx(first["ts"] / 1e6)
    names = {(e["name"], e["args"]["name"]) for e in events if e["ph"] == "M"}
    assert names == {
        ("process_name", "host0 /host:CPU"),
        ("thread_name", "python"),
        ("thread_name", "tf_Compute"),
    }
    flows = [e for e in events if e["ph"] in "sf"]
    assert len(flows) == 4 and {e["id"] for e in flows} == {1, 2}
    on_path = load(MLP_EVENT_DAG)["meta"]["critical_path"]
    assert sum(e["cat"] == "critical_path" for e in complete) == len(on_path)
    # Nesting on a thread must be proper, or the viewers misdraw the stack.
    by_thread: dict[tuple, list] = {}
    for event in complete:
        by_thread.setdefault((event["pid"], event["tid"]), []).append(event)
    for slices in by_thread.values():
        slices.sort(key=lambda e: (e["ts"], -e["dur"]))
        stack: list[float] = []
        for event in slices:
            while stack and stack[-1] <= event["ts"]:
                stack.pop()
            assert not stack or event["ts"] + event["dur"] <= stack[-1] + 1e-9
            stack.append(event["ts"] + event["dur"])


def test_trace_file_names_its_graph_relative_to_itself(tmp_path):
    """The flow writes trace.json next to mlir_graph.json in a staging directory
    that is then renamed: an absolute path would name the vanished staging."""
    graph_path = tmp_path / "staging" / "mlir_graph.json"
    graph_path.parent.mkdir()
    graph_path.write_bytes(MLP_EVENT_DAG.read_bytes())
    out = graph_path.parent / "trace.json"
    EXPORT_FORMATS["trace"].write(ExportInput(load_graph(graph_path), RenderOptions()), out)
    assert json.loads(out.read_text())["otherData"]["source"] == "mlir_graph.json"


def test_trace_needs_the_event_dag():
    with pytest.raises(UserError, match="needs the event DAG"):
        trace_events(load_graph(MLP_OP_GRAPH))


def test_csv_from_op_profile(tmp_path):
    path = tmp_path / "p.csv"
    write_csv(OpProfile.read(MLP_OP_PROFILE), path)
    rows = list(csv.DictReader(io.StringIO(path.read_text())))
    ops = sorted(load(MLP_OP_PROFILE)["ops"], key=lambda op: -op["self_ps"])  # hottest first
    assert [r["name"] for r in rows] == [op["name"] for op in ops]
    assert (rows[0]["self_ps"], rows[0]["count"]) == (str(ops[0]["self_ps"]), str(ops[0]["count"]))
    assert sum(float(r["share"]) for r in rows) == pytest.approx(1.0, abs=1e-4)


def test_csv_rows_from_graphs_agree_with_the_op_profile():
    from_dag = {r.name: r for r in op_profile_rows(load_graph(MLP_EVENT_DAG))}
    for row in op_profile_rows(OpProfile.read(MLP_OP_PROFILE)):
        dag_row = from_dag[row.name]
        assert (dag_row.count, dag_row.self_ps, dag_row.p95_ps) == (
            row.count,
            row.self_ps,
            row.p95_ps,
        )
    op_rows = op_profile_rows(load_graph(GRU_OP_GRAPH))
    assert op_rows[0].name == "sequential/gru/while"
    assert [r.self_ps for r in op_rows] == sorted((r.self_ps for r in op_rows), reverse=True)


def _replay(profile: dict) -> dict[int, int]:
    """Replays a speedscope evented profile like its importer does (every close
    matches the open frame on top, times never go back); frame -> ns spent."""
    stack: list[tuple[int, float]] = []
    spent: dict[int, int] = {}
    last = profile["startValue"]
    for event in profile["events"]:
        assert event["at"] >= last
        last = event["at"]
        if event["type"] == "O":
            stack.append((event["frame"], event["at"]))
        else:
            frame, opened = stack.pop()
            assert frame == event["frame"], "closes a frame that is not on top"
            spent[frame] = spent.get(frame, 0) + round((event["at"] - opened) * 1000)
    assert not stack and last <= profile["endValue"]
    return spent


def test_speedscope_nests_per_thread_and_keeps_every_picosecond():
    graph = load_graph(MLP_EVENT_DAG)
    document = speedscope_document(graph)
    names = [frame["name"] for frame in document["shared"]["frames"]]
    spent: dict[str, int] = {}
    for profile in document["profiles"]:
        assert profile["type"] == "evented" and profile["unit"] == "nanoseconds"
        for frame, ps in _replay(profile).items():
            spent[names[frame]] = spent.get(names[frame], 0) + ps
    expected: dict[str, int] = {}
    for node in graph.nodes:
        assert node.timing is not None
        expected[node.name] = expected.get(node.name, 0) + node.timing.total_ps
    assert spent == expected


def test_speedscope_puts_overlapping_events_in_lanes():
    def span(start: int, duration: int) -> NodeTiming:
        return NodeTiming(duration, duration, duration, 1, 0.0, first_start_ps=start)

    a, b, c = span(0, 3000), span(2000, 3000), span(500, 1000)  # b overlaps a; c nests in a
    nodes = tuple(
        RenderNode(i, name, "event", "t", NodeState.EXECUTED, t, details=(("line", "t"),))
        for i, (name, t) in enumerate([("a", a), ("b", b), ("c", c)])
    )
    graph = RenderGraph(GraphKind.EVENT_DAG, MLP_EVENT_DAG, nodes, ())
    profiles = speedscope_document(graph)["profiles"]
    assert [p["name"] for p in profiles] == ["t", "t (lane 2)"]
    assert [len(_replay(p)) for p in profiles] == [2, 1]


def test_speedscope_needs_the_event_dag():
    with pytest.raises(UserError, match="speedscope export needs the event DAG"):
        speedscope_document(load_graph(MLP_OP_GRAPH))


def test_every_registered_export_is_a_plot_graph_flag(tmp_path):
    """A registered format needs nothing else: plot_graph offers and writes it."""
    from tfpgo.cli import run_main
    from tfpgo.render import plot_graph

    flags = []
    for name in EXPORT_FORMATS:
        flags += [f"--export-{name}", str(tmp_path / f"{name}.out")]
    status = run_main(plot_graph.main, ["--path-to-mlir-graph", str(MLP_EVENT_DAG), *flags])
    assert status == 0
    # Each file is its own format's document of this graph: byte for byte what the
    # format's writer writes beside it from the same graph.
    source = ExportInput(load_graph(MLP_EVENT_DAG), RenderOptions())
    contents = set()
    for name, export in EXPORT_FORMATS.items():
        export.write(source, tmp_path / f"{name}.expected")
        written = (tmp_path / f"{name}.out").read_bytes()
        assert written.strip() and written == (tmp_path / f"{name}.expected").read_bytes(), name
        contents.add(written)
    assert len(contents) == len(EXPORT_FORMATS)  # no two formats wrote the same file
