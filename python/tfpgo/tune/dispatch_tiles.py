"""Per-dispatch tiling: IREE tuning specs for the hottest dispatches, found by measuring.

IREE picks each dispatch's tile sizes by heuristics; a tuning spec
(`--iree-codegen-tuning-spec-path`, a transform-dialect library whose entry
sequence carries `iree_codegen.tuning_spec_entrypoint`) can set them per root
op with `#iree_codegen.compilation_info` (IREE's
`compiler/src/iree/compiler/Codegen/LLVMCPU/test/tuning_spec_matmul.mlir` shows
the form; llvm-cpu applies specs from IREE 3.11). Here:

- which dispatches (`targets`): those with at least `MIN_SHARE` of the
  dispatch time, ranked by their headroom over a measured bound (the
  TensorFlow time of their ops, or their FLOPs at the best rate a contraction
  of the same program reached), at most `MAX_DISPATCHES` (in a later round,
  more and smaller ones); the search time is
  split between them in proportion to that headroom (Ansor's task scheduler
  spends its time where weight x possible gain is largest);
- where they start: IREE's own choice for each, read from
  `--iree-hal-dump-executable-configurations-to` (the root op's
  `#iree_cpu.lowering_config` and its function's pipeline);
- what is tried: a hill climb over neighbours (tfpgo.tune.tile_configs: one
  tile doubled or halved at a time, divisibility kept), each variant a spec whose matcher
  names the dispatch's loop ranges (`transform.match.structured.dim`, so a
  spec for one dispatch leaves the others alone);
- how: on the dispatch's own benchmark (`--iree-hal-dump-executable-benchmarks-to`,
  see tfpgo.iree.dispatch_benchmark), which compiles in about a second where
  the program takes minutes; each generation of variants is timed in one
  process beside IREE's choice, called in turn (tfpgo.tune.tile_climb);
- where it is decided: the benchmark's best few variants of each dispatch are
  timed again in the whole program, round by round (a dispatch alone is not the
  dispatch in its program); a dispatch keeps the variant with the best in-place
  ratio to IREE's choice if it beats it by more than the noise floor.

The spec with every winner is then one candidate of the loop, which checks the
outputs and times the whole program against the current best. When it is kept
and time is left, the loop runs the search again on the re-profiled program: the
next dispatches with most headroom (those searched before left out), with the
kept tiles in every compile and in the new spec (`base`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tfpgo.errors import UserError
from tfpgo.iree import dispatch_benchmark, profile_document
from tfpgo.iree import run as iree_run
from tfpgo.runtime.anchor_dispatches import anchor_shares
from tfpgo.runtime.anchor_profile import EngineLayers
from tfpgo.tune.dispatch_names import dispatch_flops
from tfpgo.tune.program_ab import SCREEN_MARGIN
from tfpgo.tune.roofline import MachineLimit, at_limit, dispatch_bound_ps
from tfpgo.tune.tile_climb import Climb, Prior, Recorded, TileTrial, TimeGeneration
from tfpgo.tune.tile_configs import SPEC, SPEC_FLAG, RootConfig, root_configs, spec_text

MIN_SHARE = 0.03
MAX_DISPATCHES = 8
# A later round (`targets`' `later`): the hottest dispatches are tuned, the rest are
# many and small (MobileNetV2 and EfficientNetB0: 37 and 75 dispatches, none above
# 6%), so it takes more of them, so that what it gains is large enough for the
# loop's A/B to tell (a second round of 8 at 3% gained 2-5% on MobileNetV2).
LATER_MIN_SHARE = 0.01
LATER_MAX_DISPATCHES = 16
# The climbs on benchmarks get this share of the search time; the rest times
# the benchmark's best IN_PLACE_VARIANTS variants of each dispatch in the program.
CLIMB_SHARE = 0.5
IN_PLACE_VARIANTS = 3
IN_PLACE_RUNS = 3  # profiled runs of the program a timing (after one warm-up run)
SEARCH_RUNS = 3  # profiled runs a round (after one warm-up run)
COMPILE_TIMEOUT_MIN_S, COMPILE_TIMEOUT_FACTOR = 60.0, 5.0
SEARCH = "tiles.json"


@dataclass(frozen=True)
class Search:
    """What the search measured: per dispatch, IREE's choice, each variant tried
    against it, and the winner, if any."""

    dispatches: dict[str, RootConfig]
    tried: dict[str, list[TileTrial]]  # on the dispatch's own benchmark
    chosen: dict[str, TileTrial]  # the winning variant of each dispatch that has one
    failed: dict[str, str]  # "dispatch config" IREE could not compile, and its error
    # The benchmark's best variants timed again in the whole program, round by round.
    in_place: dict[str, list[TileTrial]] = field(default_factory=dict)
    # Per dispatch whose tiles came from the tuning database with no search: whence
    # (chosen holds the recorded winner; none when the record kept IREE's tiles).
    reused: dict[str, str] = field(default_factory=dict)
    # Per dispatch whose climb started from records (seeded, or resumed): whence.
    seeded: dict[str, str] = field(default_factory=dict)
    # The dispatches whose climb the time ran out on (none started, or cut short).
    cut: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, object]:
        dispatches = {
            name: {
                "loops": list(config.loops),
                "iree": config.text(),
                "tried": [
                    {"config": t.config.text(), "ps": t.ps, "iree_ps": t.iree_ps}
                    for t in self.tried.get(name, [])
                ],
                "in_place": [
                    {"config": t.config.text(), "ps": t.ps, "iree_ps": t.iree_ps}
                    for t in self.in_place.get(name, [])
                ],
                "chosen": self.chosen[name].config.text() if name in self.chosen else None,
                "reused": self.reused.get(name),
                "seeded": self.seeded.get(name),
                "finished": name not in self.cut,
            }
            for name, config in self.dispatches.items()
        }
        failed = [{"variant": variant, "error": error} for variant, error in self.failed.items()]
        return {"dispatches": dispatches, "failed": failed}


@dataclass(frozen=True)
class HotDispatch:
    """A dispatch worth tuning and what the profile says it could gain: its time
    over the profiled runs minus its bound (see `targets`)."""

    name: str
    total_ps: int
    bound_ps: int

    @property
    def headroom_ps(self) -> int:
        return max(self.total_ps - self.bound_ps, 0)


def targets(
    profile: profile_document.IreeProfile,
    skip: Collection[str] = frozenset(),
    later: bool = False,
    limit: MachineLimit | None = None,
    anchor: EngineLayers | None = None,
) -> list[HotDispatch]:
    """The dispatches worth tuning, most headroom first: each at least MIN_SHARE
    of the dispatch time, with a bound it runs above, at most MAX_DISPATCHES,
    none of those named in `skip` (searched by an earlier round); for a `later`
    round, LATER_MIN_SHARE and LATER_MAX_DISPATCHES.

    A dispatch's bound is the lower of two measured figures: the TensorFlow time
    of the ops it runs (TensorFlow ran them that fast on this machine), and for a
    contraction its FLOPs at the best rate a hot contraction of this program reached
    (the program's own roofline: what IREE already achieves on this CPU). An
    `anchor` (the layers of an engine a CPU user would pick instead:
    tfpgo.runtime.anchor_profile) adds a third where it ran any of the
    dispatch's ops: its time for the dispatch's share of them
    (tfpgo.runtime.anchor_dispatches), so the dispatches furthest behind that
    engine come first. With
    this machine's `limit`, no bound is below the dispatch's roofline (its FLOPs
    at peak, its bytes at the bandwidth: `tfpgo.tune.roofline`), and a dispatch
    within 15% of its roofline is left out: nothing is left to gain there. A
    dispatch with no bound, or at it, has nothing the profile says it can gain."""
    total = max(profile.dispatch_ps, 1)
    hot = [d for d in profile.dispatches if d.total_ps >= MIN_SHARE * total and d.count]
    flops = {d.name: dispatch_flops(d.name) for d in profile.dispatches}
    anchored = {} if anchor is None else _anchor_bounds(profile, anchor)
    # The rate of hot contractions only: a dispatch of a few microseconds is
    # timed too coarsely to set a bound for the others.
    rates = [flops[d.name] * d.count / d.total_ps for d in hot if flops[d.name]]
    best_rate = max(rates, default=0.0)
    min_share = LATER_MIN_SHARE if later else MIN_SHARE
    candidates = [
        d
        for d in profile.dispatches
        if d.total_ps >= min_share * total and d.count and d.name not in skip
    ]
    found = []
    for dispatch in candidates:
        bounds = [dispatch.tf_self_ps] if dispatch.tf_self_ps > 0 else []
        if flops[dispatch.name] and best_rate:
            bounds.append(round(flops[dispatch.name] * dispatch.count / best_rate))
        if dispatch.name in anchored:
            bounds.append(anchored[dispatch.name])
        roof = None if limit is None else dispatch_bound_ps(dispatch.name, dispatch.count, limit)
        if roof is not None and at_limit(roof, dispatch.total_ps):
            continue
        if bounds:
            found.append(HotDispatch(dispatch.name, dispatch.total_ps, max(min(bounds), roof or 0)))
    found = [t for t in found if t.headroom_ps > 0]
    found.sort(key=lambda t: (-t.headroom_ps, t.name))
    return found[: LATER_MAX_DISPATCHES if later else MAX_DISPATCHES]


def _anchor_bounds(profile: profile_document.IreeProfile, anchor: EngineLayers) -> dict[str, int]:
    """Per dispatch the anchor ran any op of, its time for the dispatch's share
    of them over the profiled runs."""
    runs = max(profile.runs, 1)
    shares = anchor_shares(profile, anchor).dispatches
    return {share.dispatch: runs * share.anchor_ps for share in shares if share.comparable}


def search(
    stablehlo: Path,
    flags: tuple[str, ...],
    wanted: Sequence[HotDispatch],
    time_generation: TimeGeneration,
    time_in_place: Callable[[Path], dict[str, float]],
    scratch: Path,
    deadline: float,
    compile_timeout_s: float,
    base: Sequence[RootConfig] = (),
    recorded: Recorded | None = None,
) -> Search:
    """Tunes each target on its own dispatch benchmark (dispatch_benchmark), in
    `wanted`'s order, each given a share of the climbs' time (CLIMB_SHARE of the
    time left until `deadline`, a time.monotonic() value) in proportion to its
    headroom: a hill climb from IREE's choice (tfpgo.tune.tile_climb), each
    generation timed beside IREE's choice by `time_generation`;
    `compile_timeout_s` bounds the whole program's compile (IREE's compiler now
    and then hangs).

    A dispatch alone is not a dispatch in its program (other dispatches may run
    beside it, its inputs come from a cache another one warmed): on a residual
    CNN's 3x3 convolutions a wider vector tile was 27% faster in the program and
    no faster on the benchmark. So the climbs get CLIMB_SHARE of the time, and
    then, round by round, the program is compiled with each dispatch's k-th best
    benchmark variant (k < IN_PLACE_VARIANTS, those that beat IREE's choice
    there) and its dispatches timed in place by `time_in_place` (ps an
    invocation, by dispatch), each round between two timings of the program
    without the spec. A dispatch timed in place keeps its best in-place variant
    if it beats IREE's choice there by more than the noise floor; one the time
    left no round for keeps its benchmark winner.

    `base` are the tiles an earlier round kept (`flags` has no spec): the
    program is compiled with them throughout, so the targets are timed in the
    program as it is now and every spec written keeps them.

    `recorded` (the tuning database's tile records) gives, from the dispatch's
    name and the dumped configurations, what is known of its root op on this
    target (`Prior`): after a search that ended, its outcome, with no search
    (`reused` says whence; a recorded winner is kept in every in-place round);
    after one cut short, a climb resumed from its best; from the same op at
    other sizes, a climb seeded (`seeded` says whence for both)."""
    scratch.mkdir(parents=True, exist_ok=True)
    compiled = _compile_default(stablehlo, flags, base, scratch, compile_timeout_s)
    roots, benchmarks = compiled.roots, compiled.benchmarks
    chosen_targets = [t for t in wanted if t.name in roots and t.name in benchmarks]
    found = Search({t.name: roots[t.name] for t in chosen_targets}, {}, {}, {})
    to_climb, priors = _recall(found, chosen_targets, recorded, compiled.configurations, flags)
    base = (*base, *(found.chosen[name].config for name in found.reused if name in found.chosen))
    _climb_each(found, to_climb, priors, compiled, flags, time_generation, scratch, deadline)
    _confirm_in_place(
        stablehlo, flags, base, found, time_in_place, scratch, deadline, compile_timeout_s
    )
    return found


@dataclass(frozen=True)
class _DefaultCompile:
    """What the program compiled with IREE's own tiles (and `base`) dumped: its
    dispatches' root configs and benchmarks."""

    configurations: Path  # the dumped configurations: what records are matched on
    roots: dict[str, RootConfig]
    benchmarks: dict[str, Path]  # without IREE's configuration
    # A benchmark's compile may hang on tiles IREE mishandles: bounded by a few
    # times the whole program's.
    benchmark_timeout_s: float


def _compile_default(
    stablehlo: Path,
    flags: tuple[str, ...],
    base: Sequence[RootConfig],
    scratch: Path,
    compile_timeout_s: float,
) -> _DefaultCompile:
    """Compiles the program with `base`'s tiles (default.vmfb), dumping IREE's
    configurations and the dispatch benchmarks."""
    configurations, benchmarks = scratch / "configurations", scratch / "benchmarks"
    started = time.monotonic()
    if base:
        (scratch / "base.spec.mlir").write_text(spec_text(base))
        program_flags = (*flags, f"{SPEC_FLAG}{scratch / 'base.spec.mlir'}")
    else:
        program_flags = flags
    iree_run.compile_vmfb(
        stablehlo,
        scratch / "default.vmfb",
        (
            *program_flags,
            f"--iree-hal-dump-executable-configurations-to={configurations}",
            f"{dispatch_benchmark.DUMP_FLAG}{benchmarks}",
        ),
        compile_timeout_s,
    )
    timeout_s = max(COMPILE_TIMEOUT_MIN_S, COMPILE_TIMEOUT_FACTOR * (time.monotonic() - started))
    return _DefaultCompile(
        configurations,
        root_configs(configurations),
        dispatch_benchmark.unconfigured_benchmarks(benchmarks, scratch / "unconfigured"),
        timeout_s,
    )


def _recall(
    found: Search,
    targets: list[HotDispatch],
    recorded: Recorded | None,
    configurations: Path,
    flags: tuple[str, ...],
) -> tuple[list[HotDispatch], dict[str, Prior]]:
    """What the records know of each target (`search`'s docstring): the outcome of
    a search that ended goes into `found` as it is; the targets left to climb, and
    the records each of their climbs starts from."""
    to_climb = list(targets)
    priors: dict[str, Prior] = {}
    for target in targets:
        prior = recorded(target.name, configurations, flags) if recorded else None
        if prior is not None and prior.final:
            found.reused[target.name] = prior.whence
            if prior.winner is not None:
                found.chosen[target.name] = prior.winner
            to_climb.remove(target)
        elif prior is not None:
            priors[target.name], found.seeded[target.name] = prior, prior.whence
    return to_climb, priors


def _climb_each(
    found: Search,
    targets: list[HotDispatch],
    priors: dict[str, Prior],
    compiled: _DefaultCompile,
    flags: tuple[str, ...],
    time_generation: TimeGeneration,
    scratch: Path,
    deadline: float,
) -> None:
    """A climb on each target's benchmark, in its share of CLIMB_SHARE of the time
    left; sets `found.tried`, `found.cut` and, for a winner, `found.chosen`."""
    climbs_end = time.monotonic() + max(deadline - time.monotonic(), 0.0) * CLIMB_SHARE
    for index, target in enumerate(targets):
        headroom_left = sum(t.headroom_ps for t in targets[index:])
        share = target.headroom_ps / headroom_left if headroom_left else 1.0
        until = time.monotonic() + max(climbs_end - time.monotonic(), 0.0) * share
        if time.monotonic() >= until:
            found.tried[target.name] = []
            found.cut.append(target.name)
            continue
        climb = Climb(
            target.name, compiled.roots[target.name], flags, time_generation,
            compiled.benchmark_timeout_s, priors.get(target.name),
        )  # fmt: skip
        climb.run(compiled.benchmarks[target.name], scratch / f"dispatch_{index}", until)
        found.tried[target.name] = climb.tried
        found.failed.update({f"{target.name} {k}": v for k, v in climb.failed.items()})
        if not climb.ended:
            found.cut.append(target.name)
        if climb.best is not None and climb.best.ratio < 1 - SCREEN_MARGIN:
            found.chosen[target.name] = climb.best


def _confirm_in_place(
    stablehlo: Path,
    flags: tuple[str, ...],
    base: Sequence[RootConfig],
    found: Search,
    time_in_place: Callable[[Path], dict[str, float]],
    scratch: Path,
    deadline: float,
    timeout_s: float,
) -> None:
    """The in-place rounds of `search` (its docstring): sets `found.in_place` and
    replaces `found.chosen` for every dispatch a round timed."""
    ranked = {}
    for name, trials in found.tried.items():
        best: list[TileTrial] = []
        for trial in sorted(trials, key=lambda t: t.ratio):
            if trial.ratio < 1 and all(t.config != trial.config for t in best):
                best.append(trial)
        if best:
            ranked[name] = [t.config for t in best[:IN_PLACE_VARIANTS]]
    rounds = max((len(configs) for configs in ranked.values()), default=0)
    default = scratch / "default.vmfb"
    before = time_in_place(default) if rounds and time.monotonic() < deadline else {}
    for index in range(rounds):
        if time.monotonic() >= deadline:
            break
        variant = {n: configs[index] for n, configs in ranked.items() if index < len(configs)}
        spec = scratch / f"in_place_{index}.spec.mlir"
        spec.write_text(spec_text([*base, *variant.values()]))
        vmfb = scratch / f"in_place_{index}.vmfb"
        try:
            iree_run.compile_vmfb(stablehlo, vmfb, (*flags, f"{SPEC_FLAG}{spec}"), timeout_s)
        except UserError as error:  # the round is lost; its variants stay untimed in place
            found.failed[f"in place, round {index}"] = str(error)
            continue
        timed, after = time_in_place(vmfb), time_in_place(default)
        for name, config in variant.items():
            if name in timed and name in before and name in after:
                trial = TileTrial(config, timed[name], (before[name] + after[name]) / 2)
                found.in_place.setdefault(name, []).append(trial)
        before = after
    for name, trials in found.in_place.items():
        winner = min(trials, key=lambda t: t.ratio)
        if winner.ratio < 1 - SCREEN_MARGIN:
            found.chosen[name] = winner
        else:
            found.chosen.pop(name, None)


def write_search(found: Search, scratch: Path, base: Sequence[RootConfig] = ()) -> None:
    """tiles.json, and the spec with `base` (an earlier round's tiles) and the
    winners, if any."""
    (scratch / SEARCH).write_text(json.dumps(found.to_json(), indent=1))
    if found.chosen:
        chosen = [trial.config for trial in found.chosen.values()]
        (scratch / SPEC).write_text(spec_text([*base, *chosen]))
