"""The analysis as report tables: phases, layers and op types, as (title,
header, rows) the report writes as Markdown or HTML. Presentation only."""

from __future__ import annotations

from tfpgo.analysis import Analysis
from tfpgo.analysis.phase import Phase
from tfpgo.analysis.scope import layers
from tfpgo.render.metrics import format_ps

Table = tuple[str, list[str], list[list[str]]]


def _share(part: int, whole: int) -> str:
    return f"{part / whole:.1%}" if whole else "–"


def phase_table(analysis: Analysis) -> Table:
    whole = analysis.totals.op_self_ps
    rows = [
        [
            row.phase.value,
            format_ps(row.self_ps),
            _share(row.self_ps, whole),
            str(row.count),
            str(row.ops),
        ]
        for row in analysis.phases.rows
    ]
    rows.append(["all ops", format_ps(whole), _share(whole, whole), "", ""])
    rows.append(["no op running (in the steps)", format_ps(analysis.phases.non_op_ps), "", "", ""])
    header = ["phase", "self", "share of op self time", "executions", "ops"]
    return "Time by phase", header, rows


def layer_table(analysis: Analysis, top_n: int) -> Table:
    whole = analysis.totals.op_self_ps
    rows = [
        [
            node.path,
            format_ps(node.self_ps),
            _share(node.self_ps, whole),
            *(
                format_ps(node.phase_self_ps[phase]) if node.phase_self_ps[phase] else "–"
                for phase in Phase
            ),
            str(node.ops),
        ]
        for node in layers(analysis.scopes)[:top_n]
    ]
    header = ["layer scope", "self", "share", *(phase.value for phase in Phase), "ops"]
    return "Time by layer (gradients folded onto their layer)", header, rows


def op_type_table(analysis: Analysis, top_n: int) -> Table:
    whole = analysis.totals.op_self_ps
    rows = [
        [
            row.op_type,
            ", ".join(kernel.kernel for kernel in row.kernels),
            format_ps(row.self_ps),
            _share(row.self_ps, whole),
            str(row.count),
            str(row.ops),
        ]
        for row in analysis.op_types[:top_n]
    ]
    header = ["op type", "kernels", "self", "share", "executions", "ops"]
    return "Time by op type", header, rows


def analysis_tables(analysis: Analysis, top_n: int) -> list[Table]:
    return [
        phase_table(analysis),
        layer_table(analysis, top_n),
        op_type_table(analysis, top_n),
    ]
