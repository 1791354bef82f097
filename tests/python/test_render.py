"""Colors follow the metric; DOT carries legend, tooltips, marks; reductions; GraphML."""

from __future__ import annotations

import colorsys
import itertools
from pathlib import Path

import networkx as nx
import pytest
from render_fixtures import (
    GRU_OP_GRAPH,
    MLP_EVENT_DAG,
    MLP_OP_GRAPH,
    critical_path_span_ps,
    in_us,
    load,
    timing,
)

from tfpgo.render import Metric, NodeState, RenderOptions, dot, load_graph, prepare, to_dot
from tfpgo.render.colormap import ColorScale, colormap_rgb, text_color
from tfpgo.render.graphml import write_graphml
from tfpgo.render.metrics import format_ps, metric_value
from tfpgo.render.model import (
    GraphKind,
    NodeTiming,
    RenderEdge,
    RenderEdgeKind,
    RenderGraph,
    RenderNode,
)
from tfpgo.render.reduce import JUNCTION_DEGREE, collapse_scopes, mark_hot, top_subgraph
from tfpgo.render.style import HOT_FILL, NEVER_FILL, color_scale, node_style


def hue(rgb):
    """Hue in degrees, 0 = red: the colormap runs from blue (~230°) down to red."""
    h, _, _ = colorsys.rgb_to_hsv(*(channel / 255 for channel in rgb))
    return h * 360


def test_colormap_runs_cool_to_hot():
    hues = [hue(colormap_rgb(step / 20)) for step in range(21)]
    assert hues[0] > 200 and hues[-1] < 20  # blue → red
    assert all(a >= b - 1.0 for a, b in itertools.pairwise(hues))  # monotone hue


def test_scale_is_log_for_wide_ranges_and_linear_otherwise():
    wide = ColorScale.from_values([1_000, 50_000, 10_000_000])
    assert wide.log and wide.position(100_000) == pytest.approx(2 / 4)
    narrow = ColorScale.from_values([1_000, 5_000, 9_000])
    assert not narrow.log and narrow.position(5_000) == pytest.approx(0.5)
    assert wide.value_at(wide.position(123_456)) == pytest.approx(123_456)


def test_text_stays_readable_on_dark_and_light_fills():
    assert text_color(colormap_rgb(0.0)) == "#ffffff"
    assert text_color(colormap_rgb(0.55)) == "#000000"


@pytest.mark.parametrize(
    ("ps", "text"),
    [
        (0, "0 ps"),
        (512, "512 ps"),
        (999, "999 ps"),
        (1_000, "1 ns"),
        (1_500, "1.5 ns"),
        (1_234_567, "1.23 µs"),
        (830_000_000, "830 µs"),
        (2.5e9, "2.5 ms"),
        (7_390_000_000, "7.39 ms"),
        (2_500_000_000_000, "2.5 s"),
        # Rounding up to 1000 of a unit shows the next unit.
        (999_600, "1 µs"),
        (999_400, "999 ns"),
        (1_234_000_000_000_000, "1234 s"),
    ],
)
def test_human_units(ps, text):
    assert format_ps(ps) == text


def _metric_value(node, metric) -> float:
    """The metric of a node the test knows was executed (checked, not assumed)."""
    value = metric_value(node, metric)
    assert value is not None, f"{node.name} has no {metric}"
    return value


@pytest.mark.parametrize("metric", list(Metric))
def test_fill_color_order_follows_the_metric(metric):
    graph = mark_hot(load_graph(GRU_OP_GRAPH), metric, hot_k=0, hot_share=None)
    scale = color_scale(graph, metric)
    timed = sorted(
        (n for n in graph.nodes if n.state is NodeState.EXECUTED),
        key=lambda n: _metric_value(n, metric),
    )
    hues = [
        hue(tuple(int(node_style(n, metric, scale).fill[i : i + 2], 16) for i in (1, 3, 5)))
        for n in timed
    ]
    assert hues == sorted(hues, reverse=True)  # more time → closer to red
    assert hues[0] > hues[-1] + 150


def test_hot_never_and_fused_styles():
    graph = prepare(load_graph(MLP_OP_GRAPH), RenderOptions())
    scale = color_scale(graph, Metric.SELF)
    by_name = {node.name: node for node in graph.nodes}
    relu = node_style(by_name["sequential_1/dense_1/Relu"], Metric.SELF, scale)
    assert relu.fill == HOT_FILL and relu.penwidth >= 3 and relu.bold
    assert node_style(by_name["func.return#10"], Metric.SELF, scale).fill == NEVER_FILL
    assert node_style(by_name["sequential_1/dense_1/MatMul"], Metric.SELF, scale).dashed


def test_hot_marks_from_document_unless_overridden():
    graph = load_graph(MLP_OP_GRAPH)
    assert [n.hot_rank for n in mark_hot(graph, Metric.SELF, None, None).nodes if n.hot] == [1, 2]
    by_k = mark_hot(graph, Metric.SELF, 1, None)
    assert [n.name for n in by_k.nodes if n.hot] == ["sequential_1/dense_1/Relu"]
    by_share = mark_hot(graph, Metric.SELF, None, 0.2)
    assert {n.name for n in by_share.nodes if n.hot} == {
        "sequential_1/dense_1/Relu",
        "sequential_1/dense_1_2/BiasAdd",
    }


