"""report.md and report.html: what ran, where the time went, how much of it the
MLIR carries, and the pictures.

Presentation only: every number comes from records other stages produced (the
op profile, the annotated op graph, the attribution of the annotate pass, and
for XLA-compiled steps the HLO profile: its modules, top fusions and the tf ops
each covers, and the XLA-inserted instructions). A trace with device time gets a
device section (`tfpgo.report.device_tables`), its breakdowns over device time,
and its op tables ranked by device time.
"""

from __future__ import annotations

import html
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from tfpgo.analysis import Analysis
from tfpgo.atomic import atomic_output_file
from tfpgo.attribution.hlo_profile import HloProfile
from tfpgo.attribution.op_profile import OpProfile
from tfpgo.iree.profile_document import IreeProfile
from tfpgo.mlir.annotate import Attribution, UnresolvedEntry, xla_annotated_ps
from tfpgo.mlir.lowering import LevelCoverage
from tfpgo.render import RenderGraph, RenderNode
from tfpgo.render.metrics import format_ps
from tfpgo.render.model import NodeTiming
from tfpgo.render.tables import PAGE_STYLE, figure, html_table, markdown_table
from tfpgo.report.analysis_tables import analysis_tables
from tfpgo.report.anchor_tables import ANCHOR_TITLE, AnchorComparison, anchor_section
from tfpgo.report.device_tables import device_summary, device_tables
from tfpgo.report.iree_tables import (
    IREE_HEADER,
    SCOPE_HEADER,
    iree_rows,
    iree_summary,
    scope_rows,
)
from tfpgo.report.rewrite_tables import (
    GRADIENT_HEADER,
    GRADIENT_TITLE,
    LOOP_HEADER,
    LOOP_TITLE,
    gradient_rows,
    loop_rows,
)
from tfpgo.report.run_it import (
    PARAMETER_HEADER,
    RUN_IT_TITLE,
    iree_command,
    parameter_rows,
    python_snippet,
    run_it_text,
)
from tfpgo.report.tune_tables import (
    DECISION_HEADER,
    HELD_BACK_HEADER,
    HELD_BACK_TITLE,
    OP_HEADER,
    TRIAL_HEADER,
    TUNE_TITLE,
    decision_rows,
    held_back_rows,
    limit_text,
    op_rows,
    stale_text,
    trial_rows,
    tune_summary,
)
from tfpgo.runtime.manifest import ProgramManifest
from tfpgo.tune.document import TuneDocument

if TYPE_CHECKING:
    from tfpgo.proposer.optimize import OptimizeResult


@dataclass(frozen=True)
class RunInfo:
    """What was profiled (None fields: the flow started from an existing trace)."""

    model: str
    mode: str | None
    batch_size: int | None
    steps: int | None
    warmup: int | None
    step_wall_ns: tuple[int, ...]
    trace_source: str
    module: str


@dataclass(frozen=True)
class ReportInputs:
    run: RunInfo
    profile: OpProfile
    op_graph: RenderGraph
    attribution: Attribution
    pictures: tuple[tuple[str, str], ...]  # (caption, file name relative to the report)
    files: tuple[tuple[str, str], ...]  # (file name, what it is)
    top_n: int = 15
    levels: tuple[LevelCoverage, ...] = ()  # the profile at lower levels, if lowered
    analysis: Analysis | None = None  # phase, layer and op type breakdowns
    analysis_chart: str | None = None  # icicle chart of time by scope (file name)
    hlo: HloProfile | None = None  # XLA-compiled steps only
    optimize: OptimizeResult | None = None  # --optimize: measured proposals
    iree: IreeProfile | None = None  # --lower iree: the compiled program's dispatches
    tune: TuneDocument | None = None  # --tune: what was tried, measured and kept
    program: ProgramManifest | None = None  # --lower iree: how to run the program
    anchors: AnchorComparison | None = None  # --tune: the program against the anchors' layers
    output_dir: Path = Path(".")  # where the output lands (the snippets name it)


