"""`bazel run //tools:tuning_db -- list|show|export|merge|prune [--tuning-db PATH]`: the
tuning database `--tune` keeps (tfpgo.tune.db; its schema in docs/formats.md).

- `list`: every target with its counts, those other than this machine's (`host`)
  marked stale, with what differs;
- `show [--target host|KEY] [--program DIGEST]`: one target's tile records,
  decisions and runs, or one program's;
- `export [--target host|KEY] -o spec.mlir`: one IREE tuning spec with every
  record's winner for the target, for plain `iree-compile
  --iree-codegen-tuning-spec-path=spec.mlir`;
- `merge OTHER.db`: every row of another database (another machine's) added;
- `prune [--keep KEY]`: the rows of every other target dropped (default: keeps
  this machine's).

`host` is this machine's target for `--lower iree`'s flags (iree-compile is run
to resolve it); KEY a target's key or its start, as `list` prints it. Bad input
is one error line; an export is written whole or not at all.
"""

from __future__ import annotations

import argparse
import sys

from tfpgo import cli
from tfpgo.atomic import atomic_output_file, check_output_path
from tfpgo.tune import db
from tfpgo.tune.db_records import Target, TileRecord

PROG = "tuning_db"


def build_parser() -> argparse.ArgumentParser:
    common = cli.ArgumentParser(add_help=False)
    common.add_argument(
        "--tuning-db",
        type=cli.user_path,
        help="the database (default: $XDG_CACHE_HOME/tfpgo/tuning.db, else "
        "~/.cache/tfpgo/tuning.db)",
    )
    target = cli.ArgumentParser(add_help=False)
    target.add_argument(
        "--target", default="host", help="host (this machine's, the default) or a target's key"
    )
    parser = cli.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    commands.add_parser("list", parents=[common], help="targets and their counts")
    show = commands.add_parser("show", parents=[common, target], help="one target's rows")
    show.add_argument("--program", help="only the rows of this program (its digest)")
    export = commands.add_parser("export", parents=[common, target], help="a tuning spec")
    export.add_argument("-o", "--output", type=cli.user_path, required=True, help="spec.mlir")
    merge = commands.add_parser("merge", parents=[common], help="add another database's rows")
    merge.add_argument("other", type=cli.user_path, metavar="OTHER.db")
    prune = commands.add_parser("prune", parents=[common], help="drop other targets' rows")
    prune.add_argument("--keep", help="the key of the target to keep (default: host)")
    return parser


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    path = args.tuning_db or db.default_path()
    if args.command == "export":
        check_output_path(args.output, "-o")
    create, writes = args.command == "merge", args.command in ("merge", "prune")
    with db.TuningDb.open(path, create=create, read_only=not writes) as database:
        if args.command == "list":
            _list(database)
        elif args.command == "show":
            _show(database, _target(database, args.target), args.program)
        elif args.command == "export":
            _export(database, _target(database, args.target), args)
        elif args.command == "merge":
            merged = database.merge(args.other)
            print(
                f"{path}: added {merged.tiles} tile records, {merged.decisions} decisions, "
                f"{merged.runs} runs, {merged.limits} machine limits and {merged.targets} "
                f"targets from {args.other}"
            )
        else:
            keep = _target(database, args.keep) if args.keep else Target.host()
            dropped = database.prune(keep)
            for summary in dropped:
                print(f"dropped {_counts(summary)} of target {summary.target.key}")
            print(f"{path}: kept target {keep.key}; {len(dropped)} other targets dropped")
    return 0


def _target(database: db.TuningDb, name: str) -> Target:
    return Target.host() if name == "host" else database.find_target(name)


def _counts(summary: db.TargetSummary) -> str:
    return (
        f"{summary.tiles} tile records ({summary.winners} with a winner), "
        f"{summary.decisions} decisions, {summary.runs} runs"
    )


def _list(database: db.TuningDb) -> None:
    summaries = database.summaries()
    print(f"tuning database {database.path} ({database.journal} journal)")
    if not summaries:
        print("no records")
        return
    host = Target.host()
    for summary in summaries:
        target = summary.target
        stale = target.differences(host)
        state = "this machine's" if target.key == host.key else f"stale: {stale}"
        print(
            f"{target.key}  {target.cpu}, iree-compile {target.compiler}, "
            f"{len(target.flags)} flags ({state}): {_counts(summary)}"
        )


def _show(database: db.TuningDb, target: Target, program: str | None) -> None:
    def wanted(of: str) -> bool:
        return program is None or of.startswith(program)

    print(f"target {target.key}: {target.cpu}, iree-compile {target.compiler}")
    print(f"  flags: {' '.join(target.flags) or '(none)'}")
    for record in database.tile_records(target):
        if wanted(record.program):
            print(f"  tiles {_tile_line(record)}")
    for run in database.runs(target):
        if wanted(run.program):
            state = "finished" if run.finished else "cut short"
            ratio = "-" if run.ratio is None else f"{run.ratio:.3f}"
            left = ", ".join((*run.untried, *run.unsearched)) or "nothing"
            print(
                f"  run {run.program} {run.model}: {state} in {run.tune_s:.0f} s, ratio "
                f"{ratio}, flags {' '.join(run.flags) or '(none)'}; left: {left}"
            )
    for key in [key for key in database.programs(target) if wanted(key)]:
        for decision in database.decisions(target, key):
            interval = (
                ""
                if decision.low is None or decision.high is None
                else f" [{decision.low:.3f}, {decision.high:.3f}]"
            )
            ratio = "-" if decision.ratio is None else f"{decision.ratio:.3f}"
            print(
                f"  decision {key} {decision.name}: {decision.verdict or 'no A/B'} {ratio}"
                f"{interval}{', kept' if decision.kept else ''}"
            )


def _tile_line(record: TileRecord) -> str:
    root = record.root
    loops = "x".join(map(str, root.loops))
    ratio = record.winner_ratio
    won = "IREE's choice stays" if ratio is None else f"winner {ratio:.3f}: {record.winner}"
    return (
        f"{record.dispatch} ({root.op} {loops} {'/'.join(root.element_types)}, "
        f"{record.model}): {len(record.variants)} variants, {won}"
    )


def _export(database: db.TuningDb, target: Target, args: argparse.Namespace) -> None:
    spec = database.export_spec(target)
    with atomic_output_file(args.output) as handle:
        handle.write(spec)
    chosen, left_out = database.spec_records(target)
    print(f"wrote {args.output}: the tiles of {len(chosen)} root ops for target {target.key}")
    for op, loops in left_out:
        print(
            f"left out: {op} {'x'.join(map(str, loops))}: records of root ops of other "
            "maps or element types share it, which the spec's matcher does not tell apart"
        )


if __name__ == "__main__":
    sys.exit(cli.run_main(main, prog=PROG))
