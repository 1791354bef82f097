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
- what is tried: a hill climb over neighbours (`neighbours`: one tile doubled
  or halved at a time, divisibility kept), each variant a spec whose matcher
  names the dispatch's loop ranges (`transform.match.structured.dim`, so a
  spec for one dispatch leaves the others alone);
- how: on the dispatch's own benchmark (`--iree-hal-dump-executable-benchmarks-to`,
  see tfpgo.iree.dispatch_benchmark), which compiles in about a second where
  the program takes minutes; each generation of variants is timed between two
  timings of IREE's choice, interpolated to each variant's place (the load of
  a shared machine drifts: that cancels a steady drift);
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
import re
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from tfpgo.errors import UserError
from tfpgo.iree import dispatch_benchmark
from tfpgo.iree import run as iree_run
from tfpgo.proposer.ab import NOISE
from tfpgo.tune.dispatch_names import dispatch_flops, loop_ranges
from tfpgo.tune.roofline import MachineLimit, at_limit, dispatch_bound_ps

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
SPEC = "tuning_spec.mlir"
SEARCH = "tiles.json"
SPEC_FLAG = "--iree-codegen-tuning-spec-path="
_FUNCTION = re.compile(r"func\.func @([\w$.-]+)\(")
_CONFIG = re.compile(
    r"lowering_config = #iree_cpu\.lowering_config<distribution = \[([\d, ]*)\], "
    r"vector_common_parallel = \[([\d, ]*)\], vector_reduction = \[([\d, ]*)\]>"
)
_PIPELINE = re.compile(r"pipeline = #iree_cpu\.pipeline<(\w+)>")
# The op a line's lowering_config belongs to: `%12 = linalg.matmul {lowering_config`.
_ROOT_OP = re.compile(r"= ([a-z_]+\.[\w.]+)[ {(]")


@dataclass(frozen=True)
class RootConfig:
    """The tile sizes of a dispatch's root op, one per loop, its pipeline, and the
    root op's name (`linalg.matmul`): a spec's matcher checks the name with the
    loop ranges, so a root op of another kind with the same ranges (a batch
    matmul, a convolution of that shape) keeps IREE's own tiles."""

    loops: tuple[int, ...]
    distribution: tuple[int, ...]
    vector_parallel: tuple[int, ...]
    vector_reduction: tuple[int, ...]
    pipeline: str
    op: str = ""  # "" matches any op: a configuration read without its op

    def text(self) -> str:
        def listed(values: tuple[int, ...]) -> str:
            return ", ".join(map(str, values))

        return (
            f"distribution = [{listed(self.distribution)}], vector_common_parallel = "
            f"[{listed(self.vector_parallel)}], vector_reduction = "
            f"[{listed(self.vector_reduction)}]"
        )


def root_configs(directory: Path) -> dict[str, RootConfig]:
    """Per dispatch function: IREE's tile sizes for its root op, from the files of
    `--iree-hal-dump-executable-configurations-to` (dispatches whose root has no
    distribution tiles, or whose name gives no loop ranges, are left out)."""
    configs = {}
    for path in sorted(directory.glob("*.mlir")):
        text = path.read_text()
        function, config, pipeline = (
            _FUNCTION.search(text),
            _CONFIG.search(text),
            _PIPELINE.search(text),
        )
        if function is None or config is None or pipeline is None:
            continue
        ranges = loop_ranges(function[1])
        tiles = [tuple(int(v) for v in group.split(",") if v.strip()) for group in config.groups()]
        if ranges is None or len({len(t) for t in tiles}) != 1 or len(ranges) != len(tiles[0]):
            continue
        distribution, vector_parallel, vector_reduction = tiles
        line = text[text.rfind("\n", 0, config.start()) + 1 : config.start()]
        root = _ROOT_OP.search(line)
        configs[function[1]] = RootConfig(
            ranges,
            distribution,
            vector_parallel,
            vector_reduction,
            pipeline[1],
            root[1] if root else "",
        )
    return configs