def _loop_sections(inputs: ReportInputs) -> list[tuple[str, list[str], list[list[str]]]]:
    """The loop and filter gradient tables (tfpgo.report.rewrite_tables) where the
    lowering met them, and the loops the lowered levels still hold with their
    measured trip counts."""
    sections = []
    decisions = next((level.route.loops for level in inputs.levels if level.route.loops), ())
    measured = [loop for level in inputs.levels for loop in level.loops]
    steps = inputs.run.steps or 1
    if decisions:
        rows = loop_rows(decisions, measured, inputs.profile, steps, inputs.iree)
        sections.append((LOOP_TITLE, LOOP_HEADER, rows))
    routes = [level.route for level in inputs.levels]
    forms = next((route.gradient_forms for route in routes if route.gradient_forms), ())
    if forms:
        rows = gradient_rows(forms, inputs.profile, steps, inputs.iree)
        sections.append((GRADIENT_TITLE, GRADIENT_HEADER, rows))
    kept = [
        [level.level, loop.name, loop.op, f"{loop.trip_count:g}"]
        for level in inputs.levels
        for loop in level.loops
    ]
    if kept:
        header = ["level", "loop (tf node)", "op", "trip count"]
        sections.append(("Loops and their measured trip counts", header, kept))
    return sections


def _hottest_ops(graph: RenderGraph, count: int) -> list[tuple[RenderNode, NodeTiming]]:
    """The `count` ops with the most self time, each with its (present) timing."""
    timed = [(node, node.timing) for node in graph.nodes if node.timing is not None]
    return sorted(timed, key=lambda pair: -pair[1].self_ps)[:count]


def _op_self_time(profile: OpProfile) -> str:
    text = format_ps(profile.totals.op_self_ps)
    if profile.totals.hlo_attributed_ps:
        text += f" (of it {format_ps(profile.totals.hlo_attributed_ps)} HLO instruction time)"
    return text


def _summary_rows(inputs: ReportInputs) -> list[tuple[str, str]]:
    run, profile, attribution = inputs.run, inputs.profile, inputs.attribution
    rows = [("model", run.model)]
    if run.mode is not None:
        rows.append(("mode", f"{run.mode}, batch {run.batch_size}"))
        rows.append(("steps", f"{run.steps} profiled after {run.warmup} warmup"))
    if run.step_wall_ns:
        median = statistics.median(run.step_wall_ns)  # an even count: the middle two's mean
        rows.append(("step time", f"median {format_ps(median * 1000)} (wall, host)"))
    elif profile.step_wall_ps:  # an existing trace: its step markers
        median = statistics.median(profile.step_wall_ps)
        rows.append(("step time", f"median {format_ps(median)} (the trace's step markers)"))
    rows += [("trace", run.trace_source), ("module", run.module)]
    if profile.has_device:
        rows.append(("device time", device_summary(profile)))
    time = "device time" if attribution.profile_device_ps else "TF op self time"
    rows += [
        ("TF op self time", _op_self_time(profile)),
        ("time on no TF op", format_ps(profile.totals.non_op_ps)),
        (
            "attribution",
            f"{attribution.coverage:.2%} of {time} on module ops "
            f"({attribution.annotated_ops} ops annotated, {attribution.fused_ops} fused, "
            f"{len(attribution.merged)} runtime names merged, {len(attribution.removed)} removed "
            f"by the IR pipeline, {len(attribution.unresolved)} of "
            f"{attribution.profile_entries} unresolved)",
        ),
    ]
    reads = [op for op in profile.ops if "ReadVariableOp" in op.op_types]
    if reads:
        rows.append(
            (
                "variable reads",
                f"{format_ps(sum(op.self_ps for op in reads))} self in {len(reads)} "
                "ReadVariableOp ops (Model Explorer hides its ReadVariableOp nodes by default: "
                "show them there to see this time)",
            )
        )
    if attribution.xla_launch_self_ps:
        rows.append(
            (
                "XLA launch ops",
                f"{format_ps(attribution.xla_launch_self_ps)} self in auto-clustering's "
                "_XlaCompile/_XlaRun/_XlaMerge: not in the MLIR by construction, "
                "left out of the attribution share",
            )
        )
    return rows


def _op_rows(inputs: ReportInputs) -> list[list[str]]:
    rows = []
    for node, timing in _hottest_ops(inputs.op_graph, inputs.top_n):
        rows.append(
            [
                str(node.hot_rank) if node.hot_rank else "",
                node.name,
                node.op_type,
                format_ps(timing.self_ps),
                format_ps(timing.total_ps),
                f"{timing.share:.1%}",
                str(timing.count),
            ]
        )
    return rows


