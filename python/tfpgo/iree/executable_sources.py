"""The executable sources of a compiled program: which tf ops each dispatch's
code names (read with the MLIR Python bindings IREE ships, from the locations
`--compile-to=executable-sources --mlir-print-debuginfo` keeps), and
`model.dispatches.mlir`, the sources annotated with each dispatch's time."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tfpgo.atomic import atomic_output_file
from tfpgo.attribution.parts import split_equally
from tfpgo.attribution.work_kind import Work, highest, kind_of
from tfpgo.iree.profile_document import BY_PROGRAM, Dispatch, IreeProfile
from tfpgo.iree.sites import (
    SiteOps,
    compute_ops,
    location_names,
    site_ops,
    translation,
    walk,
)

ELIDE_ELEMENTS = 64  # constants larger than this are elided in model.dispatches.mlir


def parse_sources(sources: Path) -> Any:
    """The executable sources as an MLIR module (IREE's Python bindings), parsed once
    for `dispatch_sources` and `write_dispatch_sources`."""
    from iree.compiler import ir

    return ir.Module.parse(sources.read_text(), ir.Context())


def dispatch_sources(module: Any) -> dict[str, tuple[tuple[str, ...], str]]:
    """Per executable export (the dispatch function's name): the tf node names its
    compute ops carry, in first-seen order, and where they were found: `compute`,
    or `bindings` when no compute op carries one (a copy or layout change IREE
    made: the names of the values it reads and writes), "" when none. The code of
    an executable several sites share names one site's ops (`tfpgo.iree.sites`)."""
    found: dict[str, tuple[tuple[str, ...], str]] = {}
    for executable in module.body.operations:
        if executable.operation.name != "hal.executable":
            continue
        site = site_ops(executable.operation)
        for export, _ in executable_exports(executable.operation):
            found[export] = (site.names, site.found_in)
    return found


DISPATCHES_MODULE = "model.dispatches.mlir"


def write_dispatch_sources(
    module: Any,
    profile: IreeProfile,
    fused_into: dict[str, str],
    path: Path,
    sites: dict[str, tuple[SiteOps, ...]] | None = None,
) -> None:
    """The executable sources (each dispatch's code, large constants elided) with
    the dispatch time on the ops that ran it. Each site's part for a tf op
    (`Site.parts`) is split over the linalg ops of its executable that name that
    op (or one TensorFlow ran inside its kernel, `fused_into`), those of the
    highest kind of work (`tfpgo.attribution.work_kind`, the C++ passes' rule), as
    `iree_self`; the tf op's TensorFlow self
    time the same way over all its linalg ops, as `self`. An executable several
    sites share names one site's ops: another site's op is found through it
    (`sites.translation`), and an op that ran for several sites lists their tf ops
    in `site_sources`. A part no linalg op names stays on the dispatch's
    `hal.executable.export` (`iree_self` there), so `iree_self` sums to the
    attributed dispatch time."""
    dispatches = {d.name: d for d in profile.dispatches}
    placed, left_on = _placed(module, dispatches, fused_into, sites or {})
    _attach(module, placed, left_on, profile, dispatches)
    text = module.operation.get_asm(large_elements_limit=ELIDE_ELEMENTS)
    with atomic_output_file(path) as handle:
        handle.write(text)


# An op of an executable, the tf op it ran, its dispatch and its part of that
# dispatch's time (ps).
_Placed = list[tuple[Any, str, str, int]]


def _placed(
    module: Any,
    dispatches: dict[str, Dispatch],
    fused_into: dict[str, str],
    sites: dict[str, tuple[SiteOps, ...]],
) -> tuple[_Placed, dict[str, tuple[Any, int]]]:
    """Each site's part for each tf op, on the linalg ops of the highest kind of
    work that name it (`write_dispatch_sources`); per dispatch, its export op and
    the part no linalg op names."""
    placed: _Placed = []
    left_on: dict[str, tuple[Any, int]] = {}  # dispatch -> (export op, iree ps)
    for executable in module.body.operations:
        if executable.operation.name != "hal.executable":
            continue
        named: dict[str, list[Any]] = {}
        kinds: dict[Any, Work] = {}
        for op in walk(executable.operation):
            kind_of(op, kinds)
        for op in compute_ops(executable.operation):
            if not op.name.startswith("linalg."):
                continue
            for name in dict.fromkeys(fused_into.get(n, n) for n in location_names(op.location)):
                named.setdefault(name, []).append(op)
        for export_name, export in executable_exports(executable.operation):
            dispatch = dispatches.get(export_name)
            if dispatch is None:
                continue
            left = 0
            through = _site_translations(dispatch, sites.get(export_name, ()), named, fused_into)
            for site, translated in zip(dispatch.sites, through, strict=True):
                for source, ps in site.parts().items():
                    ops = highest(named.get(translated.get(source, source), []), kinds)
                    if not ops:
                        left += ps
                        continue
                    for op, part in zip(ops, split_equally(ps, len(ops)), strict=True):
                        placed.append((op, source, export_name, part))
            left_on[export_name] = (export, left)
    return placed, left_on


def _attach(
    module: Any,
    placed: _Placed,
    left_on: dict[str, tuple[Any, int]],
    profile: IreeProfile,
    dispatches: dict[str, Dispatch],
) -> None:
    """`profiler_data` on every op a part was placed on, and on each export the
    part left on it."""
    from iree.compiler import ir

    tf_parts = _tf_parts(placed, profile)
    with module.context:
        i64 = ir.IntegerType.get_signless(64)
        by_op: dict[Any, dict[str, Any]] = {}
        for op, source, export_name, part in placed:
            record = by_op.setdefault(
                op, {"sources": {}, "dispatch": export_name, "iree_self": 0, "self": 0}
            )
            record["sources"].setdefault(source, None)
            record["iree_self"] += part
            record["self"] += next(tf_parts[source])
        for op, record in by_op.items():
            source, *others = record["sources"]
            attributes = {
                "source": ir.StringAttr.get(source),
                "dispatch": ir.StringAttr.get(record["dispatch"]),
                "self": ir.IntegerAttr.get(i64, record["self"]),
                "iree_self": ir.IntegerAttr.get(i64, record["iree_self"]),
                "source_self": ir.IntegerAttr.get(i64, profile.op_tf_ps.get(source, 0)),
                "source_iree_self": ir.IntegerAttr.get(i64, profile.op_ps[source]),
            }
            if others:
                attributes["site_sources"] = ir.ArrayAttr.get(
                    [ir.StringAttr.get(name) for name in record["sources"]]
                )
            op.attributes["profiler_data"] = ir.DictAttr.get(attributes)
        for name, (export, left) in left_on.items():
            export.attributes["profiler_data"] = ir.DictAttr.get(
                {
                    "dispatch_ps": ir.IntegerAttr.get(i64, dispatches[name].total_ps),
                    "iree_self": ir.IntegerAttr.get(i64, left),
                }
            )


def _site_translations(
    dispatch: Dispatch,
    own: tuple[SiteOps, ...],
    named: dict[str, list[Any]],
    fused_into: dict[str, str],
) -> list[dict[str, str]]:
    """Per site of `dispatch`, the name its executable's code carries for each of
    the site's tf ops: the code keeps the locations of one site (the one naming
    most of them), and another site's op is the one in the same place."""
    if dispatch.sites_from != BY_PROGRAM or len(own) != len(dispatch.sites):
        return [{} for _ in dispatch.sites]
    keeper = max(own, key=lambda site: sum(fused_into.get(n, n) in named for n in site.names))
    found = []
    for site in own:
        pairs = translation(keeper, site).items()
        found.append(
            {fused_into.get(their, their): fused_into.get(its, its) for their, its in pairs}
        )
    return found


def executable_exports(op: Any) -> list[tuple[str, Any]]:
    """The `hal.executable.export` ops under `op`, with their names."""
    return [
        (str(inner.attributes["sym_name"]).strip('"'), inner)
        for inner in walk(op)
        if inner is not op and inner.name == "hal.executable.export"
    ]


def _tf_parts(
    placed: list[tuple[Any, str, str, int]], profile: IreeProfile
) -> dict[str, Iterator[int]]:
    """Each tf op's TensorFlow self time in equal parts over its placements."""
    count: dict[str, int] = {}
    for _, source, _, _ in placed:
        count[source] = count.get(source, 0) + 1
    return {
        source: iter(split_equally(profile.op_tf_ps.get(source, 0), n))
        for source, n in count.items()
    }
