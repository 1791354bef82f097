"""What an export format is: a name (`plot_graph --export-<name> PATH`), a
line of help, and a writer from a loaded graph (plus, when the caller has it,
the op profile) to one file. Formats register in `tfpgo.render.exports`."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tfpgo.attribution.op_profile import OpProfile
from tfpgo.documents import write_compact_json
from tfpgo.render import RenderOptions
from tfpgo.render.model import RenderGraph


@dataclass(frozen=True)
class ExportInput:
    """Everything an export may draw on, already in memory."""

    graph: RenderGraph
    options: RenderOptions
    op_profile: OpProfile | None = None  # the CSV's rows when given, else the graph's


@dataclass(frozen=True)
class ExportFormat:
    name: str  # the flag is --export-<name>
    help: str
    write: Callable[[ExportInput, Path], None]  # writes atomically; UserError on bad input


def graph_document_export(
    name: str, help: str, document: Callable[[RenderGraph, str], dict]
) -> ExportFormat:
    """An export that is one compact JSON document built from the graph and the
    graph's name. The name is the graph file as seen from the export: a sibling
    stays findable when the directory holding both moves (the flow builds its
    output in a staging directory)."""

    def write(source: ExportInput, path: Path) -> None:
        graph = source.graph
        write_compact_json(path, document(graph, os.path.relpath(graph.source, path.parent)))

    return ExportFormat(name, help, write)
