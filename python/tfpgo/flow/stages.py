"""The whole flow: profile a TensorFlow model, annotate its MLIR with the profile,
draw it, report.

Stages, each announced with its duration: model → profile → MLIR export →
trace reader (event DAG + op profile) → tfpgo-opt `tf-profile-guided-pipeline`
(annotated MLIR + op graph) → TensorFlow's own `tf-standard-pipeline` on the
annotated module → with `--optimize`, the proposer's advice measured against the
loaded step (`tfpgo.proposer.optimize`) → pictures and exports → report.
Everything is written into a staging directory that replaces the output
directory only when all stages succeeded: a failed run leaves the previous
output untouched.

The command line (`bazel run //:pgo`) is `tfpgo.flow.pgo`; callers use `run_flow`.
"""

from __future__ import annotations

import dataclasses
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from tfpgo.analysis import analyse
from tfpgo.analysis.phase import Phase
from tfpgo.analysis.structure import OpDataflow, phases_by_entry
from tfpgo.atomic import atomic_output_dir
from tfpgo.attribution.hlo_profile import HloProfile
from tfpgo.attribution.op_profile import OpProfile
from tfpgo.errors import UserError
from tfpgo.flow import lower_stage
from tfpgo.flow.options import FlowOptions, check_options, signature_choice
from tfpgo.iree.profile_document import IreeProfile
from tfpgo.iree.program import PROGRAM_VMFB
from tfpgo.iree.run import IREE_OP_GRAPH
from tfpgo.mlir import annotate, lowering
from tfpgo.mlir.compiled_step import CompiledStep
from tfpgo.models import ModelCase
from tfpgo.render import (
    PICTURE_FORMATS,
    RenderGraph,
    RenderOptions,
    load_graph,
    prepare,
    write_pictures,
)
from tfpgo.render.exports import ExportInput, write_exports
from tfpgo.render.exports.model_explorer import adapter_dialects, adapter_readable
from tfpgo.render.model import RenderEdgeKind
from tfpgo.render.scope_chart import write_scope_chart
from tfpgo.report import compose
from tfpgo.report.anchor_tables import AnchorComparison
from tfpgo.runtime.anchor_profile import ANCHOR_PROFILE, AnchorProfile
from tfpgo.runtime.anchors import ENGINES, FLOAT32_ENGINES
from tfpgo.runtime.manifest import MANIFEST, ProgramManifest
from tfpgo.trace.hosts import HostReading
from tfpgo.tune.document import TUNE_DOCUMENT, TuneDocument
from tfpgo.tune.headroom import dispatch_tries, whole_program_tries
from tfpgo.tune.tuned_output import TUNED_PROFILE

T = TypeVar("T")

