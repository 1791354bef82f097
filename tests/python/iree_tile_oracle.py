"""Tiles read back by IREE, for tests of tfpgo.tune.dispatch_tiles that must not
check its code with itself: what a tuning spec holds, as IREE's own MLIR parser
reads it (not the text `spec_text` writes), and what IREE applied to each matmul
of a compile, read from its dumped executable configurations (not through
`root_configs`). Both give, per loop ranges, a root op's `Tiles`."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from tfpgo.tune.tile_configs import RootConfig

# distribution, vector_common_parallel and vector_reduction tiles, and the pipeline.
Tiles = tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...], str]
_LISTS = re.compile(r"(\w+) = \[([\d, ]*)\]")
_PIPELINE = re.compile(r"#iree_cpu\.pipeline<(\w+)>")
_EQ = 0  # arith's CmpIPredicate eq, the predicate of transform.match.param.cmpi

# Two matmuls of one rank and other loop ranges (256x256x512 and 128x64x256): the
# program the tile tests compile, search and record.
TWO_MATMULS = """
func.func @main(%a: tensor<256x512xf32>, %b: tensor<512x256xf32>, %c: tensor<128x256xf32>,
                %d: tensor<256x64xf32>) -> (tensor<256x256xf32>, tensor<128x64xf32>) {
  %0 = "stablehlo.dot_general"(%a, %b) <{dot_dimension_numbers = #stablehlo.dot<
      lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]>}>
      : (tensor<256x512xf32>, tensor<512x256xf32>) -> tensor<256x256xf32>
  %1 = "stablehlo.dot_general"(%c, %d) <{dot_dimension_numbers = #stablehlo.dot<
      lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]>}>
      : (tensor<128x256xf32>, tensor<256x64xf32>) -> tensor<128x64xf32>
  return %0, %1 : tensor<256x256xf32>, tensor<128x64xf32>
}
"""


def tiles_of(config: RootConfig) -> Tiles:
    """What a spec or a compile should hold for `config`, from its fields."""
    return (config.distribution, config.vector_parallel, config.vector_reduction, config.pipeline)


def spec_tiles(text: str) -> dict[tuple[int, ...], Tiles]:
    """Per loop ranges a matcher of the tuning spec `text` accepts (its rank and
    each dimension compared for equality), the tiles its action annotates the
    matched op with: every matcher paired with an action in the entry point's
    `transform.foreach_match`, each action annotating `compilation_info`."""
    from iree.compiler import ir
    from iree.compiler.dialects import iree_codegen

    found: dict[tuple[int, ...], Tiles] = {}
    with ir.Context():
        module = ir.Module.parse(text)
        sequences = {
            ir.StringAttr(op.operation.attributes["sym_name"]).value: op.operation
            for op in module.body.operations
            if op.operation.name == "transform.named_sequence"
        }
        (entry,) = (
            s for s in sequences.values() if "iree_codegen.tuning_spec_entrypoint" in s.attributes
        )
        (foreach,) = _ops(entry, "transform.foreach_match")
        matchers, actions = (
            [ir.FlatSymbolRefAttr(a).value for a in ir.ArrayAttr(foreach.attributes[name])]
            for name in ("matchers", "actions")
        )
        for matcher, action in zip(matchers, actions, strict=True):
            (annotate,) = _ops(sequences[action], "transform.annotate")
            assert ir.StringAttr(annotate.attributes["name"]).value == "compilation_info"
            loops = _matched_loops(sequences[matcher])
            (info,) = (
                iree_codegen.CompilationInfoAttr(op.attributes["value"])
                for op in _ops(sequences[matcher], "transform.param.constant")
                if iree_codegen.CompilationInfoAttr.isinstance(op.attributes["value"])
            )
            pipeline = _PIPELINE.search(str(info.translation_info.pass_pipeline))
            assert pipeline is not None
            found[loops] = _tiles(str(info.lowering_config), pipeline[1])
    return found


def applied_matmul_tiles(dump: Path) -> dict[tuple[int, ...], Tiles]:
    """Per matmul's (M, N, K), from its operands' shapes, the tiles of its
    `lowering_config` and its function's pipeline in the executable
    configurations IREE dumped into `dump`
    (`--iree-hal-dump-executable-configurations-to`)."""
    from iree.compiler import ir

    found: dict[tuple[int, ...], Tiles] = {}
    for path in sorted(dump.glob("*.mlir")):
        with ir.Context():
            module = ir.Module.parse(path.read_text())
            for matmul in _ops(module.operation, "linalg.matmul"):
                (m, k), (_, n) = (ir.RankedTensorType(v.type).shape for v in matmul.operands[:2])
                function = matmul.parent
                while function.name != "func.func":
                    function = function.parent
                pipeline = _PIPELINE.search(str(function.attributes["translation_info"]))
                assert pipeline is not None
                lowering = str(matmul.attributes["lowering_config"])
                found[(m, n, k)] = _tiles(lowering, pipeline[1])
    return found


def _ops(root: Any, name: str) -> list[Any]:
    """The operations named `name` nested in `root`, in walk order."""
    from iree.compiler import ir

    found = []

    def visit(op: Any) -> Any:
        if op.operation.name == name:
            found.append(op.operation)
        return ir.WalkResult.ADVANCE

    root.walk(visit)
    return found


def _matched_loops(matcher: Any) -> tuple[int, ...]:
    """The loop ranges a matcher compares its op's rank and dimensions with."""
    from iree.compiler import ir

    rank, dims = None, {}
    for cmpi in _ops(matcher, "transform.match.param.cmpi"):
        assert ir.IntegerAttr(cmpi.attributes["predicate"]).value == _EQ
        measured, wanted = (value.owner.operation for value in cmpi.operands)
        size = ir.IntegerAttr(wanted.attributes["value"]).value
        if measured.name == "transform.match.structured.rank":
            rank = size
        elif measured.name == "transform.match.structured.dim":
            (dim,) = ir.DenseI64ArrayAttr(measured.attributes["raw_dim_list"])
            dims[dim] = size
    assert rank is not None and sorted(dims) == list(range(rank)), (rank, dims)
    return tuple(dims[k] for k in range(rank))


def _tiles(lowering_config: str, pipeline: str) -> Tiles:
    lists = {
        name: tuple(int(v) for v in values.split(",") if v.strip())
        for name, values in _LISTS.findall(lowering_config)
    }
    return (
        lists["distribution"],
        lists["vector_common_parallel"],
        lists["vector_reduction"],
        pipeline,
    )
