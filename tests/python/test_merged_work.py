"""Merged and folded work named where a user looks (tfpgo.mlir.merged_work,
tfpgo.mlir.lost_ops): small StableHLO modules whose records ride in their
locations, lowered to linalg by IREE's real input conversion (its CSE and
canonicalizer), the records read back by tf-profile-materialize-annotations; and
the pass after which a record was gone, from IREE's and TensorFlow's own runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tfpgo.mlir import annotate, lost_ops, lowering, merged_work, routes
from tfpgo.mlir.lost_ops import Loss


def _record(source: str, self_ps: int) -> str:
    """A carried record (tf-annotate-operations-profile carry-in-location=true)."""
    return (
        f"fused<{{profiler_data = {{count = 1 : i64, dur = {self_ps} : i64, max = {self_ps} : "
        f"i64, min = {self_ps} : i64, p50 = {self_ps} : i64, p95 = {self_ps} : i64, self = "
        f'{self_ps} : i64, share = 0.1 : f64, source = "{source}", total = {self_ps} : i64, '
        f'ts = 0 : i64}}}}>["{source}"]'
    )


# The GELU case: the forward Erfc's expansion computes exp(-x²), and the
# gradient computes it again (its Square, Neg and Exp).
GELU = f"""
func.func @main(%x: tensor<8x16xf32>) -> (tensor<8x16xf32>, tensor<8x16xf32>) {{
  %0 = stablehlo.multiply %x, %x : tensor<8x16xf32> loc({_record("fwd/Erfc", 400)})
  %1 = stablehlo.negate %0 : tensor<8x16xf32> loc({_record("fwd/Erfc", 400)})
  %2 = stablehlo.exponential %1 : tensor<8x16xf32> loc({_record("fwd/Erfc", 400)})
  %3 = stablehlo.multiply %x, %x : tensor<8x16xf32> loc({_record("grad/Square", 100)})
  %4 = stablehlo.negate %3 : tensor<8x16xf32> loc({_record("grad/Neg", 100)})
  %5 = stablehlo.exponential %4 : tensor<8x16xf32> loc({_record("grad/Exp", 300)})
  %6 = stablehlo.add %5, %x : tensor<8x16xf32> loc({_record("grad/mul", 200)})
  return %2, %6 : tensor<8x16xf32>, tensor<8x16xf32>
}}
"""


def _linalg_sources(stablehlo_text: str, tmp_path: Path) -> tuple[dict[str, int], str]:
    """Lowers `stablehlo_text` as the flow gives it to IREE (merged_work on it,
    folded constants located after) and returns the linalg level's sources with
    their self time, and the annotated module."""
    merged = merged_work.fuse_equivalent_locations(stablehlo_text)
    given = tmp_path / "stablehlo.mlir"
    lowering.write_generic_stablehlo(merged.text, given)
    generic = lowering._stablehlo_to_linalg(given)
    relocated = merged_work.relocate_after_lowering(merged.text, generic)
    linalg = tmp_path / "linalg.mlir"
    linalg.write_text(lowering.util_functions_to_func(relocated.text))
    summary, annotated = tmp_path / "summary.json", tmp_path / "annotated.mlir"
    materialize = f"--tf-profile-materialize-annotations=summary-output={summary}"
    annotate.run_tfpgo_opt(linalg, annotated, ["--mlir-print-op-generic", materialize])
    document = json.loads(summary.read_text())
    return {s["name"]: s["self_ps"] for s in document["sources"]}, annotated.read_text()


def test_ops_cse_merges_carry_each_others_records_to_linalg(tmp_path):
    merged = merged_work.fuse_equivalent_locations(GELU)
    # Equivalent as CSE finds them: the gradient's chain, op by op, operands first.
    assert [(m.merged, m.into) for m in merged.merges] == [
        ("grad/Square", "fwd/Erfc"),
        ("grad/Neg", "fwd/Erfc"),
        ("grad/Exp", "fwd/Erfc"),
    ]
    sources, annotated = _linalg_sources(GELU, tmp_path)
    # IREE's CSE kept one chain; it carries every record, none lost, each charged once.
    assert sources == {
        "fwd/Erfc": 400, "grad/Square": 100, "grad/Neg": 100, "grad/Exp": 300, "grad/mul": 200,
    }  # fmt: skip
    records = [line for line in annotated.splitlines() if "profiler_data" in line]
    assert any(
        'source = "fwd/Erfc"' in record and '"grad/Exp"' in record.split("fused_sources")[1]
        for record in records
        if "fused_sources" in record
    ), records


def test_without_the_merge_cse_loses_the_gradients_records(tmp_path):
    """The control: IREE's own CSE, given the module as it is, erases the
    gradient's ops with their records (what the merge above prevents)."""
    given = tmp_path / "plain.mlir"
    lowering.write_generic_stablehlo(GELU, given)
    generic = lowering._stablehlo_to_linalg(given)
    assert '"grad/Exp"' not in generic and '"fwd/Erfc"' in generic