def _runtime_rows(inputs: ReportInputs) -> list[list[str]]:
    """The op profile's top entries (it ranks device time first where there is any)."""
    profile, device = inputs.profile, inputs.profile.has_device
    whole = (profile.totals.device_attributed_ps if device else profile.totals.op_self_ps) or 1
    rows = []
    for stats in profile.ops[: inputs.top_n]:
        ps, count = (
            (stats.device_self_ps, stats.device_count) if device else (stats.self_ps, stats.count)
        )
        row = [
            stats.name,
            ", ".join(stats.op_types),
            format_ps(ps),
            f"{ps / whole:.1%}",
            str(count),
        ]
        rows.append([*row, format_ps(stats.self_ps)] if device else row)
    return rows


def _runtime_header(inputs: ReportInputs) -> list[str]:
    if inputs.profile.has_device:
        return ["runtime name", "type", "device self", "share", "kernels", "host self"]
    return _RUNTIME_HEADER


def _op_header(inputs: ReportInputs) -> list[str]:
    """The hottest-ops header: the op graph's timings are device time on a GPU."""
    if inputs.op_graph.device:
        return ["hot", "node", "op", "device self", "device total", "share", "kernels"]
    return _OP_HEADER


def _device_parts(inputs: ReportInputs, markdown: bool) -> list[str]:
    """The device section (empty without device time)."""
    profile = inputs.profile
    if not profile.has_device:
        return []
    tables = device_tables(profile, inputs.top_n)
    if markdown:
        parts = ["", "## Device time", "", device_summary(profile)]
        for title, header, rows in tables:
            parts += ["", f"### {title}", "", markdown_table(header, rows)]
        return parts
    parts = ["<h2>Device time</h2>", f"<p>{html.escape(device_summary(profile))}</p>"]
    for title, header, rows in tables:
        parts += [f"<h3>{html.escape(title)}</h3>", html_table(header, rows)]
    return parts


def _entry_time(inputs: ReportInputs, entry: UnresolvedEntry) -> str:
    """An unresolved entry's time: device time on a GPU trace, else its host self."""
    if inputs.profile.has_device:
        return f"{format_ps(entry.device_ps)} device, {format_ps(entry.self_ps)} host self"
    return f"{format_ps(entry.self_ps)} self"


def _analyses(inputs: ReportInputs) -> list[tuple[str, Analysis]]:
    """(heading, analysis) to show: device time first where there is any, host op time
    only where some was measured."""
    analysis = inputs.analysis
    if analysis is None:
        return []
    if analysis.device is None:
        return [("Where the time goes", analysis)]
    found = [("Where the device time goes", analysis.device)]
    if analysis.totals.op_self_ps:
        found.append(("Where the host op time goes", analysis))
    return found


def _sections(inputs: ReportInputs) -> list[tuple[str, list[str], list[list[str]]]]:
    """Tables shown only when they have rows: (title, header, rows)."""
    attribution, top = inputs.attribution, inputs.top_n
    sections = []
    if inputs.levels:
        rows = [
            [
                "tf",
                inputs.run.module,
                "",
                str(attribution.annotated_ops),
                str(attribution.annotated_ops),
                f"{attribution.coverage:.2%}",
                "profiled",
            ]
        ]
        rows += [
            [
                level.level,
                level.module,
                str(level.ops),
                str(level.annotated_ops),
                str(level.sources),
                f"{level.coverage:.2%}",
                level.route.text(),
            ]
            for level in inputs.levels
        ]
        header = ["level", "module", "ops", "annotated", "sources", "op time reachable", "route"]
        sections.append(("The profile at lower levels", header, rows))
        lost = [
            [level.level, source.name, format_ps(source.self_ps), source.reason]
            for level in inputs.levels
            for source in level.lost[:top]
        ]
        if lost:
            header = ["level", "tf op", "self", "why"]
            sections.append(("Profiled ops no lowered op carries", header, lost))
        sections += _loop_sections(inputs)
    if attribution.merged:
        rows = [
            [entry.name, ", ".join(entry.ops), f"by {entry.merged_by}", format_ps(entry.self_ps)]
            for entry in attribution.merged[:top]
        ]
        header = ["runtime name", "merged into", "found", "self"]
        sections.append(("Runtime names the IR pipeline merged", header, rows))
    if attribution.removed:
        rows = [
            [entry.name, entry.reason, format_ps(entry.self_ps)]
            for entry in attribution.removed[:top]
        ]
        sections.append(
            ("Runtime names the IR pipeline removed", ["runtime name", "why", "self"], rows)
        )
    return sections


