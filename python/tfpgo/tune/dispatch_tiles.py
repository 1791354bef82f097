"""Per-dispatch tiling: IREE tuning specs for the hottest dispatches, found by measuring.

IREE picks each dispatch's tile sizes by heuristics; a tuning spec
(`--iree-codegen-tuning-spec-path`, a transform-dialect library whose entry
sequence carries `iree_codegen.tuning_spec_entrypoint`) can set them per root
op with `#iree_codegen.compilation_info` (IREE's
`compiler/src/iree/compiler/Codegen/LLVMCPU/test/tuning_spec_matmul.mlir` shows
the form; llvm-cpu applies specs from IREE 3.11). Here:

- which dispatches: the hottest of the current program's profile, each at
  least `MIN_SHARE` of the dispatch time, at most `MAX_DISPATCHES`: the tuning
  time goes where the measured weight is (Ansor's rule, without its gradient);
- where they start: IREE's own choice for each, read from
  `--iree-hal-dump-executable-configurations-to` (the root op's
  `#iree_cpu.lowering_config` and its function's pipeline);
- what is tried: a few neighbours of that choice (`neighbours`: one tile
  doubled or halved at a time, divisibility kept), round by round, variant k of
  every chosen dispatch in round k, each dispatch matched by its loop ranges
  (`transform.match.structured.dim`, so a spec for one dispatch leaves the
  others alone);
- how: each round's program is compiled and its dispatches timed in place by
  IREE's HAL profiling, as `--lower iree` times them, between two timings of
  the program without the spec (the load of a shared machine drifts: the mean
  of the two cancels a steady drift); a dispatch keeps the variant with the
  best ratio to IREE's choice if it beats it by more than the noise floor.

The spec with every winner is then one candidate of the loop, which checks the
outputs and times the whole program against the current best.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from tfpgo.errors import UserError
from tfpgo.iree import run as iree_run
from tfpgo.proposer.ab import NOISE

MIN_SHARE = 0.03
MAX_DISPATCHES = 4
SEARCH_RUNS = 3  # profiled runs a round (after one warm-up run)
COMPILE_TIMEOUT_MIN_S, COMPILE_TIMEOUT_FACTOR = 60.0, 5.0
SPEC = "tuning_spec.mlir"
SEARCH = "tiles.json"
SPEC_FLAG = "--iree-codegen-tuning-spec-path="
# The loop ranges IREE writes into a dispatch's name: `..._conv_8x14x14x256x3x3x256_f32`.
_LOOPS = re.compile(r"_(\d+(?:x\d+)*)_[a-z]+\d+$")
_FUNCTION = re.compile(r"func\.func @([\w$.-]+)\(")
_CONFIG = re.compile(
    r"lowering_config = #iree_cpu\.lowering_config<distribution = \[([\d, ]*)\], "
    r"vector_common_parallel = \[([\d, ]*)\], vector_reduction = \[([\d, ]*)\]>"
)
_PIPELINE = re.compile(r"pipeline = #iree_cpu\.pipeline<(\w+)>")


@dataclass(frozen=True)
class RootConfig:
    """The tile sizes of a dispatch's root op, one per loop, and its pipeline."""

    loops: tuple[int, ...]
    distribution: tuple[int, ...]
    vector_parallel: tuple[int, ...]
    vector_reduction: tuple[int, ...]
    pipeline: str

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
        loops = _LOOPS.search(function[1])
        tiles = [tuple(int(v) for v in group.split(",") if v.strip()) for group in config.groups()]
        if loops is None or len({len(t) for t in tiles}) != 1:
            continue
        ranges = tuple(int(v) for v in loops[1].split("x"))
        if len(ranges) != len(tiles[0]):
            continue
        distribution, vector_parallel, vector_reduction = tiles
        configs[function[1]] = RootConfig(
            ranges, distribution, vector_parallel, vector_reduction, pipeline[1]
        )
    return configs


def neighbours(config: RootConfig) -> list[RootConfig]:
    """IREE's choice with one tile doubled or halved, in a fixed order: the
    innermost parallel workgroup tile wider and narrower, the outermost wider,
    the innermost parallel vector tile wider, the innermost reduction vector tile
    wider and narrower. A variant that breaks a range or a divisibility (a
    workgroup tile a multiple of its vector tile) is left out."""
    parallel = [i for i, tile in enumerate(config.distribution) if tile > 0]
    reduction = [i for i, tile in enumerate(config.vector_reduction) if tile > 0]
    found: list[RootConfig] = []

    def add(candidate: RootConfig) -> None:
        if candidate != config and candidate not in found and _valid(candidate):
            found.append(candidate)

    if parallel:
        inner, outer = parallel[-1], parallel[0]
        for dim, factor in ((inner, 2.0), (inner, 0.5), (outer, 2.0)):
            add(replace(config, distribution=_scaled(config.distribution, dim, factor)))
        add(replace(config, vector_parallel=_scaled(config.vector_parallel, inner, 2.0)))
    if reduction:
        inner = reduction[-1]
        for factor in (2.0, 0.5):
            add(replace(config, vector_reduction=_scaled(config.vector_reduction, inner, factor)))
    return found


def _scaled(tiles: tuple[int, ...], dim: int, factor: float) -> tuple[int, ...]:
    return tuple(round(t * factor) if i == dim else t for i, t in enumerate(tiles))


