"""report.md / report.html summary rows (tfpgo.report)."""

from __future__ import annotations

import dataclasses

import pytest
from render_fixtures import MLP_OP_GRAPH, MLP_OP_PROFILE

from tfpgo import report
from tfpgo.annotate import Attribution
from tfpgo.op_profile import OpProfile
from tfpgo.render import load_graph


def _inputs(step_wall_ns: tuple[int, ...]) -> report.ReportInputs:
    profile = OpProfile.read(MLP_OP_PROFILE)
    run = report.RunInfo(
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
    return report.ReportInputs(run, profile, load_graph(MLP_OP_GRAPH), attribution, (), ())


@pytest.mark.parametrize(
    ("walls_ns", "shown"),
    [
        ((2_000_000, 1_000_000), "median 1.5 ms"),  # two steps: the mean of both
        ((3_000_000, 1_000_000, 2_000_000), "median 2 ms"),
        ((1_000_000, 9_000_000, 2_000_000, 3_000_000), "median 2.5 ms"),
    ],
)
def test_step_time_is_the_true_median(walls_ns, shown):
    rows = dict(report._summary_rows(_inputs(walls_ns)))
    assert rows["step time"] == f"{shown} (wall, host)"
    assert f"**step time**: {shown}" in report.to_markdown(_inputs(walls_ns))


def test_a_report_from_an_existing_trace_takes_step_time_from_its_markers():
    inputs = _inputs(())
    walls = (4_000_000_000, 2_000_000_000, 3_000_000_000)  # ps
    profile = dataclasses.replace(inputs.profile, step_wall_ps=walls)
    rows = dict(report._summary_rows(dataclasses.replace(inputs, profile=profile)))
    assert rows["step time"] == "median 3 ms (the trace's step markers)"
