"""The profile below the tf dialect: lower the annotated module and find it again.

tf → StableHLO with TensorFlow's own passes (`tf-shape-inference,tf-stablehlo`,
run by the wheel's `run_pass_pipeline`), StableHLO → linalg on tensors with IREE's
real compiler (`iree-compile --compile-to=input`). The tf module is annotated with
`carry-in-location=true` first, so every record rides in the ops' locations
through both lowerings; `tf-profile-materialize-annotations` (tfpgo-opt) turns the
records back into `profiler_data` on the lowered ops and writes a
`tfpgo.level_profile` summary, from which `LevelCoverage` reports how much of the
profiled op time is still reachable at that level and which sources were lost.

Neither StableHLO nor IREE's `util` dialect is in upstream MLIR, so modules cross
to tfpgo-opt in generic form; IREE's `util.func`/`util.return` become
`func.func`/`func.return`, whose properties they share, so that the op graph sees
functions. Large constants are elided in the files written
(`dense_resource<__elided__>`): they describe the program, not its weights. They
stay whole up to IREE, whose CSE would merge ops whose elided weights look alike.
"""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from tfpgo import HOT_OPS
from tfpgo.documents import malformed_as_error, read_document, read_json
from tfpgo.errors import UserError
from tfpgo.iree import executable_sources
from tfpgo.iree.program import PROGRAM_VMFB, ProfiledProgram, Workload, profile_program
from tfpgo.iree.tools import run_tool
from tfpgo.mlir import (
    annotate,
    conv_gradients,
    conv_input_gradients,
    iree_loops,
    jax_names,
    lost_ops,
    merged_work,
    profile_names,
    routes,
    tied_state,
)
from tfpgo.mlir.compiled_step import CompiledStep, draws_random_numbers
from tfpgo.mlir.diagnostics import error_message
from tfpgo.mlir.lost_ops import LostSource
from tfpgo.mlir.routes import COMPILED_ROUTE, DIRECT_ROUTE, Route

LEVELS = ("stablehlo", "linalg", "iree")
# Levels written as annotated modules; `iree` compiles and runs the program
# (tfpgo.iree.run) after them.
MODULE_LEVELS = ("stablehlo", "linalg")
LEVEL_FORMAT = "tfpgo.level_profile"
# A function argument's name location (`%arg13: tensor<...> loc("x")`).
_ARGUMENT_NAME = re.compile(r'%arg\d+: [^,)]*? loc\("((?:[^"\\]|\\.)*)"\)')
# A tf dialect op in generic or custom form.
_TF_DIALECT_OP = re.compile(r"(^|[\s\"])tf\.[A-Z]", re.MULTILINE)
# Why a program that draws random numbers is not held to TensorFlow's outputs, as
# the Proposer's numerics check does not hold a change that draws others.
RANDOM_DRAWS = (
    "the step draws random numbers (stablehlo.rng_bit_generator), which IREE draws with "
    "other bits than TensorFlow's kernels"
)
# Constants larger than this many elements are elided in the lowered files.
ELIDE_ELEMENTS = 64


@dataclass(frozen=True)
class Loop:
    """A loop of a level and its measured trip count (`profiler_trip_count`)."""

    name: str  # its tf node name (the tf.While's)
    op: str
    trip_count: float


@dataclass(frozen=True)
class LevelCoverage:
    """How much of the profile one abstraction level still holds."""

    level: str
    module: str  # file name in the output directory
    ops: int  # ops of the level (functions and terminators aside)
    annotated_ops: int
    sources: int  # distinct tf ops whose measurements reached the level
    source_self_ps: int
    profile_self_ps: int
    lost: tuple[LostSource, ...]  # hottest first
    route: Route = field(default_factory=lambda: Route(DIRECT_ROUTE))  # how tf became StableHLO
    loops: tuple[Loop, ...] = ()  # with a measured trip count
    # What the lowering merged or folded that carries its records on (linalg:
    # tfpgo.mlir.merged_work), as a phrase for the run's line; "" for nothing.
    carried: str = ""

    @property
    def coverage(self) -> float:
        """Share of the profiled op self time retrievable at this level."""
        if self.profile_self_ps == 0:
            return 1.0
        return self.source_self_ps / self.profile_self_ps


