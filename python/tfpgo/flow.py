"""pgo: profile a TensorFlow model, annotate its MLIR with the profile, draw it.

    bazel run //:pgo                                   # default model into ./pgo_out
    bazel run //:pgo -- --model rnn --mode train --steps 5
    bazel run //:pgo -- --from-trace logdir/ --mlir model.mlir

Stages, each announced with its duration: model → profile → MLIR export →
trace reader (event DAG + op profile) → tfpgo-opt `tf-profile-guided-pipeline`
(annotated MLIR + op graph) → TensorFlow's own `tf-standard-pipeline` on the
annotated module → pictures and exports → report. Everything is written into a
staging directory that replaces the output directory only when all stages
succeeded: a failed run leaves the previous output untouched.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from tfpgo import annotate, report
from tfpgo.cli import UserError, atomic_output_dir, run_main, user_path
from tfpgo.models import BUILTIN_MODELS, DEFAULT_MODEL
from tfpgo.op_profile import OpProfile
from tfpgo.plot_graph import Exports, plot_graph
from tfpgo.profiling import ProfilerLevels
from tfpgo.render import RenderOptions, load_graph, prepare, write_pictures

T = TypeVar("T")

PICTURE_FORMATS = ("svg", "png", "dot", "graphml")

# What each output file is; the report lists the ones a run produced.
OUTPUT_FILES = {
    "profile": "TensorBoard/xprof logdir of the profiled steps (plugins/profile/<run>/*.xplane.pb)",
    "model.mlir": "the profiled function as tf-dialect MLIR with node-name locations",
    "mlir_graph.json": "event DAG of the profile (docs/formats.md)",
    "op_profile.json": "per-op profile: runtime node name → count, total, self, percentiles",
    "model.annotated.mlir": "model.mlir with profiler_data on every executed op, hot marks",
    "op_graph.json": "annotated op graph (docs/formats.md)",
    "op_graph.{fmt}": "op graph colored by self time, hot ops red",
    "event_dag.{fmt}": "event DAG (hottest events), critical path highlighted",
    "model_explorer.json": "Model Explorer node data: colors the same model in its graph view",
    "trace.json": "Chrome/Perfetto trace-event JSON of the profiled events",
    "op_profile.csv": "the op profile as CSV",
    "report.md": "this report (Markdown)",
    "report.html": "this report (HTML, pictures inline)",
}


@dataclass(frozen=True)
class FlowOptions:
    model: str = DEFAULT_MODEL
    mode: str = "infer"
    steps: int = 5
    warmup: int = 2
    batch_size: int = 32
    levels: ProfilerLevels = field(default_factory=ProfilerLevels)
    output_dir: Path = Path("pgo_out")
    top_k: int = 5
    min_share: float = 0.01
    from_trace: Path | None = None
    mlir: Path | None = None
    formats: tuple[str, ...] = ("svg", "png")
    picture_nodes: int = 150
    min_coverage: float = 0.9


@dataclass(frozen=True)
class FlowResult:
    output_dir: Path
    report_md: Path
    report_html: Path
    attribution: annotate.Attribution
    stage_seconds: tuple[tuple[str, float], ...]


class Progress:
    """Announces each stage on stderr and keeps its duration."""

    def __init__(self, total: int, stream=sys.stderr) -> None:
        self.total, self.stream, self.index = total, stream, 0
        self.seconds: list[tuple[str, float]] = []

    def stage(self, name: str, what: str, work: Callable[[], T]) -> T:
        self.index += 1
        print(f"[pgo {self.index}/{self.total}] {name}: {what}", file=self.stream, flush=True)
        start = time.perf_counter()
        result = work()
        elapsed = time.perf_counter() - start
        self.seconds.append((name, elapsed))
        print(f"[pgo {self.index}/{self.total}] {name}: done in {elapsed:.1f} s", file=self.stream)
        return result


def run_flow(options: FlowOptions) -> FlowResult:
    """Runs every stage into a staging copy of `options.output_dir`."""
    _check_options(options)
    with atomic_output_dir(options.output_dir) as staging:
        result = _run_stages(options, staging)
    final = options.output_dir
    return FlowResult(
        final, final / "report.md", final / "report.html", result[0], tuple(result[1])
    )


def _check_options(options: FlowOptions) -> None:
    if (options.from_trace is None) != (options.mlir is None):
        raise UserError("--from-trace and --mlir go together: the trace and the module it ran")
    for path in (options.from_trace, options.mlir):
        if path is not None and not path.exists():
            raise UserError(f"{path}: no such file or directory")
    unknown = sorted(set(options.formats) - set(PICTURE_FORMATS))
    if unknown:
        raise UserError(f"--formats: unknown {', '.join(unknown)}; use {','.join(PICTURE_FORMATS)}")
    if options.top_k < 0:
        raise UserError("--top-k must not be negative")


def _run_stages(options: FlowOptions, out: Path) -> tuple[annotate.Attribution, list]:
    profiling_run = options.from_trace is None
    progress = Progress(total=8 if profiling_run else 5)
    if profiling_run:
        trace, module, run_info = _profile_stages(options, out, progress)
    else:
        trace, module = options.from_trace, out / "model.mlir"
        module.write_bytes(options.mlir.read_bytes())
        run_info = report.RunInfo(
            model=str(options.mlir),
            mode=None,
            batch_size=None,
            steps=None,
            warmup=None,
            step_wall_ns=(),
            trace_source=str(trace),
            module="model.mlir",
        )
    profile = progress.stage("trace", f"reading {trace}", lambda: _read_trace(trace, out))
    attribution = progress.stage(
        "annotate",
        "tfpgo-opt --tf-profile-guided-pipeline",
        lambda: annotate.annotate_module(
            module,
            out / "op_profile.json",
            out / "model.annotated.mlir",
            out / "op_graph.json",
            options.top_k,
            options.min_share,
        ),
    )
    _check_coverage(attribution, options.min_coverage, trace, options.mlir or module)
    if profiling_run:
        progress.stage(
            "verify",
            "TensorFlow tf-standard-pipeline on the annotated module",
            lambda: _verify_in_tensorflow(out / "model.annotated.mlir"),
        )
    pictures = progress.stage("render", "pictures and exports", lambda: _render(options, out))
    progress.stage(
        "report",
        "report.md, report.html",
        lambda: _report(out, run_info, profile, attribution, pictures),
    )
    return attribution, progress.seconds


def _profile_stages(options: FlowOptions, out: Path, progress: Progress):
    from tfpgo import profiling
    from tfpgo.models import load_model

    case = progress.stage(
        "model",
        f"{options.model} ({options.mode}, batch {options.batch_size})",
        lambda: load_model(options.model, options.mode, options.batch_size),
    )
    run = progress.stage(
        "profile",
        f"{options.warmup} warmup + {options.steps} profiled steps",
        lambda: profiling.profile(
            case, out / "profile", options.steps, options.warmup, options.levels
        ),
    )
    module = out / "model.mlir"
    progress.stage(
        "export",
        "tf-dialect MLIR with node-name locations",
        lambda: module.write_text(profiling.export_mlir(case)),
    )
    info = report.RunInfo(
        model=case.name,
        mode=case.mode.value,
        batch_size=case.batch_size,
        steps=options.steps,
        warmup=options.warmup,
        step_wall_ns=run.step_wall_ns,
        trace_source=str(run.run_dir.relative_to(out)),
        module="model.mlir",
    )
    return run.logdir, module, info


def _read_trace(trace: Path, out: Path) -> OpProfile:
    from tfpgo import trace_reader

    result = trace_reader.run(
        trace, dag_out=out / "mlir_graph.json", op_profile_out=out / "op_profile.json"
    )
    return result.op_profile


def _check_coverage(
    attribution: annotate.Attribution, minimum: float, trace: Path, module: Path
) -> None:
    if attribution.coverage >= minimum:
        return
    worst = ", ".join(entry.name for entry in attribution.unresolved[:3])
    raise UserError(
        f"{trace}: only {attribution.coverage:.1%} of the TF op time resolves to ops of "
        f"{module} (unresolved e.g. {worst}); is this the trace of that module? "
        f"(--min-coverage {minimum} to accept less)"
    )


def _verify_in_tensorflow(annotated: Path) -> None:
    """Parses the annotated module in TensorFlow's registered tf dialect and runs
    TensorFlow's own standard pipeline on it: proof that it is valid tf dialect."""
    import tensorflow as tf

    try:
        optimized = tf.mlir.experimental.run_pass_pipeline(
            annotated.read_text(), "tf-standard-pipeline"
        )
    except Exception as error:  # TensorFlow raises bare Exceptions with MLIR diagnostics
        first = str(error).strip().splitlines()[:1]
        raise UserError(f"{annotated}: TensorFlow rejects the annotated module: {first}") from None
    if "profiler_data" not in optimized:
        raise UserError(f"{annotated}: TensorFlow's pipeline dropped every annotation")