# What each output file is; the report lists the ones a run produced.
OUTPUT_FILES = {
    "profile": "TensorBoard/xprof logdir of the profiled steps (plugins/profile/<run>/*.xplane.pb)",
    "model.mlir": "the profiled function as tf-dialect MLIR with node-name locations",
    "mlir_graph.json": "event DAG of the profile (docs/formats.md)",
    "op_profile.json": "per-op profile: runtime node name → count, total, self, percentiles",
    "hlo_profile.json": "XLA-compiled steps: per-module, per-instruction, per-fusion HLO times",
    "model.annotated.mlir": "model.mlir with profiler_data on every executed op, hot marks",
    "op_graph.json": "annotated op graph (docs/formats.md)",
    "attribution.json": "how each profile entry matched an op (exact, resolved, merged), what "
    "was removed or unresolved and why",
    "op_graph.{fmt}": "op graph colored by self time, hot ops red",
    "model.stablehlo.mlir": "the frozen model lowered to StableHLO (TensorFlow's tf-stablehlo), "
    "profiler_data on every op that carries a profiled op's work (generic form)",
    "op_graph.stablehlo.json": "op graph of the StableHLO module",
    "op_graph.stablehlo.{fmt}": "StableHLO op graph colored by self time",
    "model.linalg.mlir": "the StableHLO lowered to linalg on tensors (IREE), annotated likewise",
    PROGRAM_VMFB: "--lower iree: the whole program compiled by IREE for this CPU, weights "
    f"included (iree-run-module --module={PROGRAM_VMFB} runs it)",
    "model.stablehlo.mlirbc": "--lower iree: the StableHLO with every weight, MLIR bytecode "
    "(iree-compile compiles it)",
    "iree_profile.json": "--lower iree: each IREE dispatch's time and the tf ops it ran "
    "(docs/formats.md)",
    "anchor_profile.json": "--tune, an inference step: the anchor engines' (OpenVINO's) time "
    "per layer, each layer on the tf ops it ran (docs/formats.md)",
    "model.dispatches.mlir": "--lower iree: IREE's executable sources, each dispatch's code "
    "with profiler_data holding the TensorFlow time (self) and IREE's (iree_self)",
    "tune.json": "--tune: every candidate tried, its A/B ratio, interval and verdict, what "
    "was kept, and the tf ops the kept changes sped up (docs/formats.md)",
    "rewrites.json": "--tune: what tf-profile-guided-conv-to-dot rewrote and declined, and "
    "why (share, TensorFlow and IREE time)",
    "rewrites.tiles.json": "--tune: the same for its kernels=tiles run (convolutions whose "
    "windows tile the input, as reshape + dot_general)",
    "rewrites.kxk.json": "--tune: the same for its kernels=kxk run (the 3x3 and other "
    "windows, as shifted dot_generals)",
    "conv_forms.json": "--tune: each form of convolution the kxk run selected, timed alone "
    "as a convolution and rewritten, and whether it was rewritten",
    "tiles.json": "--tune: the per-dispatch tile search: IREE's choice and each variant "
    "tried, with the measured time of each dispatch (tiles.N.json: its round N)",
    "tuning_spec.mlir": "--tune: the IREE tuning spec of the tiles that won "
    "(iree-compile --iree-codegen-tuning-spec-path=tuning_spec.mlir)",
    "model.tuned.vmfb": "--tune: the tuned program (when a candidate won)",
    "program.json": "--lower iree: the program's manifest: each parameter and result in the "
    "step's terms, the variables it carries, tolerance, target, programs (docs/formats.md); "
    "tfpgo.runtime.load reads it",
    "program": "--lower iree: each parameter's value in the profiled step "
    "(parameter_<i>.npy: the inputs, the variables' starting values)",
    "model.tuned.stablehlo.mlir": "--tune: the tuned program's StableHLO when a pass rewrote "
    "it, profiler_data on its ops (generic form, big constants elided)",
    "model.tuned.stablehlo.mlirbc": "--tune: the tuned program's StableHLO, weights included",
    "iree_profile.tuned.json": "--tune: the tuned program's dispatch profile",
    "tune_diff": "--tune: profile_diff of the default program's dispatch profile against the "
    "tuned one's: diff.md, .html, .svg per tf op; dispatches/ dispatch by dispatch",
    "model.tuned.dispatches.mlir": "--tune: the tuned program's executable sources, timed",
    "op_graph.iree.json": "--lower iree: the linalg op graph with each op's source timed by "
    "IREE's dispatches instead of TensorFlow's kernels",
    "op_graph.iree.{fmt}": "linalg op graph colored by IREE dispatch time",
    "op_graph.linalg.json": "op graph of the linalg module",
    "op_graph.linalg.{fmt}": "linalg op graph colored by self time",
    "event_dag.{fmt}": "event DAG (hottest events), critical path highlighted",
    "model_explorer.json": "Model Explorer node data: colors the same model in its graph view",
    "model_explorer.kernels.json": "Model Explorer node data naming the kernel each op ran in "
    "(`_MklNativeFusedMatMul: MatMul+BiasAdd+Relu, 8.5 ms`), fused ops included",
    "model_explorer.stablehlo.json": "--lower: Model Explorer node data for model.stablehlo.mlir",
    "model_explorer.linalg.json": "--lower linalg: Model Explorer node data for "
    "model.linalg.explorer.mlir",
    "model.linalg.explorer.mlir": "--lower linalg: model.linalg.mlir in a form Model Explorer's "
    "adapter reads (ops of dialects it lacks moved into the tf dialect, same node ids)",
    "trace.json": "Chrome/Perfetto trace-event JSON of the profiled events",
    "speedscope.json": "flame chart of the profiled events per thread (www.speedscope.app)",
    "op_profile.csv": "the op profile as CSV",
    "analysis.json": "op time by phase, layer scope and op type (docs/formats.md)",
    "scope_chart.svg": "icicle chart: op time by layer scope, colored by phase",
    "optimize.json": "--optimize: each proposal, its evidence, the A/B samples, ratio, "
    "interval and verdict (docs/formats.md)",
    "xla_regions.json": "--optimize: the XLA regions tfpgo-opt's tf-profile-guided-xla-regions "
    "chose from the annotated module, the proposer's xla_regions rule reads (docs/formats.md)",
    "optimize/diff.md": "--optimize: the best candidate's op profile against the baseline's",
    "optimize/diff.html": "the same diff as HTML, picture inline",
    "report.md": "this report (Markdown)",
    "report.html": "this report (HTML, pictures inline)",
}


