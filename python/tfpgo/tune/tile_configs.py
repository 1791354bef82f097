"""Tile configurations: IREE's choice read from its dumped configurations, the
neighbours a climb tries, seeds from records of the same root op at other
sizes, and the tuning spec that sets them (tfpgo.tune.dispatch_tiles)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from tfpgo.tune.dispatch_names import loop_ranges

SPEC = "tuning_spec.mlir"
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