# A fusion row names this many of the tf ops it covers, then "+k more".
_COVERED_SHOWN = 6


def _xla_summary(inputs: ReportInputs, hlo: HloProfile) -> str:
    if not hlo.hlo_ps and hlo.device_ps:  # XLA on a GPU: the instructions ran as kernels
        return (
            f"{len(hlo.modules)} XLA modules, {format_ps(hlo.device_ps)} of device time in "
            f"their instructions' kernels: {hlo.device_attributed_ps / hlo.device_ps:.2%} "
            "split onto the ops XLA's metadata names (a fusion in equal parts per op it "
            "covers); command-buffer kernels under the instruction each was resolved to."
        )

    def share(ps: int) -> str:
        return f"{ps / hlo.hlo_ps:.2%}" if hlo.hlo_ps else "100%"

    annotated = xla_annotated_ps(inputs.profile, inputs.attribution)
    inferred = sum(i.total_ps for m in hlo.modules for i in m.instructions if i.inferred_by)
    return (
        f"{len(hlo.modules)} XLA modules, {format_ps(hlo.hlo_ps)} of HLO instruction time: "
        f"{share(hlo.attributed_ps)} split onto tf nodes (a fusion in equal parts per "
        f"node it covers; {share(inferred)} through the nearest named neighbour of an "
        f"instruction without op_name), {share(annotated)} annotated onto tf ops of the "
        f"module, {format_ps(hlo.xla_inserted_ps)} in XLA-inserted instructions."
    )


def _xla_tables(inputs: ReportInputs) -> list[tuple[str, list[str], list[list[str]]]]:
    """(title, header, rows) of the XLA section: modules, top fusions, XLA-inserted."""
    hlo = inputs.hlo
    if hlo is None:
        return []
    on_device = not hlo.hlo_ps and hlo.device_ps > 0  # the instructions ran as kernels
    modules = [
        [
            m.name,
            ", ".join(c or "(the step)" for c in m.calls),
            str(sum(i.device_count for i in m.instructions) if on_device else m.events),
            format_ps(sum(i.device_ps for i in m.instructions) if on_device else m.total_ps),
        ]
        for m in hlo.modules
    ]
    fusions = []
    for module, fusion in hlo.fusions()[: inputs.top_n]:
        names = [node.name for node in fusion.nodes]
        covered = ", ".join(names[:_COVERED_SHOWN])
        if len(names) > _COVERED_SHOWN:
            covered += f", +{len(names) - _COVERED_SHOWN} more"
        time, count = (
            (fusion.device_ps, fusion.device_count)
            if on_device
            else (fusion.total_ps, fusion.count)
        )
        fusions.append([fusion.name, module, format_ps(time), str(count), covered])
    inserted = [
        [e.instruction, e.opcode, e.module, format_ps(e.total_ps), str(e.count), e.reason]
        for e in inputs.profile.xla_inserted[: inputs.top_n]
    ]
    inferred = sorted(
        (
            (i.device_ps if on_device else i.total_ps, module.name, i)
            for module in hlo.modules
            for i in module.instructions
            if i.inferred_by
        ),
        key=lambda found: (-found[0], found[1], found[2].name),
    )
    named_by_neighbour = [
        [
            i.name,
            i.opcode,
            module,
            format_ps(ps),
            i.inferred_by.replace("_", " "),
            " → ".join(i.inferred_from),
            ", ".join(node.name for node in i.nodes[:_COVERED_SHOWN]),
        ]
        for ps, module, i in inferred[: inputs.top_n]
    ]
    return [
        (
            "XLA modules",
            ["module", "called as", "kernels" if on_device else "HLO events", "time"],
            modules,
        ),
        ("Top XLA fusions", ["fusion", "module", "time", "count", "tf ops covered"], fusions),
        (
            "XLA instructions named by their neighbours (no op_name of their own)",
            ["instruction", "opcode", "module", "time", "named by", "chain", "tf ops"],
            named_by_neighbour,
        ),
        (
            "XLA-inserted instructions (no tf op, no named neighbour)",
            ["instruction", "opcode", "module", "time", "count", "why"],
            inserted,
        ),
    ]


