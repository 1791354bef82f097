"""Writes a RenderGraph as Graphviz DOT: colored nodes, clusters, legend, tooltips.

Clusters (drawn by `dot` only; force-directed engines ignore them):
- one per function (op graph) or trace line (event DAG);
- one per region-holding op (`parent`, e.g. a tf.WhileRegion) around its body;
- one per runtime kernel around the ops fused into it (`fused_into`);
- one per XLA fusion around the ops it covers (`xla_fusion`).
The legend is the graph label (an HTML table), which every engine places.
A drawing too deep for a screen is folded into columns (fold.py): one
invisible cluster per column holds that column's clusters.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from tfpgo.render.colormap import ColorScale, colormap_hex
from tfpgo.render.fold import Fold, plan_fold
from tfpgo.render.metrics import Metric, format_ps, format_value, metric_value
from tfpgo.render.model import GraphKind, RenderEdgeKind, RenderGraph, RenderNode
from tfpgo.render.style import (
    CRITICAL_COLOR,
    FUSED_FILL,
    HOT_FILL,
    NEVER_FILL,
    color_scale,
    node_label_lines,
    node_style,
    node_tooltip_lines,
)

LEGEND_STEPS = 7
COMPACT_NODES = 2500
COMPACT_LABELS = 100
_EDGE_STYLE = {
    RenderEdgeKind.TIME: 'color="#9a9a9a"',
    RenderEdgeKind.FLOW: 'color="#1f4e9a"',
    RenderEdgeKind.DATA: 'color="#606060"',
    RenderEdgeKind.CALL: 'color="#1f4e9a", style=dashed',
    RenderEdgeKind.CONTROL: 'color="#9a9a9a", style=dotted',
    # No label: `dot` lays a labeled edge out as an extra node and rank, which
    # nearly doubled the layout time of a 190-node `--nodes` view; the legend keys it.
    RenderEdgeKind.ELIDED: 'color="#9a9a9a", style=dashed',
}
ELIDED_KEY = "- - → through ops not drawn"
_METRIC_TITLE = {
    Metric.SELF: "self time",
    Metric.TOTAL: "total time",
    Metric.MEAN: "mean time per execution",
    Metric.SHARE: "share of self time",
}


def quote(text: str) -> str:
    """A DOT double-quoted string; newlines become Graphviz line breaks."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + escaped.replace("\n", "\\n") + '"'


