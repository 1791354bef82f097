"""A profile diff as Markdown, HTML and an icicle picture colored by delta.

Presentation only: every figure comes from the `ProfileDiff` record.
"""

from __future__ import annotations

import html
from pathlib import Path

from tfpgo.analysis.scope import ScopeNode
from tfpgo.atomic import atomic_output_file
from tfpgo.diff.compare import Delta, ProfileDiff
from tfpgo.render.colormap import diverging_hex
from tfpgo.render.icicle import IcicleNode, IcicleStyle, to_svg
from tfpgo.render.metrics import format_ps

# The report's table helpers and page style: a diff page reads like a report page.
from tfpgo.render.tables import PAGE_STYLE, html_table, markdown_table

OUTPUT_NAMES = ("diff.md", "diff.html", "diff.svg")
_DELTA_HEADER = ["self A", "self B", "Δ self", "Δ total", "count A", "count B"]


def signed_ps(ps: float) -> str:
    return ("+" if ps > 0 else "−" if ps < 0 else "±") + format_ps(abs(ps))


def summary_rows(diff: ProfileDiff) -> list[tuple[str, str]]:
    both = sum(1 for delta in diff.ops if delta.in_a and delta.in_b)
    rows = [
        ("A", f"{diff.name_a} (op self time {format_ps(diff.op_self_a_ps)})"),
        ("B", f"{diff.name_b} (op self time {format_ps(diff.op_self_b_ps)})"),
        ("overlap", f"{float(diff.overlap):.2%} of op self time distributed alike"),
        ("step time", _step_time_text(diff)),
        (
            "ops",
            f"{both} in both ({len(diff.changed_ops)} changed), "
            f"{len(diff.added)} added in B, {len(diff.removed)} removed from A",
        ),
    ]
    if diff.device is not None:
        device = diff.device
        change = device.op_self_b_ps - device.op_self_a_ps
        relative = f" ({change / device.op_self_a_ps:+.1%})" if device.op_self_a_ps else ""
        rows.append(
            (
                "device time",
                f"{format_ps(device.op_self_a_ps)} → {format_ps(device.op_self_b_ps)} on ops: "
                f"{signed_ps(change)}{relative}; {float(device.overlap):.2%} distributed alike",
            )
        )
    return rows


def all_tables(diff: ProfileDiff, top_n: int) -> list[tuple[str, list[str], list[list[str]]]]:
    """The device time's tables first where both profiles have it, then the host's."""
    if diff.device is None:
        return tables(diff, top_n)
    device = [(f"Device time: {t[0].lower()}", t[1], t[2]) for t in tables(diff.device, top_n)]
    host = [(f"Host op time: {t[0].lower()}", t[1], t[2]) for t in tables(diff, top_n)]
    return device + host


def _step_time_text(diff: ProfileDiff) -> str:
    change = diff.step_time
    if change is None:
        return "not compared: a profile has no per-step durations (no step markers)"
    text = (
        f"mean {format_ps(change.mean_a_ps)} → {format_ps(change.mean_b_ps)}: "
        f"{signed_ps(change.delta_ps)} ({change.relative:+.1%})"
    )
    if change.low_ps is None or change.high_ps is None:
        return (
            text
            + f"; no interval (needs ≥ 2 steps each, have {change.steps_a} and {change.steps_b})"
        )
    return text + (
        f", {change.confidence:.0%} interval [{signed_ps(change.low_ps)}, "
        f"{signed_ps(change.high_ps)}] (Welch's t, {change.steps_a} vs {change.steps_b} steps)"
    )


def _delta_cells(delta: Delta) -> list[str]:
    return [
        format_ps(delta.a.self_ps) if delta.in_a else "–",
        format_ps(delta.b.self_ps) if delta.in_b else "–",
        signed_ps(delta.self_ps),
        signed_ps(delta.total_ps),
        str(delta.a.count) if delta.in_a else "–",
        str(delta.b.count) if delta.in_b else "–",
    ]


def tables(diff: ProfileDiff, top_n: int) -> list[tuple[str, list[str], list[list[str]]]]:
    by_path = {delta.name: delta for delta in diff.scopes}
    changed_scopes = [
        delta for delta in diff.scopes if delta.changed and not _repeats_parent(delta, by_path)
    ][:top_n]
    added = sorted(diff.added, key=lambda d: (-d.b.self_ps, d.name))[:top_n]
    removed = sorted(diff.removed, key=lambda d: (-d.a.self_ps, d.name))[:top_n]
    return [
        (
            "Scopes with the largest change",
            ["scope", *_DELTA_HEADER],
            [[d.name, *_delta_cells(d)] for d in changed_scopes],
        ),
        (
            "Ops with the largest change",
            ["op", *_DELTA_HEADER],
            [[d.name, *_delta_cells(d)] for d in diff.changed_ops[:top_n]],
        ),
        (
            "Added ops (only in B)",
            ["op", *_DELTA_HEADER],
            [[d.name, *_delta_cells(d)] for d in added],
        ),
        (
            "Removed ops (only in A)",
            ["op", *_DELTA_HEADER],
            [[d.name, *_delta_cells(d)] for d in removed],
        ),
    ]