IREE_TITLE = "TensorFlow kernels vs IREE dispatches"
_OP_HEADER = ["hot", "node", "op", "self", "total", "share", "count"]
_RUNTIME_HEADER = ["runtime name", "kernel", "self", "share", "count"]


def to_markdown(inputs: ReportInputs) -> str:
    parts = [f"# tfpgo report: {inputs.run.model}", ""]
    parts += [f"- **{key}**: {value}" for key, value in _summary_rows(inputs)]
    parts += _analysis_markdown(inputs)
    parts += _device_parts(inputs, markdown=True)
    parts += _optimize_markdown(inputs)
    parts += ["", "## Hottest MLIR ops", "", markdown_table(_op_header(inputs), _op_rows(inputs))]
    parts += ["", "## Hottest runtime ops (op profile)", ""]
    parts += [markdown_table(_runtime_header(inputs), _runtime_rows(inputs))]
    for title, header, rows in _sections(inputs):
        parts += ["", f"## {title}", "", markdown_table(header, rows)]
    if inputs.hlo is not None:
        parts += ["", "## XLA", "", _xla_summary(inputs, inputs.hlo)]
        for title, header, rows in _xla_tables(inputs):
            parts += ["", f"### {title}", "", markdown_table(header, rows)]
    if inputs.iree is not None:
        steps, op_self = inputs.run.steps or 1, inputs.profile.totals.op_self_ps
        parts += ["", f"## {IREE_TITLE}", "", iree_summary(inputs.iree, steps, op_self), ""]
        parts += [markdown_table(IREE_HEADER, iree_rows(inputs.iree, steps, inputs.top_n))]
        parts += ["", "### By layer scope", ""]
        parts += [markdown_table(SCOPE_HEADER, scope_rows(inputs.iree, steps, inputs.top_n))]
    if inputs.tune is not None:
        parts += ["", f"## {TUNE_TITLE}", "", tune_summary(inputs.tune), ""]
        for line in (limit_text(inputs.tune), stale_text(inputs.tune)):
            parts += [line, ""] if line else []
        parts += [markdown_table(TRIAL_HEADER, trial_rows(inputs.tune))]
        if inputs.tune.decisions:
            parts += ["", "### What changed where", ""]
            parts += [markdown_table(DECISION_HEADER, decision_rows(inputs.tune))]
        ops = op_rows(inputs.tune, inputs.run.steps or 1, inputs.top_n)
        if ops:
            parts += ["", "### TensorFlow ops the kept changes sped up", ""]
            parts += [markdown_table(OP_HEADER, ops)]
        if inputs.tune.held_back:
            parts += ["", f"### {HELD_BACK_TITLE}", ""]
            parts += [markdown_table(HELD_BACK_HEADER, held_back_rows(inputs.tune))]
    if inputs.anchors is not None:
        summary, header, rows = anchor_section(inputs.anchors)
        parts += ["", f"## {ANCHOR_TITLE}", "", summary, ""]
        parts += [markdown_table(header, rows)] if rows else []
    if inputs.program is not None:
        program, out = inputs.program, inputs.output_dir
        parts += ["", f"## {RUN_IT_TITLE}", "", run_it_text(program, out), ""]
        parts += ["```python", python_snippet(program, out), "```", ""]
        parts += [f"IREE's own tool, from `{out}`:", "", "```sh", iree_command(program), "```"]
        parts += ["", markdown_table(PARAMETER_HEADER, parameter_rows(program))]
    if inputs.attribution.unresolved:
        parts += ["", "## Unresolved runtime names", ""]
        parts += [
            f"- `{entry.name}` ({_entry_time(inputs, entry)}): {entry.reason}"
            for entry in inputs.attribution.unresolved[: inputs.top_n]
        ]
    parts += ["", "## Pictures", ""]
    parts += [f"![{caption}]({name})" for caption, name in inputs.pictures]
    parts += ["", "## Files", ""]
    parts += [f"- `{name}`: {what}" for name, what in inputs.files]
    return "\n".join(parts) + "\n"