@dataclass(frozen=True)
class IreeRun:
    """What `--lower iree` runs the compiled program on: the step's inputs and
    TensorFlow's outputs for them (numpy arrays), and how many profiled runs."""

    inputs: tuple[Any, ...]
    expected: tuple[Any, ...]
    runs: int
    warmup: int
    # Per output, jit_compile's own difference from TensorFlow (CompiledStep).
    reassociation: tuple[float, ...] = ()
    # --tune: called with the StableHLO, the workload and the profiled program
    # while the lowering's scratch files still exist (tfpgo.tune.loop).
    then: Callable[[Path, Workload, ProfiledProgram], None] | None = None
    # Picks each filter gradient's form (tfpgo.tune.gradient_screen; None: patches).
    choose_gradient_forms: conv_gradients.FormChooser | None = None


@dataclass(frozen=True)
class LoweredLevel:
    """One lowered, annotated module written by `lower`."""

    coverage: LevelCoverage
    module: Path
    op_graph: Path


def check_levels(levels: tuple[str, ...]) -> None:
    """Refuses a level `lower` does not know, before anything runs."""
    unknown = sorted(set(levels) - set(LEVELS))
    if unknown:
        raise UserError(f"--lower: unknown level {', '.join(unknown)}; use {' or '.join(LEVELS)}")


def check_frozen(module_text: str, origin: Path) -> None:
    """Refuses a tf module that still reads resource variables: TensorFlow's
    lowerings cannot type those reads (`tensor<*xf32>`)."""
    if "!tf_type.resource" in module_text:
        raise UserError(
            f"{origin}: reads resource variables, which TensorFlow cannot lower; with --lower, "
            "--mlir must be a frozen export (convert_variables_to_constants_v2), or let pgo "
            "profile the model, which freezes it"
        )


def freeze_and_export(concrete_function: Any) -> str:
    """The function with its variables frozen into constants, as tf-dialect MLIR
    with node-name locations: TensorFlow's lowerings cannot read resource
    variables (`tensor<*xf32>` reads)."""
    import tensorflow as tf
    from tensorflow.python.framework.convert_to_constants import (
        convert_variables_to_constants_v2,
    )

    from tfpgo.models.profiling import EXPORT_PIPELINE, without_own_frames

    try:
        # Functional control flow stays functional: lowered to Switch/Merge,
        # a loop could not be lifted out of the tf_executor graph again.
        frozen = convert_variables_to_constants_v2(concrete_function, lower_control_flow=False)
        return without_own_frames(
            tf.mlir.experimental.convert_function(
                frozen, pass_pipeline=EXPORT_PIPELINE, show_debug_info=True
            )
        )
    except Exception as error:  # TensorFlow raises assorted errors here
        reason = error_message(str(error), "unknown error")
        raise UserError(f"cannot freeze the profiled function for lowering: {reason}") from None


def lower(
    tf_module: str,
    op_profile: Path,
    levels: tuple[str, ...],
    out: Path,
    profile_self_ps: int,
    iree_run: IreeRun | None = None,
    unroll_ops: int = iree_loops.UNROLL_OPS,
) -> list[LoweredLevel]:
    """Annotates `tf_module` (frozen tf MLIR text) with records in its locations and
    lowers it to each of `levels` (checked by `check_levels`) in order, writing
    `model.<level>.mlir` and `op_graph.<level>.json` into `out`; with `iree` (and
    `iree_run`), `model.iree.vmfb` and `iree_profile.json` too (tfpgo.iree.run).
    Loops of known trips are unrolled within `unroll_ops` (tfpgo.mlir.iree_loops).
    Intermediate files stay in a scratch directory; a model that cannot be lowered
    raises one UserError line."""
    with tempfile.TemporaryDirectory(prefix="tfpgo-lower-") as scratch_dir:
        scratch = Path(scratch_dir)
        frozen = scratch / "tf.mlir"  # it holds every weight: never in the output
        frozen.write_text(tf_module)
        carried = scratch / "tf.carried.mlir"
        annotate.annotate_module(
            frozen,
            op_profile,
            carried,
            scratch / "op_graph.tf.json",
            scratch / "attribution.tf.json",
            carry_in_location=True,
        )
        stablehlo_text, route = routes.tf_to_stablehlo(carried)
        tf_graph = read_json(scratch / "op_graph.tf.json")
        lowered = _Lowered(stablehlo_text, route, tf_graph, carried=carried.read_text())
        return _lower_stablehlo(
            lowered, levels, out, profile_self_ps, iree_run, scratch, unroll_ops
        )