@dataclass(frozen=True)
class FlowResult:
    output_dir: Path
    report_md: Path
    report_html: Path
    attribution: annotate.Attribution
    stage_seconds: tuple[tuple[str, float], ...]
    levels: tuple[lowering.LevelCoverage, ...] = ()  # with --lower


class Progress:
    """Announces each stage on stderr and keeps its duration."""

    def __init__(self, total: int, stream=None) -> None:
        # sys.stderr of now, not of import time: redirections and captures see it.
        self.total, self.stream, self.index = total, stream or sys.stderr, 0
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

    def note(self, message: str) -> None:
        """Progress inside the running stage (long stages: steps, trace reading)."""
        print(f"[pgo {self.index}/{self.total}]   {message}", file=self.stream, flush=True)


def run_flow(options: FlowOptions) -> FlowResult:
    """Runs every stage into a staging copy of `options.output_dir`."""
    check_options(options)
    # Profiling: model, profile, export, trace, annotate, verify, render, report;
    # from a trace: trace, annotate, render, report; plus lower when asked.
    stages = (8 if options.from_trace is None else 4) + (1 if options.lower else 0)
    stages += 1 if options.optimize else 0
    progress = Progress(total=stages)
    with atomic_output_dir(options.output_dir) as staging:
        attribution, levels = _run_stages(options, staging, progress)
    final = options.output_dir
    return FlowResult(
        final,
        final / "report.md",
        final / "report.html",
        attribution,
        tuple(progress.seconds),
        tuple(level.coverage for level in levels),
    )


