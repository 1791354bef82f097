"""The typed records of the tuning database (`tfpgo.tune.db`, issue 39): what
`--tune` learns about a program on a target, in and out of the database as
these frozen dataclasses; `to_json` and `from_json` write and read each as the
JSON of the `record` column (docs/formats.md, `tuning.db`).

- `Target`: what a record holds for. The CPU as iree-compile resolves
  `--iree-llvmcpu-target-cpu=host` (`target.host_target`), the
  `iree-compile` version (`iree-compile --version`), and the flags that change
  code generation (`codegen_flags`); `key` a digest of all four. A record of
  another key is never applied.
- `RootOp`: what a spec matcher must check of a dispatch's root op: its name,
  indexing maps, element types and loop ranges (`root_ops` reads them from
  `--iree-hal-dump-executable-configurations-to`). `form` leaves the loop
  ranges out: a record of the same form at other sizes seeds a search.
- `TileRecord`: one dispatch searched (`dispatch_tiles.search`): every variant
  tried with its timings alone and in place, and the winner.
- `CandidateRecord`: one candidate of the loop measured on one program.
- `ProgramRun`: one `--tune` run of a program: finished or cut short, what it
  kept and what it left untried.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import re
import types
import typing
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from tfpgo.iree import run as iree_run
from tfpgo.iree.run import DEVICE
from tfpgo.iree.target import HostTarget, host_target
from tfpgo.iree.tools import run_tool
from tfpgo.tune import tile_climb, tile_configs
from tfpgo.tune.dispatch_tiles import Search
from tfpgo.tune.document import CandidateTrial
from tfpgo.tune.tile_configs import RootConfig

# Flags that change what iree-compile writes or prints, not the code it generates,
# and the CPU's flags (`Target.cpu` and `features` hold what they resolve to).
_NOT_CODEGEN = (
    tile_configs.SPEC_FLAG,
    "--iree-hal-dump-",
    "--dump-",
    "--mlir-print-",
    "--mlir-elide-",
    "--compile-to=",
    "--iree-llvmcpu-target-cpu=",
    "--iree-llvmcpu-target-cpu-features=",
)
_VERSION = re.compile(r"IREE compiler version (\S+)(?: @ (\w+))?")
_LISTS = re.compile(r"(\w+) = \[([\d, ]*)\]")
DIGEST_CHARS = 16  # of a sha256: a target's key, a root op's and a program's
Record = TypeVar("Record")


def digest(*parts: object) -> str:
    """A stable digest of JSON-serialisable `parts` (DIGEST_CHARS hex digits)."""
    text = json.dumps(parts, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:DIGEST_CHARS]


def codegen_flags(flags: Sequence[str]) -> tuple[str, ...]:
    """The iree-compile `flags` that change code generation: less a tuning spec,
    dumps, printing, the CPU's flags and any flag whose value is a path; of a
    repeated option the last (iree-compile's rule); sorted, since the order of
    distinct options changes nothing."""
    kept: dict[str, str] = {}
    for flag in flags:
        value = flag.partition("=")[2]
        if flag == "-o" or flag.startswith(_NOT_CODEGEN) or "/" in value:
            continue
        kept[flag.partition("=")[0]] = flag
    return tuple(sorted(kept.values()))


def to_json(record: Any) -> Any:
    """A record (these dataclasses, `RootConfig`) as JSON: an object of its fields,
    a tuple as a list."""
    if dataclasses.is_dataclass(record) and not isinstance(record, type):
        return {f.name: to_json(getattr(record, f.name)) for f in dataclasses.fields(record)}
    if isinstance(record, tuple | list):
        return [to_json(value) for value in record]
    return record


def from_json(kind: type[Record], document: Any) -> Record:
    """The `kind` record `to_json` wrote as `document`; TypeError, ValueError or
    KeyError when it is none (a field missing, of another type). A field missing
    that has a default gets it (a record written before the field was added)."""
    value: Record = _read(kind, document)
    return value


def _read(kind: Any, document: Any) -> Any:
    if isinstance(kind, type) and dataclasses.is_dataclass(kind):
        if not isinstance(document, dict):
            raise TypeError(f"{kind.__name__}: {document!r} is not an object")
        hints = typing.get_type_hints(kind)
        fields = [f for f in dataclasses.fields(kind) if f.init]
        return kind(
            **{
                f.name: _read(hints[f.name], document[f.name])
                for f in fields
                if f.name in document or f.default is dataclasses.MISSING
            }
        )
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin is tuple:
        if not isinstance(document, list):
            raise TypeError(f"{document!r} is not a list")
        items = args[:1] * len(document) if args[-1:] == (Ellipsis,) else args
        if len(items) != len(document):
            raise ValueError(f"{document!r} does not have {len(items)} items")
        return tuple(_read(item, value) for item, value in zip(items, document, strict=True))
    if origin in (typing.Union, types.UnionType):
        if document is None and type(None) in args:
            return None
        (other,) = (arg for arg in args if arg is not type(None))
        return _read(other, document)
    if kind is float and isinstance(document, int | float) and not isinstance(document, bool):
        return float(document)
    if kind in (int, str, bool) and type(document) is kind:
        return document
    raise TypeError(f"{document!r} is not {getattr(kind, '__name__', kind)}")


@functools.cache
def compiler_version() -> str:
    """`iree-compile --version`'s version and commit (`3.13.0rc20261016 @ 89ece87b...`),
    of the iree-compile tfpgo runs ($IREE_TOOL_PATH, else the wheel's); once a process."""
    text = run_tool("iree-compile", ["--version"], "tuning database (compiler version)")
    found = _VERSION.search(text)
    if found is None:
        return (text.strip().splitlines() or ["unknown"])[0].strip()
    return found[1] if found[2] is None else f"{found[1]} @ {found[2]}"


@functools.cache
def _host() -> HostTarget:
    return host_target()  # two small compiles: once a process


@dataclass(frozen=True)
class Target:
    """What records hold for: a machine (`cpu`, `features`: a `HostTarget`'s,
    flat as the `targets` table stores them), the iree-compile version, and the
    flags that change code generation (`codegen_flags`). Not a `HostTarget`:
    a record measured with another compiler or flags does not hold, where a
    machine's roofline does."""

    cpu: str
    features: str
    compiler: str
    flags: tuple[str, ...]

    @classmethod
    def of(cls, cpu: str, features: str, compiler: str, flags: Sequence[str]) -> Target:
        return cls(cpu, features, compiler, codegen_flags(flags))

    @classmethod
    def host(cls, flags: Sequence[str] = ()) -> Target:
        """This machine's target for a program compiled with `flags` after
        `iree_run.IREE_FLAGS` (a `Variant`'s flags; `tune.json`'s `flags`)."""
        host = _host()
        return cls.of(host.cpu, host.features, compiler_version(), (*iree_run.IREE_FLAGS, *flags))

    @property
    def machine(self) -> HostTarget:
        return HostTarget(self.cpu, self.features)

    @property
    def key(self) -> str:
        return digest(self.cpu, self.features, self.compiler, list(self.flags))

    def differences(self, other: Target) -> str:
        """What makes this target another than `other` ("" if none), for a listing."""
        named = (
            (self.compiler != other.compiler, f"iree-compile {self.compiler}"),
            (self.cpu != other.cpu, f"CPU {self.cpu}"),
            (self.features != other.features, "other CPU features"),
            (self.flags != other.flags, "other code generation flags"),
        )
        return ", ".join(text for differs, text in named if differs)


@dataclass(frozen=True)
class RootOp:
    """A dispatch's root op as a spec matcher must check it: its name
    (`linalg.matmul`, `linalg.generic`), its indexing maps (`(d0, d1, d2) -> (d0,
    d2)`, one per operand, as MLIR prints them), its operands' element types
    (inputs, then outputs) and its loop ranges."""

    op: str
    indexing_maps: tuple[str, ...]
    element_types: tuple[str, ...]
    loops: tuple[int, ...]

    @property
    def form(self) -> str:
        """The digest of all but the loop ranges: the same op at other sizes."""
        return digest(self.op, list(self.indexing_maps), list(self.element_types))

    @property
    def key(self) -> str:
        return digest(self.form, list(self.loops))


def root_ops(directory: Path) -> dict[str, RootOp]:
    """Per dispatch function, its root op (the op whose `lowering_config` has
    distribution tiles), read with IREE's MLIR parser from the files of
    `--iree-hal-dump-executable-configurations-to`; a dispatch whose loop ranges
    its operands' shapes do not give is left out."""
    from iree.compiler import ir

    found: dict[str, RootOp] = {}
    for path in sorted(directory.glob("*.mlir")):
        with ir.Context():
            module = ir.Module.parse(path.read_text())  # alive while its ops are read
            for root in _roots(ir, module):
                function = root.parent
                while function.name != "func.func":
                    function = function.parent
                read = _root_op(ir, root)
                if read is not None:
                    found[ir.StringAttr(function.attributes["sym_name"]).value] = read
    return found


def _roots(ir: Any, module: Any) -> list[Any]:
    """The ops of `module` whose lowering_config has distribution tiles."""
    roots = []

    def visit(op: Any) -> Any:
        attributes = op.operation.attributes
        if "lowering_config" in attributes and "distribution" in str(attributes["lowering_config"]):
            roots.append(op.operation)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return roots


def _root_op(ir: Any, root: Any) -> RootOp | None:
    from iree.compiler.dialects import linalg

    indexing_maps = linalg.get_indexing_maps(root)
    if indexing_maps is None:  # no linalg structure (data tiling's pack ops): no record
        return None
    maps = [ir.AffineMapAttr(m).value for m in indexing_maps]
    operands = list(root.operands)
    shapes = [v.type if isinstance(v.type, ir.ShapedType) else None for v in operands]
    loops = _loop_ranges(ir, maps, shapes)
    if loops is None:
        return None
    types = (
        str(s.element_type) if s else str(v.type) for s, v in zip(shapes, operands, strict=True)
    )
    return RootOp(root.name, tuple(str(m) for m in maps), tuple(types), loops)


def _loop_ranges(ir: Any, maps: list[Any], shapes: list[Any]) -> tuple[int, ...] | None:
    """Each loop's range: the size of an operand dimension its map sends it to
    alone (`d2`, not `d1 + d4`); None when a loop has none, or a size is dynamic."""
    if not maps or len(maps) != len(shapes):
        return None
    loops: dict[int, int] = {}
    for indexing, shape in zip(maps, shapes, strict=True):
        if shape is None:
            continue
        for dim, expr in enumerate(indexing.results):
            if isinstance(expr, ir.AffineDimExpr) and not shape.is_dynamic_dim(dim):
                loops.setdefault(expr.position, shape.get_dim_size(dim))
    count = maps[0].n_dims
    if sorted(loops) != list(range(count)):
        return None
    return tuple(loops[k] for k in range(count))


def root_config(tiles: str, loops: Sequence[int], pipeline: str, op: str = "") -> RootConfig:
    """The `RootConfig` whose `text()` is `tiles`; ValueError if it is none."""
    lists = {
        name: tuple(int(v) for v in values.split(",") if v.strip())
        for name, values in _LISTS.findall(tiles)
    }
    wanted = ("distribution", "vector_common_parallel", "vector_reduction")
    if any(name not in lists or len(lists[name]) != len(loops) for name in wanted):
        raise ValueError(f"not tiles for {len(loops)} loops: {tiles!r}")
    distribution, parallel, reduction = (lists[name] for name in wanted)
    return RootConfig(tuple(loops), distribution, parallel, reduction, pipeline, op)


# What a program's text holds that is not the program: the profile it carries
# (`profiler_*` attributes, locations) and its weights' values (hex blobs and the
# contents of dense literals). Two runs of one model (new random weights, a new
# profile) are one program to tune: its flags, spec and tiles do not depend on them.
_PROFILE_ATTRIBUTE = re.compile(rb"profiler_\w+ = (?:\{[^{}]*\}|[^,{}]*)(?:, )?")
# An alias line goes with its newline: how many aliases a module has depends on
# its profile (the distinct locations it carries).
_LOCATION = re.compile(rb" ?loc\((?:#loc\d*|unknown)\)|^#loc\d* = .*(?:\n|$)", re.MULTILINE)
_VALUES = re.compile(rb'"0x[0-9A-Fa-f]*"|(?<=dense<)[^<>]*(?=>)')


def program_key(stablehlo: Path, flags: Sequence[str], driver: str = DEVICE) -> str:
    """A program's digest: its StableHLO's structure (the text without the profile it
    carries and without its weights' values: `program_values` covers those), its
    iree-compile flags, a flag naming a file (a tuning spec) by the file's bytes,
    not its path, and IREE's driver when it is not the default (so a program's key
    is the one it had before the driver was tuned)."""
    text = _LOCATION.sub(b"", _PROFILE_ATTRIBUTE.sub(b"", stablehlo.read_bytes()))
    parts: list[str] = [hashlib.sha256(_VALUES.sub(b"", text)).hexdigest()]
    for flag in flags:
        option, _, value = flag.partition("=")
        named = Path(value) if value else None
        if named is not None and named.is_file():
            parts.append(f"{option}=<{hashlib.sha256(named.read_bytes()).hexdigest()}>")
        else:
            parts.append(flag)
    if driver != DEVICE:
        parts.append(f"driver={driver}")
    return digest(parts)


def program_values(stablehlo: Path) -> str:
    """The digest of a program's weights (its constants' values, in order): a
    program a pass rewrote holds them, so it is reused only for the same ones."""
    found = hashlib.sha256()
    for value in _VALUES.finditer(stablehlo.read_bytes()):
        found.update(value[0] + b"\0")
    return found.hexdigest()


@dataclass(frozen=True)
class TileTiming:
    """A dispatch's mean time an invocation (ps) under a variant, and under IREE's
    choice at the same place (`tile_climb.TileTrial`)."""

    ps: float
    iree_ps: float

    @property
    def ratio(self) -> float:
        return tile_climb.against_iree(self.ps, self.iree_ps)


@dataclass(frozen=True)
class VariantTimes:
    """One tile variant (`RootConfig.text()`) and its timings: alone, on the
    dispatch's benchmark (a climb's leader is timed twice), and in the program."""

    config: str
    alone: tuple[TileTiming, ...]
    in_place: tuple[TileTiming, ...] = ()


@dataclass(frozen=True)
class TileRecord:
    """One dispatch searched on one target: its root op, IREE's own tiles and
    pipeline, every variant tried, and the winner (None: none beat IREE's) with
    its time alone (the worst of its timings there, as a climb counts it) and in
    place (the best, as the search keeps it), when measured; the model and the
    program (`program_key`) it was searched in, and when (Unix seconds); whether
    the search ended by its own rule (`finished`) or the time cut it short."""

    root: RootOp
    dispatch: str
    pipeline: str
    iree: str
    variants: tuple[VariantTimes, ...]
    winner: str | None
    winner_alone: TileTiming | None
    winner_in_place: TileTiming | None
    model: str
    program: str
    when: float
    finished: bool = True  # records written before the field were of ended searches

    @classmethod
    def of_search(
        cls, found: Search, dispatch: str, root: RootOp, model: str, program: str, when: float
    ) -> TileRecord:
        """The record of `dispatch` in what `dispatch_tiles.search` found."""
        alone_of = _by_config(found.tried.get(dispatch, []))
        in_place_of = _by_config(found.in_place.get(dispatch, []))
        configs = dict.fromkeys([*alone_of, *in_place_of])
        chosen = found.chosen.get(dispatch)
        winner = None if chosen is None else chosen.config.text()
        alone, in_place = alone_of.get(winner or "", []), in_place_of.get(winner or "", [])
        return cls(
            root,
            dispatch,
            found.dispatches[dispatch].pipeline,
            found.dispatches[dispatch].text(),
            tuple(
                VariantTimes(c, tuple(alone_of.get(c, [])), tuple(in_place_of.get(c, [])))
                for c in configs
            ),
            winner,
            max(alone, key=lambda t: t.ratio) if winner and alone else None,
            min(in_place, key=lambda t: t.ratio) if winner and in_place else None,
            model,
            program,
            when,
            dispatch not in found.cut,
        )

    @property
    def winner_ratio(self) -> float | None:
        """The winner's ratio to IREE's choice: in place when measured there."""
        timing = self.winner_in_place or self.winner_alone
        return None if self.winner is None or timing is None else timing.ratio

    def winner_config(self) -> RootConfig | None:
        """The winner's tiles for a spec (its matcher naming the root op)."""
        if self.winner is None:
            return None
        return root_config(self.winner, self.root.loops, self.pipeline, self.root.op)

    def iree_config(self) -> RootConfig:
        """IREE's own tiles for this root op, as the search started from them."""
        return root_config(self.iree, self.root.loops, self.pipeline, self.root.op)


def _by_config(trials: Sequence[tile_climb.TileTrial]) -> dict[str, list[TileTiming]]:
    """The timings of each variant (`RootConfig.text()`), in the order first tried."""
    found: dict[str, list[TileTiming]] = {}
    for trial in trials:
        found.setdefault(trial.config.text(), []).append(TileTiming(trial.ps, trial.iree_ps))
    return found


@dataclass(frozen=True)
class CandidateRecord:
    """One candidate measured on one program (`program_key`): its name, what it
    changes, the flags it adds (a tuning spec aside), its A/B against the program
    before it (ratio and interval; None when it was rejected before one), the
    verdict (`helps`, `no effect`, `hurts`; "" without an A/B), whether the final
    program kept it, why (the loop's reason), and when (Unix seconds)."""

    program: str
    name: str
    change: str
    flags: tuple[str, ...]
    ratio: float | None
    low: float | None
    high: float | None
    verdict: str
    kept: bool
    reason: str
    when: float

    @classmethod
    def of_trial(
        cls, trial: CandidateTrial, program: str, flags: Sequence[str], kept: bool, when: float
    ) -> CandidateRecord:
        """The decision of one of the loop's trials (`tune.document.CandidateTrial`)."""
        result = trial.result
        return cls(
            program,
            trial.name,
            trial.change,
            tuple(flags),
            None if result is None else result.ratio,
            None if result is None else result.low,
            None if result is None else result.high,
            "" if result is None else result.verdict.value,
            kept,
            trial.reason,
            when,
        )


@dataclass(frozen=True)
class ProgramRun:
    """One `--tune` run of a program (`program_key`) of `model`: `finished` when it
    ended within its budget (every candidate tried, every search ended by its own
    rule), else cut short; what it kept (the final flags as `tune.json` writes
    them, the tuning spec's text, "" if none, and its tiles); the end-to-end
    ratio (None: nothing was kept, or it was not timed); the tune stage's
    seconds; what was left (candidates not tried, dispatches not searched), so a
    later run resumes there; and when (Unix seconds)."""

    program: str
    model: str
    finished: bool
    flags: tuple[str, ...]
    spec: str
    tiles: tuple[RootConfig, ...]
    ratio: float | None
    tune_s: float
    untried: tuple[str, ...]
    unsearched: tuple[str, ...]
    when: float
    # The sha256 of the program it compiled last (its bytes stored beside the
    # database: tfpgo.tune.records); "" when it kept nothing.
    stablehlo: str = ""
    # The original's `program_values`: the stored program holds those weights.
    values: str = ""
    rewritten: bool = False  # a pass rewrote the program (not only flags, spec, tiles)
    driver: str = DEVICE  # IREE's CPU driver the program runs on
    # The sha256 of the vmfb it kept (model.tuned.vmfb), which a rebuild from this
    # record is compared with; "" when it kept nothing, or recorded before builds
    # were compared.
    vmfb: str = ""

    @property
    def kept_something(self) -> bool:
        """Whether the run ended with a program other than the original."""
        return bool(self.flags or self.tiles or self.stablehlo or self.driver != DEVICE)