def lower_compiled_step(
    step: CompiledStep,
    tf_level: TfLevel,
    levels: tuple[str, ...],
    out: Path,
    profile_self_ps: int,
    iree_run: IreeRun | None = None,
    unroll_ops: int = iree_loops.UNROLL_OPS,
    why: str = "a training step's variables are its parameters and results",
) -> list[LoweredLevel]:
    """As `lower`, from a training step's StableHLO made by TensorFlow's XLA
    compiler (tfpgo.mlir.compiled_step), whose locations name the tf nodes: the
    records are found by those names, each runtime name taken as the node it
    landed on at the tf level (`tf_level`: `while/body/_1/n` is node `n` of the
    loop's body, which XLA names `n`)."""
    from tfpgo.attribution.op_profile import OpProfile

    with tempfile.TemporaryDirectory(prefix="tfpgo-lower-") as scratch_dir:
        scratch = Path(scratch_dir)
        by_node = scratch / "op_profile.nodes.json"
        attribution = annotate.read_attribution(tf_level.attribution)
        profile = OpProfile.read(tf_level.op_profile)
        profile = profile_names.by_node_names(profile, annotate.landed_on(attribution))
        stablehlo = step.stablehlo
        if step.retraced:
            names = {op.name for op in profile.ops}
            stablehlo = profile_names.with_profile_names(stablehlo, names)
            why += (
                "; traced again under jit_compile, XLA refusing the profiled trace, its names "
                "matched to the profile's up to uniquified scopes"
            )
        profile.write(by_node)
        first_update = len(step.expected) - len(step.updates)
        stablehlo = tied_state.tie_updates(stablehlo, step.updates, first_update)
        route = Route(COMPILED_ROUTE, why, tied_variables=len(step.updates))
        lowered = _Lowered(stablehlo, route, read_json(tf_level.op_graph), by_node)
        return _lower_stablehlo(
            lowered, levels, out, profile_self_ps, iree_run, scratch, unroll_ops
        )


@dataclass(frozen=True)
class TfLevel:
    """The tf level's files a lowering from XLA's StableHLO reads: the profile,
    how its entries landed on the module (`tfpgo.attribution`) and the op graph."""

    op_profile: Path
    attribution: Path
    op_graph: Path


@dataclass(frozen=True)
class _Lowered:
    """StableHLO on its way down: its text, the route that made it, the tf level's
    op graph, and the profile its locations' names are looked up in (None where
    the records ride in the locations)."""

    stablehlo: str
    route: Route
    tf_graph: dict[str, Any]
    by_name: Path | None = None
    carried: str = ""  # the tf module TensorFlow's passes lowered (pass routes)