def _run_stages(
    options: FlowOptions, out: Path, progress: Progress
) -> tuple[annotate.Attribution, list[lowering.LoweredLevel]]:
    inputs = _inputs(options, out, progress)

    def note(message: str) -> None:  # name files where they will be, not in staging
        progress.note(message.replace(str(out), str(options.output_dir)))

    attribution, profile, hlo = _annotated(options, out, inputs, progress, note)
    if options.from_trace is None or options.mlir is None:  # a profiling run
        progress.stage(
            "verify",
            "TensorFlow tf-standard-pipeline on the annotated module",
            lambda: _verify_in_tensorflow(out / "model.annotated.mlir"),
        )
    levels: list[lowering.LoweredLevel] = []
    lowerable = inputs.lowerable
    if lowerable is not None:  # set exactly when --lower asks for levels
        origin = "frozen tf" if isinstance(lowerable, str) else "training step (XLA's StableHLO)"
        levels = progress.stage(
            "lower",
            f"{origin} -> {' -> '.join(options.lower)} (TensorFlow, IREE), profile re-attached",
            lambda: lower_stage.lower(
                options, out, lowerable, profile.totals.op_self_ps, note, inputs.case
            ),
        )
    optimized = None
    if options.optimize:
        optimized = progress.stage(
            "optimize",
            f"each proposal A/B against the baseline, {options.ab_repetitions} blocks of "
            f"{options.ab_steps} steps an arm, interleaved",
            lambda: _optimize(options, inputs.case, profile, out, note),
        )
    pictures, op_graph = progress.stage(
        "render", "pictures and exports", lambda: _render(options, out, levels, profile)
    )
    progress.stage(
        "report",
        "analysis.json, scope_chart.svg, report.md, report.html",
        lambda: _report(
            out,
            inputs.run_info,
            profile,
            hlo,
            attribution,
            pictures,
            op_graph,
            levels,
            optimized,
            options.output_dir,
        ),
    )
    return attribution, levels


@dataclass(frozen=True)
class _Inputs:
    """What the stages read: the trace, the tf module (the profiled one, or the
    user's copied), what the report says of the run, what to lower (a frozen tf
    module or a training step), the loaded step, and a StableHLO module annotated
    by the names in its locations (JAX's)."""

    trace: Path
    module: Path
    run_info: compose.RunInfo
    lowerable: str | CompiledStep | None = None
    case: ModelCase | None = None
    named: str | None = None


def _inputs(options: FlowOptions, out: Path, progress: Progress) -> _Inputs:
    """The model profiled now, or the trace and module given (--from-trace, --mlir:
    both or neither, _check_options)."""
    from_trace, mlir = options.from_trace, options.mlir
    if from_trace is None or mlir is None:
        trace, module, run_info, lowerable, case = _profile_stages(options, out, progress)
        return _Inputs(trace, module, run_info, lowerable, case)
    trace = _carry_over_trace(from_trace, options.output_dir, out)
    module = out / "model.mlir"
    module_bytes = mlir.read_bytes()
    module.write_bytes(module_bytes)
    run_info = compose.RunInfo(
        model=str(mlir),
        mode=None,
        batch_size=None,
        steps=None,
        warmup=None,
        step_wall_ns=(),
        trace_source=str(trace.relative_to(out) if trace.is_relative_to(out) else trace),
        module="model.mlir",
    )
    text = module_bytes.decode(errors="replace")
    if lowering.is_stablehlo(text):
        if options.lower:
            raise UserError(f"--lower: {mlir} is StableHLO already; drop --lower")
        return _Inputs(trace, module, run_info, named=text)
    if options.lower:
        lowering.check_frozen(text, mlir)
        return _Inputs(trace, module, run_info, lowerable=text)
    return _Inputs(trace, module, run_info)