def _render(options: FlowOptions, out: Path) -> list[tuple[str, str]]:
    """Both pictures in every requested format (one Graphviz layout per graph), and
    the exports: Model Explorer node data, Perfetto trace events, the CSV.

    A graph larger than `options.picture_nodes` is drawn as its hottest
    `picture_nodes` nodes (and the paths between them): a picture of thousands of
    nodes shows nothing; the full graphs stay in the JSON/GraphML files.
    """
    captions = {
        "op_graph": "op graph, colored by self time; hot ops red",
        "event_dag": "event DAG, colored by time; critical path in purple",
    }
    pictures = []
    picture = next((fmt for fmt in ("svg", "png") if fmt in options.formats), None)
    for stem, source in (("op_graph", "op_graph.json"), ("event_dag", "mlir_graph.json")):
        graph = load_graph(out / source)
        caption = captions[stem]
        top = None
        if len(graph.nodes) > options.picture_nodes:
            top = options.picture_nodes
            caption += f" ({top} hottest of {len(graph.nodes)} nodes)"
        render_options = RenderOptions(top=top)
        paths = [out / f"{stem}.{fmt}" for fmt in options.formats]
        write_pictures(prepare(graph, render_options), render_options, paths)
        if picture is not None:
            pictures.append((caption, f"{stem}.{picture}"))
    plot_graph(
        out / "op_graph.json",
        None,
        RenderOptions(),
        exports=Exports(model_explorer=out / "model_explorer.json"),
    )
    plot_graph(
        out / "mlir_graph.json",
        None,
        RenderOptions(),
        exports=Exports(
            trace=out / "trace.json",
            csv=out / "op_profile.csv",
            op_profile=out / "op_profile.json",
        ),
    )
    return pictures