def html(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


@dataclass
class _Cluster:
    label: str
    kind: str
    nodes: list[int] = field(default_factory=list)
    children: dict[tuple, _Cluster] = field(default_factory=dict)


def _cluster_paths(graph: RenderGraph) -> dict[int, list[tuple[tuple, str, str]]]:
    """For each node, its chain of (key, label, kind) clusters, outermost first."""
    by_id = graph.node_by_id()
    kernels: dict[tuple[str | None, str], int] = {}
    for node in graph.nodes:
        kernels.setdefault((node.group, node.name), node.id)
    has_fused = {
        kernels[(n.group, n.fused_into)]
        for n in graph.nodes
        if n.fused_into and (n.group, n.fused_into) in kernels
    }
    has_children = {n.parent for n in graph.nodes if n.parent in by_id}
    paths: dict[int, list] = {}

    def region(node: RenderNode) -> tuple:
        trips = f", {node.trip_count:g} trips" if node.trip_count is not None else ""
        return (("region", node.id), f"{node.op_type} {node.name}{trips}", "region")

    def base(node: RenderNode) -> list:
        """Clusters around a node's position: its function and enclosing regions."""
        if node.parent in by_id:
            parent = by_id[node.parent]
            return [*base(parent), region(parent)]
        return [(("group", node.group), node.group, "group")] if node.group else []

    def own(node: RenderNode) -> list:
        if node.id in paths:
            return paths[node.id]
        kernel_id = kernels.get((node.group, node.fused_into)) if node.fused_into else None
        if kernel_id is not None and kernel_id != node.id:
            path = own(by_id[kernel_id])
        else:
            path = base(node)
            if node.id in has_children:
                path = [*path, region(node)]
            if node.id in has_fused:
                path = [*path, (("kernel", node.id), f"kernel {node.name}", "kernel")]
            if node.xla_fusion:  # the ops one XLA fusion covers, like a fused kernel
                key = ("xla", node.group, node.xla_fusion)
                path = [*path, (key, f"XLA fusion {node.xla_fusion}", "xla")]
        paths[node.id] = path
        return path

    for node in graph.nodes:
        own(node)
    return paths


def _cluster_tree(graph: RenderGraph, fold: Fold | None) -> _Cluster:
    """Clusters by function, region and kernel; under one per column if folded
    (a function or kernel that spans two columns is drawn once in each)."""
    root = _Cluster("", "root")
    for node_id, path in _cluster_paths(graph).items():
        cluster = root
        if fold is not None:
            column = fold.column[node_id]
            path = [(("column", column), "", "column"), *path]
        for key, label, kind in path:
            cluster = cluster.children.setdefault(key, _Cluster(label, kind))
        cluster.nodes.append(node_id)
    return root


# An XLA fusion cluster: blue, apart from the red of runtime kernels.
XLA_COLOR, XLA_FILL = "#2e6da4", "#edf3fa"

_CLUSTER_STYLE = {
    "column": "style=invis",
    "group": 'style="rounded", color="#8c8c8c", fontsize=12',
    "region": 'style="rounded,dashed", color="#5a5a5a", fontsize=11',
    "kernel": 'style="rounded,filled", color="#c0392b", fillcolor="#fdf0ec", fontsize=10',
    "xla": f'style="rounded,filled", color="{XLA_COLOR}", fillcolor="{XLA_FILL}", fontsize=10',
}


def _node_line(node: RenderNode, metric: Metric, scale: ColorScale, labeled: bool) -> str:
    style = node_style(node, metric, scale)
    styles = ["rounded", "filled"] + (["dashed"] if style.dashed else [])
    label = chr(10).join(node_label_lines(node, metric)) if labeled else ""
    shape = [] if labeled else ["shape=circle", "width=0.16", "fixedsize=true"]
    attributes = [
        f"id={quote(f'op{node.id}')}",
        *shape,
        f"label={quote(label)}",
        f"tooltip={quote(chr(10).join(node_tooltip_lines(node)))}",
        f'style="{",".join(styles)}"',
        f'fillcolor="{style.fill}"',
        f'fontcolor="{style.text}"',
        f'color="{style.border}"',
        f"penwidth={style.penwidth}",
    ]
    if style.bold:
        attributes.append('fontname="Helvetica-Bold"')
    if style.peripheries > 1:
        attributes.append(f"peripheries={style.peripheries}")
    return f"n{node.id} [{', '.join(attributes)}];"


def _emit_cluster(
    cluster: _Cluster, lines: list[str], node_lines: dict[int, str], counter: list[int], indent: str
) -> None:
    lines.extend(indent + node_lines[node_id] for node_id in cluster.nodes)
    for child in cluster.children.values():
        counter[0] += 1
        lines.append(f"{indent}subgraph cluster_{counter[0]} {{")
        lines.append(f"{indent}  graph [label={quote(child.label)}, {_CLUSTER_STYLE[child.kind]}];")
        _emit_cluster(child, lines, node_lines, counter, indent + "  ")
        lines.append(f"{indent}}}")


def legend_size(graph: RenderGraph) -> float:
    """Legend magnification: big drawings are viewed zoomed out, so their legend grows."""
    return max(1.0, (len(graph.nodes) ** 0.5) / 25)


def legend_html(graph: RenderGraph, metric: Metric, scale: ColorScale) -> str:
    """The color scale in human units plus a key to the marks, as an HTML label."""
    magnify = legend_size(graph)
    title = _METRIC_TITLE[metric] + (" (log scale)" if scale.log else "")
    if graph.device:
        title = "device " + title
    if graph.critical_path_ps:
        title += f" · critical path {format_ps(graph.critical_path_ps)}"
    cells, ticks = [], []
    for step in range(LEGEND_STEPS):
        position = step / (LEGEND_STEPS - 1)
        cells.append(
            f'<TD BGCOLOR="{colormap_hex(position)}" WIDTH="{round(64 * magnify)}" '
            f'HEIGHT="{round(14 * magnify)}"></TD>'
        )
        ticks.append(f"<TD>{html(format_value(scale.value_at(position), metric))}</TD>")
    keys = (
        f'<TD BGCOLOR="{HOT_FILL}"><FONT COLOR="white"><B>hot</B></FONT></TD>'
        f'<TD BORDER="2" COLOR="{CRITICAL_COLOR}">critical path</TD>'
        f'<TD BGCOLOR="{FUSED_FILL}" BORDER="1">fused into kernel</TD>'
        f'<TD BGCOLOR="{NEVER_FILL}"><FONT COLOR="#7a7a7a">not executed</FONT></TD>'
    )
    if any(node.xla_fusion for node in graph.nodes):
        keys += f'<TD BGCOLOR="{XLA_FILL}" BORDER="1" COLOR="{XLA_COLOR}">XLA fusion</TD>'
    if any(edge.kind is RenderEdgeKind.ELIDED for edge in graph.edges):
        keys += f'<TD><FONT COLOR="#7a7a7a">{html(ELIDED_KEY)}</FONT></TD>'
    return (
        '<<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="2" CELLPADDING="3">'
        f'<TR><TD COLSPAN="{LEGEND_STEPS}"><B>{html(graph.source.name)}</B><BR/>color: '
        f"{html(title)}</TD></TR><TR>{''.join(cells)}</TR><TR>{''.join(ticks)}</TR>"
        f'<TR><TD COLSPAN="{LEGEND_STEPS}"><TABLE BORDER="0" CELLSPACING="6"><TR>{keys}'
        "</TR></TABLE></TD></TR></TABLE>>"
    )


def critical_edges(graph: RenderGraph) -> set[tuple[int, int]]:
    path = graph.critical_path
    if path:
        return set(itertools.pairwise(path))
    critical = {node.id for node in graph.nodes if node.critical}
    return {
        (e.source, e.target) for e in graph.edges if e.source in critical and e.target in critical
    }


def _labeled_nodes(graph: RenderGraph, metric: Metric) -> set[int]:
    """Nodes drawn as labeled boxes: all of them, or in a huge graph the hottest.

    Above COMPACT_NODES, ten thousand text boxes are unreadable at any zoom that
    shows the graph and make overlap removal slow, so only hot nodes and the
    COMPACT_LABELS hottest keep labels; the rest are colored dots whose tooltip
    still carries every metric.
    """
    if len(graph.nodes) <= COMPACT_NODES:
        return {node.id for node in graph.nodes}
    timed = [node for node in graph.nodes if metric_value(node, metric) is not None]
    timed.sort(key=lambda node: -(metric_value(node, metric) or 0.0))
    return {node.id for node in timed[:COMPACT_LABELS]} | {
        node.id for node in graph.nodes if node.hot
    }


def _fold_constraints(fold: Fold) -> list[str]:
    """Row r of every column on one rank, and the columns left to right: an
    invisible edge joins the first node of each column's top row to the next
    column's (an edge within a rank orders its ends)."""
    by_row: dict[int, list[int]] = {}
    for node_id in sorted(fold.row, key=lambda n: (fold.row[n], fold.column[n], n)):
        by_row.setdefault(fold.row[node_id], []).append(node_id)
    lines = [
        "  { rank=same; " + " ".join(f"n{node_id};" for node_id in row) + " }"
        for _, row in sorted(by_row.items())
    ]
    heads: dict[int, int] = {}
    for node_id in by_row.get(0, []):
        heads.setdefault(fold.column[node_id], node_id)
    order = [heads[column] for column in sorted(heads)]
    lines += [f"  n{a} -> n{b} [style=invis];" for a, b in itertools.pairwise(order)]
    return lines


def to_dot(graph: RenderGraph, metric: Metric, engine: str) -> str:
    """The DOT source of the picture; clusters only when `engine` is dot."""
    scale = color_scale(graph, metric)
    rankdir = "TB" if graph.kind is GraphKind.OP_GRAPH else "LR"
    lines = [
        "digraph tfpgo {",
        f"  graph [rankdir={rankdir}, labelloc=b, labeljust=l, fontname=Helvetica, "
        f"fontsize={round(11 * legend_size(graph))}, nodesep=0.25, ranksep=0.35, "
        "outputorder=edgesfirst, "
        f"label={legend_html(graph, metric, scale)}];",
        '  node [shape=box, fontname=Helvetica, fontsize=10, margin="0.08,0.03"];',
        '  edge [arrowsize=0.6, color="#606060"];',
    ]
    if engine != "dot":
        # Compact graphs (dots, see _labeled_nodes) get a larger spring length K:
        # fewer initial overlaps halve the time prism spends removing them.
        spread = ", K=0.5" if len(graph.nodes) > COMPACT_NODES else ""
        lines.append(f"  graph [overlap=prism, splines=false, sep=0.1{spread}];")
    labeled = _labeled_nodes(graph, metric)
    node_lines = {
        node.id: _node_line(node, metric, scale, node.id in labeled) for node in graph.nodes
    }
    fold = plan_fold(graph, flows_down=rankdir == "TB") if engine == "dot" else None
    if fold is not None:
        # One global ranking, so that rank=same can align rows across columns.
        lines.append("  graph [newrank=true];")
    if engine == "dot":
        _emit_cluster(_cluster_tree(graph, fold), lines, node_lines, [0], "  ")
    else:
        lines.extend("  " + line for line in node_lines.values())
    on_path = critical_edges(graph)
    for edge in graph.edges:
        attributes = [_EDGE_STYLE[edge.kind]]
        if (edge.source, edge.target) in on_path:
            attributes = [f'color="{CRITICAL_COLOR}", penwidth=3']
        if edge.count > 1:
            attributes.append(
                f'penwidth={min(1 + edge.count**0.5, 5):.1f}, tooltip="{edge.count} edges"'
            )
        if fold is not None and fold.crosses(edge.source, edge.target):
            attributes.append("constraint=false")
        lines.append(f"  n{edge.source} -> n{edge.target} [{', '.join(attributes)}];")
    if fold is not None:
        lines.extend(_fold_constraints(fold))
    lines.append("}")
    return "\n".join(lines) + "\n"
