"""`bazel run //tools:lost_ops -- --output-dir DIR`: what became of every profiled
op a lower level of a `pgo --lower iree` output lost, and the pass after which it
was gone.

For each tf op with time that no op of `model.stablehlo.mlir` or
`model.linalg.mlir` carries (read from their op graphs), one row: the level,
the op, its self time and why, from the closed set of tfpgo.mlir.lost_ops
(tfpgo.flow.lost_levels). The linalg level's pass is found by compiling the
output's own StableHLO program with IREE's input conversion, the module printed
after every pass. Bad input is one error line.
"""

from __future__ import annotations

import argparse
import sys

from tfpgo import cli
from tfpgo.errors import UserError
from tfpgo.flow.lost_levels import lost_by_level

PROG = "lost_ops"


def build_parser() -> argparse.ArgumentParser:
    parser = cli.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--output-dir", type=cli.user_path, required=True, help="a pgo --lower iree output"
    )
    return parser


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
