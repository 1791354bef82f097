"""What an export format is: a name (`plot_graph --export-<name> PATH`), a
line of help, and a writer from a loaded graph (plus, when the caller has it,
the op profile) to one file. Formats register in `tfpgo.render.exports`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tfpgo.render import RenderOptions
from tfpgo.render.model import RenderGraph
from tfpgo.trace.op_profile import OpProfile


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
