"""plot_graph: draw a profiled graph with hot ops in red, and export it for other tools.

    plot_graph --path-to-mlir-graph mlir_graph.json -o out.svg        # event DAG
    plot_graph --path-to-mlir-graph op_graph.json -o out.svg -s       # + .png .dot .graphml
    plot_graph --path-to-mlir-graph op_graph.json -o top.svg --nodes 40 --depth 3

The input is detected by its `format` field (docs/formats.md). The output
format comes from the extension of `-o`; `-s` also saves every other format
beside it. The thin CLI is `main`; other stages call `plot_graph`.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from tfpgo import HOT_OPS
from tfpgo.atomic import check_output_path
from tfpgo.attribution.op_profile import OpProfile
from tfpgo.cli import (
    ArgumentParser,
    fraction,
    nonnegative_int,
    positive_int,
    run_main,
    user_path,
)
from tfpgo.errors import UserError
from tfpgo.render import PICTURE_FORMATS, RenderOptions, load_graph, prepare, write_pictures
from tfpgo.render.exports import EXPORT_FORMATS, ExportInput, write_exports
from tfpgo.render.layout import ENGINES
from tfpgo.render.metrics import Metric
from tfpgo.render.model import RenderGraph


@dataclass(frozen=True)
class PlotResult:
    written: tuple[Path, ...]
    engine: str | None
    nodes_drawn: int


def plot_graph(
    graph: RenderGraph,
    output: Path | None,
    options: RenderOptions,
    save_all: bool = False,
    exports: Mapping[str, Path] | None = None,
    op_profile: OpProfile | None = None,
) -> PlotResult:
    """Draws `graph` to `output` (and siblings if `save_all`) and writes the
    requested exports (format name -> path, see tfpgo.render.exports)."""
    written: list[Path] = []
    engine = None
    drawn = prepare(graph, options)
    if output is not None:
        paths = [output]
        if save_all:
            paths += [
                output.with_suffix("." + fmt)
                for fmt in PICTURE_FORMATS
                if output.with_suffix("." + fmt) != output
            ]
        engine = write_pictures(drawn, options, paths)
        written += paths
    written += write_exports(ExportInput(graph, options, op_profile), exports or {})
    return PlotResult(tuple(written), engine, len(drawn.nodes))


def _export_flag(name: str) -> str:
    return "export_" + name.replace("-", "_")


def build_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(
        prog="plot_graph",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--path-to-mlir-graph",
        required=True,
        metavar="JSON",
        help="mlir_graph.json (event DAG) or op_graph.json (op graph)",
    )
    parser.add_argument(
        "-o",
        "--output",
        metavar="PATH",
        help="picture to write: .svg .png .dot .graphml "
        "(default: <input>.svg unless only exports are asked)",
    )
    parser.add_argument(
        "-s",
        "--save-all",
        action="store_true",
        help="also save .svg, .png, .dot and .graphml beside -o",
    )
    parser.add_argument(
        "--metric",
        choices=[m.value for m in Metric],
        default="self",
        help="what the color encodes (default: self time)",
    )
    parser.add_argument(
        "--hot-k",
        type=nonnegative_int,
        metavar="K",
        help=f"mark the K hottest ops red (default: the document's hot marks, else {HOT_OPS})",
    )
    parser.add_argument(
        "--hot-share",
        type=fraction,
        metavar="F",
        help="also mark red every op with at least this share of self time (besides "
        "--hot-k's; pgo's --min-share is a filter, this adds)",
    )
    parser.add_argument(
        "--depth",
        type=positive_int,
        metavar="N",
        help="collapse name scopes deeper than N into summary nodes",
    )
    parser.add_argument(
        "--nodes",
        type=positive_int,
        metavar="N",
        help="draw only the N hottest nodes and the paths between them",
    )
    parser.add_argument(
        "--engine",
        choices=["auto", *ENGINES],
        default="auto",
        help="Graphviz layout engine (auto: dot up to 1500 nodes, else sfdp)",
    )
    for name, export in EXPORT_FORMATS.items():
        parser.add_argument(f"--export-{name}", metavar="PATH", help=export.help)
    parser.add_argument(
        "--op-profile",
        metavar="JSON",
        help="op_profile.json for --export-csv (default: the input graph)",
    )
    return parser


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    graph_path = user_path(args.path_to_mlir_graph)
    exports = {
        name: user_path(getattr(args, _export_flag(name)))
        for name in EXPORT_FORMATS
        if getattr(args, _export_flag(name))
    }
    if args.op_profile and "csv" not in exports:
        raise UserError("--op-profile is only read for --export-csv")
    output = user_path(args.output) if args.output else None
    if output is None and not exports:
        output = user_path(Path(graph_path.name).with_suffix(".svg"))
    if args.save_all and output is None:
        raise UserError("-s needs -o: it saves every format beside the -o file")
    if output is not None:
        check_output_path(output, "-o")
    for name, path in exports.items():
        check_output_path(path, f"--export-{name}")
    options = RenderOptions(
        metric=Metric(args.metric),
        hot_k=args.hot_k,
        hot_share=args.hot_share,
        depth=args.depth,
        top=args.nodes,
        engine=args.engine,
    )
    op_profile = OpProfile.read(user_path(args.op_profile)) if args.op_profile else None
    result = plot_graph(load_graph(graph_path), output, options, args.save_all, exports, op_profile)
    for path in result.written:
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(run_main(main, prog="plot_graph"))
