"""What `--tune` tries, each decided from the profile or settled only by measuring.

A candidate turns the current program (`Variant`: StableHLO, compiler flags and
IREE's driver) into another, or says why it has nothing to try:

- `local-sync`: IREE's driver that runs every dispatch on the calling thread,
  for a program whose dispatches do not fill its measured call (a
  GRU training step: 0.67 ms of dispatches in a 15.6 ms call on local-task's
  workers, 10.1 ms synchronous). The rest of a call is the host's, mostly
  waking the workers at each dispatch and barrier. It is kept in
  program.json, and `tfpgo.runtime.load` runs the tuned program on it.
- `conv-to-dot`: tfpgo-opt's `tf-profile-guided-conv-to-dot` reads each
  convolution's TensorFlow profile and the dispatch profile of the current
  program and rewrites the hot 1x1 convolutions IREE runs far slower than
  TensorFlow (passes.td). It proposes nothing when the pass rewrites nothing.
- `conv-to-tiled-dot`: the same pass with `kernels=tiles`: the hot, slow
  convolutions whose windows tile the input (a ViT's patch embedding, stride =
  window, and its filter gradient, taps as far apart as there are outputs), in
  any layout, as one reshape + dot_general (+ transpose). IREE 3.13 ran the
  filter gradient of a ViT's 8x8 patch embedding at 2% of this machine's limit,
  1.2 of the training step's 4.2 ms.
- `conv-to-shifted-dots`: the same pass with `kernels=kxk`: the hot 3x3 (any
  window) convolutions IREE runs far slower than TensorFlow, as one
  dot_general per kernel tap over a shifted slice of the input, summed. IREE
  3.13's direct convolution loses up to 2x to the nine matmuls on deep layers
  with few pixels and wins on shallow ones with many, so it is measured apart.
  It asks for a slowdown of 1.5 (the pass's default, 2, for 1x1): measured
  alone, the nine matmuls lost where IREE's convolution took 1.1-1.3x
  TensorFlow's time (16x16x128, 28x28x128) and won from 1.8x (8x8x256). Each
  form it selects is then timed alone both ways (`rewrite_screen`), and only
  the forms whose rewrite wins are rewritten in the program (`sources=`).
- `iree-im2col-data-tiling`: IREE's im2col for convolutions with data tiling and
  the ukernels, so each convolution runs as the packed matmul ukernel, for a
  program with convolutions. Tried before the tile search, whose tiles it would
  make moot (it changes the root ops). Measured on this machine's ResNet50: 205
  -> 65.5 ms at batch 1, 1431 -> 520 ms at batch 8; im2col alone 106 ms, data
  tiling alone 179 ms, so neither candidate alone gets there, and the A/B keeps
  one at a time. The zoo's cnn ran 2.8x slower with it and IREE cannot compile
  MobileNetV2's depthwise convolutions that way: the A/B and the compile decide.
- `dispatch-tiles`: tile sizes for the dispatches of the current program that
  run furthest above their measured bound, searched by timing each variant on
  the dispatch's own benchmark (`dispatch_tiles`), written as an IREE tuning
  spec. It repeats: while it is kept and time is left, a later round tunes
  the next dispatches of the re-profiled program, more and smaller ones.
- `iree-data-tiling` (`--iree-opt-data-tiling` with IREE's ukernels),
  `iree-conv-data-tiling` (the same for convolutions too, IREE's experimental
  `--iree-dispatch-creation-experimental-set-data-tiling-ops`; a 64x64 stride-2
  input gradient's convolution ran 3.8 ms of CPU against 3.2 without, and 52 ms
  without the ukernels), `iree-O2`
  (`--iree-opt-level=O2`), `iree-im2col` (convolutions as im2col + matmul),
  `iree-aggressive-fusion` (IREE's fusion behind a flag, larger dispatches):
  whole-program switches, each of which helps some models here and hurts
  others (O2: the built-in cnn 1.29x faster, ResNet50 2.2x slower), so each is
  measured, never assumed.
- `bf16-contractions`, `bf16-matmuls`, `bf16-convolutions`: only where the user
  allows it (`--precision bf16`, tfpgo.tune.precision) and the CPU has bfloat16
  units, the inputs of those contractions demoted to bfloat16 (with data tiling
  and the ukernels, IREE 3.13's only way to its bfloat16 instructions); held to
  the user's `--max-output-error` instead of float32's tolerance, then timed like
  any other.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Protocol

from tfpgo.documents import read_document
from tfpgo.iree import run as iree_run
from tfpgo.iree.output_check import FLOAT32, program_precision
from tfpgo.iree.profile_document import IreeProfile
from tfpgo.iree.program import Workload
from tfpgo.iree.target import host_features
from tfpgo.mlir import annotate
from tfpgo.runtime.anchor_profile import EngineLayers
from tfpgo.tune import dispatch_tiles, program_ab, rewrite_screen, tile_climb, tile_configs
from tfpgo.tune.dispatch_names import loop_ranges
from tfpgo.tune.document import Decision
from tfpgo.tune.precision import BF16_UNITS, demotion_flags
from tfpgo.tune.program_ab import SCREEN_MARGIN
from tfpgo.tune.rewrite_screen import CONV_TO_DOT, FormTiming
from tfpgo.tune.roofline import MachineLimit

REWRITES_FORMAT = "tfpgo.rewrites"
# Files a candidate may leave in its scratch directory for the user.
# Each kind of convolution rewrite reports in its own file; the kxk one also
# the time of each form alone, both ways.
REWRITES = {"1x1": "rewrites.json", "tiles": "rewrites.tiles.json", "kxk": "rewrites.kxk.json"}
FORMS = "conv_forms.json"
MIN_SLOWDOWN = {"1x1": 2.0, "tiles": 2.0, "kxk": 1.5}
# What the report calls each kind's convolutions.
KINDS = {"1x1": "1x1", "tiles": "window-tiling", "kxk": "non-1x1"}
# local-sync is tried unless the dispatches fill at least this share of a call
# (`_synchronous`).
SYNC_SHARE = 1.0
IM2COL_DATA_TILING = (
    "--iree-global-opt-use-im2col-for-convs",
    "--iree-opt-data-tiling",
    "--iree-llvmcpu-enable-ukernels=all",
)
EVIDENCE = (*REWRITES.values(), FORMS, dispatch_tiles.SEARCH)


@dataclass(frozen=True)
class Variant:
    """A program to compile and run: its StableHLO (generic form, profile in the
    locations, weights included), the flags iree-compile adds for it, and IREE's
    CPU driver it runs on. When the flags name a tuning spec, `tiles` are its
    root configs, and `searched` the dispatches whose tiles were searched
    already (a later round of dispatch-tiles tunes others)."""

    stablehlo: Path
    flags: tuple[str, ...] = ()
    tiles: tuple[tile_configs.RootConfig, ...] = ()
    searched: frozenset[str] = frozenset()
    driver: str = iree_run.DEVICE


@dataclass(frozen=True)
class ProposedVariant:
    """A variant to measure, what it changes, and where: one decision per
    dispatch it targets (the loop fills in `candidate`, `kept` and, once the kept
    program is profiled, a missing `after_ps`)."""

    change: str
    variant: Variant
    decisions: tuple[Decision, ...] = ()


class TileRecords(Protocol):
    """What the tile search takes from and gives to the tuning database
    (`tfpgo.tune.records.Records`)."""

    def prior(
        self, dispatch: str, configurations: Path, flags: tuple[str, ...]
    ) -> tile_climb.Prior | None: ...

    def record_search(
        self,
        found: dispatch_tiles.Search,
        configurations: Path,
        flags: tuple[str, ...],
        program: Path,
    ) -> None: ...


@dataclass(frozen=True)
class CandidateContext:
    """What a candidate decides from: the current program's dispatch profile (and
    its file), what it runs on, when the tuning budget ends (a time.monotonic()
    value), how long a compile of the whole program may take before it is
    taken for hung, and this machine's limit when it is known (the roofline)."""

    profile_path: Path
    profile: IreeProfile
    workload: Workload
    deadline: float
    compile_timeout_s: float
    limit: MachineLimit | None = None
    tile_records: TileRecords | None = None  # the tuning database's, with one
    # The original program's mean call (s) as the runtime runs it, measured when
    # first asked for (tfpgo.tune.program_ab); None where nothing times it.
    call_s: Callable[[], float] | None = None
    # The fastest float32 anchor's layers (an inference step's
    # anchor_profile.json): a bound for the tile search's targets.
    anchor: EngineLayers | None = None


