"""What one run of the flow is asked to do: `pgo`'s options, as a record, and
the checks that refuse a run that could not do it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from tfpgo import HOT_OPS
from tfpgo.atomic import check_output_path
from tfpgo.cli import working_directory
from tfpgo.errors import UserError
from tfpgo.mlir import annotate, lowering
from tfpgo.models import DEFAULT_MODEL, ModelCase, check_model_spec
from tfpgo.models.profiling import ProfilerLevels
from tfpgo.models.user import SignatureChoice, parse_input
from tfpgo.render import PICTURE_FORMATS
from tfpgo.trace.hosts import HostReading
from tfpgo.trace.readers import check_trace_input


@dataclass(frozen=True)
class FlowOptions:
    model: str = DEFAULT_MODEL
    mode: str = "infer"
    steps: int = 5
    warmup: int = 2
    batch_size: int = 32
    levels: ProfilerLevels = field(default_factory=ProfilerLevels)
    output_dir: Path = Path("pgo_out")
    top_k: int = HOT_OPS
    min_share: float = 0.01
    from_trace: Path | None = None
    mlir: Path | None = None
    formats: tuple[str, ...] = ("svg", "png")
    picture_nodes: int = 150
    min_coverage: float = 0.9
    # Lower the profiled function to these levels (lowering.LEVELS, in order).
    lower: tuple[str, ...] = ()
    # A loop of known trips is unrolled when its trips times the ops of one trip are
    # at most this many (tfpgo.mlir.iree_loops; 0: never; None: UNROLL_OPS).
    unroll_ops: int | None = None
    # --tune: seconds the tuning loop may start candidates in (None: no tuning; 0:
    # build from the tuning database's records).
    tune_budget_s: float | None = None
    # --tune: the tuning database (None: none, every run starts from zero), and
    # whether to measure again what it recorded.
    tuning_db: Path | None = None
    retune: bool = False
    # --precision bf16: --tune may demote contractions' inputs, keeping the
    # outputs within max_output_error of their largest magnitude (None: float32
    # only; tfpgo.tune.precision).
    max_output_error: float | None = None
    # Measure the proposer's advice (tfpgo.proposer): A/B blocks an arm, steps a block.
    optimize: bool = False
    ab_repetitions: int = 10
    ab_steps: int = 10
    # Time candidates whose numerics cannot be checked, marked so in the report.
    optimize_unchecked: bool = False
    # --optimize-budget: seconds the optimize stage may take (None: no limit).
    optimize_budget_s: float | None = None
    # A SavedModel's signature and example inputs (`NAME=SHAPE[:DTYPE]`).
    signature: str = "serving_default"
    inputs: tuple[str, ...] = ()
    # How the hosts of a multi-host trace are read (local processes, or a Dask cluster).
    host_reading: HostReading = field(default_factory=HostReading)
    # The step already built in this process (tfpgo.compile), profiled instead of
    # loading `model`, which then only names it.
    case: ModelCase | None = None


def check_options(options: FlowOptions) -> None:
    """Refuses, in one line each, options that do not go together or name what is
    not there, before anything runs."""
    if (options.from_trace is None) != (options.mlir is None):
        raise UserError("--from-trace and --mlir go together: the trace and the module it ran")
    if options.case is not None:
        _check_case(options)
    elif options.from_trace is None:
        check_model_spec(options.model)
    unknown = sorted(set(options.formats) - set(PICTURE_FORMATS))
    if unknown or not options.formats:
        named = f"unknown {', '.join(unknown)}" if unknown else "no format named"
        raise UserError(f"--formats: {named}; use {','.join(PICTURE_FORMATS)}")
    if options.top_k < 0:
        raise UserError("--top-k must not be negative")
    lowering.check_levels(options.lower)
    if "iree" in options.lower and options.from_trace is not None:
        raise UserError(
            "--lower iree compiles and runs the loaded model's step: it needs a model to "
            "profile (not --from-trace)"
        )
    if options.tune_budget_s is not None and "iree" not in options.lower:
        raise UserError("--tune tunes the program IREE compiles: add --lower iree")
    if options.optimize and options.from_trace is not None:
        raise UserError("--optimize measures the loaded model: it does not go with --from-trace")
    _check_signature_choice(options)
    if options.optimize_unchecked and not options.optimize:
        raise UserError(
            "--optimize-unchecked says which candidates --optimize times: add --optimize"
        )
    if options.optimize_budget_s is not None and not options.optimize:
        raise UserError("--optimize-budget bounds --optimize: add --optimize")
    if options.unroll_ops is not None and not options.lower:
        raise UserError("--unroll-ops bounds the loops --lower unrolls: add --lower")
    _check_output_dir(options.output_dir, options.from_trace)
    if options.from_trace is not None and options.mlir is not None:
        check_trace_input(options.from_trace, "--from-trace")
        _check_module_input(options.mlir)


def _check_case(options: FlowOptions) -> None:
    """A step handed over in-process is profiled as it is: no trace to read
    instead, and no --optimize, whose workers build the model again from its
    name or path."""
    if options.from_trace is not None:
        raise UserError("a step to profile and --from-trace exclude each other: give one")
    if options.optimize:
        raise UserError(
            "--optimize builds the model again in its workers: give the model by name or "
            "path (pgo --model), not as a step already built"
        )


def _check_module_input(mlir: Path) -> None:
    """--mlir: a readable text module that tfpgo-opt parses (StableHLO, which it
    reads only in generic form, is parsed when annotated)."""
    if not mlir.is_file():
        problem = "is a directory" if mlir.is_dir() else "no such file"
        raise UserError(f"--mlir {mlir}: {problem}; pass the .mlir file of the traced step")
    try:
        text = mlir.read_text()
    except OSError as error:
        raise UserError(f"--mlir {mlir}: cannot read: {error.strerror}") from None
    except UnicodeDecodeError:
        raise UserError(f"--mlir {mlir}: not text; pass the MLIR in its text form") from None
    if not lowering.is_stablehlo(text):
        annotate.check_module(mlir, "--mlir")


def signature_choice(options: FlowOptions) -> SignatureChoice:
    return SignatureChoice(options.signature, options.inputs)


def _check_signature_choice(options: FlowOptions) -> None:
    """--signature and --input: well formed, and for a SavedModel directory only."""
    for text in options.inputs:
        parse_input(text)
    if not options.signature:
        raise UserError("--signature: empty; name a signature of the SavedModel")
    chosen = options.inputs or options.signature != SignatureChoice().signature
    if chosen and (options.from_trace is not None or not Path(options.model).is_dir()):
        raise UserError(
            f"--signature and --input choose what a SavedModel directory runs; "
            f"{options.model} is not one"
        )


# Every finished run writes these: a directory holding them is a previous output.
_OUTPUT_SIGNATURE = ("report.md", "op_profile.json")


def _check_output_dir(path: Path, from_trace: Path | None) -> None:
    """The output directory is replaced as a whole on success: refuse anything but
    a new or empty directory or a previous pgo output, so no user file is lost."""
    check_output_path(path, "--output-dir", directory=True)
    here = working_directory().resolve()
    if here == path.resolve() or path.resolve() in here.parents:
        raise UserError(
            f"--output-dir {path}: is the directory you run from (or contains it), and the "
            "output directory is replaced as a whole; name a subdirectory such as pgo_out"
        )
    if path.is_dir() and any(path.iterdir()):
        missing = [name for name in _OUTPUT_SIGNATURE if not (path / name).is_file()]
        if missing:
            raise UserError(
                f"--output-dir {path}: not empty and not a previous pgo output (no "
                f"{', '.join(missing)}); pgo replaces it as a whole, so name a new or "
                "empty directory"
            )
    if from_trace is not None and from_trace.resolve() == path.resolve():
        raise UserError(
            f"--from-trace {from_trace}: is the output directory itself; pass its profile/ "
            "logdir (the output directory is replaced)"
        )
