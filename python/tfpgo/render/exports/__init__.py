"""Files for the tools people already use: Model Explorer, Perfetto/chrome://tracing,
speedscope, CSV.

An export format is one module defining `EXPORT = ExportFormat(...)`
(`tfpgo.render.exports.format`) plus one line in `EXPORT_FORMATS` below;
plot_graph's `--export-<name>` flags and the flow's exports come from it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from tfpgo.render.exports import (
    csv_export,
    model_explorer,
    model_explorer_kernels,
    speedscope,
    trace_events,
)
from tfpgo.render.exports.format import ExportFormat, ExportInput

EXPORT_FORMATS: dict[str, ExportFormat] = {
    export.name: export
    for export in (
        model_explorer.EXPORT,
        model_explorer_kernels.EXPORT,
        trace_events.EXPORT,
        speedscope.EXPORT,
        csv_export.EXPORT,
    )
}


def write_exports(source: ExportInput, requested: Mapping[str, Path]) -> list[Path]:
    """Writes each requested export (format name -> path); returns the paths written."""
    for name in requested:
        if name not in EXPORT_FORMATS:
            raise ValueError(f"unknown export format {name!r}")  # a caller's bug, not input
    for name, path in requested.items():
        EXPORT_FORMATS[name].write(source, path)
    return list(requested.values())


__all__ = ["EXPORT_FORMATS", "ExportFormat", "ExportInput", "write_exports"]