def _annotated(
    options: FlowOptions,
    out: Path,
    inputs: _Inputs,
    progress: Progress,
    note: Callable[[str], None],
) -> tuple[annotate.Attribution, OpProfile, HloProfile | None]:
    """The trace and annotate stages: the op profile read, and put on the module."""
    trace, module, named = inputs.trace, inputs.module, inputs.named
    shown = options.output_dir / trace.relative_to(out) if trace.is_relative_to(out) else trace
    profile, hlo = progress.stage(
        "trace",
        f"reading {shown}",
        lambda: _read_trace(trace, out, options.output_dir, note, options.host_reading),
    )

    def annotate_module() -> annotate.Attribution:
        if named is not None:
            return lowering.annotate_named_stablehlo(
                named, out / "op_profile.json", out / "model.annotated.mlir", out / "op_graph.json"
            )
        return annotate.annotate_module(
            module,
            out / "op_profile.json",
            out / "model.annotated.mlir",
            out / "op_graph.json",
            out / "attribution.json",
            top_k=options.top_k,
            min_share=options.min_share,
        )

    def annotate_stage() -> tuple[annotate.Attribution, OpProfile, HloProfile | None]:
        """Annotates; when a device kernel ran for ops of which the module has only
        some (others folded away), its time is split again over those and the
        module annotated again, so that none of it stays unresolved for them."""
        found = annotate_module()
        keep = _nodes_the_module_has(profile, found)
        if keep is None:
            return found, profile, hlo
        note("device kernels ran for ops the module has only in part: split over those it has")
        again = _read_trace(trace, out, options.output_dir, note, options.host_reading, keep)
        return annotate_module(), *again

    attribution, profile, hlo = progress.stage(
        "annotate",
        "StableHLO by its name locations: tfpgo-opt --tf-profile-materialize-annotations"
        if named is not None
        else "tfpgo-opt --tf-profile-guided-pipeline",
        annotate_stage,
    )
    attribution = attribution.with_xla_launch(profile)
    _check_coverage(attribution, options.min_coverage, trace, options.mlir or module)
    return attribution, profile, hlo


def _profile_stages(options: FlowOptions, out: Path, progress: Progress):
    from tfpgo.models import load_model, profiling

    given = options.case
    if given is not None:  # built in the caller's process (tfpgo.compile)
        case = progress.stage(
            "model",
            f"{given.description or given.name} ({given.mode.value}, batch {given.batch_size})",
            lambda: given,
        )
    else:
        case = progress.stage(
            "model",
            f"{options.model} ({options.mode}, batch {options.batch_size})",
            lambda: load_model(
                options.model, options.mode, options.batch_size, signature_choice(options)
            ),
        )
    run = progress.stage(
        "profile",
        f"{options.warmup} warmup + {options.steps} profiled steps",
        lambda: profiling.profile(
            case, out / "profile", options.steps, options.warmup, options.levels, progress.note
        ),
    )
    module = out / "model.mlir"
    progress.stage(
        "export",
        "tf-dialect MLIR with node-name locations",
        lambda: module.write_text(profiling.export_mlir(case)),
    )
    # Made now, while the model is loaded, for the lower stage.
    frozen = lower_stage.lowerable(case) if options.lower else None
    info = compose.RunInfo(
        model=case.name,
        mode=case.mode.value,
        batch_size=case.batch_size,
        steps=options.steps,
        warmup=options.warmup,
        step_wall_ns=run.step_wall_ns,
        trace_source=str(run.run_dir.relative_to(out)),
        module="model.mlir",
    )
    return run.logdir, module, info, frozen, case


def _optimize(options: FlowOptions, case, profile: OpProfile, out: Path, note):
    from tfpgo.mlir.xla_regions import DOCUMENT, PASS, choose_regions
    from tfpgo.proposer.budget import Budget, step_seconds
    from tfpgo.proposer.optimize import ABSettings, ModelSpec, run_optimize

    # The budget runs from the stage's start: choosing the regions counts too.
    budget = None
    if options.optimize_budget_s is not None:
        budget = Budget(options.optimize_budget_s, step_seconds(profile))
    settings = ABSettings(
        options.ab_repetitions,
        options.ab_steps,
        max(options.warmup, 1),
        time_unchecked=options.optimize_unchecked,
    )
    spec = ModelSpec(
        options.model, options.mode, options.batch_size, options.signature, options.inputs
    )
    # The pass's choice is the xla_regions rule's input: a file beside the analysis.
    # A region is hot by the same measure as an op (--min-share).
    note(f"tfpgo-opt --{PASS} on model.annotated.mlir (min-share={options.min_share})")
    regions = choose_regions(out / "model.annotated.mlir", out / DOCUMENT, options.min_share)
    note(f"{len(regions.regions)} XLA regions chosen, {len(regions.declined)} ops declined")
    analysis = dataclasses.replace(analyse(profile), xla_regions=out / DOCUMENT)
    return run_optimize(
        case,
        spec,
        analysis,
        profile,
        out,
        settings,
        options.steps,
        note,
        budget,
        read_profile=read_candidate_profile,
    )


