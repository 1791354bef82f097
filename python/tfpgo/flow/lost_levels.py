"""What became of every profiled op a lower level of a `pgo --lower iree`
output lost, read from the output's own files (tools/lost_ops.py, and
bench_lowering_coverage's columns).

The op graphs say which tf ops with time each level's ops carry; the linalg
level's losses are explained by compiling the output's own StableHLO program
(`model.stablehlo.mlirbc`) with IREE's input conversion, the module printed
after every pass (tfpgo.mlir.lost_ops). TensorFlow's route to StableHLO ran on
the frozen module, which holds every weight and is not kept: `pgo --lower`
names those passes while it runs.
"""

from __future__ import annotations

from pathlib import Path

from tfpgo.documents import read_json
from tfpgo.errors import UserError
from tfpgo.flow.conservation import graph_sources
from tfpgo.mlir import lost_ops
from tfpgo.mlir.lost_ops import LostSource
from tfpgo.mlir.lowering import annotated_sources
from tfpgo.mlir.routes import made_by_xla_compiler

# Where a StableHLO-level loss that no design explains was gone: not findable here.
_TF_ROUTE = (
    "TensorFlow's route to StableHLO (its frozen module is not kept: pgo --lower names "
    "the pass in its report)"
)


def lost_by_level(out: Path) -> list[tuple[str, LostSource]]:
    """(level, lost op) for every tf op with time the StableHLO or linalg level
    of `out` lost, hottest first within each level."""
    needed = ("op_graph.json", "op_graph.stablehlo.json", "op_graph.linalg.json")
    for name in (*needed, "model.stablehlo.mlirbc"):
        if not (out / name).is_file():
            raise UserError(
                f"{out}: no {name}; pass the output directory of a pgo run with --lower iree"
            )
    tf = {
        name: (op, self_ps)
        for name, (op, self_ps) in annotated_sources(read_json(out / needed[0])).items()
        if self_ps > 0
    }
    stablehlo = graph_sources(read_json(out / needed[1]))
    linalg = graph_sources(read_json(out / needed[2]))
    program = out / "model.stablehlo.mlirbc"
    text = lost_ops.stablehlo_text(program)
    compiled = made_by_xla_compiler(text)

    def lost_from(carriers: set[str]) -> list[LostSource]:
        return [LostSource(name, op, ps) for name, (op, ps) in tf.items() if name not in carriers]

    above = lost_ops.explain(
        lost_from(stablehlo), "stablehlo", (), compiled, lambda names: ({}, _TF_ROUTE)
    )
    below = lost_ops.explain(
        lost_from(linalg),
        "linalg",
        above,
        compiled,
        lambda names: (
            lost_ops.gone_after_iree_passes(program, text, names),
            lost_ops.STILL_IN_IREE_INPUT,
        ),
    )
    return [("stablehlo", source) for source in above] + [("linalg", s) for s in below]