def test_ops_with_effects_and_large_constants_are_never_merged():
    module = f"""
func.func @main(%s: tensor<2xui64>) -> (tensor<2xui64>, tensor<2xui64>, tensor<100xf32>) {{
  %o0, %a = stablehlo.rng_bit_generator %s, algorithm = DEFAULT : (tensor<2xui64>) -> (tensor<2xui64>, tensor<2xui64>) loc({_record("rng/a", 5)})
  %o1, %b = stablehlo.rng_bit_generator %s, algorithm = DEFAULT : (tensor<2xui64>) -> (tensor<2xui64>, tensor<2xui64>) loc({_record("rng/b", 5)})
  %c = stablehlo.constant dense<1.0> : tensor<100xf32> loc({_record("big/a", 5)})
  %d = stablehlo.constant dense<1.0> : tensor<100xf32> loc({_record("big/b", 5)})
  %e = stablehlo.add %c, %d : tensor<100xf32> loc({_record("sum", 5)})
  return %a, %b, %e : tensor<2xui64>, tensor<2xui64>, tensor<100xf32>
}}
"""  # noqa: E501
    merged = merged_work.fuse_equivalent_locations(module)
    assert merged.merges == () and merged.text == module


def test_a_constant_iree_folds_takes_the_records_of_the_ops_that_held_its_value(tmp_path):
    """A zeros_like (a broadcast of a splat) becomes a constant IREE's folder
    makes with no location: after the lowering it takes zeros_like's record."""
    module = f"""
func.func @main(%x: tensor<40x8xf32>) -> tensor<40x8xf32> {{
  %z = stablehlo.constant dense<0.0> : tensor<f32> loc({_record("zeros_like", 700)})
  %b = stablehlo.broadcast_in_dim %z, dims = [] : (tensor<f32>) -> tensor<40x8xf32> loc({_record("zeros_like", 700)})
  %w = stablehlo.while(%i = %b) : tensor<40x8xf32>
    cond {{
      %t = stablehlo.constant dense<true> : tensor<i1>
      stablehlo.return %t : tensor<i1>
    }} do {{
      %n = stablehlo.add %i, %x : tensor<40x8xf32> loc({_record("loop/add", 900)})
      stablehlo.return %n : tensor<40x8xf32>
    }}
  return %w : tensor<40x8xf32>
}}
"""  # noqa: E501
    sources, _ = _linalg_sources(module, tmp_path)
    assert sources == {"zeros_like": 700, "loop/add": 900}


def test_a_reshape_folded_away_is_fused_into_its_reader(tmp_path):
    """A Keras RNN's last output: reshaped into a one-element list and read back
    out (TensorListSetItem, then strided_slice): IREE folds both; the matmul that
    reads the state carries their records."""
    module = f"""
func.func @main(%h: tensor<8x16xf32>, %w: tensor<16x4xf32>) -> tensor<8x4xf32> {{
  %0 = stablehlo.reshape %h : (tensor<8x16xf32>) -> tensor<1x8x16xf32> loc({_record("SetItem", 50)})
  %1 = stablehlo.reshape %0 : (tensor<1x8x16xf32>) -> tensor<8x16xf32> loc({_record("strided_slice", 20)})
  %2 = stablehlo.dot %1, %w : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32> loc({_record("MatMul", 300)})
  return %2 : tensor<8x4xf32>
}}
"""  # noqa: E501
    assert merged_work.fuse_equivalent_locations(module).folded_reshapes == 1
    sources, annotated = _linalg_sources(module, tmp_path)
    assert sources == {"SetItem": 50, "strided_slice": 20, "MatMul": 300}
    matmul = annotated[annotated.index('"linalg.matmul"') :]
    record = matmul[matmul.index("profiler_data") : matmul.index("\n", matmul.index("}) {"))]
    assert 'source = "MatMul"' in record
    assert 'fused_sources = ["SetItem", "strided_slice"]' in record