@dataclass(frozen=True)
class Candidate:
    """A kind of change. `propose` gets the current program, what it decides
    from (`CandidateContext`) and a scratch directory, and returns a proposal or
    the reason there is nothing to try; files it writes there named in
    `EVIDENCE` are kept in the output. One that `repeats` is tried again, after
    the others, on the program its kept proposal made, for as long as it is kept
    and the budget lasts."""

    name: str
    propose: Callable[[Variant, CandidateContext, Path], ProposedVariant | str]
    repeats: bool = False


def _conv_to_dot(
    kernels: str,
) -> Callable[[Variant, CandidateContext, Path], ProposedVariant | str]:
    """The hot, slow convolutions of one kind (the pass's `kernels`: 1x1, tiles
    or kxk) as dot_generals, decided by the pass; the kxk forms also timed
    alone both ways."""
    kind = KINDS[kernels]

    def propose(
        current: Variant, context: CandidateContext, scratch: Path
    ) -> ProposedVariant | str:
        rewritten = scratch / "conv_to_dot.stablehlo.mlir"
        report = scratch / REWRITES[kernels]

        def rewrite(*options: str) -> dict:
            """The pass's report of its run on the current program."""
            annotate.run_tfpgo_opt(
                current.stablehlo,
                rewritten,
                [
                    "--mlir-print-op-generic",
                    f"--{CONV_TO_DOT}=target-profile={context.profile_path} "
                    f"kernels={kernels} min-slowdown={MIN_SLOWDOWN[kernels]} "
                    f"report-output={report} {' '.join(options)}",
                ],
            )
            return read_document(report, REWRITES_FORMAT)

        selected = rewrite()
        rewrites = selected["rewritten"]
        if not rewrites:
            return (
                f"{CONV_TO_DOT} found no hot {kind} convolution far slower than TensorFlow "
                f"({len(selected['declined'])} hot ones declined; {report.name} says why)"
            )
        if kernels != "kxk":  # one matrix product each: the profile decides
            return _rewrite_proposal(current, rewritten, rewrites, kind, {})
        timings = rewrite_screen.screen(
            rewrites, scratch / "forms", context.deadline, context.compile_timeout_s
        )
        (scratch / FORMS).write_text(json.dumps([t.to_json() for t in timings], indent=1) + "\n")
        winners = [source for timing in timings if timing.wins for source in timing.sources]
        if not winners:
            return (
                f"none of the {len(timings)} forms of the {len(rewrites)} hot, slow {kind} "
                f"convolutions ran faster rewritten, each timed alone ({FORMS} says how "
                "long, or why not)"
            )
        by_source = {source: timing for timing in timings for source in timing.sources}
        return _rewrite_proposal(
            current,
            rewritten,
            rewrite(f"sources={','.join(winners)}")["rewritten"],
            kind,
            by_source,
        )

    return propose