def without_spec(flags: Sequence[str]) -> tuple[str, ...]:
    """`flags` less the tuning spec they name, if any."""
    return tuple(flag for flag in flags if not flag.startswith(SPEC_FLAG))


def neighbours(config: RootConfig) -> list[RootConfig]:
    """IREE's choice with one tile doubled or halved, in a fixed order: each
    parallel workgroup tile, innermost first, wider and narrower; the innermost
    parallel vector tile wider and narrower; the innermost reduction vector tile
    wider and narrower. A workgroup tile scaled is rounded to the nearest multiple
    of its vector tile (IREE picks tiles that are not, such as 50 over vectors of
    16 for a loop of 1000: doubled, 96). A variant that breaks a range, or a
    divisibility (a workgroup tile a multiple of its vector tile) in a loop it
    changes, is left out."""
    parallel = [i for i, tile in enumerate(config.distribution) if tile > 0]
    reduction = [i for i, tile in enumerate(config.vector_reduction) if tile > 0]
    found: list[RootConfig] = []

    def add(candidate: RootConfig) -> None:
        if candidate != config and candidate not in found and _valid(candidate, config):
            found.append(candidate)

    for dim in reversed(parallel):
        for factor in (2.0, 0.5):
            tiles = _scaled(config.distribution, dim, factor)
            multiple = _vector_multiple(tiles[dim], config.vector_parallel[dim])
            tiles = tuple(multiple if i == dim else t for i, t in enumerate(tiles))
            add(replace(config, distribution=tiles))
    if parallel:
        for factor in (2.0, 0.5):
            vector = _scaled(config.vector_parallel, parallel[-1], factor)
            add(replace(config, vector_parallel=vector))
    if reduction:
        inner = reduction[-1]
        for factor in (2.0, 0.5):
            add(replace(config, vector_reduction=_scaled(config.vector_reduction, inner, factor)))
    return found


def _scaled(tiles: tuple[int, ...], dim: int, factor: float) -> tuple[int, ...]:
    # A tiled loop stays tiled: halving a tile of 1 gives 1 (the variant is then
    # IREE's choice again and left out), never 0, which means "not tiled".
    return tuple(max(1, round(t * factor)) if i == dim else t for i, t in enumerate(tiles))


def _valid(config: RootConfig, start: RootConfig) -> bool:
    for size, tile, vector, was in zip(
        config.loops,
        config.distribution,
        config.vector_parallel,
        zip(start.distribution, start.vector_parallel, strict=True),
        strict=True,
    ):
        changed = (tile, vector) != was
        if tile < 0 or tile > size or (changed and tile and vector and tile % vector):
            return False
    return all(
        0 <= t <= size for size, t in zip(config.loops, config.vector_reduction, strict=True)
    )


