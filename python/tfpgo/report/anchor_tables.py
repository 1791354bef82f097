"""The report's "Hot dispatches against the fastest anchor" section: IREE's
dispatches beside the time the fastest anchor engine (anchor_profile.json,
tfpgo.runtime.anchor_profile) spends on the same tf ops, furthest behind first.

The two engines cut the step differently: a dispatch site may run a
convolution's ReLU alone where OpenVINO's layer runs the convolution with it.
So the sides are compared on groups of tf ops that both sides' times lie on
whole: tf ops joined when one dispatch site or one anchor layer runs them
together. Each group: the dispatches of its sites and their time a call, the
anchor's layers and theirs.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from tfpgo.iree.profile_document import IreeProfile
from tfpgo.render.metrics import format_ps
from tfpgo.runtime.anchor_profile import AnchorProfile, EngineLayers

ANCHOR_TITLE = "Hot dispatches against the fastest anchor"
SHOWN = 3  # names shown in a cell before "+N more"


@dataclass(frozen=True)
class OpGroup:
    """tf ops that a dispatch site or an anchor layer joins, with both sides' time a call."""

    tf_ops: tuple[str, ...]
    dispatches: tuple[str, ...]  # hottest first
    layers: tuple[str, ...]  # the anchor's, in its order
    iree_ps: int
    anchor_ps: int

    @property
    def behind_ps(self) -> int:
        return self.iree_ps - self.anchor_ps


def op_groups(iree: IreeProfile, anchor: EngineLayers) -> list[OpGroup]:
    """The groups of tf ops that at least one dispatch site runs, furthest
    behind the anchor first (IREE's time a call less the anchor's)."""
    parent: dict[str, str] = {}

    def root(op: str) -> str:
        parent.setdefault(op, op)
        while parent[op] != op:
            parent[op] = parent[parent[op]]
            op = parent[op]
        return op

    def join(ops: Iterable[str]) -> None:
        first, *rest = ops
        for op in rest:
            parent[root(op)] = root(first)

    sites = [(d.name, s) for d in iree.dispatches for s in d.sites if s.sources]
    for _, site in sites:
        join(site.sources)
    for layer in anchor.layers:
        if layer.tf_ops:
            join(layer.tf_ops)
    iree_ps: dict[str, dict[str, int]] = {}  # group -> dispatch -> its sites' time
    for name, site in sites:
        per_dispatch = iree_ps.setdefault(root(site.sources[0]), {})
        per_dispatch[name] = per_dispatch.get(name, 0) + site.total_ps
    runs = max(iree.runs, 1)
    groups = []
    for key, dispatches in iree_ps.items():
        layers = [layer for layer in anchor.layers if layer.tf_ops and root(layer.tf_ops[0]) == key]
        groups.append(
            OpGroup(
                tuple(op for op in parent if root(op) == key),
                tuple(sorted(dispatches, key=lambda name: -dispatches[name])),
                tuple(layer.name for layer in layers),
                sum(dispatches.values()) // runs,
                sum(layer.ps for layer in layers),
            )
        )
    return sorted(groups, key=lambda group: -group.behind_ps)


def anchor_summary(iree: IreeProfile, program: str, anchors: AnchorProfile) -> str:
    """One paragraph: which anchor, both sides' time a call, what the anchor
    ran on no tf op, and the engines without per-layer times."""
    fastest = anchors.fastest()
    refused = "; ".join(f"{engine}: {why}" for engine, why in anchors.refused.items())
    if fastest is None:
        return f"No anchor engine gave per-layer times ({refused})."
    others = [e.engine for e in anchors.engines if e is not fastest]
    faster_than = f", the fastest of it and {', '.join(others)}" if others else ""
    loose = fastest.total_ps - fastest.attributed_ps
    iree_call = iree.dispatch_ps // max(iree.runs, 1)
    return (
        f"{fastest.engine} ({fastest.calls} profiled calls{faster_than}): "
        f"{format_ps(fastest.total_ps)} of layer time a call, {format_ps(loose)} of it on no "
        f"tf op (reorders and conversions it inserts), against {format_ps(iree_call)} "
        f"of IREE's dispatch time a call ({program} program). Each row: tf ops that a "
        f"dispatch site or a layer of {fastest.engine} runs together, IREE's time on them "
        f"beside {fastest.engine}'s, furthest behind first."
        + (f" Without per-layer times: {refused}." if refused else "")
    )


def anchor_header(anchors: AnchorProfile) -> list[str]:
    fastest = anchors.fastest()
    engine = fastest.engine if fastest else "anchor"
    return ["dispatches", "tf ops", "IREE a call", f"{engine} a call", "IREE / anchor",
            f"{engine} layers"]  # fmt: skip


def anchor_rows(iree: IreeProfile, anchors: AnchorProfile, top: int) -> list[list[str]]:
    """The `top` groups furthest behind the fastest anchor, one row each."""
    fastest = anchors.fastest()
    if fastest is None:
        return []
    rows = []
    for group in op_groups(iree, fastest)[:top]:
        ratio = f"{group.iree_ps / group.anchor_ps:.2f}x" if group.anchor_ps else "–"
        rows.append(
            [
                _shown(group.dispatches),
                _shown(group.tf_ops),
                format_ps(group.iree_ps),
                format_ps(group.anchor_ps),
                ratio,
                _shown(group.layers) or "(none: no layer of it ran these ops)",
            ]
        )
    return rows


def _shown(names: tuple[str, ...]) -> str:
    text = ", ".join(names[:SHOWN])
    return text + (f", +{len(names) - SHOWN} more" if len(names) > SHOWN else "")


@dataclass(frozen=True)
class AnchorComparison:
    """What the section compares: the anchors' layers, and the program (`tuned`
    or `default`) the wall-clock line timed against them, with its profile."""

    anchors: AnchorProfile
    iree: IreeProfile
    program: str


def anchor_section(
    comparison: AnchorComparison, top: int
) -> tuple[str, list[str], list[list[str]]]:
    """The section's paragraph, table header and rows."""
    anchors, iree = comparison.anchors, comparison.iree
    summary = anchor_summary(iree, comparison.program, anchors)
    return summary, anchor_header(anchors), anchor_rows(iree, anchors, top)