def _lower_stablehlo(
    lowered: _Lowered,
    levels: tuple[str, ...],
    out: Path,
    profile_self_ps: int,
    iree_run: IreeRun | None,
    scratch: Path,
    unroll_ops: int,
) -> list[LoweredLevel]:
    # Keras's RNN loops, and their gradients, carry values IREE 3.13 cannot
    # compile as they are; TensorFlow's loop conditions make IREE wait on the host
    # every trip (tfpgo.mlir.iree_loops).
    loops = iree_loops.rewrite_loops(lowered.stablehlo, unroll_ops)
    # Filter gradients run on IREE's generic convolution path; as matmuls they
    # run 5-13x faster (tfpgo.mlir.conv_gradients).
    choose = iree_run.choose_gradient_forms if iree_run is not None else None
    convolutions = conv_gradients.rewrite_filter_gradients(loops.text, choose)
    # Strided convolutions' input gradients multiply the zeros of their dilated
    # input; one convolution of the output's phases skips them (2.2x on a 64x64
    # stride-2 gradient alone; tfpgo.mlir.conv_input_gradients).
    phased, input_forms = conv_input_gradients.rewrite_input_gradients(convolutions.text)
    route = replace(
        lowered.route,
        forwarded_results=loops.forwarded,
        barriers=loops.barriers,
        counted_loops=loops.counted,
        loops=loops.loops,
        gradient_forms=convolutions.forms + input_forms,
    )
    lowered = replace(lowered, stablehlo=phased, route=route)
    tf_sources = annotated_sources(lowered.tf_graph)
    stablehlo = scratch / "stablehlo.mlir"
    write_generic_stablehlo(lowered.stablehlo, stablehlo)
    # What IREE is given: ops its CSE will merge carry each other's records.
    merged = merged_work.fuse_equivalent_locations(lowered.stablehlo)
    to_iree = stablehlo
    if merged.text != lowered.stablehlo:
        to_iree = scratch / "stablehlo.merged.mlir"
        write_generic_stablehlo(merged.text, to_iree)
    if "iree" in levels and iree_run is not None:
        fused_into = _fused_into(lowered.tf_graph)
        tuned_from = to_iree
        if iree_run.then is not None and lowered.by_name is not None:
            tuned_from = _with_records(to_iree, lowered.by_name, scratch)
        _compile_and_run(to_iree, merged.text, iree_run, tf_sources, fused_into, out, tuned_from)
    modules = [("stablehlo", stablehlo)]
    carried_on = ""
    if "linalg" in levels:
        linalg = scratch / "linalg.mlir"
        relocated = merged_work.relocate_after_lowering(merged.text, _stablehlo_to_linalg(to_iree))
        linalg.write_text(util_functions_to_func(relocated.text))
        modules.append(("linalg", linalg))
        carried_on = _carried_phrase(merged, relocated)
    written: list[LoweredLevel] = []
    earlier: tuple[LostSource, ...] = ()
    for level, module in modules:
        # A level not asked for is made all the same (its losses explain the next).
        into = out if level in levels else scratch
        made = _materialize(level, module, into, tf_sources, profile_self_ps, scratch, lowered)
        losses = _Losses(lowered, earlier, to_iree, {m.merged: m.into for m in merged.merges})
        made = replace(made, coverage=losses.explained(made.coverage))
        if level == "linalg":
            made = replace(made, coverage=replace(made.coverage, carried=carried_on))
        earlier = made.coverage.lost
        if level in levels:
            written.append(made)
    return written


def _carried_phrase(merged: merged_work.MergedWork, relocated: merged_work.Relocated) -> str:
    """What IREE merged or folded whose records its ops carry on, for the run's line."""
    counts = [
        (len(merged.merges), "op CSE merged", "ops CSE merged"),
        (merged.folded_reshapes, "reshape chain folded", "reshape chains folded"),
        (merged.folded_identities, "identity op folded", "identity ops folded"),
        (relocated.constants, "constant folded", "constants folded"),
        (relocated.loops, "counted loop's control", "counted loops' control"),
    ]
    said = [f"{count} {one if count == 1 else many}" for count, one, many in counts if count]
    return f"records carried on for {', '.join(said)}" if said else ""