def _analysis_markdown(inputs: ReportInputs) -> list[str]:
    parts = []
    for at, (heading, analysis) in enumerate(_analyses(inputs)):
        parts += ["", f"## {heading}", ""]
        if inputs.analysis_chart and at == 0:  # the chart draws the first
            parts += [f"![time by layer scope]({inputs.analysis_chart})", ""]
        for title, header, rows in analysis_tables(analysis, inputs.top_n):
            parts += [f"### {title}", "", markdown_table(header, rows), ""]
        parts.pop()
    return parts


def _analysis_html(inputs: ReportInputs, svgs: dict[str, str]) -> list[str]:
    parts = []
    for at, (heading, analysis) in enumerate(_analyses(inputs)):
        parts.append(f"<h2>{html.escape(heading)}</h2>")
        if inputs.analysis_chart and at == 0:
            chart = inputs.analysis_chart
            parts.append(figure("time by layer scope", chart, svgs.get(chart)))
        for title, header, rows in analysis_tables(analysis, inputs.top_n):
            parts += [f"<h3>{html.escape(title)}</h3>", html_table(header, rows)]
    return parts


def _optimize_markdown(inputs: ReportInputs) -> list[str]:
    if inputs.optimize is None:
        return []
    from tfpgo.report.optimize_tables import method_text, no_proposal_text, optimize_tables

    result = inputs.optimize
    parts = ["", "## Proposals, measured", "", method_text(result)]
    empty = no_proposal_text(result)
    if empty:
        return [*parts, "", empty]
    for title, header, rows in optimize_tables(result):
        parts += ["", f"### {title}", "", markdown_table(header, rows)]
    if result.diff_files:
        parts += ["", "Diff: " + ", ".join(f"[{name}]({name})" for name in result.diff_files)]
    return parts


def _optimize_html(inputs: ReportInputs) -> list[str]:
    if inputs.optimize is None:
        return []
    from tfpgo.report.optimize_tables import method_text, no_proposal_text, optimize_tables

    esc = html.escape
    result = inputs.optimize
    parts = ["<h2>Proposals, measured</h2>", f"<p>{esc(method_text(result))}</p>"]
    empty = no_proposal_text(result)
    if empty:
        return [*parts, f"<p>{esc(empty)}</p>"]
    for title, header, rows in optimize_tables(result):
        parts += [f"<h3>{esc(title)}</h3>", html_table(header, rows)]
    if result.diff_files:
        links = ", ".join(f"<a href='{esc(name)}'>{esc(name)}</a>" for name in result.diff_files)
        parts.append(f"<p>Diff: {links}</p>")
    return parts