def read_candidate_profile(logdir: Path, directory: Path) -> OpProfile:
    """A candidate's profile read by the trace reader (--optimize), its op profile
    and HLO profile written into `directory`."""
    from tfpgo.flow import trace_reader

    return trace_reader.run(
        logdir,
        op_profile_out=directory / "op_profile.json",
        hlo_profile_out=directory / "hlo_profile.json",
        build_graph=False,
    ).op_profile


def _carry_over_trace(trace: Path, final: Path, out: Path) -> Path:
    """The trace to read. A trace inside the output directory
    (`--from-trace pgo_out/profile` into pgo_out) would be deleted when the new
    output replaces the old one: it is copied into the staging directory and read
    from there, so the new output keeps it."""
    if not trace.resolve().is_relative_to(final.resolve()):
        return trace
    inside = trace.resolve().relative_to(final.resolve())
    top = inside.parts[0]
    source = final / top
    if source.is_dir():
        shutil.copytree(source, out / top)
    else:
        shutil.copy2(source, out / top)
    return out / inside


def _read_trace(
    trace: Path,
    out: Path,
    final: Path,
    note: Callable[[str], None],
    reading: HostReading,
    keep: frozenset[str] | None = None,
) -> tuple[OpProfile, HloProfile | None]:
    """The op profile and, for XLA-compiled steps, the HLO profile. A trace with
    nothing to annotate stops here, saying why, rather than after annotating.
    `keep`: the node names the module has (`_nodes_the_module_has`); the profiles
    are written again, the event DAG is not."""
    from tfpgo.flow import trace_reader

    result = trace_reader.run(
        trace,
        dag_out=out / "mlir_graph.json" if keep is None else None,
        op_profile_out=out / "op_profile.json",
        hlo_profile_out=out / "hlo_profile.json",
        build_graph=keep is None,
        keep_nodes=keep,
        progress=note,
        show_source=lambda source: source.replace(str(out), str(final)),
        reading=reading,
    )
    if result.empty_reason:
        shown = final / trace.relative_to(out) if trace.is_relative_to(out) else trace
        raise UserError(f"{shown}: {result.empty_reason}")
    return result.op_profile, result.hlo_profile


def _nodes_the_module_has(
    profile: OpProfile, attribution: annotate.Attribution
) -> frozenset[str] | None:
    """The profile's node names that landed on the module, when some device kernel
    ran for nodes of which it has only some (a broadcast XLA fused into the kernel
    and the module folded away): the kernel is then split over those it has
    (`attribute_device`'s `keep`). None when no kernel is split that way."""
    missing = {entry.name for entry in (*attribution.unresolved, *attribution.removed)}
    timed = {
        entry.name for entry in (*attribution.unresolved, *attribution.removed) if entry.device_ps
    }
    if not any(timed & set(k.ops) and set(k.ops) - missing for k in profile.device_kernels):
        return None
    return frozenset(op.name for op in profile.ops if op.name not in missing)


def _check_coverage(
    attribution: annotate.Attribution, minimum: float, trace: Path, module: Path
) -> None:
    if attribution.coverage >= minimum:
        return
    worst = ", ".join(entry.name for entry in attribution.unresolved[:3])
    time = "device time" if attribution.profile_device_ps else "TF op time"
    raise UserError(
        f"{trace}: only {attribution.coverage:.1%} of the {time} resolves to ops of "
        f"{module} (unresolved e.g. {worst}); is this the trace of that module? "
        f"(--min-coverage {minimum} to accept less)"
    )


