"""Pictures and exports of profiled graphs (event DAG and op graph).

Stages, one module each: `loader` (JSON → RenderGraph) → `reduce` (hot marks,
scope collapse, top-N) → `fold` (ranks and columns of a deep drawing) →
`style`/`dot`/`layout` (DOT, SVG, PNG) and `graphml`;
`exports` writes the formats other tools read (Model Explorer, Perfetto, CSV).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tfpgo.cli import UserError, atomic_output_file
from tfpgo.render.dot import to_dot
from tfpgo.render.graphml import to_networkx, write_graphml
from tfpgo.render.layout import GRAPHVIZ_FORMATS, choose_engine, run_graphviz
from tfpgo.render.loader import load_graph
from tfpgo.render.metrics import Metric
from tfpgo.render.model import GraphKind, NodeState, RenderEdge, RenderGraph, RenderNode
from tfpgo.render.reduce import collapse_scopes, mark_hot, top_subgraph

PICTURE_FORMATS = ("svg", "png", "dot", "graphml")

__all__ = [
    "PICTURE_FORMATS",
    "GraphKind",
    "Metric",
    "NodeState",
    "RenderEdge",
    "RenderGraph",
    "RenderNode",
    "RenderOptions",
    "load_graph",
    "prepare",
    "to_dot",
    "to_networkx",
    "write_pictures",
]


@dataclass(frozen=True)
class RenderOptions:
    """What to draw: the metric, the hot rule, the reductions and the engine."""

    metric: Metric = Metric.SELF
    hot_k: int | None = None
    min_share: float | None = None
    depth: int | None = None  # collapse name scopes deeper than this
    top: int | None = None  # keep only the N hottest nodes
    engine: str = "auto"


def prepare(graph: RenderGraph, options: RenderOptions) -> RenderGraph:
    """Applies hot marking, then scope collapse, then the top-N cut."""
    graph = mark_hot(graph, options.metric, options.hot_k, options.min_share)
    if options.depth is not None:
        graph = collapse_scopes(graph, options.depth)
    if options.top is not None:
        graph = top_subgraph(graph, options.top, options.metric)
    return graph


def picture_format(path: Path) -> str:
    fmt = path.suffix.lower().lstrip(".")
    if fmt not in PICTURE_FORMATS:
        raise UserError(
            f"{path}: cannot tell the format from the extension; use one of "
            + ", ".join("." + known for known in PICTURE_FORMATS)
        )
    return fmt


def write_pictures(graph: RenderGraph, options: RenderOptions, paths: list[Path]) -> str:
    """Writes the prepared graph to every path (format from its extension).

    Returns the layout engine used. SVG and PNG share one Graphviz run.
    """
    formats = {path: picture_format(path) for path in paths}
    engine = choose_engine(len(graph.nodes), options.engine)
    source = to_dot(graph, options.metric, engine)
    laid_out = {fmt: path for path, fmt in formats.items() if fmt in GRAPHVIZ_FORMATS}
    if laid_out:
        run_graphviz(source, engine, laid_out)
    for path, fmt in formats.items():
        if fmt == "dot":
            with atomic_output_file(path) as handle:
                handle.write(source)
        elif fmt == "graphml":
            write_graphml(graph, options.metric, path)
    return engine