def _rewrite_proposal(
    current: Variant,
    rewritten: Path,
    rewrites: list[dict],
    kind: str,
    alone: dict[str, FormTiming],
) -> ProposedVariant:
    """The rewritten program, with one decision per set of rewritten
    convolutions that ran in the same dispatches (IREE's one executable for
    identical sites: its time counted once, the tf ops all of theirs) and,
    where their form was timed alone both ways, those times."""
    sources = ", ".join(r["source"] for r in rewrites[:3]) + (", ..." if len(rewrites) > 3 else "")
    shared: dict[tuple[str, ...], list[dict]] = {}
    for rewrite in rewrites:
        shared.setdefault(tuple(rewrite["dispatches"]), []).append(rewrite)
    decisions = tuple(
        Decision(
            "",
            ", ".join(dispatches),
            tuple(r["source"] for r in group),
            f"{group[0]['form']} ({group[0]['input']} by {group[0]['kernel']}, "
            f"strides {group[0]['strides']})" + _alone(alone.get(group[0]["source"])),
            group[0]["target_ps"],
            None,
            False,
        )
        for dispatches, group in shared.items()
    )
    return ProposedVariant(
        f"{len(rewrites)} hot {kind} convolutions as dot_generals: {sources}",
        # Dispatch names are the old program's: tiles (matched by loop ranges)
        # carry over, what was searched does not.
        replace(current, stablehlo=rewritten, searched=frozenset()),
        decisions,
    )


