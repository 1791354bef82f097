"""Analysers of the op profile (tfpgo.analysis), analysis.json, the icicle chart."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET

import pytest
from profile_fixtures import CONV_TRAIN, DENSE_INFER, TRAIN, profile_real_step, read

from tfpgo.analysis import analyse
from tfpgo.analysis.document import FORMAT
from tfpgo.analysis.op_type import tf_op_type
from tfpgo.analysis.phase import Phase, PhaseClassifier, fold_gradient_scope, is_optimizer_scope
from tfpgo.analysis.scope import ScopeNode, layers, walk
from tfpgo.render.icicle import IcicleNode, IcicleStyle, layout, to_svg
from tfpgo.render.scope_chart import scope_chart_svg

SVG = "{http://www.w3.org/2000/svg}"
# The built-in transformer's layers (tfpgo.models.builtin).
TRANSFORMER_LAYERS = ("attention", "norm_attention", "ffn_up", "ffn_down", "norm_ffn")


@pytest.fixture(scope="module")
def transformer_train(tmp_path_factory):
    """A real transformer training step profiled now (3 steps, batch 2)."""
    return read(profile_real_step(tmp_path_factory.mktemp("transformer")))


@pytest.fixture(params=["train", "conv_train", "dense_infer", "transformer_train"])
def profile(request):
    paths = {"train": TRAIN, "conv_train": CONV_TRAIN, "dense_infer": DENSE_INFER}
    if request.param in paths:
        return read(paths[request.param])
    return request.getfixturevalue(request.param)


def _check_node_sums(node: ScopeNode) -> None:
    children = node.children
    assert node.self_ps == node.own_self_ps + sum(child.self_ps for child in children), node.path
    assert node.self_ps == sum(node.phase_self_ps.values()), node.path
    assert node.total_ps >= sum(child.total_ps for child in children), node.path
    assert node.count >= sum(child.count for child in children), node.path
    for child in children:
        _check_node_sums(child)


def test_breakdowns_sum_exactly_to_the_op_profile_totals(profile):
    totals = profile.totals
    analysis = analyse(profile)
    rows = analysis.phases.rows
    assert [row.phase for row in rows] == list(Phase)
    assert sum(row.self_ps for row in rows) == totals.op_self_ps
    assert sum(row.total_ps for row in rows) == totals.op_total_ps
    assert sum(row.count for row in rows) == totals.op_events
    assert sum(row.ops for row in rows) == len(profile.ops)
    assert analysis.phases.non_op_ps == totals.non_op_ps

    assert sum(row.self_ps for row in analysis.op_types) == totals.op_self_ps
    assert sum(row.total_ps for row in analysis.op_types) == totals.op_total_ps
    assert sum(row.count for row in analysis.op_types) == totals.op_events
    for row in analysis.op_types:
        assert row.self_ps == sum(kernel.self_ps for kernel in row.kernels)
        assert row.count == sum(kernel.count for kernel in row.kernels)

    root = analysis.scopes
    assert (root.self_ps, root.total_ps, root.count, root.ops) == (
        totals.op_self_ps,
        totals.op_total_ps,
        totals.op_events,
        len(profile.ops),
    )
    assert {phase: root.phase_self_ps[phase] for phase in Phase} == {
        row.phase: row.self_ps for row in rows
    }
    _check_node_sums(root)
    assert sum(node.self_ps for node in layers(root)) == totals.op_self_ps


def test_phases_of_a_training_step():
    profile = read(TRAIN)
    classifier = PhaseClassifier([op.name for op in profile.ops])
    phase = classifier.phase
    assert phase("gradient_tape/sequential_3_1/dense_3_1/MatMul/MatMul") is Phase.BACKWARD
    assert phase("sgd/AssignSubVariableOp_2") is Phase.OPTIMIZER
    assert phase("sgd/Cast_3/ReadVariableOp") is Phase.OPTIMIZER
    assert phase("sequential_3_1/dense_3_1/Relu") is Phase.FORWARD
    # the loss and the iteration counter live outside the differentiated model scope
    assert phase("Mean") is Phase.OTHER
    assert phase("AssignVariableOp") is Phase.OTHER
    assert phase("Add/ReadVariableOp") is Phase.OTHER
    rows = {row.phase: row for row in analyse(profile).phases.rows}
    assert rows[Phase.BACKWARD].ops == sum(
        op.name.startswith("gradient_tape/") for op in profile.ops
    )
    assert rows[Phase.OPTIMIZER].ops == sum(op.name.startswith("sgd/") for op in profile.ops)


@pytest.mark.parametrize(
    ("scope", "is_optimizer"),
    [("sgd", True), ("sgd_1", True), ("sgd_1_1", True), ("Adam_2", True), ("sgdx", False)],
)
def test_optimizer_scopes_with_repeated_uniquifying_suffixes(scope, is_optimizer):
    # a second model in one process gets `sgd_1_1` (Keras' `_1`, then TensorFlow's)
    assert is_optimizer_scope(scope) is is_optimizer


def test_top_level_gradient_sums_are_backward(transformer_train):
    names = [op.name for op in transformer_train.ops]
    sums = [name for name in names if name.startswith("AddN")]
    assert sums  # the tape's gradient sums: top-level AddN_<n>
    classifier = PhaseClassifier(names)
    assert all(classifier.phase(name) is Phase.BACKWARD for name in sums)
    assert PhaseClassifier(["model/dense/MatMul", "AddN"]).phase("AddN") is Phase.FORWARD


def test_an_inference_step_is_all_forward():
    rows = {row.phase: row for row in analyse(read(DENSE_INFER)).phases.rows}
    assert rows[Phase.FORWARD].self_ps == read(DENSE_INFER).totals.op_self_ps
    assert rows[Phase.BACKWARD].ops == rows[Phase.OPTIMIZER].ops == rows[Phase.OTHER].ops == 0


def test_gradient_ops_fold_onto_the_layer_they_differentiate():
    profile = read(TRAIN)
    assert fold_gradient_scope("gradient_tape/a/b/MatMul/MatMul") == "a/b/MatMul/MatMul"
    assert fold_gradient_scope("gradients/a/Relu_grad/ReluGrad") == "a/Relu_grad/ReluGrad"
    assert fold_gradient_scope("model/gradient_tape/x") == "model/gradient_tape/x"
    nodes = {node.path: node for node in walk(analyse(profile).scopes)}
    layer = nodes["sequential_3_1/dense_3_1"]
    forward = [op for op in profile.ops if op.name.startswith("sequential_3_1/dense_3_1/")]
    backward = [
        op for op in profile.ops if op.name.startswith("gradient_tape/sequential_3_1/dense_3_1/")
    ]
    assert forward and backward
    assert layer.phase_self_ps[Phase.FORWARD] == sum(op.self_ps for op in forward)
    assert layer.phase_self_ps[Phase.BACKWARD] == sum(op.self_ps for op in backward)
    # the optimizer keeps its own top-level scope; nothing is folded into it
    assert nodes["sgd"].self_ps == nodes["sgd"].phase_self_ps[Phase.OPTIMIZER]
    assert "gradient_tape" not in nodes


def test_layers_of_a_real_transformer_training_step(transformer_train):
    """Which ops go where, not how long they ran: the model's five layers are
    layers of the scope tree, each run forward and backward; the phases split the
    profile's ops, the optimizer's phase is exactly its scope's ops and the
    backward phase the tape's ops and the sums of gradients (top-level AddN)."""
    analysis = analyse(transformer_train)
    ops = transformer_train.ops
    # Keras uniquifies scopes per process (`transformer_1`, `transformer_2_1`).
    found = {re.sub(r"(_\d+)+(?=/|$)", "", node.path): node for node in layers(analysis.scopes)}
    model = {f"transformer/{name}" for name in TRANSFORMER_LAYERS}
    assert model <= found.keys(), sorted(found)
    for path in model:
        ran = found[path].phase_self_ps
        assert ran[Phase.FORWARD] > 0 and ran[Phase.BACKWARD] > 0, path
    rows = {row.phase: row for row in analysis.phases.rows}
    assert sum(row.ops for row in rows.values()) == len(ops)
    optimizer = [op for op in ops if re.match(r"sgd(_\d+)*/", op.name)]
    assert optimizer and rows[Phase.OPTIMIZER].ops == len(optimizer)
    assert rows[Phase.OPTIMIZER].self_ps == sum(op.self_ps for op in optimizer)
    tape = [op for op in ops if op.name.startswith("gradient_tape/")]
    sums = [op for op in ops if re.fullmatch(r"AddN(_\d+)*", op.name)]
    assert tape and sums and rows[Phase.BACKWARD].ops == len(tape) + len(sums)
    assert rows[Phase.BACKWARD].self_ps == sum(op.self_ps for op in tape + sums)


