"""tfpgo.runtime.anchor_dispatches and tfpgo.report.anchor_tables: each IREE
dispatch beside the fastest anchor's time for its share of the same tf ops, on
a real cnn run's iree_profile.json and anchor_profile.json (`pgo --model cnn
--lower iree --tune`) against shares computed here in floating point, and on
constructed profiles where the two engines cut the ops differently."""

from pathlib import Path

import pytest

from tfpgo.iree.profile_document import Dispatch, IreeProfile, Site
from tfpgo.report import anchor_tables
from tfpgo.runtime import anchors
from tfpgo.runtime.anchor_dispatches import anchor_shares
from tfpgo.runtime.anchor_profile import AnchorProfile, EngineLayers, Layer

DATA = Path(__file__).resolve().parents[1] / "data" / "anchor_layers"


def _oracle(iree, engine):
    """Per dispatch, the anchor's share of its ops in floating point: each
    layer's time over its ops by TensorFlow's time (equally when none has
    any), each op's over the dispatches by their time on it."""
    op_anchor: dict[str, float] = {}
    for layer in engine.layers:
        weights = [iree.op_tf_ps.get(op, 0) for op in layer.tf_ops]
        whole = sum(weights)
        for op, weight in zip(layer.tf_ops, weights, strict=True):
            part = weight / whole if whole else 1 / len(layer.tf_ops)
            op_anchor[op] = op_anchor.get(op, 0.0) + layer.ps * part
    on_op: dict[str, float] = {}
    for dispatch in iree.dispatches:
        for site in dispatch.sites:
            for op in site.sources:
                on_op[op] = on_op.get(op, 0.0) + site.total_ps / len(site.sources)
    found = {}
    for dispatch in iree.dispatches:
        share = 0.0
        for site in dispatch.sites:
            for op in site.sources:
                share += op_anchor.get(op, 0.0) * site.total_ps / len(site.sources) / on_op[op]
        found[dispatch.name] = share
    return found


def test_real_cnn_dispatches_take_their_share_of_the_anchor_exactly():
    iree = IreeProfile.read(DATA / "cnn.iree_profile.json")
    profile = AnchorProfile.read(DATA / "cnn.anchor_profile.json")
    fastest = profile.fastest(anchors.FLOAT32_ENGINES)
    assert fastest is not None
    shares = anchor_shares(iree, fastest)
    want = _oracle(iree, fastest)
    assert {d.dispatch for d in shares.dispatches} == set(want)
    for found in shares.dispatches:
        assert found.anchor_ps == pytest.approx(want[found.dispatch], abs=4)
        (dispatch,) = [d for d in iree.dispatches if d.name == found.dispatch]
        assert found.iree_ps == dispatch.total_ps // iree.runs
    # every picosecond the anchor spent on tf ops is on a dispatch, or apart
    placed = sum(d.anchor_ps for d in shares.dispatches)
    assert placed + shares.unplaced_ps == fastest.attributed_ps
    behind = [d.behind_ps for d in shares.dispatches]
    assert behind == sorted(behind, reverse=True)
    # IREE's big convolution carries only its ReLU's name; OpenVINO's layer runs
    # both, and all its time goes to the op IREE ran (TensorFlow's time weighs
    # it), shared with the dispatch that runs the ReLU again with the mean
    (layer,) = [layer for layer in fastest.layers if "cnn_1/conv_big_1/Relu" in layer.tf_ops]
    op_ps = fastest.op_ps(iree.op_tf_ps)
    assert "cnn_1/conv_big_1/convolution" in layer.tf_ops
    assert op_ps["cnn_1/conv_big_1/convolution"] == 0 and op_ps["cnn_1/conv_big_1/Relu"] == layer.ps
    holders = [d for d in shares.dispatches if "cnn_1/conv_big_1/Relu" in d.tf_ops]
    assert len(holders) == 2 and all(d.comparable for d in holders)


def _site(ops, ps):
    return Site(tuple(ops), ps, 0)


