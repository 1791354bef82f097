"""The lower stage (`--lower`): the profiled step to StableHLO, linalg and IREE's
dispatches, each level annotated (tfpgo.mlir.lowering), and `--tune` on the
program IREE compiles (tfpgo.tune.loop).

Which StableHLO (docs/lowering.md): an inference step is frozen and lowered by
TensorFlow's passes (tf-stablehlo, else the XLA bridge's); a training step, or an
inference step neither lowers, is taken as TensorFlow's XLA compiler compiles it
(tfpgo.mlir.compiled_step), its variables the program's parameters.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

from tfpgo import runtime
from tfpgo.errors import UserError
from tfpgo.flow.options import FlowOptions
from tfpgo.flow.program_manifest import write_program_manifest
from tfpgo.iree.profile_document import IreeProfile
from tfpgo.iree.program import ProfiledProgram, Workload
from tfpgo.iree.run import IREE_OP_GRAPH, write_iree_op_graph
from tfpgo.mlir import lowering, routes
from tfpgo.mlir.compiled_step import CompiledStep, XlaRefused, compile_step
from tfpgo.mlir.iree_loops import UNROLL_OPS
from tfpgo.models import ModelCase
from tfpgo.models.case import Mode
from tfpgo.runtime import anchors, openvino_layers, wallclock
from tfpgo.runtime.anchor_profile import ANCHOR_PROFILE, AnchorProfile
from tfpgo.runtime.manifest import MANIFEST
from tfpgo.tune import gradient_screen
from tfpgo.tune.form_cache import FormCache, default_cache

# How long --tune's last line times the step as a user's loop calls it.
WALLCLOCK_S = 5.0


def lowerable(case: ModelCase) -> str | CompiledStep:
    """What the lower stage lowers: an inference step frozen into a tf module; a
    training step as TensorFlow's XLA compiler's StableHLO, its variables the
    program's parameters and results (freezing would leave its writes nothing to
    write to)."""
    if case.mode is Mode.TRAIN:
        return compile_step(case.function, case.inputs)
    return lowering.freeze_and_export(case.concrete_function())


def lower(
    options: FlowOptions,
    out: Path,
    lowerable: str | CompiledStep,
    profile_self_ps: int,
    note: Callable[[str], None],
    case: ModelCase | None,
) -> list[lowering.LoweredLevel]:
    """Lowers `lowerable` to the levels `options.lower` asks for (an inference
    step neither pass route lowers as XLA compiles it), runs `--tune` on IREE's
    program, and says in one line a level what each holds."""
    iree = None
    if "iree" in options.lower and isinstance(lowerable, CompiledStep):
        iree = lowering.IreeRun(
            lowerable.inputs,
            lowerable.expected,
            options.steps,
            options.warmup,
            lowerable.reassociation,
        )
    elif "iree" in options.lower and case:
        iree = _iree_run(case, options.steps, options.warmup)
    if iree is not None:
        # Forms timed once per gradient and target, kept: runs build the same bytes.
        choose = gradient_screen.chooser(cache=FormCache(default_cache()))
        iree = dataclasses.replace(iree, choose_gradient_forms=choose)
    if iree is not None and options.tune_budget_s is not None:
        iree = dataclasses.replace(iree, then=tuner(out, options, note, case))
    op_profile, asked, total = out / "op_profile.json", options.lower, profile_self_ps
    unroll = UNROLL_OPS if options.unroll_ops is None else options.unroll_ops
    tf_level = lowering.TfLevel(op_profile, out / "attribution.json", out / "op_graph.json")
    step = lowerable if isinstance(lowerable, CompiledStep) else None
    if step is not None:
        levels = lowering.lower_compiled_step(step, tf_level, asked, out, total, iree, unroll)
    else:
        assert isinstance(lowerable, str)  # a frozen tf module
        try:
            levels = lowering.lower(lowerable, op_profile, asked, out, total, iree, unroll)
        except routes.NoStableHlo as neither:
            if case is None:  # a module of the user's: no function to compile
                raise
            step = _as_xla_compiles(neither, case)
            if iree is not None:  # the variables are the program's parameters
                iree = dataclasses.replace(iree, inputs=step.inputs, expected=step.expected)
            why = f"{neither.direct} on either route before it"
            levels = lowering.lower_compiled_step(
                step, tf_level, asked, out, total, iree, unroll, why
            )
    if iree is not None:
        profile = IreeProfile.read(out / "iree_profile.json")
        lost = {
            s.name: s.reason
            for level in levels
            if level.coverage.level == "linalg"
            for s in level.coverage.lost
        }
        write_iree_op_graph(out / "op_graph.linalg.json", profile, out / IREE_OP_GRAPH, lost)
        note(_iree_line(profile))
        note(_manifest_line(out, case, step, iree, profile.entry))
        if options.tune_budget_s is not None and case is not None:
            note(_wallclock_line(out, case))
            if (out / ANCHOR_PROFILE).exists():  # profiled before tuning (tuner)
                note(_anchor_line(AnchorProfile.read(out / ANCHOR_PROFILE)))
    if levels:
        note(f"stablehlo: lowered by {levels[0].coverage.route.text()}")
    for level in levels:
        coverage = level.coverage
        loops = "".join(
            f", {loop.op} '{loop.name}' {loop.trip_count:g} trips" for loop in coverage.loops
        )
        carried = f"; {coverage.carried}" if coverage.carried else ""
        note(
            f"{coverage.level}: {coverage.annotated_ops} of {coverage.ops} ops annotated, "
            f"{coverage.coverage:.2%} of the op time reachable{loops}{carried}"
        )
    return levels


def _iree_line(profile: IreeProfile) -> str:
    """The run's line on IREE's program: its dispatches, the share of their time on
    tf ops, the numerics, and the sites a loop runs again (their count a run)."""
    sites = [site for dispatch in profile.dispatches for site in dispatch.sites]
    repeated = sorted({site.invocations for site in sites} - {1})
    in_loops = sum(site.invocations > 1 for site in sites)
    loops = (
        f"; {in_loops} sites in loops, invoked {'/'.join(map(str, repeated))} times a run"
        if in_loops
        else ""
    )
    return (
        f"iree: {len(profile.dispatches)} dispatches at {len(sites)} sites, "
        f"{profile.attributed_ps / max(profile.dispatch_ps, 1):.2%} of their time on tf ops, "
        f"{profile.outputs_text()}{loops}"
    )


def _manifest_line(
    out: Path, case: ModelCase | None, step: CompiledStep | None, run: lowering.IreeRun, entry: str
) -> str:
    """Writes program.json for the program (tfpgo.flow.program_manifest) and says
    how to run it; a module of the user's has no step to describe."""
    if case is None:
        return (
            f"program: no {MANIFEST}: a module of your own (--mlir) has no tf.function to "
            "describe; its entry takes the module's parameters in order"
        )
    manifest = write_program_manifest(out, case, step, run, entry)
    carried = len(manifest.variables())
    state = f", {carried} variables carried from call to call" if carried else ""
    return (
        f"program: {MANIFEST} ({', '.join(manifest.programs)}){state}; run it with "
        f"tfpgo.runtime.load('{out}') or //tools:run_program"
    )


