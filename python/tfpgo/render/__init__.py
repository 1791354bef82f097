"""Pictures and exports of profiled graphs (event DAG and op graph).

Stages, one module each: `loader` (JSON → RenderGraph) → `reduce` (hot marks,
scope collapse, top-N) → `fold` (ranks and columns of a deep drawing) →
`style`/`dot`/`layout` (DOT, SVG, PNG) and `graphml`;
`exports` writes the formats other tools read (Model Explorer, Perfetto, CSV).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tfpgo.atomic import atomic_output_file
from tfpgo.errors import UserError
from tfpgo.render.dot import to_dot
from tfpgo.render.graphml import to_networkx, write_graphml
from tfpgo.render.layout import choose_engine, run_graphviz
from tfpgo.render.loader import load_graph
from tfpgo.render.metrics import Metric
from tfpgo.render.model import GraphKind, NodeState, RenderEdge, RenderGraph, RenderNode
from tfpgo.render.reduce import collapse_scopes, mark_hot, top_subgraph


@dataclass(frozen=True)
class PictureFormat:
    """A picture file format. `write` is None for formats Graphviz renders from
    its layout (all of them in one Graphviz run); otherwise it writes the file
    from the prepared graph and its DOT source, atomically."""

    name: str  # also the file extension
    write: Callable[[RenderGraph, RenderOptions, str, Path], None] | None = None


def _write_dot(graph: RenderGraph, options: RenderOptions, source: str, path: Path) -> None:
    with atomic_output_file(path) as handle:
        handle.write(source)


def _write_graphml(graph: RenderGraph, options: RenderOptions, source: str, path: Path) -> None:
    write_graphml(graph, options.metric, path)


# A new picture format is one line here (and, unless Graphviz renders it, a writer).
PICTURE_FORMATS: dict[str, PictureFormat] = {
    picture.name: picture
    for picture in (
        PictureFormat("svg"),
        PictureFormat("png"),
        PictureFormat("dot", _write_dot),
        PictureFormat("graphml", _write_graphml),
    )
}

__all__ = [
    "PICTURE_FORMATS",
    "GraphKind",
    "Metric",
    "NodeState",
    "PictureFormat",
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
    hot_share: float | None = None
    depth: int | None = None  # collapse name scopes deeper than this
    top: int | None = None  # keep only the N hottest nodes
    engine: str = "auto"


def prepare(graph: RenderGraph, options: RenderOptions) -> RenderGraph:
    """Applies hot marking, then scope collapse, then the top-N cut."""
    graph = mark_hot(graph, options.metric, options.hot_k, options.hot_share)
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
    laid_out = {fmt: path for path, fmt in formats.items() if PICTURE_FORMATS[fmt].write is None}
    if laid_out:
        run_graphviz(source, engine, laid_out)
    for path, fmt in formats.items():
        write = PICTURE_FORMATS[fmt].write
        if write is not None:
            write(graph, options, source, path)
    return engine