def _verify_in_tensorflow(annotated: Path) -> None:
    """Parses the annotated module in TensorFlow's registered tf dialect and runs
    TensorFlow's own standard pipeline on it: proof that it is valid tf dialect."""
    import tensorflow as tf

    text = annotated.read_text()
    try:
        optimized = tf.mlir.experimental.run_pass_pipeline(text, "tf-standard-pipeline")
    except Exception as error:  # TensorFlow raises bare Exceptions with MLIR diagnostics
        first = str(error).strip().splitlines()[:1]
        raise UserError(f"{annotated}: TensorFlow rejects the annotated module: {first}") from None
    # Only a module that carried annotations can have lost them in TensorFlow.
    if "profiler_data" in text and "profiler_data" not in optimized:
        raise UserError(f"{annotated}: TensorFlow's pipeline dropped every annotation")


def _render(
    options: FlowOptions, out: Path, levels: list[lowering.LoweredLevel], profile: OpProfile
) -> tuple[list[tuple[str, str]], RenderGraph]:
    """Both pictures in every requested format (one Graphviz layout per graph), and
    the exports: Model Explorer node data, Perfetto trace events, the CSV. Each
    graph file is parsed once; the op graph is returned for the report.

    A graph larger than `options.picture_nodes` is drawn as its hottest
    `picture_nodes` nodes (and the paths between them): a picture of thousands of
    nodes shows nothing; the full graphs stay in the JSON/GraphML files.
    """
    captions = {
        "op_graph": "op graph, colored by self time; hot ops red",
        "event_dag": "event DAG, colored by time; critical path in purple",
    }
    graphs = [("op_graph", "op_graph.json"), ("event_dag", "mlir_graph.json")]
    for level in levels:
        stem = level.op_graph.stem
        captions[stem] = (
            f"{level.coverage.level} op graph, colored by the self time of each op's source"
        )
        graphs.append((stem, level.op_graph.name))
    if (out / IREE_OP_GRAPH).is_file():
        captions["op_graph.iree"] = (
            "linalg op graph, colored by the IREE dispatch time of each op's source"
        )
        graphs.append(("op_graph.iree", IREE_OP_GRAPH))
    pictures = []
    loaded = {}
    picture = next((fmt for fmt in ("svg", "png") if fmt in options.formats), None)
    for stem, source in graphs:
        graph = loaded[stem] = load_graph(out / source)
        caption = captions[stem]
        if graph.device:  # a GPU trace: the op graphs are colored by device time
            caption = caption.replace("self time", "device time")
        top = None
        if len(graph.nodes) > options.picture_nodes:
            top = options.picture_nodes
            caption += f" ({top} hottest of {len(graph.nodes)} nodes)"
        render_options = RenderOptions(top=top)
        paths = [out / f"{stem}.{fmt}" for fmt in options.formats]
        write_pictures(prepare(graph, render_options), render_options, paths)
        if picture is not None:
            pictures.append((caption, f"{stem}.{picture}"))
    exports = {
        "op_graph": {
            "model-explorer": out / "model_explorer.json",
            "model-explorer-kernels": out / "model_explorer.kernels.json",
        },
        "event_dag": {
            "trace": out / "trace.json",
            "speedscope": out / "speedscope.json",
            "csv": out / "op_profile.csv",
        },
    }
    for level in levels:  # node data for each lowered module Model Explorer opens
        name = level.coverage.level
        exports[level.op_graph.stem] = {"model-explorer": out / f"model_explorer.{name}.json"}
        text = level.module.read_text()
        readable = adapter_readable(text, adapter_dialects())
        if readable != text:  # ops of dialects the adapter lacks (linalg, tensor)
            (out / f"model.{name}.explorer.mlir").write_text(readable)
    for stem, requested in exports.items():
        write_exports(ExportInput(loaded[stem], RenderOptions(), profile), requested)
    return pictures, loaded["op_graph"]


