"""Dispatch sites: where in the program each executable runs, and whose tf ops.

IREE outlines every dispatch region of the program into an executable and
then deduplicates identical executables: the q, k and v projections of four
identical transformer blocks become one executable run from 12 sites, and the
executable's code keeps the locations of one site only. Charging each
invocation of it to that one site's ops would put four blocks' time on the
first block. So the sites are read from the compiler before deduplication:

- the `dispatch-creation` phase holds every dispatch region in program order,
  each with its own ops and their locations (the tf node names of that site);
- the `flow` phase holds the same dispatches in the same order as
  `flow.dispatch @executable::@export`, the export being the name IREE's
  runtime profiles it under.

Both come from one `iree-compile --compile-to=flow
--dump-compilation-phases-to` run (constants elided: the phases are read for
their structure only). In a program without control flow, the k-th invocation
of an export within one run is its k-th site in program order
(`run.profile_dispatches` counts invocations so); where the counts disagree
(a loop, a dispatch IREE added after `flow`) the dispatch is charged as a
whole to its executable's ops, and says so.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tfpgo.errors import UserError
from tfpgo.iree.compiled_source import compiled_source
from tfpgo.iree.tools import run_tool

PHASES_DIR = "flow_phases"  # under the program's directory
ELIDE = "64"  # constants and resources larger than this are elided in the phases


@dataclass(frozen=True)
class SiteOps:
    """One dispatch site: the tf node names of its compute ops, in first-seen
    order, and per compute op (in walk order) the names it carries (none for an
    op without a tf location)."""

    names: tuple[str, ...]
    per_op: tuple[tuple[str, ...], ...]
    # `compute` (its compute ops carry the names), `bindings` (only the values it
    # reads and writes do: a copy IREE made), "" (none)
    found_in: str = ""
    # The loop of the program it runs in (its index among the flow phase's loops),
    # OUTSIDE_LOOPS, or IN_NESTED_LOOPS.
    loop: int = -1


OUTSIDE_LOOPS, IN_NESTED_LOOPS = -1, -2
# The loops IREE's flow phase keeps of the program's (`stablehlo.while` becomes
# `scf.while`, possibly rotated into a do-while behind a zero-trip `scf.if`).
_LOOP_OPS = ("scf.while", "scf.for")


def compile_sites(
    stablehlo: Path, flags: Sequence[str], directory: Path, timeout_s: float | None
) -> dict[str, tuple[SiteOps, ...]]:
    """Per export, its sites in program order (module docstring): one compile of
    `stablehlo` with `flags` (the program's whole command line: target and
    options) up to IREE's flow phase, its phases dumped under
    `directory/PHASES_DIR` and read back."""
    stablehlo = compiled_source(stablehlo)  # as the program is compiled
    phases = directory / PHASES_DIR
    phases.mkdir(parents=True, exist_ok=True)
    run_tool(
        "iree-compile",
        [
            *flags,
            "--compile-to=flow",
            f"--dump-compilation-phases-to={phases}",
            "--mlir-print-debuginfo",
            f"--mlir-elide-elementsattrs-if-larger={ELIDE}",
            f"--mlir-elide-resource-strings-if-larger={ELIDE}",
            str(stablehlo),
            "-o",
            str(phases / "flow.mlir"),
        ],
        "iree level (dispatch sites)",
        timeout_s,
    )
    return read_sites(_phase(phases, "dispatch-creation"), _phase(phases, "flow"))


def _phase(phases: Path, name: str) -> Path:
    found = sorted(phases.glob(f"*.{name}.mlir"))
    if not found:
        raise UserError(f"{phases}: iree-compile wrote no {name} phase; report it")
    return found[0]


def read_sites(dispatch_creation: Path, flow: Path) -> dict[str, tuple[SiteOps, ...]]:
    """Per export, the ops of each of its sites (module docstring); {} when the two
    phases do not list the same dispatches in the same order."""
    from iree.compiler import ir

    regions = [
        site_ops(op)
        for op in walk(ir.Module.parse(dispatch_creation.read_text(), ir.Context()).operation)
        if op.name == "flow.dispatch.workgroups"
    ]
    dispatches = [
        (_export(op), loop)
        for op, loop in _walk_loops(ir.Module.parse(flow.read_text(), ir.Context()).operation)
        if op.name == "flow.dispatch"
    ]
    if len(regions) != len(dispatches):
        return {}
    sites: dict[str, list[SiteOps]] = {}
    for site, (export, loop) in zip(regions, dispatches, strict=True):
        sites.setdefault(export, []).append(dataclasses.replace(site, loop=loop))
    return {export: tuple(found) for export, found in sites.items()}


def _walk_loops(op: Any) -> Iterator[tuple[Any, int]]:
    """`op` and every op nested in it, in program order, with the loop each runs
    in (`SiteOps.loop`); a stack, not recursion: modules nest deep."""
    loops = 0
    pending: list[tuple[Any, int]] = [(op, OUTSIDE_LOOPS)]
    while pending:
        current, loop = pending.pop()
        yield current, loop
        if current.name in _LOOP_OPS:
            loop, loops = (loops if loop == OUTSIDE_LOOPS else IN_NESTED_LOOPS), loops + 1
        inner = [
            (nested.operation, loop)
            for region in current.regions
            for block in region.blocks
            for nested in block.operations
        ]
        pending.extend(reversed(inner))


def _export(op: Any) -> str:
    """`@executable::@export` of a `flow.dispatch`: the export's name."""
    text = str(op.attributes["entry_points"])
    return text.rsplit("::@", 1)[-1].strip(']"')


