"""How one node looks: fill by metric, hot/critical/fused/never-executed marks, text.

Kept apart from the DOT writer so GraphML (and tests) use the very same colors.
"""

from __future__ import annotations

from dataclasses import dataclass

from tfpgo.render.colormap import ColorScale, hex_color, text_color
from tfpgo.render.metrics import Metric, format_ps, format_value, metric_value
from tfpgo.render.model import NodeState, RenderGraph, RenderNode

HOT_FILL = "#d00000"
HOT_BORDER = "#000000"
CRITICAL_COLOR = "#7b2cbf"  # purple: distinct from every colormap hue
NEVER_FILL, NEVER_TEXT, NEVER_BORDER = "#e6e6e6", "#7a7a7a", "#b0b0b0"
FUSED_FILL = "#ffffff"
LABEL_WIDTH = 28  # characters of a name a label shows before eliding


@dataclass(frozen=True)
class NodeStyle:
    """Resolved drawing attributes of one node."""

    fill: str
    text: str
    border: str
    penwidth: float
    dashed: bool
    bold: bool
    peripheries: int


def color_scale(graph: RenderGraph, metric: Metric) -> ColorScale:
    values = [v for node in graph.nodes if (v := metric_value(node, metric)) is not None]
    return ColorScale.from_values(values)


def node_style(node: RenderNode, metric: Metric, scale: ColorScale) -> NodeStyle:
    """Colormap fill for measured nodes; hot overrides to red with a bold border."""
    peripheries = 2 if node.critical else 1
    border = CRITICAL_COLOR if node.critical else "#404040"
    if node.state is NodeState.NEVER_EXECUTED:
        return NodeStyle(NEVER_FILL, NEVER_TEXT, NEVER_BORDER, 1.0, True, False, peripheries)
    value = metric_value(node, metric)
    if value is None:  # fused: drawn inside its kernel, no time of its own
        return NodeStyle(FUSED_FILL, "#303030", "#606060", 1.0, True, False, peripheries)
    if node.hot:
        return NodeStyle(HOT_FILL, "#ffffff", HOT_BORDER, 4.0, False, True, peripheries)
    rgb = scale.rgb(value)
    return NodeStyle(
        hex_color(rgb),
        text_color(rgb),
        border,
        2.5 if node.critical else 1.0,
        False,
        False,
        peripheries,
    )


def _elide(text: str, width: int = LABEL_WIDTH) -> str:
    return text if len(text) <= width else "…" + text[-(width - 1) :]


def _scope_label(node: RenderNode) -> str:
    """The name part worth a line: the scope when the last part just repeats the type."""
    parts = node.name.split("/")
    if len(parts) > 1 and parts[-1] == node.op_type.rsplit(".", 1)[-1]:
        return _elide("/".join(parts[:-1]))
    return _elide("/".join(parts[-2:]))


def node_label_lines(node: RenderNode, metric: Metric) -> list[str]:
    """Op type, short name, time: what fits in a box and answers "what is hot"."""
    if node.op_type == "scope":
        lines = [f"{_elide(node.name)}/", f"{node.members} ops"]
    elif node.op_type == "event":  # not a TF op: the event name is all there is
        lines = [_elide(node.short_name)]
    else:
        lines = [_elide(node.op_type), _scope_label(node)]
    value = metric_value(node, metric)
    if value is not None:
        rank = f"#{node.hot_rank} " if node.hot and node.hot_rank else ""
        lines.append(rank + format_value(value, metric))
    elif node.state is NodeState.FUSED:
        lines.append("fused")
    else:
        lines.append("not executed")
    return lines


def node_tooltip_lines(node: RenderNode) -> list[str]:
    """Every metric of the node, for hover tooltips and GraphML."""
    lines = [node.name, f"type: {node.op_type}", f"state: {node.state.value}"]
    if node.group:
        lines.append(f"in: {node.group}")
    timing = node.timing
    if timing is not None:
        lines += [
            f"self: {format_ps(timing.self_ps)}",
            f"total: {format_ps(timing.total_ps)}",
            f"mean: {format_ps(timing.mean_ps)}",
            f"count: {timing.count}",
            f"share: {timing.share * 100:.3g}%",
        ]
        for name, value in (
            ("min", timing.min_ps),
            ("max", timing.max_ps),
            ("p50", timing.p50_ps),
            ("p95", timing.p95_ps),
            ("first start", timing.first_start_ps),
        ):
            if value is not None:
                lines.append(f"{name}: {format_ps(value)}")
    if node.fused_into:
        lines.append(f"fused into: {node.fused_into}")
    if node.xla_fusion:
        lines.append(f"XLA fusion: {node.xla_fusion}")
    if node.hot:
        lines.append(f"hot: rank {node.hot_rank}" if node.hot_rank else "hot")
    if node.critical:
        lines.append("on the critical path")
    lines += [f"{key}: {value}" for key, value in node.details]
    return lines