def spec_text(configs: Sequence[RootConfig]) -> str:
    """A tuning spec giving each root op named `config.op` whose loop ranges are
    `config.loops` that config (transform dialect; IREE's tuning-spec form)."""
    matchers = []
    for index, config in enumerate(configs):
        named = (
            f'  transform.match.operation_name %op ["{config.op}"] : !transform.any_op\n'
            if config.op
            else ""
        )
        checks = "".join(
            f"    %d{k} = transform.match.structured.dim %s[{k}] : (!transform.any_op) -> "
            "!transform.param<i64>\n"
            f"    %w{k} = transform.param.constant {size} : i64 -> !transform.param<i64>\n"
            f"    transform.match.param.cmpi eq %d{k}, %w{k} : !transform.param<i64>\n"
            for k, size in enumerate(config.loops)
        )
        matchers.append(
            f"transform.named_sequence @match_{index}(%op: !transform.any_op "
            "{transform.readonly}) -> (!transform.any_op, !transform.any_param) {\n"
            f"{named}"
            "  %m = transform.match.structured failures(propagate) %op : (!transform.any_op) "
            "-> !transform.any_op {\n"
            "  ^bb0(%s: !transform.any_op):\n"
            f"    %rank = transform.match.structured.rank %s : (!transform.any_op) -> "
            "!transform.param<i64>\n"
            f"    %want = transform.param.constant {len(config.loops)} : i64 -> "
            "!transform.param<i64>\n"
            "    transform.match.param.cmpi eq %rank, %want : !transform.param<i64>\n"
            f"{checks}"
            "    transform.match.structured.yield %s : !transform.any_op\n"
            "  }\n"
            "  %config = transform.param.constant #iree_codegen.compilation_info<\n"
            f"    lowering_config = #iree_cpu.lowering_config<{config.text()}>,\n"
            "    translation_info = #iree_codegen.translation_info<"
            f"pipeline = #iree_cpu.pipeline<{config.pipeline}>>> -> !transform.any_param\n"
            "  transform.yield %m, %config : !transform.any_op, !transform.any_param\n"
            "}\n"
        )
    pairs = ", ".join(f"@match_{index} -> @apply" for index in range(len(configs)))
    return (
        "// Written by tfpgo --tune (tfpgo.tune.dispatch_tiles).\n"
        "module @tfpgo_tuning_spec attributes { transform.with_named_sequence } {\n"
        "transform.named_sequence @apply(%op: !transform.any_op {transform.readonly}, "
        "%config: !transform.any_param {transform.readonly}) {\n"
        '  transform.annotate %op "compilation_info" = %config : !transform.any_op, '
        "!transform.any_param\n"
        "  transform.yield\n"
        "}\n" + "".join(matchers) + "transform.named_sequence @main(%variant_op: !transform.any_op "
        "{transform.consumed}) -> (!transform.any_op) attributes "
        "{ iree_codegen.tuning_spec_entrypoint } {\n"
        f"  %res = transform.foreach_match in %variant_op {pairs} : (!transform.any_op) -> "
        "!transform.any_op\n"
        "  transform.yield %res : !transform.any_op\n"
        "}\n"
        "}\n"
    )


# The tuning database's answer for one dispatch (its name, the dumped
# configurations, the program's flags): what it knows of it (`Prior`), or None.
Recorded = Callable[[str, Path, tuple[str, ...]], "Prior | None"]


@dataclass(frozen=True)
class Trial:
    """One variant of one dispatch, timed beside IREE's choice in the same round:
    the dispatch's mean time an invocation (ps) under each."""

    config: RootConfig
    ps: float
    iree_ps: float

    @property
    def ratio(self) -> float:
        return against_iree(self.ps, self.iree_ps)


def against_iree(ps: float, iree_ps: float) -> float:
    """A variant's time over IREE's own choice's at the same place; infinite when
    IREE's is unknown (no variant can be said to beat it)."""
    return ps / iree_ps if iree_ps > 0 else float("inf")


@dataclass(frozen=True)
class Prior:
    """What the tuning database knows of one dispatch before its search, and
    whence (a line for tiles.json and the report):

    - `final`: a search of this root op ended by its own rule; `winner` is what
      it kept (None: IREE's own tiles), and the dispatch is not searched;
    - else, with `winner` or `seen`: a search of it the time cut short; the
      climb resumes from `winner` (its best so far, if any), skipping the
      variants already timed (`seen`, by `RootConfig.text()`);
    - else `seeds`: per record of the same root op at other loop ranges, its
      IREE tiles and its winner; the climb starts from them (`seeded`)."""

    whence: str
    final: bool = False
    winner: Trial | None = None
    seen: frozenset[str] = frozenset()
    seeds: tuple[tuple[RootConfig, RootConfig], ...] = ()