@pytest.mark.parametrize(
    ("kernel", "op_type"),
    [
        ("_MklNativeFusedMatMul", "_FusedMatMul"),
        ("_MklMatMul", "MatMul"),
        ("_MklFusedBatchNormV3", "FusedBatchNormV3"),
        ("_MklNativeFusedConv2D", "_FusedConv2D"),
        ("_MklToTf", "_MklToTf"),
        ("Conv2D", "Conv2D"),
        ("_FusedMatMul", "_FusedMatMul"),
    ],
)
def test_tf_op_type_undoes_the_onednn_kernel_renaming(kernel, op_type):
    assert tf_op_type(kernel) == op_type


def test_op_types_group_kernels_of_one_tf_op():
    rows = {row.op_type: row for row in analyse(read(TRAIN)).op_types}
    assert [kernel.kernel for kernel in rows["_FusedMatMul"].kernels] == ["_MklNativeFusedMatMul"]
    assert [kernel.kernel for kernel in rows["MatMul"].kernels] == ["_MklMatMul"]


def test_analysis_json_is_the_documented_document(tmp_path):
    profile = read(CONV_TRAIN)
    path = tmp_path / "analysis.json"
    analyse(profile).write(path)
    document = json.loads(path.read_text())
    assert (document["format"], document["version"], document["time_unit"]) == (FORMAT, 1, "ps")
    assert document["totals"]["op_self_ps"] == profile.totals.op_self_ps
    assert document["non_op_ps"] == profile.totals.non_op_ps
    assert [row["phase"] for row in document["phases"]] == [phase.value for phase in Phase]
    assert sum(row["self_ps"] for row in document["phases"]) == profile.totals.op_self_ps
    assert sum(row["self_ps"] for row in document["op_types"]) == profile.totals.op_self_ps

    def check(node):
        assert node["self_ps"] == node["own_self_ps"] + sum(c["self_ps"] for c in node["children"])
        assert sum(node["phase_self_ps"].values()) == node["self_ps"]
        for child in node["children"]:
            assert child["path"].endswith(child["name"])
            check(child)

    assert document["scopes"]["self_ps"] == profile.totals.op_self_ps
    check(document["scopes"])


