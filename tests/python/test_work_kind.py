"""The one work-kind rule (work_kinds.h), read by tfpgo's Python side for the
code of IREE's executables: a dispatch of each kind, compiled by IREE, gets the
kind the C++ pass gives the same ops (tests/lit/tf-profile-materialize-
annotations.mlir checks the C++ side on the same table)."""

from __future__ import annotations

import pytest

from tfpgo.attribution.work_kind import TABLE, Work, highest, kind_of, named_kind, named_work
from tfpgo.errors import UserError
from tfpgo.iree import executable_sources
from tfpgo.iree import run as iree_run
from tfpgo.iree.sites import walk

# A matmul with a bias (a reduction and its elementwise epilogue in one
# dispatch), a tanh alone (compute) and a transpose (a copy IREE makes).
PROGRAM = """
func.func @main(%x: tensor<64x128xf32>, %w: tensor<128x32xf32>, %b: tensor<64x32xf32>)
    -> (tensor<64x32xf32>, tensor<128x64xf32>) {
  %0 = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0]
    : (tensor<64x128xf32>, tensor<128x32xf32>) -> tensor<64x32xf32> loc("fc/MatMul")
  %1 = stablehlo.add %0, %b : tensor<64x32xf32> loc("fc/BiasAdd")
  %2 = stablehlo.tanh %x : tensor<64x128xf32> loc("act/Tanh")
  %3 = stablehlo.transpose %2, dims = [1, 0] : (tensor<64x128xf32>) -> tensor<128x64xf32>
    loc("act/Transpose")
  return %1, %3 : tensor<64x32xf32>, tensor<128x64xf32>
}
"""


@pytest.fixture(scope="module")
def executables(tmp_path_factory):
    scratch = tmp_path_factory.mktemp("kinds")
    (scratch / "p.mlir").write_text(PROGRAM)
    sources = scratch / "p.sources.mlir"
    iree_run.compile_module(scratch / "p.mlir", scratch / "p.vmfb", sources, scratch / "p.mlirbc")
    module = executable_sources.parse_sources(sources)
    executables = [op.operation for op in module.body.operations]
    yield [op for op in executables if op.name == "hal.executable"]
    del module  # the ops live as long as their module


def _kinds(executable) -> dict[str, set[Work]]:
    kinds: dict = {}
    found: dict[str, set[Work]] = {}
    for op in walk(executable):
        found.setdefault(op.name, set()).add(kind_of(op, kinds))
    return found


def test_each_kind_of_op_in_iree_dispatches(executables):
    seen: dict[str, set[Work]] = {}
    for executable in executables:
        for name, kinds in _kinds(executable).items():
            seen.setdefault(name, set()).update(kinds)
    assert seen["linalg.matmul"] == {Work.REDUCTION}
    # The matmul's zero init fills an empty tensor with a constant: nothing a
    # compiler would not fold (the table's MOVEMENT is for a fill of real data).
    assert seen["linalg.fill"] == {Work.NONE}
    assert Work.COMPUTE in seen["linalg.generic"]  # bias, tanh, the transpose's copy
    assert seen["arith.constant"] == {Work.NONE} and seen["tensor.empty"] == {Work.NONE}
    assert seen["iree_tensor_ext.dispatch.tensor.load"] == {Work.MOVEMENT}  # its inputs


def test_a_fused_kernels_time_goes_to_its_matmul(executables):
    """Of the ops naming the bias (the matmul it was fused into, its epilogue),
    the source's time goes to the matmul alone: the highest kind."""
    for executable in executables:
        kinds: dict = {}
        ops = [op for op in walk(executable) if kind_of(op, kinds) and op.name.startswith("linalg")]
        if any(op.name == "linalg.matmul" for op in ops):
            assert [op.name for op in highest(ops, kinds)] == ["linalg.matmul"]
            return
    pytest.fail("no dispatch with the matmul")


def test_the_table_is_the_c_plus_plus_one():
    rows = named_work()
    assert ("stablehlo", "dot_general", False, Work.REDUCTION) in rows
    assert ("linalg", "conv", True, Work.REDUCTION) in rows
    assert named_kind("linalg.conv_2d_nhwc_hwcf") is Work.REDUCTION  # a prefix row
    assert named_kind("tensor.extract_slice") is Work.MOVEMENT
    assert named_kind("linalg.generic") is Work.COMPUTE  # no row: its loops say
    assert TABLE.read_text().count(", Work::k") == len(rows)  # every row parsed


def test_a_missing_table_is_one_line(tmp_path):
    with pytest.raises(UserError, match="cannot read the work-kind table"):
        named_work(tmp_path / "absent.h")
