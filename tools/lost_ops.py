"""`bazel run //tools:lost_ops -- --output-dir DIR`: what became of every profiled
op a lower level of a `pgo --lower iree` output lost, and the pass after which it
was gone.

For each tf op with time that no op of `model.stablehlo.mlir` or
`model.linalg.mlir` carries (read from their op graphs), one row: the level,
the op, its self time and why, from the closed set of tfpgo.mlir.lost_ops. The
linalg level's are found by compiling the output's own StableHLO program
(`model.stablehlo.mlirbc`) with IREE's input conversion, the module printed
after every pass: the first pass after which no op carries the record names
it. TensorFlow's route to StableHLO ran on the frozen module, which holds every
weight and is not kept: `pgo --lower` names those passes while it runs. Bad
input is one error line.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tfpgo import cli
from tfpgo.documents import read_json
from tfpgo.errors import UserError
from tfpgo.flow.conservation import graph_sources
from tfpgo.mlir import lost_ops
from tfpgo.mlir.lost_ops import Loss, LostSource
from tfpgo.mlir.lowering import annotated_sources

PROG = "lost_ops"
# Where a StableHLO-level loss that no design explains was gone: not findable here.
_TF_ROUTE = (
    "TensorFlow's route to StableHLO (its frozen module is not kept: pgo --lower names "
    "the pass in its report)"
)


def build_parser() -> argparse.ArgumentParser:
    parser = cli.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--output-dir", type=cli.user_path, required=True, help="a pgo --lower iree output"
    )
    return parser


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


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    out = args.output_dir
    if not out.is_dir():
        raise UserError(f"{out}: no such directory; pass a pgo --lower iree output directory")
    rows = lost_by_level(out)
    if not rows:
        print(f"{out}: every profiled op with time reaches StableHLO and linalg")
        return 0
    print("| level | tf op | self | why |\n| --- | --- | --- | --- |")
    for level, source in rows:
        print(f"| {level} | {source.name} | {source.self_ps / 1e6:.1f} µs | {source.reason} |")
    return 0


if __name__ == "__main__":
    sys.exit(cli.run_main(main, prog=PROG))