@dataclass(frozen=True)
class _Losses:
    """What each level's lost sources became (tfpgo.mlir.lost_ops.explain), with
    the passes this lowering ran to find where each was gone."""

    lowered: _Lowered
    earlier: tuple[LostSource, ...]  # the level above's, explained
    to_iree: Path  # the StableHLO IREE's input conversion lowered to linalg
    merged_into: dict[str, str]  # tfpgo.mlir.merged_work's merges

    def explained(self, coverage: LevelCoverage) -> LevelCoverage:
        compiled = self.lowered.route.name == COMPILED_ROUTE
        lost = lost_ops.explain(
            coverage.lost,
            coverage.level,
            self.earlier,
            compiled,
            lambda names: self._gone_after(coverage.level, names),
            self.merged_into,
        )
        return replace(coverage, lost=lost)

    def _gone_after(self, level: str, names: list[str]) -> tuple[dict[str, str], str]:
        """The pass after which each name was gone, and what to say of one still
        in the module's locations after the last (on no op the level counts)."""
        if level == "linalg":
            text = self.to_iree.read_text()
            gone = lost_ops.gone_after_iree_passes(self.to_iree, text, names)
            return gone, lost_ops.STILL_IN_IREE_INPUT
        if not self.lowered.carried:
            return {}, lost_ops.TF2XLA
        text, steps = routes.replay(self.lowered.carried, self.lowered.route)
        still = f"TensorFlow's {self.lowered.route.name} passes (its location is left on no op)"
        return lost_ops.gone_after_tf_passes(text, steps, names), still


def _compile_and_run(
    stablehlo: Path,
    stablehlo_text: str,
    run: IreeRun,
    tf_sources: dict[str, tuple[str, int]],
    fused_into: dict[str, str],
    out: Path,
    tuned_from: Path,
) -> None:
    """`--lower iree`: compile, run and compare, profile the dispatches, and write
    `model.iree.vmfb` and `iree_profile.json` (tfpgo.iree.run); then
    `run.then` (--tune) with the profiled program and `tuned_from`, the same
    program with each op's records where the profile-guided passes read them."""
    import numpy as np

    entry = routes.ENTRY_FUNCTION.search(stablehlo_text)
    if entry is None:
        raise UserError("iree level: the StableHLO module has no public function to run")
    scratch = stablehlo.parent
    inputs = []
    for index, value in enumerate(run.inputs):
        inputs.append(scratch / f"input_{index}.npy")
        np.save(inputs[-1], np.asarray(value))
    workload = Workload(
        entry[1],
        tuple(inputs),
        run.expected,
        run.runs,
        run.warmup,
        {name: self_ps for name, (_, self_ps) in tf_sources.items()},
        fused_into,
        may_differ=RANDOM_DRAWS if draws_random_numbers(stablehlo_text) else "",
        reassociation=run.reassociation,
    )
    program = profile_program(stablehlo, (), scratch / "iree", workload, PROGRAM_VMFB)
    if program.profile.outputs_unchecked:  # --tune holds variants to this program's outputs
        workload = workload.held_to(program.outputs)
    program.profile.write(out / "iree_profile.json")
    dispatches = out / executable_sources.DISPATCHES_MODULE
    executable_sources.write_dispatch_sources(
        program.sources, program.profile, fused_into, dispatches, program.sites
    )
    for written in (program.vmfb, program.bytecode):  # the runnable program, weights and all
        (out / written.name).write_bytes(written.read_bytes())
    if run.then is not None:
        run.then(tuned_from, workload, program)


def _with_records(stablehlo: Path, by_name: Path, scratch: Path) -> Path:
    """A program XLA's compiler made carries only its ops' names: the same
    program with each op's records as `profiler_data` (attached by name, as
    its levels are), so that --tune's profile-guided rewrites see what each
    op took under TensorFlow. Weights kept: --tune compiles it."""
    annotated = scratch / "stablehlo.records.mlir"
    annotate.run_tfpgo_opt(
        stablehlo,
        annotated,
        [
            "--mlir-print-op-generic",
            f"--tf-profile-materialize-annotations=path-to-profile={by_name}",
        ],
    )
    return annotated


def is_stablehlo(module_text: str) -> bool:
    """Whether a module is StableHLO (a framework lowered it) rather than tf dialect."""
    return "stablehlo." in module_text and _TF_DIALECT_OP.search(module_text) is None