def _alone(timing: FormTiming | None) -> str:
    if timing is None or timing.convolution_ps is None or timing.rewritten_ps is None:
        return ""
    return f", alone {timing.convolution_ps / 1e9:.2f} -> {timing.rewritten_ps / 1e9:.2f} ms"


def _dispatch_tiles(
    current: Variant, context: CandidateContext, scratch: Path
) -> ProposedVariant | str:
    """Tile sizes of the dispatches with most headroom, searched by measuring each
    on its own benchmark (dispatch_tiles). A later round leaves out the
    dispatches an earlier one searched and those its tiles already match (a
    spec matches by loop ranges), and keeps its tiles in the new spec."""
    wanted = _tile_targets(current, context)
    if isinstance(wanted, str):
        return wanted
    flags = tile_configs.without_spec(current.flags)
    found = dispatch_tiles.search(
        current.stablehlo,
        flags,
        wanted,
        _time_generation,
        _in_place_timer(context.workload, scratch),
        scratch,
        context.deadline,
        context.compile_timeout_s,
        current.tiles,
        recorded=context.tile_records.prior if context.tile_records else None,
    )
    dispatch_tiles.write_search(found, scratch, current.tiles)
    if context.tile_records is not None:
        context.tile_records.record_search(
            found, scratch / "configurations", flags, current.stablehlo
        )
    if not found.dispatches:
        return (
            f"none of the {len(wanted)} dispatches with most headroom has root-op tiles this "
            "search can read in IREE's dumped configuration (one lowering_config per loop; "
            "data tiling's mmt4d ops have none)"
        )
    if not found.chosen:
        recorded = sum(1 for name in found.dispatches if name in found.reused)
        whence = f", {recorded} of them as recorded" if recorded else ""
        return (
            f"no tile variant beat IREE's own by more than {SCREEN_MARGIN:.0%} on the "
            f"{len(found.dispatches)} dispatches with most headroom{whence} "
            f"({dispatch_tiles.SEARCH} has the times and whence)"
        )
    return _tiles_proposal(current, flags, found, context.profile, scratch)


def _tile_targets(
    current: Variant, context: CandidateContext
) -> list[dispatch_tiles.HotDispatch] | str:
    """The dispatches to search (`dispatch_tiles.targets`), or why there is none."""
    tuned = {config.loops for config in current.tiles}
    skip = current.searched | {
        d.name for d in context.profile.dispatches if loop_ranges(d.name) in tuned
    }
    later = bool(current.tiles)
    wanted = dispatch_tiles.targets(context.profile, skip, later, context.limit, context.anchor)
    if wanted:
        return wanted
    share = dispatch_tiles.LATER_MIN_SHARE if later else dispatch_tiles.MIN_SHARE
    return (
        f"no dispatch with {share:.0%} of the dispatch time"
        f"{' and not searched before' if skip else ''} runs above its bound (its ops' "
        "TensorFlow time, the program's best contraction rate"
        f"{', the anchor engine' + chr(39) + 's time for them' if context.anchor else ''}"
        f"{', or within 15% of this machine' + chr(39) + 's limit' if context.limit else ''})"
    )


def _in_place_timer(workload: Workload, scratch: Path) -> Callable[[Path], dict[str, float]]:
    """Times a compiled program's dispatches in place: ps an invocation, by dispatch."""

    def time_in_place(vmfb: Path) -> dict[str, float]:
        timings = iree_run.profile_dispatches(
            vmfb, workload.entry, workload.inputs, dispatch_tiles.IN_PLACE_RUNS, scratch, 1
        )
        return {name: t.total_ps / t.count for name, t in timings.items() if t.count}

    return time_in_place


def _time_generation(default: Path, variants: Sequence[Path]) -> list[tuple[float, float]]:
    """Times a generation of a climb's benchmark variants beside IREE's choice."""
    arm = program_ab.benchmark_arm
    what = "dispatch-tiles (a generation)"
    return program_ab.generation(arm(default), [arm(v) for v in variants], default.parent, what)


