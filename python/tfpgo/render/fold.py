"""Plans the ranks of a big layered drawing: folded into columns, re-ranked.

`dot` puts every op one rank below its producer, so a model that is mostly a
chain comes out as a strip (the 150 hottest ops of ResNet50 inference: a PNG
of 776 x 18,553 px), and a training step's gradient ops crowd onto one rank
(27,869 x 7,152 px). A plan fixes each node's rank and cuts the ranks into
columns set side by side, like newspaper columns (bands one under another
for the left-to-right event DAG); the DOT writer turns it into rank
constraints and one invisible cluster per column.

Two rankings are tried: dot's own, approximated (every op just above its
first consumer), and longest path from the sources (which spreads the sinks
of a training step over the depth of the backward pass). For each and for
every column count the picture's size is estimated; the plan is the one
whose larger side is smallest, if that beats dot's own drawing clearly.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

from tfpgo.render.model import GraphKind, RenderGraph
from tfpgo.render.reduce import topological_order

MIN_RANKS = 40  # shallower drawings are left to dot
ASPECT = 1.0  # height / width aimed at: about square, a screen shows it whole
GAIN = 0.8  # a plan must shrink the larger side of dot's own drawing this much


@dataclass(frozen=True)
class _Extents:
    """Drawn sizes in inches: `rank` along the flow per rank; across it, a
    column is `column` for one box per rank and `node` more per extra box."""

    rank: float
    column: float
    node: float


# Measured on dot's pictures: ResNet50's op graphs top to bottom (a rank is a
# labeled box of two or three lines, often inside a kernel cluster; a column
# is as wide as its widest rank's boxes and cluster labels); event DAGs left
# to right (a rank is a box's width, a band as tall as its boxes).
_EXTENTS = {
    GraphKind.OP_GRAPH: _Extents(rank=1.2, column=7.5, node=3.0),
    GraphKind.EVENT_DAG: _Extents(rank=2.1, column=1.6, node=0.6),
}


@dataclass(frozen=True)
class Fold:
    """Where each node goes: its column and its row (rank within the column)."""

    rows: int
    columns: int
    column: dict[int, int]
    row: dict[int, int]

    def crosses(self, source: int, target: int) -> bool:
        """True for an edge between two columns: it must not pull ranks."""
        return self.column[source] != self.column[target]


def _adjacency(graph: RenderGraph) -> tuple[dict[int, list[int]], dict[int, list[int]]]:
    successors: dict[int, list[int]] = {node.id: [] for node in graph.nodes}
    predecessors: dict[int, list[int]] = {node.id: [] for node in graph.nodes}
    for edge in graph.edges:
        successors[edge.source].append(edge.target)
        predecessors[edge.target].append(edge.source)
    return successors, predecessors


def rankings(graph: RenderGraph) -> list[dict[int, int]]:
    """dot's ranking (approximated) and the longest-path ranking; none for a
    graph with a cycle.

    dot's ranking keeps edges short: a constant, a variable read or the short
    chain computing a batch-norm factor sits just above the op that uses it,
    not on the top rank. So every op with consumers goes just above its first
    consumer, a sink just below its last producer, and a dead-end branch
    stays where it leaves the graph.
    """
    successors, predecessors = _adjacency(graph)
    order = topological_order(set(successors), list(graph.edges))
    if order is None:
        return []
    longest: dict[int, int] = {}
    for node_id in order:
        longest[node_id] = max((longest[p] + 1 for p in predecessors[node_id]), default=0)
    short: dict[int, int] = {}
    for node_id in reversed(order):
        if successors[node_id]:
            short[node_id] = min(short[s] for s in successors[node_id]) - 1
        else:
            short[node_id] = longest[node_id]
    for node_id in order:  # producers only moved down: sinks follow them
        if not successors[node_id] and predecessors[node_id]:
            short[node_id] = max(short[p] for p in predecessors[node_id]) + 1
    low = min(short.values(), default=0)
    return [{node_id: rank - low for node_id, rank in short.items()}, longest]


def _larger_side(
    rank_widths: list[int], columns: int, extents: _Extents, flows_down: bool
) -> float:
    """The larger side (inches, height over ASPECT) of the picture with the
    ranks cut into `columns` columns, each as wide as its widest rank."""
    rows = math.ceil(len(rank_widths) / columns)
    along = rows * extents.rank
    across = sum(
        extents.column + extents.node * (max(rank_widths[start : start + rows]) - 1)
        for start in range(0, len(rank_widths), rows)
    )
    height, width = (along, across) if flows_down else (across, along)
    return max(height / ASPECT, width)


def plan_fold(graph: RenderGraph, flows_down: bool) -> Fold | None:
    """The plan with the smallest picture, None where dot's own drawing is as
    good (or the drawing is shallower than MIN_RANKS); `flows_down` is the
    drawing's direction (rankdir TB, else LR)."""
    extents = _EXTENTS[graph.kind]
    candidates = []
    for ranking in rankings(graph):
        depth = max(ranking.values(), default=-1) + 1
        if depth < MIN_RANKS:
            return None
        per_rank = Counter(ranking.values())
        rank_widths = [per_rank[rank] for rank in range(depth)]
        for columns in range(1, depth // (MIN_RANKS // 2) + 1):
            side = _larger_side(rank_widths, columns, extents, flows_down)
            candidates.append((side, columns, ranking))
    if not candidates:
        return None
    dot_own = candidates[0][0]  # dot's ranking, one column
    side, columns, ranking = min(candidates, key=lambda candidate: candidate[0])
    if side > GAIN * dot_own:
        return None
    depth = max(ranking.values()) + 1
    rows = math.ceil(depth / columns)
    return Fold(
        rows=rows,
        columns=math.ceil(depth / rows),
        column={node_id: rank // rows for node_id, rank in ranking.items()},
        row={node_id: rank % rows for node_id, rank in ranking.items()},
    )