def test_dot_has_legend_tooltips_clusters_and_critical_path():
    graph = prepare(load_graph(MLP_EVENT_DAG), RenderOptions())
    source = to_dot(graph, Metric.SELF, "dot")
    assert "color: self time" in source
    assert f"critical path {in_us(critical_path_span_ps(MLP_EVENT_DAG))}" in source
    assert 'tooltip="sequential/dense/MatMul\\ntype: MatMul\\nstate: executed' in source
    assert "subgraph cluster_" in source and "host0 /host:CPU tf_Compute" in source
    on_path = load(MLP_EVENT_DAG)["meta"]["critical_path"]
    assert source.count('color="#7b2cbf", penwidth=3') == len(on_path) - 1  # the path's edges
    op_source = to_dot(prepare(load_graph(GRU_OP_GRAPH), RenderOptions()), Metric.SELF, "dot")
    assert '"kernel while/body/_1/gru/MatMul"' in op_source
    assert '"tf.WhileRegion sequential/gru/while"' in op_source
    assert "subgraph cluster_" not in to_dot(graph, Metric.SELF, "sfdp")


def test_collapse_aggregates_scopes():
    graph = load_graph(GRU_OP_GRAPH)
    collapsed = collapse_scopes(graph, 3)
    summary = next(n for n in collapsed.nodes if n.name == "while/body/_1")
    members = [n for n in graph.nodes if n.name.startswith("while/body/_1/")]
    assert summary.members == len(members) == 8
    assert timing(summary).self_ps == sum(n.timing.self_ps for n in members if n.timing)
    ids = {n.id for n in collapsed.nodes}
    assert all(
        e.source in ids and e.target in ids and e.source != e.target for e in collapsed.edges
    )
    assert any(e.source == summary.id and e.kind is RenderEdgeKind.CALL for e in collapsed.edges)


def test_top_keeps_hottest_with_elided_paths():
    graph = load_graph(GRU_OP_GRAPH)
    top = top_subgraph(graph, 3, Metric.SELF)
    assert {n.name for n in top.nodes} == {
        "sequential/gru/while",
        "while/body/_1/gru/MatMul",
        "while/body/_1/gru/MatMul_1",
        "while/body/_1/gru/BiasAdd",
    }  # the third is fused into a kept kernel
    top = top_subgraph(graph, 5, Metric.SELF)
    ids = {n.name: n.id for n in top.nodes}
    links = {(e.source, e.target): e.kind for e in top.edges}
    # MatMul_1 -> Tanh -> mul -> add -> call -> gru_cell/mul: four dropped ops between.
    assert links[(ids["while/body/_1/gru/MatMul_1"], ids["gru_cell/mul"])] is RenderEdgeKind.ELIDED
    assert links[(ids["gru_cell/mul"], ids["gru_cell/sub"])] is RenderEdgeKind.DATA
    assert all(s in ids.values() and t in ids.values() for s, t in links)


def _op(node_id: int, name: str, self_ps: int | None) -> RenderNode:
    timing = None if self_ps is None else NodeTiming(self_ps, self_ps, self_ps, 1, 0.0)
    state = NodeState.NEVER_EXECUTED if timing is None else NodeState.EXECUTED
    return RenderNode(node_id, name, "tf.Op", "train", state, timing)


def _op_graph(nodes: list[RenderNode], links: list[tuple[int, int]]) -> RenderGraph:
    edges = tuple(RenderEdge(s, t, RenderEdgeKind.DATA) for s, t in links)
    return RenderGraph(GraphKind.OP_GRAPH, Path("train.json"), tuple(nodes), edges)


def _training_step(layers: int) -> RenderGraph:
    """A training step in miniature: layer i's forward op feeds the next layer and
    its gradient, gradients run backwards, and every gradient passes a reshape and
    then the optimizer's IdentityN (both never timed), which feeds one weight
    update each."""
    forward = list(range(layers))
    gradient = [layers + i for i in forward]
    update = [2 * layers + i for i in forward]
    reshape = [3 * layers + i for i in forward]
    hub = 4 * layers
    nodes = [_op(f, f"fwd_{i}", 10 + i) for i, f in enumerate(forward)]
    nodes += [_op(g, f"grad_{i}", 1_000 + i) for i, g in enumerate(gradient)]
    nodes += [_op(u, f"update_{i}", 500 + i) for i, u in enumerate(update)]
    nodes += [_op(r, f"reshape_{i}", None) for i, r in enumerate(reshape)]
    nodes.append(_op(hub, "sgd/IdentityN", None))
    links = [*itertools.pairwise(forward), *itertools.pairwise(reversed(gradient))]
    links += [*zip(forward, gradient, strict=True), *zip(gradient, reshape, strict=True)]
    links += [*((r, hub) for r in reshape), *((hub, u) for u in update)]
    return _op_graph(nodes, links)