def annotate_named_stablehlo(
    module_text: str, op_profile: Path, annotated: Path, op_graph: Path
) -> annotate.Attribution:
    """Annotates a StableHLO module whose name locations are the op names of the
    profile (JAX's `lowered.as_text(debug_info=True)`: XLA's `op_name` metadata, and
    so the profile's entries, come from them, nested functions' names composed as
    XLA composes them: `tfpgo.mlir.jax_names`): `profiler_data` on every op whose
    location names an entry, by `tf-profile-materialize-annotations` matching names.
    Writes `annotated` (generic form) and its `op_graph`; returns how much of the
    profile landed on the module."""
    from tfpgo.attribution.op_profile import OpProfile

    with tempfile.TemporaryDirectory(prefix="tfpgo-named-") as scratch_dir:
        scratch = Path(scratch_dir)
        generic = scratch / "stablehlo.mlir"
        write_generic_stablehlo(jax_names.qualify_call_names(module_text).text, generic)
        summary = scratch / "summary.json"
        annotate.run_tfpgo_opt(
            generic,
            annotated,
            [
                "--mlir-print-op-generic",
                f"--mlir-elide-elementsattrs-if-larger={ELIDE_ELEMENTS}",
                "--tf-profile-materialize-annotations="
                f"path-to-profile={op_profile} summary-output={summary}",
                f"--tf-profile-mark-hotspots=top-k={HOT_OPS}",
                f"--tf-profile-export-op-graph=output={op_graph}",
            ],
        )
        document = read_document(summary, LEVEL_FORMAT)
    with malformed_as_error(summary, LEVEL_FORMAT):
        found = {source["name"] for source in document["sources"]}
        annotated_ops = int(document["annotated_ops"])
    profile = OpProfile.read(op_profile)
    missing = [op for op in profile.ops if op.name not in found]
    arguments = set(_ARGUMENT_NAME.findall(module_text))
    return annotate.Attribution(
        annotated_ops=annotated_ops,
        fused_ops=0,
        profile_entries=len(profile.ops),
        attributed_self_ps=sum(op.self_ps for op in profile.ops if op.name in found),
        profile_self_ps=profile.totals.op_self_ps,
        unresolved=tuple(
            annotate.UnresolvedEntry(
                op.name,
                op.self_ps,
                "names an argument of the module (XLA's copy of an input), not an op"
                if op.name in arguments
                else "no op's location names it",
                op.device_self_ps,
            )
            for op in sorted(missing, key=lambda op: (-op.device_self_ps, -op.self_ps))
        ),
        profile_device_ps=profile.totals.device_attributed_ps,
        attributed_device_ps=sum(op.device_self_ps for op in profile.ops if op.name in found),
    )


def util_functions_to_func(generic: str) -> str:
    """IREE's `util.func`/`util.return` (generic form) as `func.func`/`func.return`.
    A `util.func` with properties `func.func` lacks (tied operands, inlining
    policies) is left as it is: its body is still annotated, only the op graph
    does not see it as a function."""
    return _UTIL_FUNC.sub(_as_func, generic).replace('"util.return"(', '"func.return"(')


_UTIL_FUNC = re.compile(r'"util\.func"\(\) <\{(?P<props>[^{}]*(?:\{[^{}]*\}[^{}]*)*)\}>')
_FUNC_PROPERTIES = {"function_type", "sym_name", "sym_visibility", "arg_attrs", "res_attrs"}


def _as_func(match: re.Match[str]) -> str:
    names = set(re.findall(r"(?:^|, )([a-z_]+) = ", match["props"]))
    if not names <= _FUNC_PROPERTIES:
        return match[0]
    return match[0].replace('"util.func"', '"func.func"', 1)


def write_generic_stablehlo(text: str, path: Path) -> None:
    """StableHLO in generic form, through IREE's iree-opt (which knows
    StableHLO). Constants stay whole: elided ones would all look alike, and
    IREE's CSE would merge ops that differ only in their weights. An op or
    argument `text` gives no location gets its line in the file, named without
    the scratch directory: the program's bytes do not depend on where it was made."""
    source = path.with_suffix(".custom.mlir")
    source.write_text(text)
    run_tool(
        "iree-opt",
        [
            "--mlir-print-op-generic",
            "--mlir-print-debuginfo",
            source.name,
            "-o",
            str(path.absolute()),
        ],
        "cannot read TensorFlow's StableHLO",
        cwd=source.parent,
    )