def site_ops(region_op: Any) -> SiteOps:
    """The tf names of a dispatch region's (or an executable's) ops."""
    per_op = tuple(tuple(location_names(op.location)) for op in compute_ops(region_op))
    names = tuple(dict.fromkeys(name for names in per_op for name in names))
    if names:
        return SiteOps(names, per_op, "compute")
    bindings = dict.fromkeys(
        name
        for op in walk(region_op)
        if op.name.endswith((".load", ".store"))
        for name in location_names(op.location)
    )
    return SiteOps(tuple(bindings), per_op, "bindings" if bindings else "")


def translation(first: SiteOps, other: SiteOps) -> dict[str, str]:
    """Per tf name of `other` (a site of the same executable), the name `first`
    carries on the same op: the executable's code keeps one site's locations, and
    this finds another site's op in it. {} when the two differ in shape."""
    if len(first.per_op) != len(other.per_op):
        return {}
    found: dict[str, str] = {}
    for names, theirs in zip(first.per_op, other.per_op, strict=True):
        if len(names) != len(theirs):
            return {}
        for name, their in zip(names, theirs, strict=True):
            found.setdefault(their, name)
    return found


# Ops whose location is another dispatch's (bindings, loads and stores carry
# the producer's or consumer's location): not what the dispatch computes.
COMPUTE_DIALECTS = ("linalg.", "iree_linalg_ext.", "arith.", "math.")
NOT_COMPUTE = frozenset({"arith.constant", "linalg.yield", "linalg.fill"})


def compute_ops(op: Any) -> Iterator[Any]:
    """The ops under `op` that compute (linalg, IREE's linalg extensions: a
    scatter, a sort; arith, math; not constants, fills or yields), in walk
    order."""
    for inner in walk(op):
        computes = inner.name.startswith(COMPUTE_DIALECTS) and inner.name not in NOT_COMPUTE
        if inner is not op and computes:
            yield inner


def walk(op: Any) -> Iterator[Any]:
    """`op` and every op nested in it, in program order."""
    for current, _ in _walk_loops(op):
        yield current


def location_names(location: Any) -> Iterator[str]:
    """The tf node names in a location (the importer's `"<OpType>:"` marks skipped)."""
    from iree.compiler import ir

    if isinstance(location, ir.NameLoc):
        if not location.name_str.endswith(":"):
            # An op of a function body is `node@function`, as tfpgo-opt reads it.
            yield location.name_str.split("@", 1)[0]
        yield from location_names(location.child_loc)
    elif isinstance(location, ir.FusedLoc):
        for inner in location.locations:
            yield from location_names(inner)
    elif isinstance(location, ir.CallSiteLoc):
        yield from location_names(location.callee)
