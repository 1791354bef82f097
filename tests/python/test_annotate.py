"""The Python side of tfpgo-opt: pipeline options and the annotate pass's remarks."""

from pathlib import Path

import pytest

from tfpgo import annotate
from tfpgo.cli import UserError
from tfpgo.report import human_time

REMARKS = (
    "m.mlir:0:0: remark: profile entry 'a/ArithmeticOptimizer/x' (7 ps self) matches no op\n"
    "m.mlir:0:0: remark: profile entry 'b/while/body/_1/y' (1200 ps self) matches no "
    "annotatable op\n"
    "m.mlir:0:0: remark: annotated 12 ops and 3 fused ops from 14 profile entries; "
    "98793 of 100000 ps self time attributed\n"
)


def test_parse_remarks_reads_summary_and_unresolved_hottest_first():
    attribution = annotate.parse_remarks(REMARKS)
    assert (attribution.annotated_ops, attribution.fused_ops, attribution.profile_entries) == (
        12,
        3,
        14,
    )
    assert attribution.coverage == pytest.approx(0.98793)
    assert [entry.name for entry in attribution.unresolved] == [
        "b/while/body/_1/y",
        "a/ArithmeticOptimizer/x",
    ]
    assert attribution.unresolved[0].self_ps == 1200


def test_parse_remarks_without_summary_is_a_user_error():
    with pytest.raises(UserError, match="no annotation summary"):
        annotate.parse_remarks("some other driver's output\n")


def test_empty_profile_counts_as_fully_attributed():
    attribution = annotate.parse_remarks(
        "x: remark: annotated 0 ops and 0 fused ops from 0 profile entries; "
        "0 of 0 ps self time attributed\n"
    )
    assert attribution.coverage == 1.0


def test_pipeline_spec_names_every_option():
    spec = annotate.pipeline_spec(Path("/p/op_profile.json"), Path("/o/op_graph.json"), 5, 0.01)
    assert spec.split() == [
        "enable-profile=true",
        "report-unresolved=true",
        "path-to-profile=/p/op_profile.json",
        "top-k=5",
        "min-share=0.01",
        "op-graph-output=/o/op_graph.json",
    ]


@pytest.mark.parametrize(
    ("ps", "text"),
    [
        (999, "999 ps"),
        (1_000, "1 ns"),
        (1_234_567, "1.23 µs"),
        (7_390_000_000, "7.39 ms"),
        (2_500_000_000_000, "2.5 s"),
    ],
)
def test_human_time_picks_the_largest_fitting_unit(ps, text):
    assert human_time(ps) == text


def test_a_failing_driver_is_one_line_naming_its_last_words(tmp_path, monkeypatch):
    driver = tmp_path / "fake-opt"
    driver.write_text("#!/bin/sh\necho 'starting' >&2\necho 'Segmentation fault' >&2\nexit 139\n")
    driver.chmod(0o755)
    monkeypatch.setenv("TFPGO_OPT", str(driver))
    module = tmp_path / "m.mlir"
    module.write_text("module {}\n")
    with pytest.raises(UserError) as failure:
        annotate.annotate_module(
            module, tmp_path / "p.json", tmp_path / "a.mlir", tmp_path / "g.json"
        )
    assert str(failure.value) == f"{module}: tfpgo-opt failed: Segmentation fault"
