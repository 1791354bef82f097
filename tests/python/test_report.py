"""report.md / report.html summary rows (tfpgo.report.compose)."""

from __future__ import annotations

import dataclasses
import html
from pathlib import Path

import pytest
from render_fixtures import MLP_OP_GRAPH, MLP_OP_PROFILE

from tfpgo.attribution.op_profile import OpProfile
from tfpgo.mlir.annotate import Attribution
from tfpgo.render import load_graph
from tfpgo.report import compose


def _inputs(step_wall_ns: tuple[int, ...]) -> compose.ReportInputs:
    profile = OpProfile.read(MLP_OP_PROFILE)
    run = compose.RunInfo(
        model="mlp",
        mode="infer",
        batch_size=2,
        steps=len(step_wall_ns),
        warmup=1,
        step_wall_ns=step_wall_ns,
        trace_source="profile",
        module="model.mlir",
    )
    total = profile.totals.op_self_ps
    attribution = Attribution(1, 0, 1, total, total, ())
    return compose.ReportInputs(run, profile, load_graph(MLP_OP_GRAPH), attribution, (), ())


@pytest.mark.parametrize(
    ("walls_ns", "shown"),
    [
        ((2_000_000, 1_000_000), "median 1.5 ms"),  # two steps: the mean of both
        ((3_000_000, 1_000_000, 2_000_000), "median 2 ms"),
        ((1_000_000, 9_000_000, 2_000_000, 3_000_000), "median 2.5 ms"),
    ],
)
def test_step_time_is_the_true_median(walls_ns, shown):
    rows = dict(compose._summary_rows(_inputs(walls_ns)))
    assert rows["step time"] == f"{shown} (wall, host)"
    assert f"**step time**: {shown}" in compose.to_markdown(_inputs(walls_ns))


def test_a_report_from_an_existing_trace_takes_step_time_from_its_markers():
    inputs = _inputs(())
    walls = (4_000_000_000, 2_000_000_000, 3_000_000_000)  # ps
    profile = dataclasses.replace(inputs.profile, step_wall_ps=walls)
    rows = dict(compose._summary_rows(dataclasses.replace(inputs, profile=profile)))
    assert rows["step time"] == "median 3 ms (the trace's step markers)"


def test_the_report_answers_which_phase_layer_and_op_type(tmp_path):
    from profile_fixtures import TRAIN

    from tfpgo.analysis import analyse
    from tfpgo.render.scope_chart import write_scope_chart

    profile = OpProfile.read(TRAIN)
    analysis = analyse(profile)
    write_scope_chart(analysis, tmp_path / "scope_chart.svg")
    inputs = dataclasses.replace(
        _inputs((1_000_000,)), profile=profile, analysis=analysis, analysis_chart="scope_chart.svg"
    )
    markdown, page = compose.write_reports(inputs, tmp_path)
    text = markdown.read_text()
    for section in ("### Time by phase", "### Time by layer", "### Time by op type"):
        assert section in text
    assert "![time by layer scope](scope_chart.svg)" in text
    assert "| sequential_3_1/dense_3_1 |" in text  # the hottest layer, gradients folded in
    assert "| no op running (in the steps) |" in text
    html_text = page.read_text()
    assert "<h3>Time by phase</h3>" in html_text
    assert "<svg" in html_text and "<title>sequential_3_1" in html_text  # inline, tooltips work


def test_the_report_gives_each_measured_proposal_with_interval_and_verdict():
    """--optimize: the section lists ratio, interval and verdict per proposal
    (from a stored optimize.json of a real mlp training run) and links the diff."""
    from tfpgo.proposer.optimize import read

    stored = Path(__file__).resolve().parents[1] / "data" / "optimize" / "mlp_train.optimize.json"
    result = read(stored)
    inputs = dataclasses.replace(_inputs((1, 2)), optimize=result)
    markdown, page = compose.to_markdown(inputs), compose.to_html(inputs)
    for trial in result.trials:
        outcome = trial.result
        assert outcome is not None
        cells = (f"{outcome.ratio:.3f}", f"[{outcome.low:.3f}, {outcome.high:.3f}]")
        for text in (*cells, outcome.verdict.value, trial.change):
            assert text in markdown and html.escape(text) in page
    assert "## Proposals, measured" in markdown and "<h2>Proposals, measured</h2>" in page
    assert "[optimize/diff.html](optimize/diff.html)" in markdown
    assert "## Proposals" not in compose.to_markdown(_inputs((1, 2)))


def test_the_report_puts_the_hot_dispatches_beside_the_fastest_anchor():
    """--tune on an inference step: the section's rows are anchor_tables' rows of
    a real cnn run's profiles (tests/data/anchor_layers), in both pages."""
    from tfpgo.iree.profile_document import IreeProfile
    from tfpgo.report.anchor_tables import ANCHOR_TITLE, AnchorComparison, anchor_section
    from tfpgo.runtime.anchor_profile import AnchorProfile

    data = Path(__file__).resolve().parents[1] / "data" / "anchor_layers"
    iree = IreeProfile.read(data / "cnn.iree_profile.json")
    anchors = AnchorProfile.read(data / "cnn.anchor_profile.json")
    comparison = AnchorComparison(anchors, iree, "default")
    inputs = dataclasses.replace(_inputs((1, 2)), anchors=comparison)
    markdown, page = compose.to_markdown(inputs), compose.to_html(inputs)
    assert f"## {ANCHOR_TITLE}" in markdown and f"<h2>{ANCHOR_TITLE}</h2>" in page
    _, _, rows = anchor_section(comparison)
    assert rows
    for row in rows:
        assert "| " + " | ".join(row) + " |" in markdown
    assert ANCHOR_TITLE not in compose.to_markdown(_inputs((1, 2)))
