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
from tfpgo.mlir.lost_ops import Loss, LostSource
from tfpgo.mlir.lowering import annotated_sources

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
    # TensorFlow's pass routes carry records in the locations; its XLA compiler's
    # StableHLO only names the tf nodes.
    compiled = 'source = "' not in lost_ops.stablehlo_text(out / "model.stablehlo.mlirbc")
    rows: list[tuple[str, LostSource]] = []
    above: dict[str, LostSource] = {}
    for name in sorted(set(tf) - stablehlo, key=lambda name: -tf[name][1]):
        op, self_ps = tf[name]
        kind, detail = lost_ops.by_design(name, op, compiled) or (Loss.UNKNOWN, _TF_ROUTE)
        above[name] = LostSource(name, op, self_ps, kind, detail)
        rows.append(("stablehlo", above[name]))
    lost = sorted(set(tf) - linalg, key=lambda name: -tf[name][1])
    gone = lost_ops.gone_after_iree_passes(
        out / "model.stablehlo.mlirbc", [name for name in lost if name not in above]
    )
    for name in lost:
        op, self_ps = tf[name]
        if name in above:
            rows.append(("linalg", above[name]))
            continue
        kind, detail = lost_ops.from_pass(gone.get(name, lost_ops.STILL_IN_IREE_INPUT))
        rows.append(("linalg", LostSource(name, op, self_ps, kind, detail)))
    return rows