def _wallclock_line(out: Path, case: ModelCase) -> str:
    """The step as the user's loop sees it, TensorFlow's `tf.function` against
    the program `--tune` leaves (tuned, else the default) and, for an inference
    step, the engines a CPU user would pick instead (tfpgo.runtime.anchors),
    called in turn from Python for WALLCLOCK_S (tfpgo.runtime.wallclock); the
    model's variables as they were before."""
    import numpy as np
    import tensorflow as tf

    inputs = tuple(tf.nest.map_structure(np.asarray, list(case.inputs)))
    restore = wallclock.variable_values(case.function, case.inputs)
    train = case.mode is Mode.TRAIN
    try:
        program = runtime.load(out, variables=case.function if train else None)
        name = program.program.name
        arms = {
            "TensorFlow": wallclock.tensorflow_arm(case.function, inputs),
            name: lambda: program(*inputs),
        }
        others = anchors.Anchors() if train else anchors.anchor_arms(case.function, inputs)
        timed = wallclock.interleaved({**arms, **others.arms}, WALLCLOCK_S)
    finally:
        restore()
    tensorflow, iree = timed["TensorFlow"], timed[name]
    line = (
        f"step wall-clock (a Python call, {iree.calls} interleaved calls each): TensorFlow "
        f"{tensorflow.text()}, {name} {iree.text()}, "
        f"{tensorflow.median_s / iree.median_s:.2f}x"
    )
    engines = [f"{engine} {timed[engine].text()}" for engine in others.arms]
    engines += [f"{engine}: {why}" for engine, why in others.refused.items()]
    if others.arms:
        fastest = min(others.arms, key=lambda engine: timed[engine].median_s)
        ratio = timed[fastest].median_s / iree.median_s
        engines.append(f"{name} {ratio:.2f}x the fastest of them ({fastest})")
    return line + (f"; {', '.join(engines)}" if engines else "")