def structural_phases(
    op_graph: RenderGraph, attribution: annotate.Attribution, profile: OpProfile
) -> dict[str, Phase]:
    """Each profile entry's phase from the op graph's structure, through the ops the
    entry landed on (tfpgo.analysis.structure)."""
    landed = annotate.landed_on(attribution)
    return phases_by_entry(_dataflow(op_graph), landed, (op.name for op in profile.ops))


def _dataflow(graph: RenderGraph) -> OpDataflow:
    """The op graph's ops and data edges, as the structural phase rule reads them."""
    index = {node.id: at for at, node in enumerate(graph.nodes)}
    return OpDataflow(
        tuple(node.name for node in graph.nodes),
        tuple(node.op_type.removeprefix("tf.") for node in graph.nodes),
        tuple(
            (index[edge.source], index[edge.target])
            for edge in graph.edges
            if edge.kind is RenderEdgeKind.DATA and edge.source in index and edge.target in index
        ),
    )


def _anchor_comparison(
    out: Path, iree: IreeProfile | None, tune: TuneDocument | None
) -> AnchorComparison | None:
    """The anchors' layers against the program `--tune` leaves (the tuned one
    where it kept one, as tfpgo.runtime.load picks; `iree` is the default's
    profile), with what `tune` tried, when they were profiled."""
    if not (out / ANCHOR_PROFILE).is_file() or iree is None:
        return None
    tuned = out / TUNED_PROFILE
    program, profile = ("tuned", IreeProfile.read(tuned)) if tuned.is_file() else ("default", iree)
    tried: dict[str, list[str]] = {}
    whole: list[str] = []
    if tune is not None:
        tried = dispatch_tries(out, tune.decisions)
        whole = whole_program_tries(tune.decisions, tune.trials)
    anchors = AnchorProfile.read(out / ANCHOR_PROFILE)
    # --precision bf16 holds the program to every engine, bfloat16 ones too.
    among = ENGINES if tune is not None and tune.max_output_error is not None else FLOAT32_ENGINES
    return AnchorComparison(anchors, profile, program, tried, whole, among)


def _report(
    out: Path,
    run_info,
    profile: OpProfile,
    hlo: HloProfile | None,
    attribution,
    pictures,
    op_graph: RenderGraph,
    levels,
    optimized=None,
    final_dir: Path | None = None,
) -> None:
    analysis = analyse(profile, structural_phases(op_graph, attribution, profile))
    analysis.write(out / "analysis.json")
    if analysis.device is not None:  # a GPU trace: the chart draws device time
        title = "device time by layer scope: width = time, color = main phase"
        write_scope_chart(analysis.device, out / "scope_chart.svg", title)
    else:
        write_scope_chart(analysis, out / "scope_chart.svg")
    files = []
    for name, what in OUTPUT_FILES.items():
        if "{fmt}" in name:
            pictures_made = [name.format(fmt=fmt) for fmt in PICTURE_FORMATS]
            files += [(made, what) for made in pictures_made if (out / made).exists()]
        elif (out / name).exists() or name.startswith("report."):
            files.append((name, what))
    iree_path, tune_path = out / "iree_profile.json", out / TUNE_DOCUMENT
    iree = IreeProfile.read(iree_path) if iree_path.is_file() else None
    tune = TuneDocument.read(tune_path) if tune_path.is_file() else None
    compose.write_reports(
        compose.ReportInputs(
            run=run_info,
            profile=profile,
            hlo=hlo,
            op_graph=op_graph,
            attribution=attribution,
            pictures=tuple(pictures),
            files=tuple(files),
            levels=tuple(level.coverage for level in levels),
            analysis=analysis,
            analysis_chart="scope_chart.svg",
            optimize=optimized,
            iree=iree,
            tune=tune,
            program=ProgramManifest.read(out) if (out / MANIFEST).is_file() else None,
            anchors=_anchor_comparison(out, iree, tune),
            output_dir=final_dir or out,
        ),
        out,
    )