def _profile():
    """Two runs. OpenVINO's layer `conv` runs x and y, IREE's dispatches cut them
    as d_a (x) and d_b (y, z); `fc` runs w, which no dispatch ran; d_copy has no
    tf op; d_small is behind by 1 ps."""
    dispatches = (
        Dispatch("f_dispatch_0_conv_a", 1, 600, ("x",), 0, "compute", (_site("x", 600),)),
        Dispatch("f_dispatch_1_conv_b", 1, 600, ("y", "z"), 0, "compute", (_site("yz", 600),)),
        Dispatch("f_dispatch_2_copy", 1, 80, (), 0, "", (_site("", 80),)),
        Dispatch("f_dispatch_3_small", 1, 4, ("v",), 0, "compute", (_site("v", 4),)),
    )
    tf_times = {"x": 3, "y": 1, "z": 5, "v": 1}
    return IreeProfile("m", "main", 2, 1, 0.0, 0.0, 0.0, dispatches, op_tf_ps=tf_times)


def _layers():
    return (
        Layer("conv", "Convolution", "brgconv", 300, ("x", "y")),
        Layer("fc", "FullyConnected", "gemm", 5, ("w",)),
        Layer("dw", "Convolution", "brgconv_dw", 1, ("v",)),
        Layer("reorder", "Reorder", "jit", 2, (), "a reorder"),
    )


def test_a_layer_across_two_dispatches_is_split_by_tensorflows_times():
    shares = anchor_shares(_profile(), EngineLayers("OpenVINO f32", 3, _layers()))
    by_name = {d.dispatch: d for d in shares.dispatches}
    # conv's 300 ps over x and y as 3:1, so 225 to d_a and 75 to d_b
    assert by_name["f_dispatch_0_conv_a"].anchor_ps == 225
    b = by_name["f_dispatch_1_conv_b"]
    assert (b.iree_ps, b.anchor_ps, b.layers, b.unrun) == (300, 75, ("conv",), ("z",))
    assert b.comparable  # compared on y, which the anchor ran
    copy = by_name["f_dispatch_2_copy"]
    assert (copy.tf_ops, copy.anchor_ps, copy.comparable) == ((), 0, False)
    assert (shares.unplaced_ps, shares.unplaced_ops) == (5, ("w",))
    order = [d.dispatch for d in shares.dispatches]
    assert order == [b.dispatch, "f_dispatch_0_conv_a", "f_dispatch_2_copy", "f_dispatch_3_small"]


def test_rows_name_every_dispatch_behind_with_what_tune_tried():
    profile = AnchorProfile("m", (EngineLayers("OpenVINO f32", 3, _layers()),), {"TFLite": "none"})
    tried = {"conv_b": ["tiles.json: 4 tile variants, best 0.97 alone"]}
    comparison = anchor_tables.AnchorComparison(
        profile, _profile(), "tuned", tried, ["iree-conv-data-tiling 1.020 (no change)"]
    )
    summary, header, rows = anchor_tables.anchor_section(comparison)
    assert header[3] == "OpenVINO f32 a call" and header[-1] == "--tune tried on it"
    b, a, copy, rest = rows
    assert b[0] == "f_dispatch_1_conv_b" and b[4] == "4.00x" and b[5] == "conv"
    assert "1 of them run by no layer of OpenVINO f32" in b[1]
    assert b[6] == "tiles.json: 4 tile variants, best 0.97 alone"
    assert copy[1] == "(none: a copy IREE made)" and copy[4] == "–"
    assert a[0] == "f_dispatch_0_conv_a" and "not a tile-search target" in a[6]
    # d_small: 2 ps against 1, under 1% of the 642 ps call
    assert rest[0] == "1 more, each behind by less than 1%"
    assert "TFLite: none" in summary and "(tuned program)" in summary
    assert "on 1 tf ops no dispatch ran" in summary
    assert "iree-conv-data-tiling 1.020 (no change)" in summary


def test_a_lower_precision_anchor_is_not_the_bar_unless_allowed():
    slow = EngineLayers(anchors.OPENVINO_F32, 3, _layers())
    bf16 = (Layer("conv", "Convolution", "k", 9, ("x",)),)
    fast = EngineLayers(anchors.OPENVINO_DEFAULT, 3, bf16)
    profile = AnchorProfile("m", (slow, fast))
    held = anchor_tables.AnchorComparison(profile, _profile(), "default")
    assert held.fastest() is slow
    allowed = anchor_tables.AnchorComparison(profile, _profile(), "default", among=anchors.ENGINES)
    assert allowed.fastest() is fast