def _cells(svg: str):
    root = ET.fromstring(svg.encode())
    return root, root.findall(f"{SVG}g")


def test_scope_chart_has_a_tooltip_on_every_cell(transformer_train):
    svg = scope_chart_svg(analyse(transformer_train))
    root, groups = _cells(svg)
    assert groups
    for group in groups:
        assert group.find(f"{SVG}title").text
        assert group.find(f"{SVG}rect") is not None
    assert "attention" in svg
    legend = "".join(text.text or "" for text in root.iter(f"{SVG}text"))
    assert "forward" in legend and "backward" in legend and "no op running" in legend


def _wide_tree(layers_count: int, ops_per_layer: int) -> IcicleNode:
    """A MobileNet-sized tree: a few hot layers, a long tail of cold ones."""
    children = []
    for layer in range(layers_count):
        weight = 1000 if layer < 10 else 3
        ops = tuple(
            IcicleNode(f"op_{i}", weight, "#4c78a8", f"layer_{layer}/op_{i}")
            for i in range(ops_per_layer)
        )
        children.append(IcicleNode(f"layer_{layer}", weight * ops_per_layer, "#f58518", "", ops))
    total = sum(child.value for child in children)
    return IcicleNode("all ops", total, "#9d9d9d", "all", tuple(children))


def test_icicle_merges_narrow_cells_and_labels_only_what_fits():
    tree = _wide_tree(layers_count=150, ops_per_layer=20)  # 3,000 ops
    style = IcicleStyle(width_px=1400, min_cell_px=4.0)
    cells = layout(tree, style)
    assert len(cells) < 400  # not 3,151
    merged = [cell for cell in cells if cell.node.label.startswith("+")]
    assert merged and all("merged" in cell.node.tooltip for cell in merged)
    by_row: dict[int, float] = {}
    for cell in cells:
        by_row[cell.row] = by_row.get(cell.row, 0.0) + cell.width
    assert all(width <= style.width_px + 1e-6 for width in by_row.values())
    _, groups = _cells(to_svg(tree, style))
    assert len(groups) == len(cells)
    for group in groups:
        width = float(group.find(f"{SVG}rect").get("width"))
        label = group.find(f"{SVG}text")
        if label is not None:
            assert len(label.text) * 6.6 <= width + 1, label.text
