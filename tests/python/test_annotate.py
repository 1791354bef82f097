"""The Python side of tfpgo-opt: pipeline options and the attribution document."""

import json
from pathlib import Path

import pytest

from tfpgo import HOT_OPS
from tfpgo.errors import UserError
from tfpgo.mlir import annotate

# A tf-standard-pipeline export in miniature: a rewrite fused two locations, CSE
# kept one of two Pow ops, folding left a constant, canonicalization dropped an
# Identity; one name belongs to no op at all.
MODULE = """
func.func @main(%x: tensor<f32>) -> tensor<f32> {
  %c = "tf.Const"() <{value = dense<1.0> : tensor<f32>}> : () -> tensor<f32>
    loc(fused["RealDiv:", "g/truediv"])
  %p = "tf.Pow"(%x, %c) : (tensor<f32>, tensor<f32>) -> tensor<f32> loc("adam/Pow")
  %d = "tf.SquaredDifference"(%p, %x) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    loc(fused["Square:", "Square", "Sub:", "sub"])
  return %d : tensor<f32>
}
"""


def _entry(name: str, kernel: str, self_ps: int) -> dict:
    return {
        "name": name, "op_types": [kernel], "count": 1, "total_ps": self_ps,
        "self_ps": self_ps, "mean_ps": self_ps, "min_ps": self_ps, "max_ps": self_ps,
        "p50_ps": self_ps, "p95_ps": self_ps, "first_start_ps": 0, "durations_ps": [self_ps],
    }  # fmt: skip


ENTRIES = [
    _entry("adam/Pow", "Pow", 100),
    _entry("adam/Pow_3", "Pow", 40),
    _entry("Square", "Square", 20),
    _entry("sub", "Sub", 10),
    _entry("g/truediv", "RealDiv", 3),
    _entry("Identity_1", "Identity", 2),
    _entry("elsewhere/Conv2D", "Conv2D", 5),
]


@pytest.fixture
def attribution(tmp_path):
    module = tmp_path / "m.mlir"
    module.write_text(MODULE)
    profile = tmp_path / "op_profile.json"
    total = sum(entry["self_ps"] for entry in ENTRIES)
    profile.write_text(
        json.dumps(
            {
                "format": "tfpgo.op_profile", "version": 1, "time_unit": "ps", "source": "test",
                "hosts": ["h"], "steps": [0], "step_wall_ps": [total],
                "totals": {"wall_ps": total, "op_total_ps": total, "op_self_ps": total,
                           "non_op_ps": 0, "op_events": 7, "events": 7},
                "ops": ENTRIES,
            }
        )
    )  # fmt: skip
    return annotate.annotate_module(
        module,
        profile,
        tmp_path / "a.mlir",
        tmp_path / "g.json",
        tmp_path / "attribution.json",
    )


def test_attribution_document_accounts_for_every_entry(attribution):
    # Pow 100 + Pow_3 40 (merged by name) + Square 20 + sub 10 (merged by location).
    assert attribution.attributed_self_ps == 170
    assert attribution.profile_self_ps == 180
    assert attribution.profile_entries == len(ENTRIES)
    accounted = (
        attribution.attributed_self_ps
        + sum(entry.self_ps for entry in attribution.removed)
        + sum(entry.self_ps for entry in attribution.unresolved)
    )
    assert accounted == attribution.profile_self_ps
    assert attribution.coverage == pytest.approx(170 / 180)


def test_attribution_says_how_each_name_matched(attribution):
    merged = {entry.name: entry for entry in attribution.merged}
    assert merged["adam/Pow_3"].ops == ("adam/Pow",)
    assert merged["adam/Pow_3"].merged_by == "name"
    assert merged["sub"].ops == ("Square",)
    assert merged["sub"].merged_by == "location"
    reasons = {entry.name: entry.reason for entry in attribution.removed}
    assert reasons == {
        "g/truediv": "removed by the IR pipeline: folded into a constant",
        "Identity_1": "removed by the IR pipeline: an op that only forwards its input",
    }
    assert [(entry.name, entry.reason) for entry in attribution.unresolved] == [
        ("elsewhere/Conv2D", "matches no op")
    ]


def test_a_document_of_another_format_is_one_user_error(tmp_path):
    path = tmp_path / "attribution.json"
    path.write_text(json.dumps({"format": "tfpgo.op_graph", "version": 1}))
    with pytest.raises(UserError, match=r"attribution\.json: .*not a tfpgo\.attribution"):
        annotate.read_attribution(path)


def test_empty_profile_counts_as_fully_attributed():
    attribution = annotate.Attribution(0, 0, 0, 0, 0, ())
    assert attribution.coverage == 1.0


def test_pipeline_spec_names_every_option():
    spec = annotate.pipeline_spec(
        Path("/p/op_profile.json"), Path("/o/op_graph.json"), 5, 0.01, Path("/o/a.json")
    )
    assert spec.split() == [
        "enable-profile=true",
        "path-to-profile=/p/op_profile.json",
        "top-k=5",
        "min-share=0.01",
        "op-graph-output=/o/op_graph.json",
        "attribution-output=/o/a.json",
        "carry-in-location=false",
    ]


def test_a_crashing_driver_is_one_line_naming_the_crash(tmp_path, monkeypatch):
    """An LLVM tool that crashes prints its assertion first, then the stack."""
    driver = tmp_path / "fake-opt"
    driver.write_text(
        "#!/bin/sh\necho 'tfpgo-opt: Pass.cpp:12: Assertion failed.' >&2\n"
        "echo 'PLEASE submit a bug report to https://github.com/llvm/llvm-project/issues/' >&2\n"
        "echo 'Stack dump:' >&2\nexit 134\n"
    )
    driver.chmod(0o755)
    monkeypatch.setenv("TFPGO_OPT", str(driver))
    module = tmp_path / "m.mlir"
    module.write_text("module {}\n")
    with pytest.raises(UserError) as failure:
        annotate.annotate_module(
            module, tmp_path / "p.json", tmp_path / "a.mlir", tmp_path / "g.json", tmp_path / "d"
        )
    assert str(failure.value) == (
        f"{module}: tfpgo-opt failed: tfpgo-opt: Pass.cpp:12: Assertion failed."
    )


def test_the_hotspot_pass_marks_as_many_ops_as_python_by_default(tmp_path):
    """tf-profile-mark-hotspots' top-k default (passes.td) is tfpgo.HOT_OPS."""
    count = HOT_OPS + 3
    ops = "\n".join(
        f'  %{i} = "tf.Op"() {{profiler_data = {{count = 1 : i64, dur = {i + 1} : i64, '
        f"max = 1 : i64, min = 1 : i64, p50 = 1 : i64, p95 = 1 : i64, self = {i + 1} : i64, "
        f"share = 0.1 : f64, total = 1 : i64, ts = 0 : i64}}}} : () -> tensor<f32>"
        for i in range(count)
    )
    module = tmp_path / "m.mlir"
    module.write_text(f"func.func @main() {{\n{ops}\n  return\n}}\n")
    marked = tmp_path / "marked.mlir"
    annotate.run_tfpgo_opt(module, marked, ["--tf-profile-mark-hotspots"])
    assert marked.read_text().count("profiler_hot = ") == HOT_OPS
