"""Icicle chart (a flame graph hanging down) as a standalone SVG.

The root spans the full width; each row below splits its parent's width among
the children in proportion to their value, so a wide cell is where the time
goes. The chart knows nothing about profiles: callers build `IcicleNode`
trees with the fill and tooltip of each cell (time by scope colored by phase
in the report, by delta in `profile_diff`).

Readable on trees of thousands of nodes (a MobileNetV2 training step has
~3,500 scopes and ops): children narrower than `min_cell_px` are merged into
one grey "+N" cell whose subtrees are not drawn, cells get a label only where
it fits, and every drawn cell carries a `<title>` tooltip.
"""

from __future__ import annotations

from dataclasses import dataclass
from xml.sax.saxutils import escape

from tfpgo.render.colormap import text_color

MERGED_FILL = "#d0d0d0"
_CHAR_PX = 6.6  # average glyph width of the 11 px sans-serif labels
_ROW_PX = 20
_GAP_PX = 1
_BAND_PX = 5


@dataclass(frozen=True)
class IcicleNode:
    label: str
    value: int  # width weight; children's values sum to at most the parent's
    fill: str  # "#rrggbb"
    tooltip: str
    children: tuple[IcicleNode, ...] = ()
    # A strip along the cell's bottom edge split by (fill, value): the make-up of
    # the cell's value (e.g. its phases), drawn left to right to scale.
    bands: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True)
class IcicleStyle:
    width_px: int = 1400
    min_cell_px: float = 4.0
    max_rows: int = 12
    title: str = ""
    legend: tuple[tuple[str, str], ...] = ()  # (fill, text)


@dataclass(frozen=True)
class _Cell:
    x: float
    row: int
    width: float
    node: IcicleNode


def layout(root: IcicleNode, style: IcicleStyle) -> list[_Cell]:
    """Cells of the drawing: position, row and width of each node drawn."""
    cells: list[_Cell] = []
    if root.value <= 0:
        return [_Cell(0.0, 0, float(style.width_px), root)]
    scale = style.width_px / root.value
    pending = [(root, 0.0, 0)]
    while pending:
        node, x, row = pending.pop()
        cells.append(_Cell(x, row, node.value * scale, node))
        if row + 1 >= style.max_rows:
            continue
        at = x
        wide = [child for child in node.children if child.value * scale >= style.min_cell_px]
        narrow = [child for child in node.children if child.value * scale < style.min_cell_px]
        for child in wide:
            pending.append((child, at, row + 1))
            at += child.value * scale
        merged = sum(child.value for child in narrow)
        if narrow and merged > 0:
            cells.append(_Cell(at, row + 1, merged * scale, _merged(narrow, merged)))
    return sorted(cells, key=lambda cell: (cell.row, cell.x))


def _merged(nodes: list[IcicleNode], value: int) -> IcicleNode:
    shown = ", ".join(node.label for node in nodes[:8])
    more = f", … {len(nodes) - 8} more" if len(nodes) > 8 else ""
    return IcicleNode(
        f"+{len(nodes)}",
        value,
        MERGED_FILL,
        f"{len(nodes)} small cells merged (too narrow to draw): {shown}{more}",
    )


def _fit(label: str, width: float) -> str:
    """The label, cut with an ellipsis to fit `width` px; '' if not 3 characters fit."""
    room = int((width - 6) / _CHAR_PX)
    if room < 3:
        return ""
    return label if len(label) <= room else label[: room - 1] + "…"


def to_svg(root: IcicleNode, style: IcicleStyle) -> str:
    cells = layout(root, style)
    rows = max(cell.row for cell in cells) + 1
    top = 28 if style.title else 4
    legend_y = top + rows * _ROW_PX + 8
    height = legend_y + (24 if style.legend else 0)
    parts = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{style.width_px}" height="{height}" '
        f'viewBox="0 0 {style.width_px} {height}" font-family="sans-serif" font-size="11">',
        f'<rect width="{style.width_px}" height="{height}" fill="#ffffff"/>',
    ]
    if style.title:
        parts.append(f'<text x="4" y="18" font-size="14">{escape(style.title)}</text>')
    for cell in cells:
        parts.append(_cell_svg(cell, top))
    at = 4.0
    for fill, text in style.legend:
        parts.append(
            f'<rect x="{at:.1f}" y="{legend_y}" width="14" height="14" fill="{fill}"/>'
            f'<text x="{at + 18:.1f}" y="{legend_y + 11}">{escape(text)}</text>'
        )
        at += 18 + len(text) * _CHAR_PX + 16
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def _cell_svg(cell: _Cell, top: int) -> str:
    y = top + cell.row * _ROW_PX
    width = max(cell.width - _GAP_PX, 0.5)
    node = cell.node
    fill = node.fill
    rect = (
        f'<rect x="{cell.x:.2f}" y="{y}" width="{width:.2f}" height="{_ROW_PX - _GAP_PX}" '
        f'fill="{fill}"/>'
    )
    label = _fit(node.label, cell.width)
    text = ""
    if label:
        rgb = (int(fill[1:3], 16), int(fill[3:5], 16), int(fill[5:7], 16))
        text = (
            f'<text x="{cell.x + 3:.2f}" y="{y + 12}" fill="{text_color(rgb)}">'
            f"{escape(label)}</text>"
        )
    return f"<g><title>{escape(node.tooltip)}</title>{rect}{_bands_svg(cell, y)}{text}</g>"


def _bands_svg(cell: _Cell, y: int) -> str:
    node = cell.node
    if not node.bands or node.value <= 0:
        return ""
    band_y = y + _ROW_PX - _GAP_PX - _BAND_PX
    at, parts = cell.x, []
    for fill, value in node.bands:
        width = max(cell.width - _GAP_PX, 0.5) * value / node.value
        if width >= 0.5:
            parts.append(
                f'<rect x="{at:.2f}" y="{band_y}" width="{width:.2f}" height="{_BAND_PX}" '
                f'fill="{fill}"/>'
            )
        at += width
    return "".join(parts)