def _anchor_profile(out: Path, case: ModelCase) -> AnchorProfile:
    """Profiles the anchors' layers once (a few calls: tfpgo.runtime.openvino_layers)
    and writes anchor_profile.json."""
    import numpy as np
    import tensorflow as tf

    inputs = tuple(tf.nest.map_structure(np.asarray, list(case.inputs)))
    profile = openvino_layers.profile_anchors(case.function, inputs, case.name)
    profile.write(out / ANCHOR_PROFILE)
    return profile


def _anchor_line(profile: AnchorProfile) -> str:
    """What each anchor engine's layers hold."""
    engines = [
        f"{engine.engine} {engine.total_ps / 1e9:.3f} ms a call over {len(engine.layers)} layers, "
        f"{engine.attributed_ps / max(engine.total_ps, 1):.2%} on tf ops"
        for engine in profile.engines
    ]
    engines += [f"{engine}: {why}" for engine, why in profile.refused.items()]
    return f"anchors' layers ({ANCHOR_PROFILE}): {'; '.join(engines)}"


def _as_xla_compiles(neither: routes.NoStableHlo, case: ModelCase) -> CompiledStep:
    """An inference step neither of TensorFlow's passes lower, as its XLA compiler
    compiles it (what `jit_compile=True` runs); one line naming all three
    refusals where XLA refuses it too."""
    try:
        return compile_step(case.function, case.inputs)
    except XlaRefused as refused:
        raise UserError(
            f"{neither.clause}, and TensorFlow's XLA compiler refuses it ({refused.reason}), "
            f"{neither.consequence}"
        ) from None


def tuner(
    out: Path, options: FlowOptions, note: Callable[[str], None], case: ModelCase | None = None
) -> Callable[[Path, Workload, ProfiledProgram], None]:
    """--tune: the loop run on the profiled program inside the lowering, with the
    tuning database's records of it; with --scheduler its candidates compile on
    that Dask cluster. An inference `case` has its anchors profiled first: the
    fastest float32 one's time for each dispatch's ops bounds the tile search."""
    from tfpgo.tune import loop
    from tfpgo.tune.records import Records

    assert options.tune_budget_s is not None  # --tune
    budget_s, reading = options.tune_budget_s, options.host_reading

    def tune(stablehlo: Path, workload: Workload, program: ProfiledProgram) -> None:
        tuning = loop.Tuning(budget_s)
        # --precision bf16: a program in bfloat16 is held to the user's budget.
        workload = dataclasses.replace(workload, output_budget=options.max_output_error)
        if case is not None and case.mode is not Mode.TRAIN:  # the anchors run inference only
            anchor = _anchor_profile(out, case).fastest(anchors.FLOAT32_ENGINES)
            tuning = dataclasses.replace(tuning, anchor=anchor)
        records = None
        if options.tuning_db is not None:
            model = Path(options.model).name if options.model else ""
            records = Records.open(
                options.tuning_db, stablehlo, options.retune, note, model,
                lower_precision=options.max_output_error is not None,
            )  # fmt: skip
        try:
            if reading.scheduler is None:
                loop.tune(stablehlo, workload, program, out, tuning, note, records=records)
                return
            from tfpgo.iree.remote_compile import ClusterCompiler

            with ClusterCompiler(reading.scheduler, reading.connect_timeout_s) as cluster:
                note(f"tune: candidates compile on the Dask cluster at {cluster.address}")
                loop.tune(
                    stablehlo, workload, program, out, tuning, note,
                    compile_vmfb=cluster.compile_vmfb, records=records,
                )  # fmt: skip
        finally:
            if records is not None:
                records.db.close()

    return tune


def _iree_run(case: ModelCase, runs: int, warmup: int) -> lowering.IreeRun:
    """The step's inputs and TensorFlow's outputs for them (an inference step: it
    changes no state), for IREE to run and be compared with."""
    import numpy as np
    import tensorflow as tf

    outputs = tf.nest.flatten(case.step())
    return lowering.IreeRun(
        tuple(np.asarray(value) for value in tf.nest.flatten(list(case.inputs))),
        tuple(np.asarray(value) for value in outputs),
        runs,
        warmup,
    )