def to_html(inputs: ReportInputs, svgs: dict[str, str] | None = None) -> str:
    """The HTML report; SVG pictures given in `svgs` (name -> file text) are
    embedded, so their tooltips work on hover and the page stands alone."""
    esc = html.escape
    svgs = svgs or {}
    summary = "".join(
        f"<li><b>{esc(key)}</b>: {esc(value)}</li>" for key, value in _summary_rows(inputs)
    )
    parts = [
        "<!DOCTYPE html>",
        f"<html><head><meta charset='utf-8'><title>tfpgo report: {esc(inputs.run.model)}</title>",
        f"<style>{PAGE_STYLE}</style></head><body>",
        f"<h1>tfpgo report: {esc(inputs.run.model)}</h1><ul>{summary}</ul>",
        *_analysis_html(inputs, svgs),
        *_device_parts(inputs, markdown=False),
        *_optimize_html(inputs),
        "<h2>Hottest MLIR ops</h2>",
        html_table(_op_header(inputs), _op_rows(inputs)),
        "<h2>Hottest runtime ops (op profile)</h2>",
        html_table(_runtime_header(inputs), _runtime_rows(inputs)),
    ]
    for title, header, rows in _sections(inputs):
        parts += [f"<h2>{esc(title)}</h2>", html_table(header, rows)]
    if inputs.hlo is not None:
        parts.append(f"<h2>XLA</h2><p>{esc(_xla_summary(inputs, inputs.hlo))}</p>")
        for title, header, rows in _xla_tables(inputs):
            parts += [f"<h3>{esc(title)}</h3>", html_table(header, rows)]
    if inputs.iree is not None:
        steps, op_self = inputs.run.steps or 1, inputs.profile.totals.op_self_ps
        parts.append(f"<h2>{IREE_TITLE}</h2>")
        parts.append(f"<p>{esc(iree_summary(inputs.iree, steps, op_self))}</p>")
        parts.append(html_table(IREE_HEADER, iree_rows(inputs.iree, steps, inputs.top_n)))
        parts.append("<h3>By layer scope</h3>")
        parts.append(html_table(SCOPE_HEADER, scope_rows(inputs.iree, steps, inputs.top_n)))
    if inputs.tune is not None:
        parts.append(f"<h2>{esc(TUNE_TITLE)}</h2><p>{esc(tune_summary(inputs.tune))}</p>")
        for line in (limit_text(inputs.tune), stale_text(inputs.tune)):
            parts += [f"<p>{esc(line)}</p>"] if line else []
        parts.append(html_table(TRIAL_HEADER, trial_rows(inputs.tune)))
        if inputs.tune.decisions:
            parts.append("<h3>What changed where</h3>")
            parts.append(html_table(DECISION_HEADER, decision_rows(inputs.tune)))
        ops = op_rows(inputs.tune, inputs.run.steps or 1, inputs.top_n)
        if ops:
            parts.append("<h3>TensorFlow ops the kept changes sped up</h3>")
            parts.append(html_table(OP_HEADER, ops))
        if inputs.tune.held_back:
            parts.append(f"<h3>{esc(HELD_BACK_TITLE)}</h3>")
            parts.append(html_table(HELD_BACK_HEADER, held_back_rows(inputs.tune)))
    if inputs.anchors is not None:
        summary, header, rows = anchor_section(inputs.anchors)
        parts.append(f"<h2>{esc(ANCHOR_TITLE)}</h2><p>{esc(summary)}</p>")
        parts += [html_table(header, rows)] if rows else []
    if inputs.program is not None:
        program, out = inputs.program, inputs.output_dir
        parts.append(f"<h2>{RUN_IT_TITLE}</h2><p>{esc(run_it_text(program, out))}</p>")
        parts.append(f"<pre><code>{esc(python_snippet(program, out))}</code></pre>")
        parts.append(f"<p>IREE's own tool, from <code>{esc(str(out))}</code>:</p>")
        parts.append(f"<pre><code>{esc(iree_command(program))}</code></pre>")
        parts.append(html_table(PARAMETER_HEADER, parameter_rows(program)))
    if inputs.attribution.unresolved:
        items = "".join(
            f"<li><code>{esc(entry.name)}</code> ({esc(_entry_time(inputs, entry))}): "
            f"{esc(entry.reason)}</li>"
            for entry in inputs.attribution.unresolved[: inputs.top_n]
        )
        parts.append(f"<h2>Unresolved runtime names</h2><ul>{items}</ul>")
    parts.append("<h2>Pictures</h2>")
    parts += [figure(caption, name, svgs.get(name)) for caption, name in inputs.pictures]
    files = "".join(
        f"<li><a href='{esc(name)}'><code>{esc(name)}</code></a>: {esc(what)}</li>"
        for name, what in inputs.files
    )
    parts.append(f"<h2>Files</h2><ul>{files}</ul></body></html>")
    return "\n".join(parts) + "\n"


def write_reports(inputs: ReportInputs, directory: Path) -> tuple[Path, Path]:
    """Writes report.md and report.html into `directory`."""
    markdown, page = directory / "report.md", directory / "report.html"
    with atomic_output_file(markdown) as handle:
        handle.write(to_markdown(inputs))
    names = [name for _, name in inputs.pictures] + [inputs.analysis_chart or ""]
    svgs = {
        name: (directory / name).read_text()
        for name in names
        if name.endswith(".svg") and (directory / name).is_file()
    }
    with atomic_output_file(page) as handle:
        handle.write(to_html(inputs, svgs))
    return markdown, page
