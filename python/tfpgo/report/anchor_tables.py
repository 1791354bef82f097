"""The report's "Hot dispatches against the fastest anchor" section: every IREE
dispatch that keeps the program behind the fastest anchor engine
(anchor_profile.json), beside that engine's time for the same tf ops
(tfpgo.runtime.anchor_dispatches: both sides taken down to the tf op) and what
--tune tried on it, furthest behind first.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from tfpgo.iree.profile_document import IreeProfile
from tfpgo.render.metrics import format_ps
from tfpgo.runtime.anchor_dispatches import AnchorShares, DispatchAnchor, anchor_shares
from tfpgo.runtime.anchor_profile import AnchorProfile, EngineLayers
from tfpgo.runtime.anchors import FLOAT32_ENGINES
from tfpgo.tune.headroom import dispatch_key

ANCHOR_TITLE = "Hot dispatches against the fastest anchor"
SHOWN = 3  # names shown in a cell before "+N more"
# A dispatch behind the anchor by less than this share of IREE's call is
# counted in the closing row, not given one of its own.
ROW_SHARE = 0.01


@dataclass(frozen=True)
class AnchorComparison:
    """What the section compares: the anchors' layers, and the program (`tuned`
    or `default`) the wall-clock line timed against them, with its profile;
    what --tune tried on each dispatch alone (by `dispatch_key`) and on the
    whole program, one line each (tfpgo.tune.headroom)."""

    anchors: AnchorProfile
    iree: IreeProfile
    program: str
    tried: Mapping[str, Sequence[str]] = field(default_factory=dict)
    whole: Sequence[str] = ()
    # The engines the program is held to: those computing in float32, as it does.
    among: tuple[str, ...] = FLOAT32_ENGINES

    def fastest(self) -> EngineLayers | None:
        return self.anchors.fastest(self.among)


def anchor_summary(comparison: AnchorComparison, shares: AnchorShares | None) -> str:
    """One paragraph: which anchor, both sides' time a call, the anchor's time on
    no tf op and on ops no dispatch ran, how the rows are made, what --tune
    tried on the whole program, and the engines without per-layer times."""
    anchors, iree = comparison.anchors, comparison.iree
    fastest = comparison.fastest()
    refused = "; ".join(f"{engine}: {why}" for engine, why in anchors.refused.items())
    if fastest is None or shares is None:
        return f"No anchor engine gave per-layer times ({refused})."
    among = comparison.among
    others = [e.engine for e in anchors.engines if e is not fastest and e.engine in among]
    faster_than = f", the fastest of it and {', '.join(others)}" if others else ""
    loose = fastest.total_ps - fastest.attributed_ps
    iree_call = iree.dispatch_ps // max(iree.runs, 1)
    unplaced = ""
    if shares.unplaced_ps:
        unplaced = (
            f" {format_ps(shares.unplaced_ps)} of it lies on {len(shares.unplaced_ops)} tf ops "
            "no dispatch ran (IREE folded them when compiling)."
        )
    whole = (
        f" Tried on the whole program: {', '.join(comparison.whole)}." if comparison.whole else ""
    )
    return (
        f"{fastest.engine} ({fastest.calls} profiled calls{faster_than}): "
        f"{format_ps(fastest.total_ps)} of layer time a call, {format_ps(loose)} of it on no "
        f"tf op (reorders and conversions it inserts), against {format_ps(iree_call)} "
        f"of IREE's dispatch time a call ({comparison.program} program).{unplaced} Each row: "
        f"a dispatch behind {fastest.engine}, beside {fastest.engine}'s time for its share of "
        "the same tf ops (each layer's time split over the ops it fused as TensorFlow's own "
        "times for them, each op's over the dispatches that ran it as theirs), furthest "
        f"behind first; those behind by less than {ROW_SHARE:.0%} of IREE's call share the "
        f"last row.{whole}" + (f" Without per-layer times: {refused}." if refused else "")
    )


def anchor_header(comparison: AnchorComparison) -> list[str]:
    fastest = comparison.fastest()
    engine = fastest.engine if fastest else "anchor"
    return ["dispatch", "tf ops", "IREE a call", f"{engine} a call", "IREE / anchor",
            f"{engine} layers", "--tune tried on it"]  # fmt: skip


def anchor_rows(comparison: AnchorComparison, shares: AnchorShares) -> list[list[str]]:
    """Every dispatch behind the anchor by at least ROW_SHARE of IREE's call, one
    row each, and one row for the rest."""
    iree, engine = comparison.iree, comparison.fastest()
    name = engine.engine if engine else "the anchor"
    call = iree.dispatch_ps // max(iree.runs, 1)
    behind = [d for d in shares.dispatches if d.behind_ps > 0]
    shown = [d for d in behind if d.behind_ps >= ROW_SHARE * call]
    rows = [_row(d, name, comparison.tried.get(dispatch_key(d.dispatch), ())) for d in shown]
    rest = behind[len(shown) :]
    if rest:
        iree_ps, anchor_ps = sum(d.iree_ps for d in rest), sum(d.anchor_ps for d in rest)
        rows.append(
            [
                f"{len(rest)} more, each behind by less than {ROW_SHARE:.0%}",
                "",
                format_ps(iree_ps),
                format_ps(anchor_ps),
                _ratio(iree_ps, anchor_ps),
                "",
                "",
            ]
        )
    return rows


def _row(share: DispatchAnchor, engine: str, tried: Sequence[str]) -> list[str]:
    ops = _shown(share.tf_ops) or "(none: a copy IREE made)"
    if share.unrun:
        ops += f" ({len(share.unrun)} of them run by no layer of {engine}: folded)"
    return [
        share.dispatch,
        ops,
        format_ps(share.iree_ps),
        format_ps(share.anchor_ps),
        _ratio(share.iree_ps, share.anchor_ps),
        _shown(share.layers) or "(none)",
        "; ".join(tried) or "nothing on it alone (not a tile-search target)",
    ]


def _ratio(iree_ps: int, anchor_ps: int) -> str:
    return f"{iree_ps / anchor_ps:.2f}x" if anchor_ps else "–"


def _shown(names: tuple[str, ...]) -> str:
    text = ", ".join(names[:SHOWN])
    return text + (f", +{len(names) - SHOWN} more" if len(names) > SHOWN else "")


def anchor_section(comparison: AnchorComparison) -> tuple[str, list[str], list[list[str]]]:
    """The section's paragraph, table header and rows."""
    fastest = comparison.fastest()
    shares = None if fastest is None else anchor_shares(comparison.iree, fastest)
    summary = anchor_summary(comparison, shares)
    rows = [] if shares is None else anchor_rows(comparison, shares)
    return summary, anchor_header(comparison), rows