def test_an_identity_folded_away_is_fused_into_its_reader(tmp_path):
    """The first trip of an unrolled gradient loop adds to zeros, and a strided
    slice's gradient pads by nothing: IREE folds both into their operand; the op
    that reads them carries their records and the zeros'."""
    module = f"""
func.func @main(%g: tensor<8x16xf32>, %w: tensor<16x4xf32>) -> tensor<8x4xf32> {{
  %z = stablehlo.constant dense<0.0> : tensor<8x16xf32> loc({_record("zeros", 30)})
  %p0 = stablehlo.constant dense<0.0> : tensor<f32>
  %0 = stablehlo.add %z, %g : tensor<8x16xf32> loc({_record("AddN", 40)})
  %1 = stablehlo.pad %0, %p0, low = [0, 0], high = [0, 0], interior = [0, 0] : (tensor<8x16xf32>, tensor<f32>) -> tensor<8x16xf32> loc({_record("StridedSliceGrad", 60)})
  %2 = stablehlo.dot %1, %w : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32> loc({_record("MatMul", 300)})
  return %2 : tensor<8x4xf32>
}}
"""  # noqa: E501
    assert merged_work.fuse_equivalent_locations(module).folded_identities == 2
    sources, _ = _linalg_sources(module, tmp_path)
    assert sources == {"zeros": 30, "AddN": 40, "StridedSliceGrad": 60, "MatMul": 300}
    # Where only the function's return reads it, the op that made its operand does.
    returned = f"""
func.func @main(%g: tensor<8x16xf32>, %w: tensor<16x4xf32>) -> tensor<8x4xf32> {{
  %z = stablehlo.constant dense<0.0> : tensor<8x4xf32> loc({_record("zeros", 30)})
  %0 = stablehlo.dot %g, %w : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32> loc({_record("MatMul", 300)})
  %1 = stablehlo.add %0, %z : tensor<8x4xf32> loc({_record("AddN", 40)})
  return %1 : tensor<8x4xf32>
}}
"""  # noqa: E501
    assert merged_work.fuse_equivalent_locations(returned).folded_identities == 1
    (tmp_path / "returned").mkdir()
    sources, _ = _linalg_sources(returned, tmp_path / "returned")
    assert sources == {"zeros": 30, "AddN": 40, "MatMul": 300}
    # An add of a value that is not all zeros is work: left as it is.
    ones = module.replace("dense<0.0> : tensor<8x16xf32>", "dense<1.0> : tensor<8x16xf32>")
    assert merged_work.fuse_equivalent_locations(ones).folded_identities == 1  # the pad only


def test_the_pass_that_lost_a_record_is_found_in_irees_dump_after_every_pass(tmp_path):
    """An op whose result nobody reads is gone after the canonicalizer; the pass
    named, and the reason it gives from the closed set."""
    module = f"""
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {{
  %dead = stablehlo.negate %x : tensor<4xf32> loc({_record("dead", 10)})
  %0 = stablehlo.abs %x : tensor<4xf32> loc({_record("kept", 10)})
  return %0 : tensor<4xf32>
}}
"""
    given = tmp_path / "stablehlo.mlir"
    lowering.write_generic_stablehlo(module, given)
    gone = lost_ops.gone_after_iree_passes(given, given.read_text(), ["dead", "kept", "never"])
    assert set(gone) == {"dead"} and "canonicalize" in gone["dead"]
    kind, detail = lost_ops.from_pass(gone["dead"])
    assert kind is Loss.FOLDED and detail.startswith(gone["dead"])


def test_the_pass_that_lost_a_record_in_tensorflows_route_is_named(tmp_path):
    """TensorFlow's bridge route run one pass at a time: an op nobody reads is
    gone after the inliner (which simplifies what it inlines into)."""
    pytest.importorskip("tensorflow")
    module = f"""
module {{
  func.func @step(%x: tensor<4xf32>) -> tensor<4xf32> {{
    %dead = "tf.Neg"(%x) : (tensor<4xf32>) -> tensor<4xf32> loc({_record("dead", 10)})
    %0 = "tf.Abs"(%x) : (tensor<4xf32>) -> tensor<4xf32> loc({_record("kept", 10)})
    return %0 : tensor<4xf32>
  }}
}}
"""
    text, steps = routes.replay(module, routes.Route(routes.BRIDGE_ROUTE, "a list op"))
    assert "@main" in text and steps[3] == "func.func(canonicalize)"
    assert lost_ops.gone_after_tf_passes(text, steps, ["dead", "kept"]) == {"dead": "inline"}


def test_every_reason_is_one_of_the_closed_set():
    by_design = [
        lost_ops.by_design("v/ReadVariableOp", "tf.ReadVariableOp", False),
        lost_ops.by_design("a", "tf.AssignVariableOp", True),
        lost_ops.by_design("s", "tf.VariableShape", True),
        lost_ops.by_design("l", "tf.TensorListStack", False),
        lost_ops.by_design("l", "tf.TensorListStack", True),
        lost_ops.by_design("m", "tf.MatMul", False),
    ]
    assert [found and found[0] for found in by_design] == [
        Loss.VARIABLE, Loss.VARIABLE, Loss.FOLDED, Loss.DECOMPOSED, Loss.DECOMPOSED, None,
    ]  # fmt: skip
    assert by_design[3] is not None and "tf-tensor-list-ops-decomposition" in by_design[3][1]
    assert lost_ops.from_pass("cse")[0] is Loss.MERGED
    assert lost_ops.from_pass("cse", "fwd/Erfc") == (Loss.MERGED, "fwd/Erfc (cse)")
    assert lost_ops.from_pass("iree-stablehlo-canonicalize")[0] is Loss.FOLDED
    assert lost_ops.from_pass("inline") == (Loss.UNKNOWN, "inline")
    reasons = {kind: lost_ops.LostSource("n", "tf.Op", 1, kind, "x").reason for kind in Loss}
    assert reasons == {
        Loss.DECOMPOSED: "eliminated by x: the list is the buffer its loop carries",
        Loss.MERGED: "merged into x",
        Loss.VARIABLE: "a variable x",
        Loss.FOLDED: "folded by x",
        Loss.UNKNOWN: "unknown: gone after x",
    }
