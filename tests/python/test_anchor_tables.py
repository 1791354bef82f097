"""tfpgo.report.anchor_tables: IREE's dispatches against the fastest anchor's
layers on the same tf ops, on a real cnn run's iree_profile.json and
anchor_profile.json (`pgo --model cnn --lower iree --tune`), against groups
found here by merging overlapping op sets until none overlap."""

from pathlib import Path

from tfpgo.iree.profile_document import Dispatch, IreeProfile, Site
from tfpgo.report import anchor_tables
from tfpgo.runtime.anchor_profile import AnchorProfile, EngineLayers, Layer

DATA = Path(__file__).resolve().parents[1] / "data" / "anchor_layers"


def _oracle(iree, engine):
    """{tf ops: (dispatches, IREE ps a call, anchor ps)} for the groups a site
    runs: every op set (a site's, a layer's) merged with each that overlaps it."""
    units = [(frozenset(s.sources), "site", d.name, s.total_ps)
             for d in iree.dispatches for s in d.sites if s.sources]  # fmt: skip
    units += [(frozenset(layer.tf_ops), "layer", layer.name, layer.ps)
              for layer in engine.layers if layer.tf_ops]  # fmt: skip
    groups: list[tuple[frozenset[str], list[tuple]]] = []  # (ops, units)
    for unit in units:
        touching = [group for group in groups if group[0] & unit[0]]
        ops = unit[0].union(*(group[0] for group in touching))
        members = [unit] + [member for group in touching for member in group[1]]
        groups = [group for group in groups if group not in touching] + [(ops, members)]
    found = {}
    for ops, members in groups:
        sites = [member for member in members if member[1] == "site"]
        if sites:
            layers = [member[3] for member in members if member[1] == "layer"]
            iree_ps = sum(member[3] for member in sites) // iree.runs
            found[ops] = ({member[2] for member in sites}, iree_ps, sum(layers))
    return found


def test_real_cnn_groups_match_the_oracle_furthest_behind_first():
    iree = IreeProfile.read(DATA / "cnn.iree_profile.json")
    anchors = AnchorProfile.read(DATA / "cnn.anchor_profile.json")
    fastest = anchors.fastest()
    assert fastest is not None
    assert fastest.total_ps == min(engine.total_ps for engine in anchors.engines)
    groups = anchor_tables.op_groups(iree, fastest)
    found = {frozenset(g.tf_ops): (set(g.dispatches), g.iree_ps, g.anchor_ps) for g in groups}
    assert found == _oracle(iree, fastest)
    behind = [g.iree_ps - g.anchor_ps for g in groups]
    assert behind == sorted(behind, reverse=True)
    # cnn: IREE runs the big convolution's ReLU with the pooling of the mean in
    # another dispatch; OpenVINO runs convolution and ReLU together, the mean alone
    big = next(g for g in groups if "cnn_1/conv_big_1/convolution" in g.tf_ops)
    assert {"cnn_1/conv_big_1/Relu", "cnn_1/gap_1/Mean"} <= set(big.tf_ops)
    assert len(big.dispatches) == 2 and len(big.layers) == 2


def test_a_chain_of_overlaps_is_one_group_and_a_layer_no_site_runs_no_row():
    def site(ops, ps):
        return Site(tuple(ops), ps, 0)

    dispatches = (
        Dispatch("d_a", 1, 40, ("x",), 0, "compute", (site("x", 40),)),
        Dispatch("d_b", 1, 60, ("y", "z"), 0, "compute", (site("yz", 60),)),
        Dispatch("d_copy", 1, 8, (), 0, "", (site("", 8),)),
    )
    iree = IreeProfile("m", "main", 2, 1, 0.0, 0.0, 0.0, dispatches)
    layers = (
        Layer("conv", "Convolution", "k", 30, ("x", "y")),
        Layer("fc", "FullyConnected", "k", 5, ("w",)),
        Layer("reorder", "Reorder", "k", 2, (), "a reorder"),
    )
    (group,) = anchor_tables.op_groups(iree, EngineLayers("OpenVINO f32", 3, layers))
    assert set(group.tf_ops) == {"x", "y", "z"}
    assert group.dispatches == ("d_b", "d_a")  # hottest first
    assert (group.iree_ps, group.anchor_ps, group.layers) == (50, 30, ("conv",))
    profile = AnchorProfile("m", (EngineLayers("OpenVINO f32", 3, layers),), {"TFLite": "none"})
    (row,) = anchor_tables.anchor_rows(iree, profile, top=5)
    assert row[0] == "d_b, d_a" and row[4] == "1.67x" and row[5] == "conv"
    summary = anchor_tables.anchor_summary(iree, "tuned", profile)
    assert "TFLite: none" in summary and "(tuned program)" in summary