def seeded(iree: RootConfig, seeds: Sequence[tuple[RootConfig, RootConfig]]) -> list[RootConfig]:
    """Where a climb starts from records of the same root op at other loop ranges
    (`seeds`: each record's IREE tiles and winner). Per record, first its winner
    scaled: each tile this dispatch's IREE tile times the record's winner over
    its IREE tile (what tuning changed, applied to what IREE chose at this
    size), a workgroup tile rounded to a multiple of its vector tile; then the
    winner's tiles as they are. Each bounded by this dispatch's loop ranges;
    only those valid, not IREE's own, of the same pipeline, without repeats."""
    found: list[RootConfig] = []
    for seed_iree, winner in seeds:
        if winner.pipeline != iree.pipeline or len(winner.loops) != len(iree.loops):
            continue
        scaled = RootConfig(
            iree.loops,
            _ratio_scaled(iree.distribution, seed_iree.distribution, winner.distribution),
            _ratio_scaled(iree.vector_parallel, seed_iree.vector_parallel, winner.vector_parallel),
            _ratio_scaled(
                iree.vector_reduction, seed_iree.vector_reduction, winner.vector_reduction
            ),
            iree.pipeline,
            iree.op,
        )
        multiples = map(_vector_multiple, scaled.distribution, scaled.vector_parallel)
        scaled = replace(scaled, distribution=_bounded(tuple(multiples), iree.loops))
        direct = replace(
            iree,
            distribution=_bounded(winner.distribution, iree.loops),
            vector_parallel=_bounded(winner.vector_parallel, iree.loops),
            vector_reduction=_bounded(winner.vector_reduction, iree.loops),
        )
        for candidate in (scaled, direct):
            if candidate != iree and candidate not in found and _valid(candidate, iree):
                found.append(candidate)
    return found


def _ratio_scaled(
    tiles: tuple[int, ...], seed: tuple[int, ...], winner: tuple[int, ...]
) -> tuple[int, ...]:
    # A loop one side leaves untiled (0) cannot be scaled: it keeps this side's tile.
    return tuple(
        max(1, round(t * w / s)) if t and s and w else t
        for t, s, w in zip(tiles, seed, winner, strict=True)
    )


def _vector_multiple(tile: int, vector: int) -> int:
    """A workgroup tile rounded to the nearest multiple of its vector tile (a
    loop's 0, untiled, and a tile with no vector tile stay as they are)."""
    return max(vector, round(tile / vector) * vector) if tile and vector else tile


