"""The scope tree of an analysis as an icicle chart: width = self time, fill =
a light tint of the phase with the most time in the cell, a strip along the
bottom = the cell's split into phases (forward, backward, optimizer, other) to
scale, tooltip = path, times, share and the phase split."""

from __future__ import annotations

from pathlib import Path

from tfpgo.analysis import Analysis
from tfpgo.analysis.phase import Phase
from tfpgo.analysis.scope import ScopeNode
from tfpgo.atomic import atomic_output_file
from tfpgo.render.colormap import hex_color
from tfpgo.render.icicle import IcicleNode, IcicleStyle, to_svg
from tfpgo.render.metrics import format_ps

PHASE_FILLS = {
    Phase.FORWARD: "#4c78a8",
    Phase.BACKWARD: "#f58518",
    Phase.OPTIMIZER: "#54a24b",
    Phase.OTHER: "#9d9d9d",
}


def scope_chart_svg(analysis: Analysis, title: str = "") -> str:
    root_total = analysis.scopes.self_ps
    root = _icicle(analysis.scopes, root_total)
    phases = [
        (PHASE_FILLS[row.phase], f"{row.phase.value} {format_ps(row.self_ps)}")
        for row in analysis.phases.rows
    ]
    idle = ("#ffffff", f"no op running: {format_ps(analysis.phases.non_op_ps)}")
    legend = (*phases, idle)
    style = IcicleStyle(
        title=title
        or "op self time by layer scope: width = time, color = main phase, strip = phase split",
        legend=legend,
    )
    return to_svg(root, style)


def write_scope_chart(analysis: Analysis, path: Path, title: str = "") -> None:
    with atomic_output_file(path) as handle:
        handle.write(scope_chart_svg(analysis, title))


def _icicle(node: ScopeNode, root_total: int) -> IcicleNode:
    dominant = max(Phase, key=lambda phase: node.phase_self_ps[phase])
    share = node.self_ps / root_total if root_total else 0.0
    phases = ", ".join(
        f"{phase.value} {format_ps(ps)}" for phase, ps in node.phase_self_ps.items() if ps
    )
    tooltip = (
        f"{node.path or 'all ops'}\n"
        f"self {format_ps(node.self_ps)} ({share:.1%} of op self time), "
        f"total {format_ps(node.total_ps)}\n"
        f"{phases}\n{node.ops} ops, {node.count} executions"
    )
    return IcicleNode(
        node.name or "all ops",
        node.self_ps,
        _tint(PHASE_FILLS[dominant]),
        tooltip,
        tuple(_icicle(child, root_total) for child in node.children),
        tuple((PHASE_FILLS[phase], ps) for phase, ps in node.phase_self_ps.items() if ps),
    )


def _tint(fill: str, white: float = 0.55) -> str:
    """`fill` mixed with white: light enough for black labels, its hue kept."""
    red, green, blue = (int(fill[i : i + 2], 16) for i in (1, 3, 5))
    return hex_color((_lighten(red, white), _lighten(green, white), _lighten(blue, white)))


def _lighten(channel: int, white: float) -> int:
    return round(channel + (255 - channel) * white)