def _valid(config: RootConfig) -> bool:
    for size, tile, vector in zip(
        config.loops, config.distribution, config.vector_parallel, strict=True
    ):
        if tile < 0 or tile > size or (tile and vector and tile % vector):
            return False
    return all(
        0 <= t <= size for size, t in zip(config.loops, config.vector_reduction, strict=True)
    )


def spec_text(configs: Sequence[RootConfig]) -> str:
    """A tuning spec giving each root op whose loop ranges are `config.loops` that
    config (transform dialect; IREE's tuning-spec form)."""
    matchers = []
    for index, config in enumerate(configs):
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


@dataclass(frozen=True)
class Trial:
    """One variant of one dispatch, timed beside IREE's choice in the same round:
    the dispatch's mean time an invocation (ps) under each."""

    config: RootConfig
    ps: float
    iree_ps: float

    @property
    def ratio(self) -> float:
        return self.ps / self.iree_ps if self.iree_ps > 0 else float("inf")


@dataclass(frozen=True)
class Search:
    """What the search measured: per dispatch, IREE's choice, each variant tried
    against it, and the winner, if any."""

    dispatches: dict[str, RootConfig]
    tried: dict[str, list[Trial]]
    chosen: dict[str, Trial]  # the winning variant of each dispatch that has one
    failed: dict[int, str]  # rounds IREE could not compile, and its error

    def to_json(self) -> dict[str, object]:
        dispatches = {
            name: {
                "loops": list(config.loops),
                "iree": config.text(),
                "tried": [
                    {"config": t.config.text(), "ps": t.ps, "iree_ps": t.iree_ps}
                    for t in self.tried[name]
                ],
                "chosen": self.chosen[name].config.text() if name in self.chosen else None,
            }
            for name, config in self.dispatches.items()
        }
        failed = [{"round": index, "error": error} for index, error in self.failed.items()]
        return {"dispatches": dispatches, "failed_rounds": failed}


def hottest(profile: iree_run.IreeProfile) -> list[str]:
    """The dispatches worth tuning: at least MIN_SHARE of the time, hottest first."""
    total = max(profile.dispatch_ps, 1)
    ranked = sorted(profile.dispatches, key=lambda d: (-d.total_ps, d.name))
    return [d.name for d in ranked if d.total_ps >= MIN_SHARE * total][:MAX_DISPATCHES]


def search(
    stablehlo: Path,
    flags: tuple[str, ...],
    targets: list[str],
    time_round: Callable[[Path], dict[str, float]],
    scratch: Path,
    deadline: float,
) -> Search:
    """Finds IREE's choice for each target (that has tile sizes to change), then
    tries the neighbours round by round until they run out or `deadline` (a
    time.monotonic() value) passes. `time_round` times the dispatches of a
    compiled program (ps an invocation, by dispatch name)."""
    scratch.mkdir(parents=True, exist_ok=True)
    configurations = scratch / "configurations"
    default = scratch / "default.vmfb"
    dump = f"--iree-hal-dump-executable-configurations-to={configurations}"
    started = time.monotonic()
    iree_run.compile_vmfb(stablehlo, default, (*flags, dump))
    # A round's compile may hang on tiles IREE mishandles: bounded by a few times
    # the default's.
    timeout_s = max(COMPILE_TIMEOUT_MIN_S, COMPILE_TIMEOUT_FACTOR * (time.monotonic() - started))
    known = root_configs(configurations)
    dispatches = {name: known[name] for name in targets if name in known}
    options = {name: neighbours(config) for name, config in dispatches.items()}
    tried: dict[str, list[Trial]] = {name: [] for name in dispatches}
    failed: dict[int, str] = {}
    rounds = max((len(v) for v in options.values()), default=0)
    before = time_round(default) if rounds else {}
    for round_index in range(rounds):
        if time.monotonic() >= deadline:
            break
        variant = {n: v[round_index] for n, v in options.items() if round_index < len(v)}
        spec = scratch / f"round_{round_index}.spec.mlir"
        spec.write_text(spec_text(list(variant.values())))
        vmfb = scratch / f"round_{round_index}.vmfb"
        try:
            iree_run.compile_vmfb(stablehlo, vmfb, (*flags, f"{SPEC_FLAG}{spec}"), timeout_s)
        except UserError as error:  # tiles IREE cannot lower: the round is lost
            failed[round_index] = str(error)
            continue
        # Bracketed by IREE's choice timed just before and just after: the load of
        # a shared machine drifts, and would otherwise favour whichever round ran
        # when it was quieter.
        timed, after = time_round(vmfb), time_round(default)
        for name, config in variant.items():
            if name in timed and name in before and name in after:
                tried[name].append(Trial(config, timed[name], (before[name] + after[name]) / 2))
        before = after
    chosen = {}
    for name, results in tried.items():
        best = min(results, key=lambda trial: trial.ratio, default=None)
        if best is not None and best.ratio < 1 - NOISE:
            chosen[name] = best
    return Search(dispatches, tried, chosen, failed)


def write_search(found: Search, scratch: Path) -> None:
    (scratch / SEARCH).write_text(json.dumps(found.to_json(), indent=1))
    if found.chosen:
        (scratch / SPEC).write_text(spec_text([trial.config for trial in found.chosen.values()]))