def _bounded(tiles: tuple[int, ...], loops: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(min(t, size) for t, size in zip(tiles, loops, strict=True))


@dataclass(frozen=True)
class Search:
    """What the search measured: per dispatch, IREE's choice, each variant tried
    against it, and the winner, if any."""

    dispatches: dict[str, RootConfig]
    tried: dict[str, list[Trial]]  # on the dispatch's own benchmark
    chosen: dict[str, Trial]  # the winning variant of each dispatch that has one
    failed: dict[str, str]  # "dispatch config" IREE could not compile, and its error
    # The benchmark's best variants timed again in the whole program, round by round.
    in_place: dict[str, list[Trial]] = field(default_factory=dict)
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
class Target:
    """A dispatch worth tuning and what the profile says it could gain: its time
    over the profiled runs minus its bound (see `targets`)."""

    name: str
    total_ps: int
    bound_ps: int

    @property
    def headroom_ps(self) -> int:
        return max(self.total_ps - self.bound_ps, 0)


def targets(
    profile: iree_run.IreeProfile,
    skip: Collection[str] = frozenset(),
    later: bool = False,
    limit: MachineLimit | None = None,
) -> list[Target]:
    """The dispatches worth tuning, most headroom first: each at least MIN_SHARE
    of the dispatch time, with a bound it runs above, at most MAX_DISPATCHES,
    none of those named in `skip` (searched by an earlier round); for a `later`
    round, LATER_MIN_SHARE and LATER_MAX_DISPATCHES.

    A dispatch's bound is the lower of two measured figures: the TensorFlow time
    of the ops it runs (TensorFlow ran them that fast on this machine), and for a
    contraction its FLOPs at the best rate a hot contraction of this program reached
    (the program's own roofline: what IREE already achieves on this CPU). With
    this machine's `limit`, no bound is below the dispatch's roofline (its FLOPs
    at peak, its bytes at the bandwidth: `tfpgo.tune.roofline`), and a dispatch
    within 15% of its roofline is left out: nothing is left to gain there. A
    dispatch with no bound, or at it, has nothing the profile says it can gain."""
    total = max(profile.dispatch_ps, 1)
    hot = [d for d in profile.dispatches if d.total_ps >= MIN_SHARE * total and d.count]
    flops = {d.name: dispatch_flops(d.name) for d in profile.dispatches}
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
        roof = None if limit is None else dispatch_bound_ps(dispatch.name, dispatch.count, limit)
        if roof is not None and at_limit(roof, dispatch.total_ps):
            continue
        if bounds:
            found.append(Target(dispatch.name, dispatch.total_ps, max(min(bounds), roof or 0)))
    found = [t for t in found if t.headroom_ps > 0]
    found.sort(key=lambda t: (-t.headroom_ps, t.name))
    return found[: LATER_MAX_DISPATCHES if later else MAX_DISPATCHES]


def search(
    stablehlo: Path,
    flags: tuple[str, ...],
    wanted: Sequence[Target],
    time_dispatch: Callable[[Path], float],
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
    headroom. From IREE's choice, a
    hill climb: every untried neighbour of the current best is compiled with a
    spec naming it and timed, the generation bracketed by two timings of IREE's
    choice (the load of a shared machine drifts: each variant is compared with
    IREE's choice interpolated to its place); the best of a generation becomes
    the current best if it beats it by more than the noise floor, timed a
    second time beside IREE's choice and counted at the worse of its two ratios,
    else the climb stops. `time_dispatch` times a compiled benchmark (ps an
    invocation); `compile_timeout_s` bounds the whole program's compile (IREE's
    compiler now and then hangs).

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
    # A benchmark's compile may hang on tiles IREE mishandles: bounded by a few
    # times the whole program's.
    timeout_s = max(COMPILE_TIMEOUT_MIN_S, COMPILE_TIMEOUT_FACTOR * (time.monotonic() - started))
    known = root_configs(configurations)
    sources = dispatch_benchmark.unconfigured_benchmarks(benchmarks, scratch / "unconfigured")
    chosen_targets = [t for t in wanted if t.name in known and t.name in sources]
    found = Search({t.name: known[t.name] for t in chosen_targets}, {}, {}, {})
    priors: dict[str, Prior] = {}
    for target in list(chosen_targets):
        prior = recorded(target.name, configurations, flags) if recorded else None
        if prior is not None and prior.final:
            found.reused[target.name] = prior.whence
            if prior.winner is not None:
                found.chosen[target.name] = prior.winner
            chosen_targets.remove(target)
        elif prior is not None:
            priors[target.name], found.seeded[target.name] = prior, prior.whence
    base = (*base, *(found.chosen[name].config for name in found.reused if name in found.chosen))
    climbs_end = time.monotonic() + max(deadline - time.monotonic(), 0.0) * CLIMB_SHARE
    for index, target in enumerate(chosen_targets):
        headroom_left = sum(t.headroom_ps for t in chosen_targets[index:])
        share = target.headroom_ps / headroom_left if headroom_left else 1.0
        until = time.monotonic() + max(climbs_end - time.monotonic(), 0.0) * share
        if time.monotonic() >= until:
            found.tried[target.name] = []
            found.cut.append(target.name)
            continue
        climb = _Climb(
            target.name, known[target.name], flags, time_dispatch, timeout_s,
            priors.get(target.name),
        )  # fmt: skip
        climb.run(sources[target.name], scratch / f"dispatch_{index}", until)
        found.tried[target.name] = climb.tried
        found.failed.update({f"{target.name} {k}": v for k, v in climb.failed.items()})
        if not climb.ended:
            found.cut.append(target.name)
        if climb.best is not None and climb.best.ratio < 1 - NOISE:
            found.chosen[target.name] = climb.best
    _confirm_in_place(
        stablehlo, flags, base, found, time_in_place, scratch, deadline, compile_timeout_s
    )
    return found


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
        best: list[Trial] = []
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
                trial = Trial(config, timed[name], (before[name] + after[name]) / 2)
                found.in_place.setdefault(name, []).append(trial)
        before = after
    for name, trials in found.in_place.items():
        winner = min(trials, key=lambda t: t.ratio)
        if winner.ratio < 1 - NOISE:
            found.chosen[name] = winner
        else:
            found.chosen.pop(name, None)


@dataclass
class _Climb:
    """One dispatch's hill climb (see `search`), from IREE's choice, or from what
    the tuning database knows of it (`prior`): seeds first, or a climb resumed."""

    name: str
    iree: RootConfig
    flags: tuple[str, ...]
    time_dispatch: Callable[[Path], float]
    timeout_s: float
    prior: Prior | None = None
    tried: list[Trial] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    best: Trial | None = None
    ended: bool = False  # by its own rule (no neighbour left, or none better), not by time

    def run(self, unconfigured: Path, directory: Path, until: float) -> None:
        """Climbs on `unconfigured`, the dispatch's benchmark without IREE's
        configuration, compiling into `directory`."""
        directory.mkdir(parents=True, exist_ok=True)
        default = directory / "iree.vmfb"
        dispatch_benchmark.compile_benchmark(unconfigured, default, self.flags, self.timeout_s)
        before = self.time_dispatch(default)
        current, seen = self.iree, {self.iree.text()}
        seeds: list[RootConfig] = []
        if self.prior is not None:
            seen |= self.prior.seen
            seeds = seeded(self.iree, self.prior.seeds)
            if self.prior.winner is not None:  # resumed: its best so far, timed then
                self.best, current = self.prior.winner, self.prior.winner.config
                self.tried.append(self.prior.winner)
        while time.monotonic() < until:
            seeding, generation = bool(seeds), seeds or neighbours(current)
            seeds = []
            timed = []
            for config in [c for c in generation if c.text() not in seen]:
                if time.monotonic() >= until:
                    break
                seen.add(config.text())
                variant = directory / f"variant_{len(seen) - 1}"
                variant.with_suffix(".spec.mlir").write_text(spec_text([config]))
                vmfb = variant.with_suffix(".vmfb")
                spec = f"{SPEC_FLAG}{variant.with_suffix('.spec.mlir')}"
                try:
                    dispatch_benchmark.compile_benchmark(
                        unconfigured, vmfb, (*self.flags, spec), self.timeout_s
                    )
                except UserError as error:  # tiles IREE cannot lower: the variant is lost
                    self.failed[config.text()] = str(error)
                    continue
                timed.append((config, self.time_dispatch(vmfb), vmfb))
            if not timed:
                if seeding:
                    continue
                self.ended = time.monotonic() < until
                return
            after = self.time_dispatch(default)
            # IREE's choice at each variant's place in the generation, by linear
            # interpolation between the two timings around it.
            trials = [
                Trial(config, ps, before + (after - before) * (k + 1) / (len(timed) + 1))
                for k, (config, ps, _) in enumerate(timed)
            ]
            before = after
            self.tried.extend(trials)
            k, leader = min(enumerate(trials), key=lambda pair: pair[1].ratio)
            if not self._beats(leader):
                if seeding:  # no seed helps here: the climb starts from IREE's choice
                    continue
                self.ended = True
                return
            # The best of many noisy timings is biased to luck: the leader is timed
            # once more beside IREE's choice and counts at the worse of its two ratios.
            again = Trial(leader.config, self.time_dispatch(timed[k][2]), 0.0)
            before = self.time_dispatch(default)
            again = replace(again, iree_ps=before)
            self.tried.append(again)
            leader = max(leader, again, key=lambda trial: trial.ratio)
            if not self._beats(leader):
                if seeding:
                    continue
                self.ended = True
                return
            self.best, current = leader, leader.config

    def _beats(self, trial: Trial) -> bool:
        """Beats the best so far (IREE's choice at first) by more than the noise floor."""
        return trial.ratio < (1.0 if self.best is None else self.best.ratio) * (1 - NOISE)


def write_search(found: Search, scratch: Path, base: Sequence[RootConfig] = ()) -> None:
    """tiles.json, and the spec with `base` (an earlier round's tiles) and the
    winners, if any."""
    (scratch / SEARCH).write_text(json.dumps(found.to_json(), indent=1))
    if found.chosen:
        chosen = [trial.config for trial in found.chosen.values()]
        (scratch / SPEC).write_text(spec_text([*base, *chosen]))
