"""An anchor engine's time per IREE dispatch: the one rule by which the tuner's
bound (tfpgo.tune.dispatch_tiles) and the report's table
(tfpgo.report.anchor_tables) set a dispatch beside an engine a CPU user would
pick instead (anchor_profile.json).

The two engines cut the step differently: OpenVINO runs a convolution with the
next layer's bias and ReLU6 where IREE's dispatch stops before them, so no unit
of one lies whole in a unit of the other (on MobileNetV2, joining the units
that overlap joins the whole network). Both sides are therefore taken down to
the tf op, where they meet:
- a layer's time is split over the tf ops it fused in proportion to TensorFlow's
  own time for each (`EngineLayers.op_ps`): a fused convolution's layer is
  charged mostly to its convolution;
- an op's anchor time is split over the dispatches that ran it in proportion to
  their time on it (`Dispatch.parts`).
A dispatch's anchor time is the sum over its ops. The anchor's time on ops no
dispatch ran (IREE folded them when compiling) is kept apart, so the dispatches'
anchor times and it sum to the anchor's time on tf ops, exactly.
"""

from __future__ import annotations

from dataclasses import dataclass

from tfpgo.attribution.parts import split_in_proportion
from tfpgo.iree.profile_document import IreeProfile
from tfpgo.runtime.anchor_profile import EngineLayers


@dataclass(frozen=True)
class DispatchAnchor:
    """One dispatch beside the anchor's time for its share of the same tf ops."""

    dispatch: str
    tf_ops: tuple[str, ...]  # the ops its sites carry
    iree_ps: int  # its time a call
    anchor_ps: int  # the anchor's time a call on its share of those ops
    layers: tuple[str, ...]  # the anchor's layers that ran any of them
    unrun: tuple[str, ...]  # those of its ops no layer of the anchor ran

    @property
    def behind_ps(self) -> int:
        return self.iree_ps - self.anchor_ps

    @property
    def comparable(self) -> bool:
        """Whether the anchor ran any of its ops. One it ran none of it either
        folded away whole or ran where no name says; one with some ops unrun
        (OpenVINO folds a batch norm's multiply into the convolution's weights)
        is compared on what the anchor did run, all the work the anchor did."""
        return len(self.unrun) < len(self.tf_ops)


@dataclass(frozen=True)
class AnchorShares:
    dispatches: tuple[DispatchAnchor, ...]  # furthest behind the anchor first
    unplaced_ps: int  # the anchor's time a call on tf ops no dispatch ran
    unplaced_ops: tuple[str, ...]


def anchor_shares(iree: IreeProfile, anchor: EngineLayers) -> AnchorShares:
    """Every dispatch of `iree` with the anchor's time for its share of its ops
    (the module docstring's rule), furthest behind first."""
    runs = max(iree.runs, 1)
    anchor_op_ps = anchor.op_ps(iree.op_tf_ps)
    layers_of: dict[str, list[str]] = {}
    for layer in anchor.layers:
        for op in layer.tf_ops:
            layers_of.setdefault(op, []).append(layer.name)
    held: dict[str, list[tuple[str, int]]] = {}  # op -> (dispatch, its time on the op)
    for dispatch in iree.dispatches:
        for op, ps in dispatch.parts().items():
            held.setdefault(op, []).append((dispatch.name, ps))
    shares = {dispatch.name: 0 for dispatch in iree.dispatches}
    for op, holders in held.items():
        parts = split_in_proportion(anchor_op_ps.get(op, 0), [ps for _, ps in holders])
        for (name, _), part in zip(holders, parts, strict=True):
            shares[name] += part
    found = []
    for dispatch in iree.dispatches:
        ops = dispatch.sources  # each once, in site order
        layers = dict.fromkeys(layer for op in ops for layer in layers_of.get(op, ()))
        found.append(
            DispatchAnchor(
                dispatch.name,
                ops,
                dispatch.total_ps // runs,
                shares[dispatch.name],
                tuple(layers),
                tuple(op for op in ops if op not in layers_of),
            )
        )
    unplaced = tuple(op for op in anchor_op_ps if op not in held)
    return AnchorShares(
        tuple(sorted(found, key=lambda d: (-d.behind_ps, d.dispatch))),
        sum(anchor_op_ps[op] for op in unplaced),
        unplaced,
    )