def _tiles_proposal(
    current: Variant,
    flags: tuple[str, ...],
    found: dispatch_tiles.Search,
    profile: IreeProfile,
    scratch: Path,
) -> ProposedVariant:
    """The current program with the spec of every winner in `found` (the search
    wrote it in `scratch`), one decision per dispatch it tunes."""
    changes = "; ".join(
        f"{name.rsplit('_dispatch_', 1)[-1]}: {best.config.text()}"
        for name, best in found.chosen.items()
    )
    spec = f"{tile_configs.SPEC_FLAG}{scratch / tile_configs.SPEC}"
    dispatches = {d.name: d for d in profile.dispatches}
    decisions = []
    for name, best in found.chosen.items():
        count = dispatches[name].count
        decisions.append(
            Decision(
                "",
                name,
                dispatches[name].sources,
                f"{best.config.text()} ({_whence(found, name)})",
                round(best.iree_ps * count),
                round(best.ps * count),
                False,
            )
        )
    searched = frozenset(name for name, tried in found.tried.items() if tried) | set(found.reused)
    return ProposedVariant(
        f"tuning spec for {len(found.chosen)} dispatches ({changes})",
        replace(
            current,
            flags=(*flags, spec),
            tiles=(*current.tiles, *(best.config for best in found.chosen.values())),
            searched=current.searched | searched,
        ),
        tuple(decisions),
    )


def _whence(found: dispatch_tiles.Search, name: str) -> str:
    """Where a dispatch's tiles came from: a record, a climb seeded or resumed from
    records, or a search from IREE's choice."""
    return found.reused.get(name) or found.seeded.get(name) or "searched"


def _synchronous(
    current: Variant, context: CandidateContext, scratch: Path
) -> ProposedVariant | str:
    """IREE's local-sync driver unless the program's dispatches fill its call
    (SYNC_SHARE). The rest of a call is the host's, mostly local-task's workers
    woken and waited for at every dispatch and barrier (a loop's trips pay it
    each time), which local-sync, running each dispatch on the calling thread,
    does not pay; it gives up the other cores. On one core the dispatches take
    at least their time on the workers and at most that times the workers, so
    local-sync cannot gain where they fill the call (MobileNetV2: 7.6 ms a call
    on two workers, 11.6 ms synchronous) and surely gains where they fill less
    than one worker's share; between the two, the A/B decides (the rnn: 0.89 ms
    of dispatches in calls measured at 1.7-2.9 ms, 1.05 ms on local-sync)."""
    if current.driver == iree_run.SYNC:
        return "the current program runs on local-sync already"
    if context.call_s is None:
        return "the program's call was not timed, so its host share is not known"
    call_s = context.call_s()
    dispatch_s = context.profile.run_dispatch_s
    share = dispatch_s / call_s
    # Dispatches a submission runs side by side on the workers each count: a
    # program that keeps both cores busy adds up to more than its call.
    filled = (
        f"its dispatches add up to {share:.0%} of a call ({dispatch_s * 1e3:.2f} ms against "
        f"{call_s * 1e3:.2f} ms on local-task's workers as the runtime runs them)"
    )
    if share >= SYNC_SHARE:
        return f"{filled}: on one core they would take the whole call at least"
    change = f"run on IREE's {iree_run.SYNC} driver ({filled}: the rest is the host's)"
    return ProposedVariant(change, replace(current, driver=iree_run.SYNC))


def _compiler_flags(
    *flags: str, drops_spec: bool = False
) -> Callable[[Variant, CandidateContext, Path], ProposedVariant | str]:
    """A whole-program compiler option over the current program. `drops_spec`: the
    option changes what the root ops are (data tiling makes matmuls mmt4d), so a
    tuning spec tuned for the old ones is left out rather than misapplied (IREE
    fails to build its pipeline with both)."""

    def propose(
        current: Variant, context: CandidateContext, scratch: Path
    ) -> ProposedVariant | str:
        if all(flag in current.flags for flag in flags):
            return "the current program is compiled with it already"
        kept = tile_configs.without_spec(current.flags) if drops_spec else current.flags
        added = tuple(flag for flag in flags if flag not in kept)
        change = f"iree-compile {' '.join(flags)}"
        if len(kept) < len(current.flags):
            change += " (without the tuning spec, whose tiles are for other root ops)"
            return ProposedVariant(
                change, replace(current, flags=(*kept, *added), tiles=(), searched=frozenset())
            )
        return ProposedVariant(change, replace(current, flags=(*kept, *added)))

    return propose


