"""GraphML through networkx, with every metric and the drawn color as attributes.

Gephi reads the integer `r`, `g`, `b` node attributes as the node color; yEd and
Gephi both show the rest (times in ps, share, hot rank...) in their data tables.
"""

from __future__ import annotations

from pathlib import Path

import networkx as nx

from tfpgo.atomic import atomic_output_file
from tfpgo.render.dot import critical_edges
from tfpgo.render.metrics import Metric, metric_value
from tfpgo.render.model import RenderGraph, RenderNode
from tfpgo.render.style import color_scale, node_label_lines, node_style


def _node_attributes(node: RenderNode, metric: Metric, fill: str) -> dict[str, object]:
    attributes: dict[str, object] = {
        "label": " ".join(node_label_lines(node, metric)),
        "name": node.name,
        "op_type": node.op_type,
        "state": node.state.value,
        "hot": node.hot,
        "critical": node.critical,
        "members": node.members,
        "color": fill,
        "r": int(fill[1:3], 16),
        "g": int(fill[3:5], 16),
        "b": int(fill[5:7], 16),
    }
    optional = {
        "group": node.group,
        "hot_rank": node.hot_rank,
        "fused_into": node.fused_into,
        "parent": node.parent,
        "metric_value": metric_value(node, metric),
    }
    attributes.update({key: value for key, value in optional.items() if value is not None})
    timing = node.timing
    if timing is not None:
        attributes.update(
            self_ps=timing.self_ps,
            total_ps=timing.total_ps,
            mean_ps=timing.mean_ps,
            count=timing.count,
            share=timing.share,
        )
        for key in ("min_ps", "max_ps", "p50_ps", "p95_ps", "first_start_ps"):
            if getattr(timing, key) is not None:
                attributes[key] = getattr(timing, key)
    return attributes


def to_networkx(graph: RenderGraph, metric: Metric) -> nx.DiGraph:
    """A networkx graph carrying the picture's colors and every metric."""
    scale = color_scale(graph, metric)
    result: nx.DiGraph[int] = nx.DiGraph(
        kind=graph.kind.value, metric=metric.value, source=str(graph.source)
    )
    for node in graph.nodes:
        fill = node_style(node, metric, scale).fill
        result.add_node(node.id, **_node_attributes(node, metric, fill))
    on_path = critical_edges(graph)
    for edge in graph.edges:
        result.add_edge(
            edge.source,
            edge.target,
            kind=edge.kind.value,
            count=edge.count,
            critical=(edge.source, edge.target) in on_path,
        )
    return result


def write_graphml(graph: RenderGraph, metric: Metric, path: Path) -> None:
    with atomic_output_file(path, "wb") as handle:
        nx.write_graphml(to_networkx(graph, metric), handle)