def _report(out: Path, run_info, profile: OpProfile, attribution, pictures) -> None:
    files = []
    for name, what in OUTPUT_FILES.items():
        if "{fmt}" in name:
            pictures_made = [name.format(fmt=fmt) for fmt in PICTURE_FORMATS]
            files += [(made, what) for made in pictures_made if (out / made).exists()]
        elif (out / name).exists() or name.startswith("report."):
            files.append((name, what))
    report.write_reports(
        report.ReportInputs(
            run=run_info,
            profile=profile,
            op_graph=load_graph(out / "op_graph.json"),
            attribution=attribution,
            pictures=tuple(pictures),
            files=tuple(files),
        ),
        out,
    )


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def _level(top: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        value = int(text)
        if not 0 <= value <= top:
            raise argparse.ArgumentTypeError(f"must be in 0..{top}")
        return value

    return parse


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pgo",
        description=__doc__.split("\n\n")[0],
        epilog=__doc__.split("\n\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add = parser.add_argument
    add(
        "--model",
        default=DEFAULT_MODEL,
        help=f"built-in model ({', '.join(sorted(BUILTIN_MODELS))}; default {DEFAULT_MODEL}), "
        "a .py file with a tfpgo_model hook, a SavedModel directory or a .keras file",
    )
    add(
        "--mode",
        choices=["infer", "train"],
        default="infer",
        help="profile inference or a training step (GradientTape + optimizer)",
    )
    add("--steps", type=_positive, default=5, help="profiled steps (default 5)")
    add("--warmup", type=int, default=2, help="unprofiled warmup steps first (default 2)")
    add("--batch-size", type=_positive, default=32, help="batch size of the inputs (default 32)")
    add(
        "--host-tracer-level",
        type=_level(3),
        default=3,
        help="0..3; 3 (default) records every TF op, 2 drops cheap ones",
    )
    add("--python-tracer-level", type=_level(1), default=0, help="0/1: trace Python calls")
    add("--device-tracer-level", type=_level(1), default=1, help="0/1: device (CPU) tracer")
    add(
        "--output-dir",
        default="pgo_out",
        help="where everything goes (default ./pgo_out; replaced only on success)",
    )
    add(
        "--top-k",
        type=int,
        default=5,
        help="mark at most the K hottest ops as hot (default 5; 0 = no limit)",
    )
    add(
        "--min-share",
        type=float,
        default=0.01,
        help="mark only ops with at least this share of op self time (default 0.01 = 1%%)",
    )
    add(
        "--from-trace",
        metavar="PATH",
        help="skip profiling: an .xplane.pb, a logdir, an XSpace JSON or a Chrome trace "
        "(needs --mlir)",
    )
    add("--mlir", metavar="FILE", help="with --from-trace: the tf-dialect MLIR that ran")
    add(
        "--formats",
        default="svg,png",
        help="picture formats, comma-separated from svg,png,dot,graphml (default svg,png)",
    )
    add(
        "--min-coverage",
        type=float,
        default=0.9,
        help="fail when less than this share of TF op time lands on module ops (default 0.9)",
    )
    return parser


def options_from_args(args: argparse.Namespace) -> FlowOptions:
    return FlowOptions(
        model=args.model if args.model in BUILTIN_MODELS else str(user_path(args.model)),
        mode=args.mode,
        steps=args.steps,
        warmup=args.warmup,
        batch_size=args.batch_size,
        levels=ProfilerLevels(
            args.host_tracer_level, args.python_tracer_level, args.device_tracer_level
        ),
        output_dir=user_path(args.output_dir),
        top_k=args.top_k,
        min_share=args.min_share,
        from_trace=user_path(args.from_trace) if args.from_trace else None,
        mlir=user_path(args.mlir) if args.mlir else None,
        formats=tuple(fmt.strip() for fmt in args.formats.split(",") if fmt.strip()),
        min_coverage=args.min_coverage,
    )


def main(argv: list[str]) -> int:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    options = options_from_args(build_parser().parse_args(argv))
    result = run_flow(options)
    seconds = ", ".join(f"{name} {value:.1f}s" for name, value in result.stage_seconds)
    print(
        f"pgo: {result.attribution.coverage:.2%} of TF op time attributed; {seconds}",
        file=sys.stderr,
    )
    print(f"pgo: report: {result.report_html}")
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main, prog="pgo"))