def _convolutions_as_matmuls(
    current: Variant, context: CandidateContext, scratch: Path
) -> ProposedVariant | str:
    """im2col, data tiling and the ukernels (IM2COL_DATA_TILING) for a program
    with convolutions (IREE names a strided 1x1 one's dispatch a `reduction`, so
    the program is read, not the dispatch names)."""
    if not _has_convolution(current.stablehlo):
        return "the program has no convolution"
    return _compiler_flags(*IM2COL_DATA_TILING, drops_spec=True)(current, context, scratch)


def _has_convolution(stablehlo: Path) -> bool:
    with stablehlo.open("rb") as program:
        return any(b'"stablehlo.convolution"' in line for line in program)


def _demoted(
    operations: str,
) -> Callable[[Variant, CandidateContext, Path], ProposedVariant | str]:
    """The inputs of the program's `operations` (all, matmul, conv) in bfloat16,
    where the user allows it and the CPU has the units."""

    def propose(
        current: Variant, context: CandidateContext, scratch: Path
    ) -> ProposedVariant | str:
        budget = context.workload.output_budget
        if budget is None:
            return "computes in float32 only: --precision bf16 allows bfloat16 contractions"
        if program_precision(current.flags) != FLOAT32:
            return f"the current program has {program_precision(current.flags)} already"
        if operations == "conv" and not _has_convolution(current.stablehlo):
            return "the program has no convolution"
        features = host_features()
        if not any(features.get(unit) for unit in BF16_UNITS):
            return (
                f"this CPU has no bfloat16 units ({' or '.join(BF16_UNITS)}): bfloat16 "
                "would be computed in float32 code"
            )
        kept = tile_configs.without_spec(current.flags)
        flags = (*kept, *(f for f in demotion_flags(operations) if f not in kept))
        change = (
            f"{program_precision(flags)}: iree-compile {' '.join(demotion_flags(operations))}, "
            f"held to --max-output-error {budget:g}"
        )
        demoted = replace(current, flags=flags, tiles=(), searched=frozenset())
        return ProposedVariant(change, demoted)

    return propose


# In the order they are tried: the driver first, so that every later candidate
# is measured as the program will run; then the profile-guided rewrites; then
# the options that change what the root ops are (data tiling makes a matmul an
# mmt4d, im2col a convolution a matmul, a demotion its inputs bfloat16), before
# the tile search rather than after it: a kept one drops the tuning spec, so
# tiles searched first would be wasted, and with a short budget the search
# (open-ended) left them untried (the zoo's mlp: data tiling 6.81 -> 1.81 ms,
# never reached in 2 minutes); then the options the tiles survive.
CANDIDATES = (
    Candidate(iree_run.SYNC, _synchronous),
    Candidate("conv-to-dot", _conv_to_dot("1x1")),
    Candidate("conv-to-tiled-dot", _conv_to_dot("tiles")),
    Candidate("conv-to-shifted-dots", _conv_to_dot("kxk")),
    Candidate("iree-im2col-data-tiling", _convolutions_as_matmuls),
    Candidate(
        "iree-data-tiling",
        _compiler_flags(
            "--iree-opt-data-tiling", "--iree-llvmcpu-enable-ukernels=all", drops_spec=True
        ),
    ),
    Candidate(
        "iree-conv-data-tiling",
        _compiler_flags(
            "--iree-opt-data-tiling",
            "--iree-dispatch-creation-experimental-set-data-tiling-ops=matmul",
            "--iree-dispatch-creation-experimental-set-data-tiling-ops=convolution",
            "--iree-llvmcpu-enable-ukernels=all",
            drops_spec=True,
        ),
    ),
    Candidate("bf16-contractions", _demoted("all")),
    Candidate("bf16-matmuls", _demoted("matmul")),
    Candidate("bf16-convolutions", _demoted("conv")),
    Candidate("dispatch-tiles", _dispatch_tiles, repeats=True),
    Candidate("iree-O2", _compiler_flags("--iree-opt-level=O2")),
    Candidate("iree-im2col", _compiler_flags("--iree-global-opt-use-im2col-for-convs")),
    Candidate(
        "iree-aggressive-fusion",
        _compiler_flags("--iree-dispatch-creation-enable-aggressive-fusion"),
    ),
)
