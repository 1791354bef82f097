"""`tfpgo.compile`: the whole flow on a step the caller has already built.

    compiled = tfpgo.compile(train_step, x, y)      # profile, annotate, lower: ./tfpgo_out
    loss = compiled.step(x, y)                      # the program IREE compiled, as the step

The same stages as `pgo` (tfpgo.flow.stages.run_flow), in the caller's process,
on a `tf.function` or a Keras model and the arguments one step is called with;
the same progress lines on stderr and the same output directory. The caller's
variables are left as they were: profiling and lowering run the step, and a
training step's runs would otherwise train the model. The returned step starts
from those variables.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tfpgo.cli import user_path
from tfpgo.errors import UserError
from tfpgo.flow.distribution import require
from tfpgo.flow.options import FlowOptions
from tfpgo.mlir.lowering import LEVELS
from tfpgo.models.case import Mode, ModelCase, parse_mode
from tfpgo.runtime.step import Step, check_driver
from tfpgo.tune.db import default_path

DEFAULT_OUTPUT_DIR = "tfpgo_out"
DEFAULT_TUNE_MINUTES = 10.0
# Ops of a traced step that write a variable: a step with one trains (or keeps
# state, as batch normalization's moving averages do).
_WRITES = ("AssignVariableOp", "AssignAddVariableOp", "AssignSubVariableOp")
_WRITE_PREFIXES = ("ResourceApply", "ResourceSparseApply", "ResourceScatter")


@dataclass(frozen=True)
class Compiled:
    """What `compile` made: the step to call (None unless lowered to IREE), the
    output directory `pgo` would have written, and its report."""

    step: Step | None
    output_dir: Path
    report: Path
    stage_seconds: tuple[tuple[str, float], ...]


def compile(  # tfpgo.compile, as torch.compile: "optimize" is --optimize's measured advice
    step: Any,
    *example_args: Any,
    lower: str | None = "iree",
    mode: str | None = None,
    tune: bool = False,
    tune_minutes: float | None = None,
    tuning_db: str | os.PathLike[str] | bool = True,
    output_dir: str | os.PathLike[str] = DEFAULT_OUTPUT_DIR,
    steps: int = 5,
    warmup: int = 2,
    driver: str | None = None,
    max_output_error: float | None = None,
) -> Compiled:
    """Profiles `step(*example_args)`, annotates its MLIR, lowers it to `lower`
    ("stablehlo", "linalg" or "iree"; None: annotate only) and, with `tune`,
    tunes IREE's program for at most `tune_minutes` (default 10; 0 builds what
    the tuning database recorded). `step`: a `tf.function` or a Keras model;
    `mode`: "train" or "infer", by default "train" for a `tf.function` that
    writes variables and "infer" otherwise (a Keras model in "train" is trained
    on its squared output with SGD, as `pgo --mode train`). `tuning_db`: the
    tuning database's path, True for the default one, False for none.
    `output_dir` is replaced as a whole, as `pgo --output-dir`. `driver`: IREE's
    CPU driver for the returned step (tfpgo.runtime.load). `max_output_error`
    (with `tune`), as `pgo --precision bf16 --max-output-error`: lets the tuning
    try bfloat16 contractions whose outputs stay within that share of their
    largest magnitude (None: float32 only). Every problem is one UserError line."""
    require("flow", "tfpgo.compile")
    options = _options(lower, tune, tune_minutes, tuning_db, output_dir, steps, warmup)
    if max_output_error is not None:
        if not tune:
            raise UserError("max_output_error bounds what tune=True may try: add tune=True")
        if not 0 < max_output_error <= 1:
            raise UserError(
                f"max_output_error={max_output_error}: give a share above 0 and at most 1 "
                "(0.01 = 1% of the outputs' largest magnitude)"
            )
        options = dataclasses.replace(options, max_output_error=max_output_error)
    check_driver(driver)
    if driver is not None and lower != "iree":
        raise UserError(f"driver= runs the program IREE compiles: lower='iree', not {lower!r}")
    case = model_case(step, example_args, mode)
    options = dataclasses.replace(
        options, model=case.name, mode=case.mode.value, batch_size=case.batch_size, case=case
    )
    from tfpgo.flow.stages import run_flow  # imports the flow's packages: after `require`

    restore = _variable_snapshot(case)
    try:
        result = run_flow(options)
    finally:
        restore()
    loaded = None
    if "iree" in options.lower:
        from tfpgo.runtime import load

        train = case.mode is Mode.TRAIN
        loaded = load(result.output_dir, variables=case.function if train else None, driver=driver)
    return Compiled(loaded, result.output_dir, result.report_html, result.stage_seconds)


def _options(
    lower: str | None,
    tune: bool,
    tune_minutes: float | None,
    tuning_db: str | os.PathLike[str] | bool,
    output_dir: str | os.PathLike[str],
    steps: int,
    warmup: int,
) -> FlowOptions:
    """The flow's options from `compile`'s keywords, each checked by the name the
    caller wrote (the flow checks the rest, such as the output directory)."""
    if lower is not None and lower not in LEVELS:
        raise UserError(f"lower={lower!r}: use one of {', '.join(map(repr, LEVELS))} or None")
    if tune and lower != "iree":
        raise UserError(f"tune=True tunes the program IREE compiles: lower='iree', not {lower!r}")
    if tune_minutes is not None and not tune:
        raise UserError("tune_minutes bounds the tuning: add tune=True")
    if tune_minutes is not None and not 0 <= tune_minutes < float("inf"):
        raise UserError(f"tune_minutes={tune_minutes}: give 0 or a positive number of minutes")
    if not isinstance(steps, int) or steps < 1:
        raise UserError(f"steps={steps!r}: profile at least 1 step")
    if not isinstance(warmup, int) or warmup < 0:
        raise UserError(f"warmup={warmup!r}: give 0 or more warmup steps")
    if tuning_db is not True and not tune:
        raise UserError("tuning_db is for tune=True: add it, or leave tuning_db out")
    if tune_minutes == 0 and tuning_db is False:
        raise UserError(
            "tune_minutes=0 builds from the tuning database's records, which tuning_db=False "
            "leaves aside: drop one of the two"
        )
    database = default_path() if tuning_db is True else (tuning_db or None)
    return FlowOptions(
        steps=steps,
        warmup=warmup,
        output_dir=user_path(output_dir),
        lower=LEVELS[: LEVELS.index(lower) + 1] if lower else (),
        tune_budget_s=(DEFAULT_TUNE_MINUTES if tune_minutes is None else tune_minutes) * 60
        if tune
        else None,
        tuning_db=Path(database) if database else None,
    )


def model_case(step: Any, example_args: tuple[Any, ...], mode: str | None) -> ModelCase:
    """The ModelCase of the caller's step: a Keras model as `pgo` wraps one
    (tfpgo.models.builtin.keras_case), a `tf.function` as it is."""
    from tfpgo.models.builtin import keras_case
    from tfpgo.models.user import is_keras_model

    if not example_args:
        raise UserError("example_args: give the arguments one step is called with")
    batch = _batch_size(example_args[0])
    if is_keras_model(step):
        name = step.name
        chosen = parse_mode(mode or Mode.INFER)
        return keras_case(name, step, example_args, chosen, batch, f"Keras model {name}")
    if not hasattr(step, "get_concrete_function"):
        raise UserError(
            f"step: a {type(step).__name__}; give a tf.function or a Keras model "
            "(wrap a Python function in tf.function)"
        )
    name = getattr(step, "__name__", None) or type(step).__name__
    concrete = _traced(step, example_args, name)
    chosen = (
        parse_mode(mode) if mode else (Mode.TRAIN if _writes_variables(concrete) else Mode.INFER)
    )
    return ModelCase(name, chosen, batch, step, example_args, f"tf.function {name}")


def _batch_size(first: Any) -> int:
    """The leading dimension of the first argument (what the report calls the
    batch); 1 for a scalar or a nest."""
    shape = getattr(first, "shape", None)
    return int(shape[0]) if shape is not None and len(shape) and shape[0] else 1


def _traced(step: Any, example_args: tuple[Any, ...], name: str) -> Any:
    """The concrete function the arguments select; a step that cannot be traced
    with them is the caller's error, in one line."""
    try:
        return step.get_concrete_function(*example_args)
    except Exception as error:  # the caller's code or arguments: name them, one line
        detail = " ".join(str(error).split())[:300]
        raise UserError(
            f"{name}(*example_args) does not trace: {type(error).__name__}: {detail}"
        ) from None


def _writes_variables(concrete: Any) -> bool:
    """Whether the traced step (or a function it calls) writes a variable."""
    graph = concrete.graph.as_graph_def()
    nodes = [*graph.node, *(node for f in graph.library.function for node in f.node_def)]
    return any(n.op in _WRITES or n.op.startswith(_WRITE_PREFIXES) for n in nodes)


def _variable_snapshot(case: ModelCase) -> Callable[[], None]:
    """Puts back every variable the step captures (tfpgo.runtime.wallclock)."""
    from tfpgo.runtime.wallclock import variable_values

    return variable_values(case.function, case.inputs)
