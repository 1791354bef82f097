"""speedscope file of the event DAG: a flame chart per thread at www.speedscope.app.

Format: https://www.speedscope.app/file-format-schema.json (`evented` profiles):
frames are shared (one per event name), and each profile is a sequence of
open (`O`) and close (`C`) events at times `at`, which must nest like a call
stack. One profile per trace line (host, plane, thread), times in nanoseconds
written as ps / 1000, so the text keeps every picosecond.

Events of one line that overlap without nesting (asynchronous activity) cannot
share one stack; such an event goes to the line's first lane where it nests,
and each extra lane is a profile of its own (`<line> (lane 2)`). No event is
clipped or dropped: every event's duration is in the file.
"""

from __future__ import annotations

from collections import defaultdict

from tfpgo.errors import UserError
from tfpgo.render.exports.format import graph_document_export
from tfpgo.render.model import GraphKind, RenderGraph, RenderNode

SCHEMA = "https://www.speedscope.app/file-format-schema.json"
Span = tuple[int, int, int]  # start ps, end ps, frame index


def _line(node: RenderNode) -> str:
    details = dict(node.details)
    place = " ".join(details[key] for key in ("host", "plane", "line") if key in details)
    return place or "events"


def _lanes(spans: list[Span]) -> list[list[Span]]:
    """Spans split into lanes in which every two spans nest or are disjoint."""
    lanes: list[list[Span]] = []
    stacks: list[list[int]] = []  # per lane: end times of the open spans
    for span in sorted(spans, key=lambda s: (s[0], -s[1], s[2])):
        start, end, _ = span
        chosen = len(lanes)
        for index, stack in enumerate(stacks):
            while stack and stack[-1] <= start:
                stack.pop()
            if not stack or end <= stack[-1]:
                chosen = index
                break
        if chosen == len(lanes):
            lanes.append([])
            stacks.append([])
        lanes[chosen].append(span)
        stacks[chosen].append(end)
    return lanes


def _ns(ps: int) -> float | int:
    return ps // 1000 if ps % 1000 == 0 else ps / 1000


def _events(lane: list[Span]) -> list[dict]:
    """Open/close events of nested spans, in time order, closes before opens at a tie."""
    events: list[dict] = []
    stack: list[Span] = []
    for span in lane:  # sorted by start, longer first
        while stack and stack[-1][1] <= span[0]:
            closed = stack.pop()
            events.append({"type": "C", "frame": closed[2], "at": _ns(closed[1])})
        events.append({"type": "O", "frame": span[2], "at": _ns(span[0])})
        stack.append(span)
    while stack:
        closed = stack.pop()
        events.append({"type": "C", "frame": closed[2], "at": _ns(closed[1])})
    return events


def speedscope_document(graph: RenderGraph, graph_name: str | None = None) -> dict:
    """The speedscope document of an event DAG (`graph_name` names it; default its path)."""
    if graph.kind is not GraphKind.EVENT_DAG:
        raise UserError(
            f"{graph.source}: a speedscope export needs the event DAG "
            "(mlir_graph.json); an op graph has no individual events"
        )
    frames: dict[str, int] = {}
    by_line: dict[str, list[Span]] = defaultdict(list)
    for node in graph.nodes:
        timing = node.timing
        assert timing is not None  # every DAG event is timed
        start = timing.first_start_ps or 0
        frame = frames.setdefault(node.name, len(frames))
        by_line[_line(node)].append((start, start + timing.total_ps, frame))
    profiles = []
    for line in sorted(by_line):
        for index, lane in enumerate(_lanes(by_line[line])):
            profiles.append(
                {
                    "type": "evented",
                    "name": line if index == 0 else f"{line} (lane {index + 1})",
                    "unit": "nanoseconds",
                    "startValue": _ns(lane[0][0]),
                    "endValue": _ns(max(end for _, end, _ in lane)),
                    "events": _events(lane),
                }
            )
    return {
        "$schema": SCHEMA,
        "name": graph_name or str(graph.source),
        "exporter": "tfpgo plot_graph",
        "activeProfileIndex": 0,
        "shared": {"frames": [{"name": name} for name in frames]},
        "profiles": profiles,
    }


EXPORT = graph_document_export(
    "speedscope",
    "speedscope flame chart JSON of the events, one profile per thread (event DAG only)",
    speedscope_document,
)