def test_top_of_a_training_step_keeps_few_edges():
    layers, count = JUNCTION_DEGREE + 8, JUNCTION_DEGREE + 28  # every gradient, 20 updates
    top = top_subgraph(_training_step(layers), count, Metric.SELF)
    names = {n.id: n.name for n in top.nodes}
    assert len(top.nodes) == count + 1  # + the hub, drawn as a junction
    hub = next(n for n in top.nodes if n.name == "sgd/IdentityN")
    assert ("drawn as", "junction of paths between the hottest ops") in hub.details
    # Through the hub every kept gradient reaches every kept update: elided, those
    # were 40 × 20 = 800 edges, and Graphviz dot took minutes on such a view.
    assert len(top.edges) <= 2 * len(top.nodes)
    reach = nx.transitive_closure_dag(nx.DiGraph((e.source, e.target) for e in top.edges))
    grads = [i for i, name in names.items() if name.startswith("grad_")]
    updates = [i for i, name in names.items() if name.startswith("update_")]
    assert len(updates) == 20 and all(reach.has_edge(g, u) for g in grads for u in updates)
    drawn = prepare(_training_step(layers), RenderOptions(top=count))
    source = to_dot(drawn, Metric.SELF, "dot")
    assert sum(" -> " in line for line in source.splitlines()) == len(top.edges)
    assert 'label="…"' not in source and "through ops not drawn" in source


def test_top_drops_a_junction_that_joins_nothing_drawn():
    top = top_subgraph(_training_step(JUNCTION_DEGREE), JUNCTION_DEGREE, Metric.SELF)
    assert {n.name for n in top.nodes} == {f"grad_{i}" for i in range(JUNCTION_DEGREE)}
    assert all(e.kind is RenderEdgeKind.DATA for e in top.edges)


def test_top_leaves_out_elided_edges_other_paths_imply():
    # a → x → b → y → c → d, a → z → c and b → d; x, y, z are never timed.
    names = ["a", "b", "c", "d", "x", "y", "z"]
    times = [40, 30, 20, 10, None, None, None]
    nodes = [_op(i, name, ps) for i, (name, ps) in enumerate(zip(names, times, strict=True))]
    links = [(0, 4), (4, 1), (1, 5), (5, 2), (2, 3), (0, 6), (6, 2), (1, 3)]
    top = top_subgraph(_op_graph(nodes, links), 4, Metric.SELF)
    # a → z → c is implied by a → b → c; the real b → d stays although b → c → d implies it.
    assert {(e.source, e.target): e.kind for e in top.edges} == {
        (0, 1): RenderEdgeKind.ELIDED,
        (1, 2): RenderEdgeKind.ELIDED,
        (2, 3): RenderEdgeKind.DATA,
        (1, 3): RenderEdgeKind.DATA,
    }


def test_top_keeps_elided_edges_of_a_cyclic_view():
    nodes = [_op(0, "a", 20), _op(1, "b", 10), _op(2, "x", None), _op(3, "y", None)]
    graph = _op_graph(nodes, [(0, 2), (2, 1), (1, 3), (3, 0)])
    links = {(e.source, e.target) for e in top_subgraph(graph, 2, Metric.SELF).edges}
    assert links == {(0, 1), (1, 0)}


def test_graphml_round_trip(tmp_path):
    graph = prepare(load_graph(GRU_OP_GRAPH), RenderOptions(metric=Metric.TOTAL))
    path = tmp_path / "g.graphml"
    write_graphml(graph, Metric.TOTAL, path)
    loaded = nx.read_graphml(path)
    assert loaded.number_of_nodes() == len(graph.nodes)
    assert loaded.number_of_edges() == len(graph.edges)
    assert loaded.graph["metric"] == "total"
    matmul = next(n for n in graph.nodes if n.name == "while/body/_1/gru/MatMul")
    attributes = loaded.nodes[str(matmul.id)]
    assert attributes["total_ps"] == timing(matmul).total_ps
    assert attributes["hot"] is True and attributes["color"].startswith("#")
    assert (attributes["r"], attributes["g"], attributes["b"]) == tuple(
        int(attributes["color"][i : i + 2], 16) for i in (1, 3, 5)
    )
    assert {d["kind"] for _, _, d in loaded.edges(data=True)} == {"data", "control", "call"}


def test_huge_graphs_label_only_the_hottest(monkeypatch):
    monkeypatch.setattr(dot, "COMPACT_NODES", 10)
    monkeypatch.setattr(dot, "COMPACT_LABELS", 2)
    graph = prepare(load_graph(GRU_OP_GRAPH), RenderOptions(hot_k=1))
    source = to_dot(graph, Metric.SELF, "sfdp")
    boxes = [line for line in source.splitlines() if "shape=circle" not in line and "id=" in line]
    assert len(boxes) == 2 and "gru/while" in boxes[0] + boxes[1]
    assert source.count("shape=circle") == len(graph.nodes) - 2
    assert "K=0.5" in source and "tooltip=" in source.split("shape=circle", 1)[1]
