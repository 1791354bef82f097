"""pgo: profile a TensorFlow model, annotate its MLIR with the profile, draw it.

    bazel run //:pgo                                   # default model into ./pgo_out
    bazel run //:pgo -- --model rnn --mode train --steps 5
    bazel run //:pgo -- --from-trace logdir/ --mlir model.mlir

Every stage announces itself and its duration on stderr; the last line names the
report. The output directory is replaced only when every stage succeeded.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tfpgo import HOT_OPS
from tfpgo.cli import (
    ArgumentParser,
    fraction,
    nonnegative_int,
    port_number,
    positive_int,
    user_path,
)
from tfpgo.errors import UserError
from tfpgo.flow.stages import FlowOptions, run_flow
from tfpgo.mlir.iree_loops import UNROLL_OPS
from tfpgo.mlir.lowering import LEVELS
from tfpgo.models import BUILTIN_MODELS, DEFAULT_MODEL
from tfpgo.models.profiling import ProfilerLevels
from tfpgo.trace.hosts import add_host_reading_arguments, host_reading_from_args
from tfpgo.tune.db import default_path
from tfpgo.tune.precision import DEFAULT_MAX_OUTPUT_ERROR, FLOAT32, PRECISIONS


def _level(top: int) -> Callable[[str], int]:
    def level(text: str) -> int:  # argparse names it: "invalid level value: 'x'"
        value = int(text)
        if not 0 <= value <= top:
            raise argparse.ArgumentTypeError(f"must be in 0..{top}")
        return value

    return level


DEFAULT_TUNE_BUDGET_S = 600.0


def budget_minutes(text: str) -> float:  # argparse names it: "invalid budget_minutes value"
    """argparse type: a number of minutes, 0 or more, returned in seconds."""
    value = float(text)
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError("must be 0 or a positive number of minutes")
    return value * 60


def minutes(text: str) -> float:  # argparse names it: "invalid minutes value"
    """argparse type: a positive number of minutes, returned in seconds."""
    value = float(text)
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError("must be a positive number of minutes")
    return value * 60


def build_parser(prog: str = "pgo") -> argparse.ArgumentParser:
    parser = ArgumentParser(
        prog=prog,
        description=__doc__.split("\n\n")[0],
        epilog=__doc__.split("\n\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_model_flags(parser.add_argument)
    _add_output_flags(parser.add_argument)
    _add_lowering_flags(parser)
    _add_optimize_flags(parser.add_argument)
    add_host_reading_arguments(parser)
    return parser


def _add_model_flags(add: Callable[..., Any]) -> None:
    """What runs and how it is profiled: the model, its inputs, steps and tracers."""
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
    add(
        "--signature",
        default="serving_default",
        help="a SavedModel's signature to profile (default serving_default)",
    )
    add(
        "--input",
        action="append",
        default=[],
        metavar="NAME=SHAPE[:DTYPE]",
        help="example input of a SavedModel signature that does not size it, e.g. "
        "word=4:string or x=8x224x224x3 (scalar for rank 0); repeatable",
    )
    add("--steps", type=positive_int, default=5, help="profiled steps (default 5)")
    add(
        "--warmup",
        type=nonnegative_int,
        default=2,
        help="unprofiled warmup steps first (default 2)",
    )
    add("--batch-size", type=positive_int, default=32, help="batch size of the inputs (default 32)")
    add(
        "--host-tracer-level",
        type=_level(3),
        default=3,
        help="0..3; 3 (default) records every TF op, 2 drops cheap ones",
    )
    add("--python-tracer-level", type=_level(1), default=0, help="0/1: trace Python calls")
    add("--device-tracer-level", type=_level(1), default=1, help="0/1: device (CPU) tracer")


def _add_output_flags(add: Callable[..., Any]) -> None:
    """Where the run writes and what it marks and draws, or the trace it reads."""
    add(
        "--output-dir",
        default="pgo_out",
        help="where everything goes (default ./pgo_out; replaced as a whole, only on success: "
        "must be new, empty or a previous pgo output)",
    )
    add(
        "--top-k",
        type=nonnegative_int,
        default=HOT_OPS,
        help=f"mark at most the K hottest ops as hot (default {HOT_OPS}; 0 = no limit)",
    )
    add(
        "--min-share",
        type=fraction,
        default=0.01,
        help="mark only ops with at least this share of op self time, and under --optimize "
        "choose only XLA regions with at least this share (default 0.01 = 1%%)",
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


def _add_lowering_flags(parser: argparse.ArgumentParser) -> None:
    """--lower and --tune, with their budget and records."""
    add = parser.add_argument
    add(
        "--lower",
        choices=LEVELS,
        help="also lower the frozen model with TensorFlow's passes to StableHLO (and on to "
        "linalg with IREE) and re-attach the profile there: model.<level>.mlir, its op graph "
        "and the reachable share of op time per level in the report; iree: also compile the "
        "program with IREE, run it on the same inputs, compare with TensorFlow and profile "
        "its dispatches (iree_profile.json, model.iree.vmfb)",
    )
    add(
        "--unroll-ops",
        type=nonnegative_int,
        metavar="OPS",
        help="with --lower: unroll a loop of known trips whole when its trips times the ops "
        f"of one trip are at most OPS (default {UNROLL_OPS}; 0: never): no trip then waits "
        "on the host (docs/lowering.md)",
    )
    add(
        "--tune",
        action="store_true",
        help="with --lower iree: tune the compiled program from its profile: profile-guided "
        "rewrites (tfpgo-opt's tf-profile-guided-conv-to-dot) and compiler options, each "
        "checked against TensorFlow's outputs and timed against the current best (interleaved "
        "A/B); what wins is kept and profiled again (tune.json, iree_profile.tuned.json, "
        "model.tuned.vmfb, a Tuning section in the report)",
    )
    add(
        "--tune-budget",
        type=budget_minutes,
        metavar="MINUTES",
        help="--tune: the time the tuning loop may take, in minutes (default 10); 0 builds "
        "the program the tuning database recorded for this program and target, measuring "
        "nothing (one compile and one numerics check)",
    )
    records = parser.add_mutually_exclusive_group()
    records.add_argument(
        "--tuning-db",
        type=Path,
        metavar="PATH",
        help="--tune: the tuning database (SQLite) to read what earlier runs measured from and "
        "record this run's in (default $XDG_CACHE_HOME/tfpgo/tuning.db, else "
        "~/.cache/tfpgo/tuning.db)",
    )
    records.add_argument(
        "--no-tuning-db",
        action="store_true",
        help="--tune: read and record nothing: every run starts from zero",
    )
    add(
        "--retune",
        action="store_true",
        help="--tune: measure every candidate again, whatever the tuning database recorded "
        "(and record the new measurements)",
    )
    add(
        "--precision",
        choices=PRECISIONS,
        default=FLOAT32,
        help="--tune: the lowest precision its programs may compute in (default float32: "
        "none changes it); bf16 lets it try bfloat16 inputs to matmuls and convolutions on a "
        "CPU with bfloat16 units (float32 sums), each held to --max-output-error and kept "
        "only when it is faster",
    )
    add(
        "--max-output-error",
        type=fraction,
        metavar="FRACTION",
        help="--precision bf16: the largest difference its programs' outputs may have from "
        f"TensorFlow's float32 ones, as a share of their largest magnitude (default "
        f"{DEFAULT_MAX_OUTPUT_ERROR:g})",
    )
    add(
        "--min-coverage",
        type=fraction,
        default=0.9,
        help="fail when less than this share of TF op time lands on module ops (default 0.9)",
    )


def _add_optimize_flags(add: Callable[..., Any]) -> None:
    """--optimize and its A/B, and Model Explorer."""
    add(
        "--optimize",
        action="store_true",
        help="after profiling: apply each applicable proposal of the proposer and measure it "
        "against the baseline (interleaved A/B): ratio, interval and verdict in the report "
        "and optimize.json; the best candidate's profile diff in optimize/",
    )
    add(
        "--ab-repetitions",
        type=positive_int,
        default=10,
        help="--optimize: blocks an arm (default 10)",
    )
    add("--ab-steps", type=positive_int, default=10, help="--optimize: steps a block (default 10)")
    add(
        "--optimize-budget",
        type=minutes,
        metavar="MINUTES",
        help="--optimize: the time the stage may take, in minutes (default: no limit); "
        "proposals are measured in the order of the op-time share their evidence names, "
        "each only with room for its measurement, the others listed as not tried",
    )
    add(
        "--optimize-unchecked",
        action="store_true",
        help="--optimize: also time candidates whose numerics cannot be checked (a step that "
        "differs from itself from the same state, a change that draws other random numbers), "
        "marked 'numerics not checked'",
    )
    add(
        "--explore",
        action="store_true",
        help="when done, open the output in Model Explorer on 127.0.0.1 (the URL is printed; "
        "Ctrl-C stops it): bazel run //tools:explore -- DIR does the same later",
    )
    add(
        "--explore-port",
        type=port_number,
        default=8080,
        help="--explore: the port (default 8080; checked free before anything runs)",
    )


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
        lower=_levels_up_to(args.lower),
        unroll_ops=args.unroll_ops,
        tune_budget_s=_tune_budget(args),
        tuning_db=_tuning_db(args),
        retune=args.retune,
        max_output_error=_max_output_error(args),
        optimize=args.optimize,
        ab_repetitions=args.ab_repetitions,
        ab_steps=args.ab_steps,
        optimize_unchecked=args.optimize_unchecked,
        optimize_budget_s=args.optimize_budget,
        signature=args.signature,
        inputs=tuple(args.input),
        host_reading=host_reading_from_args(args),
    )


def _tune_budget(args: argparse.Namespace) -> float | None:
    """--tune's budget in seconds (10 minutes unless --tune-budget says), None
    without --tune; --tune-budget alone is a mistake, said in one line."""
    if not args.tune:
        if args.tune_budget is not None:
            raise UserError("--tune-budget bounds --tune: add --tune (and --lower iree)")
        return None
    return args.tune_budget if args.tune_budget is not None else DEFAULT_TUNE_BUDGET_S


def _max_output_error(args: argparse.Namespace) -> float | None:
    """The output error --precision bf16 allows (None: float32 only); either flag
    where it means nothing is one line."""
    if args.precision == FLOAT32:
        if args.max_output_error is not None:
            raise UserError(
                "--max-output-error bounds what --precision bf16 may cost: add --precision bf16"
            )
        return None
    if not args.tune:
        raise UserError(
            f"--precision {args.precision} lets --tune try it: add --tune (and --lower iree)"
        )
    if args.max_output_error == 0:
        raise UserError(
            "--max-output-error 0 allows no difference, which no bfloat16 program keeps: give "
            "a share above 0 (0.01 = 1%) or drop --precision bf16"
        )
    return DEFAULT_MAX_OUTPUT_ERROR if args.max_output_error is None else args.max_output_error


def _tuning_db(args: argparse.Namespace) -> Path | None:
    """The tuning database's path for --tune (None: --no-tuning-db); its flags
    without --tune, or a build from records without one, are one line each."""
    given = [flag for flag, on in (("--tuning-db", args.tuning_db is not None),
             ("--no-tuning-db", args.no_tuning_db), ("--retune", args.retune)) if on]  # fmt: skip
    if given and not args.tune:
        raise UserError(f"{given[0]} is for --tune: add --tune (and --lower iree)")
    if args.tune_budget == 0 and (args.no_tuning_db or args.retune):
        flag = "--no-tuning-db" if args.no_tuning_db else "--retune"
        raise UserError(
            f"--tune-budget 0 builds from the tuning database's records, which {flag} "
            "leaves aside: drop one of the two"
        )
    if args.no_tuning_db:
        return None
    return args.tuning_db if args.tuning_db is not None else default_path()


def _levels_up_to(level: str | None) -> tuple[str, ...]:
    """`--lower linalg` goes through StableHLO: every level up to the named one."""
    if level is None:
        return ()
    return LEVELS[: LEVELS.index(level) + 1]


def main(argv: list[str], prog: str = "pgo") -> int:
    """`prog`: the command's name in its lines (`tfpgo` as the wheel installs it)."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    args = build_parser(prog).parse_args(argv)
    options = options_from_args(args)
    if args.explore:
        from tfpgo.render.explore import check_port_free

        check_port_free(args.explore_port, "--explore-port")
    result = run_flow(options)
    seconds = ", ".join(f"{name} {value:.1f}s" for name, value in result.stage_seconds)
    time = "device time" if result.attribution.profile_device_ps else "TF op time"
    print(
        f"{prog}: {result.attribution.coverage:.2%} of {time} attributed; {seconds}",
        file=sys.stderr,
    )
    print(f"{prog}: report: {result.report_html}")
    if args.explore:
        from tfpgo.render.explore import exploration, serve

        serve(exploration(result.output_dir), args.explore_port)
    return 0
