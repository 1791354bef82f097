"""`bazel run //tools:profile_diff -- A B`: compares two op profiles.

A and B are op_profile.json files, pgo output directories (their
op_profile.json), or IREE dispatch profiles (`iree_profile.json`,
`iree_profile.tuned.json` of `--lower iree [--tune]`), compared per tf op or,
with `--by dispatch`, dispatch by dispatch (`tfpgo.diff.iree_view`). Writes
diff.md, diff.html and diff.svg into `-o DIR` and prints the summary.
"""

from __future__ import annotations

from pathlib import Path

from tfpgo import cli, errors
from tfpgo.atomic import check_output_path
from tfpgo.attribution.op_profile import OpProfile
from tfpgo.diff import compare
from tfpgo.diff.iree_view import VIEWS, iree_view
from tfpgo.diff.output import summary_rows, write_outputs
from tfpgo.documents import read_json
from tfpgo.iree import profile_document

PROG = "profile_diff"


def build_parser() -> cli.ArgumentParser:
    parser = cli.ArgumentParser(
        prog=PROG,
        description="Compare two op profiles: per-op and per-scope deltas, added and removed "
        "ops, overlap score, step-time change with a 95%% confidence interval.",
    )
    parser.add_argument(
        "a", help="the baseline: op_profile.json, iree_profile.json or a pgo output directory"
    )
    parser.add_argument(
        "b", help="the changed run: op_profile.json, iree_profile.json or a pgo output directory"
    )
    parser.add_argument(
        "-o",
        "--output-dir",
        default="profile_diff",
        help="where diff.md, diff.html and diff.svg go (default: ./profile_diff)",
    )
    parser.add_argument(
        "--by",
        choices=VIEWS,
        default="op",
        help="IREE dispatch profiles: compare per tf op (default) or dispatch by dispatch",
    )
    parser.add_argument(
        "--rows", type=cli.positive_int, default=20, help="rows per table (default 20)"
    )
    return parser


def read_profile(path: Path, by: str = "op") -> OpProfile:
    """An op profile from its file or from the pgo output directory holding it, or
    an IREE dispatch profile viewed per tf op or per dispatch (`by`)."""
    if path.is_dir():
        document = path / "op_profile.json"
        if not document.is_file():
            raise errors.UserError(
                f"{path}: a directory without op_profile.json; pass an op_profile.json, "
                "an iree_profile.json or a pgo output directory"
            )
        path = document
    elif not path.exists():
        raise errors.UserError(f"{path}: no such file or directory; pass an op_profile.json")
    contents = read_json(path)
    if isinstance(contents, dict) and contents.get("format") == profile_document.FORMAT:
        return iree_view(profile_document.IreeProfile.from_json(contents, path), by)
    if by != "op":
        raise errors.UserError(
            f"{path}: --by {by} compares IREE dispatch profiles; this is not an "
            "iree_profile.json (pass the iree_profile.json files of --lower iree runs)"
        )
    return OpProfile.from_json(contents, str(path))


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    path_a, path_b = cli.user_path(args.a), cli.user_path(args.b)
    output_dir = cli.user_path(args.output_dir)
    check_output_path(output_dir, "-o", directory=True)
    diff = compare(read_profile(path_a, args.by), read_profile(path_b, args.by), args.a, args.b)
    written = write_outputs(diff, output_dir, args.rows)
    for key, value in summary_rows(diff):
        print(f"{key}: {value}")
    print("wrote " + ", ".join(str(path) for path in written))
    return 0