def _repeats_parent(delta: Delta, by_path: dict[str, Delta]) -> bool:
    """A scope whose figures equal its parent's in both profiles (the parent's only
    content, as `convolution` in `block_1_expand/convolution`): a row saying nothing new."""
    parent = by_path.get(delta.name.rpartition("/")[0])
    return parent is not None and (parent.a, parent.b) == (delta.a, delta.b)


def delta_svg(diff: ProfileDiff) -> str:
    """B's scope tree (width = B's self time), each cell colored by its change of
    self time relative to the larger of A and B: (B − A) / max(A, B), from −1
    (gone: full blue) through 0 (unchanged: white) to +1 (new: full red).
    Relative, so that a layer that got 30% slower looks it at every depth."""
    what = "device time" if diff.device is not None else "op self time"
    diff = diff.device or diff  # the time that matters: the device's where there is some
    by_path = {delta.name: delta for delta in diff.scopes}
    root = _delta_icicle(diff.tree_b, by_path, diff.op_self_a_ps)
    legend = (
        (diverging_hex(1.0), "slower in B (full red: new)"),
        (diverging_hex(0.5), "2× slower"),
        (diverging_hex(-0.5), "2× faster"),
        (diverging_hex(-1.0), "faster (full blue: gone)"),
        ("#ffffff", "unchanged"),
    )
    title = (
        f"{what} by scope in B, colored by change from A "
        f"(overlap {float(diff.overlap):.1%}; scopes only in A are listed in the tables)"
    )
    return to_svg(root, IcicleStyle(title=title, legend=legend))


def relative_change(before: int, after: int) -> float:
    """(after − before) / max(before, after), in [−1, 1]; 0 when both are 0."""
    larger = max(before, after)
    return (after - before) / larger if larger else 0.0


def _delta_icicle(node: ScopeNode, by_path: dict[str, Delta], op_self_a_ps: int) -> IcicleNode:
    if node.path:
        delta = by_path[node.path]
        self_a, in_a = delta.a.self_ps, delta.in_a
    else:
        self_a, in_a = op_self_a_ps, True
    change = node.self_ps - self_a
    was = format_ps(self_a) if in_a else "absent in A"
    relative = relative_change(self_a, node.self_ps)
    tooltip = (
        f"{node.path or 'all ops'}\nself in B {format_ps(node.self_ps)}, in A {was}\n"
        f"change {signed_ps(change)}" + (f" ({change / self_a:+.1%})" if self_a else "")
    )
    return IcicleNode(
        node.name or "all ops",
        node.self_ps,
        diverging_hex(relative),
        tooltip,
        tuple(_delta_icicle(child, by_path, op_self_a_ps) for child in node.children),
    )


def to_markdown(diff: ProfileDiff, picture: str, top_n: int) -> str:
    parts = ["# tfpgo profile diff: A → B", ""]
    parts += [f"- **{key}**: {value}" for key, value in summary_rows(diff)]
    parts += ["", f"![op self time by scope, colored by change]({picture})", ""]
    for title, header, rows in all_tables(diff, top_n):
        parts += [f"## {title}", ""]
        parts += [markdown_table(header, rows) if rows else "none", ""]
    return "\n".join(parts)


def to_html(diff: ProfileDiff, svg: str, top_n: int) -> str:
    esc = html.escape
    summary = "".join(f"<li><b>{esc(k)}</b>: {esc(v)}</li>" for k, v in summary_rows(diff))
    parts = [
        "<!DOCTYPE html>",
        "<html><head><meta charset='utf-8'><title>tfpgo profile diff</title>",
        f"<style>{PAGE_STYLE}</style></head><body>",
        f"<h1>tfpgo profile diff: A → B</h1><ul>{summary}</ul>",
        f"<figure>{svg[svg.index('<svg') :]}</figure>",
    ]
    for title, header, rows in all_tables(diff, top_n):
        parts.append(f"<h2>{esc(title)}</h2>")
        parts.append(html_table(header, rows) if rows else "<p>none</p>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def write_outputs(diff: ProfileDiff, directory: Path, top_n: int = 20) -> tuple[Path, ...]:
    """Writes diff.md, diff.html (picture inline) and diff.svg into `directory`."""
    markdown, page, picture = (directory / name for name in OUTPUT_NAMES)
    svg = delta_svg(diff)
    with atomic_output_file(picture) as handle:
        handle.write(svg)
    with atomic_output_file(markdown) as handle:
        handle.write(to_markdown(diff, picture.name, top_n))
    with atomic_output_file(page) as handle:
        handle.write(to_html(diff, svg, top_n))
    return markdown, page, picture
