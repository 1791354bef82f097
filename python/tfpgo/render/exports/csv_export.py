"""CSV of the op profile: one row per op, hottest (self time) first, times in ps.

The rows come from the op profile when given, else from the graph: the op
graph's `profiler_data` per executed op, or the event DAG's events summed per
node name (percentiles nearest-rank, like op_profile.json).
"""

from __future__ import annotations

import csv
from collections import defaultdict
from dataclasses import astuple, dataclass, fields
from pathlib import Path

from tfpgo.atomic import atomic_output_file
from tfpgo.attribution.op_profile import OpProfile, nearest_rank
from tfpgo.render.exports.format import ExportFormat
from tfpgo.render.model import GraphKind, RenderGraph


@dataclass(frozen=True)
class OpRow:
    """One CSV line; `share` is self time over all ops' self time."""

    name: str
    op_types: str  # ';'-joined
    count: int
    self_ps: int
    total_ps: int
    mean_ps: int
    min_ps: int | None
    max_ps: int | None
    p50_ps: int | None
    p95_ps: int | None
    first_start_ps: int | None
    share: float


def _rows_from_op_profile(profile: OpProfile) -> list[OpRow]:
    all_self = sum(op.self_ps for op in profile.ops) or 1
    return [
        OpRow(
            name=op.name,
            op_types=";".join(op.op_types),
            count=op.count,
            self_ps=op.self_ps,
            total_ps=op.total_ps,
            mean_ps=op.mean_ps,
            min_ps=op.min_ps,
            max_ps=op.max_ps,
            p50_ps=op.p50_ps,
            p95_ps=op.p95_ps,
            first_start_ps=op.first_start_ps,
            share=op.self_ps / all_self,
        )
        for op in profile.ops
    ]


def _rows_from_graph(graph: RenderGraph) -> list[OpRow]:
    if graph.kind is GraphKind.OP_GRAPH:
        return [
            OpRow(
                node.name,
                node.op_type,
                t.count,
                t.self_ps,
                t.total_ps,
                t.mean_ps,
                t.min_ps,
                t.max_ps,
                t.p50_ps,
                t.p95_ps,
                t.first_start_ps,
                t.share,
            )
            for node in graph.nodes
            if (t := node.timing) is not None
        ]
    by_name = defaultdict(list)
    for node in graph.nodes:
        by_name[node.name].append(node)
    all_self = sum(node.timing.self_ps for node in graph.nodes if node.timing) or 1
    rows = []
    for name, members in by_name.items():
        timings = [member.timing for member in members if member.timing is not None]
        durations = sorted(timing.total_ps for timing in timings)
        self_ps = sum(timing.self_ps for timing in timings)
        starts = [t.first_start_ps for t in timings if t.first_start_ps is not None]
        rows.append(
            OpRow(
                name=name,
                op_types=";".join(sorted({m.op_type for m in members})),
                count=len(durations),
                self_ps=self_ps,
                total_ps=sum(durations),
                mean_ps=sum(durations) // len(durations),
                min_ps=durations[0],
                max_ps=durations[-1],
                p50_ps=nearest_rank(durations, 0.5),
                p95_ps=nearest_rank(durations, 0.95),
                first_start_ps=min(starts, default=None),
                share=self_ps / all_self,
            )
        )
    return rows


def op_profile_rows(source: OpProfile | RenderGraph) -> list[OpRow]:
    """Rows of an op profile, or of an op graph / event DAG, hottest first."""
    if isinstance(source, OpProfile):
        rows = _rows_from_op_profile(source)
    else:
        rows = _rows_from_graph(source)
    return sorted(rows, key=lambda row: (-row.self_ps, row.name))


def write_csv(source: OpProfile | RenderGraph, path: Path) -> None:
    rows = op_profile_rows(source)
    with atomic_output_file(path) as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow([column.name for column in fields(OpRow)])
        for row in rows:
            writer.writerow(
                [
                    "" if value is None else f"{value:.6g}" if isinstance(value, float) else value
                    for value in astuple(row)
                ]
            )


EXPORT = ExportFormat(
    "csv",
    "CSV of the op profile (rows from --op-profile when given, else from the graph)",
    lambda source, path: write_csv(source.op_profile or source.graph, path),
)