def _stablehlo_to_linalg(stablehlo: Path) -> str:
    output = stablehlo.with_name("linalg.generic.mlir")
    run_tool(
        "iree-compile",
        [
            "--iree-input-type=stablehlo",
            "--compile-to=input",
            "--mlir-print-debuginfo",
            "--mlir-print-op-generic",
            f"--mlir-elide-elementsattrs-if-larger={ELIDE_ELEMENTS}",
            str(stablehlo),
            "-o",
            str(output),
        ],
        "cannot lower StableHLO to linalg",
    )
    return output.read_text()


def _materialize(
    level: str,
    module: Path,
    out: Path,
    tf_sources: dict[str, tuple[str, int]],
    profile_self_ps: int,
    scratch: Path,
    lowered: _Lowered,
) -> LoweredLevel:
    annotated = out / f"model.{level}.mlir"
    op_graph = out / f"op_graph.{level}.json"
    summary = scratch / f"{level}.summary.json"
    by_name = f"path-to-profile={lowered.by_name} " if lowered.by_name else ""
    annotate.run_tfpgo_opt(
        module,
        annotated,
        [
            "--mlir-print-op-generic",
            f"--mlir-elide-elementsattrs-if-larger={ELIDE_ELEMENTS}",
            f"--tf-profile-materialize-annotations={by_name}summary-output={summary}",
            "--tf-profile-branch-weights",
            f"--tf-profile-mark-hotspots=top-k={HOT_OPS}",
            f"--tf-profile-export-op-graph=output={op_graph}",
        ],
    )
    coverage = read_level_coverage(summary, level, annotated.name, tf_sources, profile_self_ps)
    coverage = replace(coverage, route=lowered.route, loops=read_loops(op_graph))
    return LoweredLevel(coverage, annotated, op_graph)


def read_loops(op_graph: Path) -> tuple[Loop, ...]:
    """The loops of an op graph that have a measured trip count. Only their lines
    are decoded: the pass writes one node per line."""
    loops = []
    with op_graph.open() as lines:
        for line in lines:
            if '"trip_count":' not in line or '"trip_count":null' in line:
                continue
            node = json.loads(line.strip().rstrip(","))
            loops.append(Loop(node["name"] or "", node["op"], float(node["trip_count"])))
    return tuple(loops)


def read_level_coverage(
    summary: Path,
    level: str,
    module: str,
    tf_sources: dict[str, tuple[str, int]],
    profile_self_ps: int,
) -> LevelCoverage:
    """Reads a `tfpgo.level_profile` summary; `tf_sources` (tf node name → (op
    type, self ps)) are the sources the tf level had, to name what the level lost."""
    document = read_document(summary, LEVEL_FORMAT)
    with malformed_as_error(summary, LEVEL_FORMAT):
        found = {source["name"] for source in document["sources"]}
        lost = sorted(
            (
                LostSource(name, op, self_ps)
                for name, (op, self_ps) in tf_sources.items()
                if name not in found
            ),
            key=lambda source: -source.self_ps,
        )
        return LevelCoverage(
            level=level,
            module=module,
            ops=document["level_ops"],
            annotated_ops=document["annotated_ops"],
            sources=len(found),
            source_self_ps=document["source_self_ps"],
            profile_self_ps=profile_self_ps,
            lost=tuple(source for source in lost if source.self_ps > 0),
        )


def _fused_into(op_graph: dict[str, Any]) -> dict[str, str]:
    """tf node name → the op whose kernel ran it (`fused_into`), for fused ops."""
    return {
        node["name"]: node["fused_into"]
        for node in op_graph["nodes"]
        if node.get("name") and node.get("fused_into")
    }


def annotated_sources(op_graph: dict[str, Any]) -> dict[str, tuple[str, int]]:
    """tf node name → (op type, self ps) of every measured op of an op graph (an
    `op_graph.json` document). An op that only carries another op's record (its
    `source`) adds no source."""
    return {
        node["name"]: (node["op"], node["profiler_data"]["self"])
        for node in op_graph["nodes"]
        if node.get("profiler_data")
        and node.get("name")
        and node["profiler_data"].get("source", node["name"]) == node["name"]
    }
