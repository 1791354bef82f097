"""tfpgo.runtime.openvino_layers and tfpgo.runtime.anchor_profile: OpenVINO's
per-layer times on the tf ops they came from, on recorded graphs and runtime
models of the zoo's cnn and transformer (tests/data/anchor_layers/record.py),
and live on a small step."""

import dataclasses
import itertools
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tfpgo.errors import UserError
from tfpgo.runtime import anchors, openvino_layers
from tfpgo.runtime.anchor_profile import AnchorProfile, EngineLayers, Layer
from tfpgo.runtime.openvino_layers import GraphNode, RuntimeNode

DATA = Path(__file__).resolve().parents[1] / "data" / "anchor_layers"


def _recorded(model):
    document = json.loads((DATA / f"{model}.openvino.json").read_text())

    def graph(items):
        return [
            GraphNode(n["name"], n["kind"], tuple(n["inputs"]), tuple(n["tensors"])) for n in items
        ]

    runtime = {
        engine: [
            RuntimeNode(n["name"], n["kind"], n["kernel"], n["executed"], tuple(n["ps"]),
                        tuple(n["original"]))
            for n in nodes
        ]
        for engine, nodes in document["runtime"].items()
    }  # fmt: skip
    return graph(document["tf_graph"]), graph(document["converted"]), runtime


def _origins(model):
    tf_graph, converted, runtime = _recorded(model)
    return openvino_layers.tf_origins(tf_graph, converted), runtime


def test_cnn_layout_stretch_paired_by_type_in_graph_order():
    # OpenVINO's converter wraps cnn's NHWC convolutions and pooling in transposes
    # and sinks them: these nodes lose the tf names; their stretch lies between
    # the input and gap_1/Mean (a tensor name on the ReduceMean).
    origins, _ = _origins("cnn")
    assert origins.ops["Convolution_21"] == ("cnn_1/conv_in_1/convolution",)
    assert origins.ops["Convolution_35"] == ("cnn_1/conv_big_1/convolution",)
    assert origins.ops["Transpose_308"] == ("cnn_1/conv_in_1/Relu",)  # a Relu, despite its name
    assert origins.ops["Transpose_316"] == ("cnn_1/conv_big_1/Relu",)
    assert origins.ops["MaxPool_28"] == ("cnn_1/pool_1/MaxPool2d",)
    assert origins.ops["Transpose_320"] == ("cnn_1/gap_1/Mean",)  # by its tensor name
    # the layout transpose of the input: no tf Transpose anywhere in the step
    assert "Transpose_18" in origins.unnamed and "Transpose" in origins.unnamed["Transpose_18"]


def test_fused_originals_carry_every_tf_op():
    origins, runtime = _origins("cnn")
    for engine, nodes in runtime.items():
        layers = {layer.name: layer for layer in openvino_layers.layers_on_tf_ops(nodes, origins)}
        # the plugin fused each convolution with its ReLU
        assert layers["Convolution_21"].tf_ops == (
            "cnn_1/conv_in_1/convolution",
            "cnn_1/conv_in_1/Relu",
        ), engine
        assert set(layers["cnn_1/logits_1/BiasAdd"].tf_ops) >= {
            "cnn_1/logits_1/MatMul",
            "cnn_1/logits_1/BiasAdd",
        }


def test_nodes_the_plugin_derived_keep_their_tf_ops():
    origins, runtime = _origins("transformer")
    layers = openvino_layers.layers_on_tf_ops(runtime[anchors.OPENVINO_F32], origins)
    einsum = "transformer_1/attention_1/einsum_1/Einsum"
    # the plugin decomposes the Einsum into transposes and a MatMul of its own names
    derived = [layer for layer in layers if layer.tf_ops == (einsum,)]
    assert {layer.kind for layer in derived} == {"Transpose", "MatMul"}
    assert not any(layer.name == einsum for layer in derived if layer.kind == "MatMul")
    by_name = {layer.name: layer for layer in layers}
    # a fusion that dropped the tags: the converted nodes' names resolve them
    norm = by_name["transformer_1/norm_attention_1/add_2"].tf_ops
    # (add_1 and the next layer's Reshape: tensor names of the same values)
    assert set(norm) == {
        f"transformer_1/norm_attention_1/{op}"
        for op in ("Neg", "Rsqrt", "mul", "mul_1", "add_1", "mul_2", "add_2")
    } | {"transformer_1/ffn_up_1/Tensordot/Reshape"}
    assert by_name["transformer_1/attention_1/Mul"].tf_ops == ("transformer_1/attention_1/Mul",)


def test_inverted_residual_blocks_pair_layer_by_layer():
    """MobileNetV2's blocks (tests/data/anchor_layers/blocks.py): the converter
    erases every name between the input and the pooling, so the whole network
    is one stretch at first. Its convolutions and depthwise convolutions pair
    there by type; the batch norms' adds and the residual adds between them
    pair in the smaller stretches this leaves. So each layer of the plugin
    carries its own convolution, batch norm and ReLU6 (or residual add), never
    a neighbour's: grouped by type, a depthwise layer carried every 1x1
    convolution of the network too."""
    origins, runtime = _origins("blocks")
    layers = openvino_layers.layers_on_tf_ops(runtime[anchors.OPENVINO_F32], origins)
    convolutions = {layer.name: layer.tf_ops for layer in layers if layer.kind == "Convolution"}
    assert len(convolutions) == 7
    for block in range(2):
        depthwise = f"functional_1/depthwise{block}_1/depthwise"
        (ops,) = [ops for ops in convolutions.values() if depthwise in ops]
        relu = f"functional_1/re_lu_{2 * block + 2}_1/Relu6"
        assert ops == (depthwise, f"functional_1/depthwise_bn{block}_1/batchnorm/add_1", relu)
        project = f"functional_1/project{block}_1/convolution"
        (ops,) = [ops for ops in convolutions.values() if project in ops]
        residual = "functional_1/Add" + ("_1" if block else "")
        assert ops == (project, f"functional_1/project_bn{block}_1/batchnorm/add_1", residual)
    # what the converter folds (variance + epsilon) is on no layer
    assert not any(op.endswith("batchnorm/add") for layer in layers for op in layer.tf_ops)


@pytest.mark.parametrize("model", ["cnn", "transformer", "blocks"])
def test_every_profiled_picosecond_on_tf_ops_or_listed(model):
    origins, runtime = _origins(model)
    for engine, nodes in runtime.items():
        layers = openvino_layers.layers_on_tf_ops(nodes, origins)
        executed = [node for node in nodes if node.executed]
        assert [layer.name for layer in layers] == [node.name for node in executed]
        medians = sum(int(np.median(node.ps)) for node in executed)
        assert sum(layer.ps for layer in layers) == medians, engine
        for layer in layers:
            assert bool(layer.tf_ops) != bool(layer.unattributed), layer
    default = openvino_layers.layers_on_tf_ops(runtime[anchors.OPENVINO_DEFAULT], origins)
    # bfloat16: the plugin's reorders between f32 and bf16 ran no tf op, and say so
    reorders = [layer for layer in default if layer.kind == "Reorder"]
    assert reorders and all("reorder" in layer.unattributed for layer in reorders)


def test_the_profiled_calls_mean_from_the_plugins_running_means():
    # cnn's MaxPool read after each call (µs): the plugin's counter is the mean of
    # every call since compiling, the first (about 14.8 ms) too
    running = [3752, 3024, 2537, 2188, 1927]  # after calls 4..8
    calls = [openvino_layers.window_mean(a, n, b, 1)
             for n, (a, b) in enumerate(itertools.pairwise(running), start=4)]  # fmt: skip
    assert calls == [112, 102, 94, 100]
    assert openvino_layers.window_mean(3752, 4, 1927, 4) == (112 + 102 + 94 + 100) // 4


def test_document_round_trip_and_a_malformed_layer(tmp_path):
    layers = (
        Layer("Convolution_21", "Convolution", "brgconv", 300, ("a/conv", "a/Relu")),
        Layer("reorder", "Reorder", "jit", 7, (), "a reorder"),
    )
    profile = AnchorProfile("cnn", (EngineLayers("OpenVINO f32", 3, layers),), {"TFLite": "no"})
    path = tmp_path / "anchor_profile.json"
    profile.write(path)
    assert AnchorProfile.read(path) == profile
    engine = AnchorProfile.read(path).engines[0]
    assert engine.op_ps({}) == {"a/conv": 150, "a/Relu": 150}  # no weights: equal parts
    # TensorFlow's time for each op weighs the layer's parts: 300 in 29:1, exactly
    assert engine.op_ps({"a/conv": 29, "a/Relu": 1}) == {"a/conv": 290, "a/Relu": 10}
    assert (engine.total_ps, engine.attributed_ps) == (307, 300)
    document = json.loads(path.read_text())
    document["engines"][0]["layers"][1]["tf_ops"] = ["a/conv"]  # ops and a reason
    path.write_text(json.dumps(document))
    with pytest.raises(UserError, match=r"malformed tfpgo.anchor_profile.*exactly one"):
        AnchorProfile.read(path)


def test_tflite_interpreter_still_has_no_profiler():
    # what anchor_profile.json says for TFLite: when TensorFlow's Python
    # interpreter gains a profiler, this fails and TFLite's layers can be mapped
    import tensorflow as tf
    from tensorflow.lite.python import _pywrap_tensorflow_interpreter_wrapper as wrapper

    names = dir(tf.lite.Interpreter) + dir(wrapper.InterpreterWrapper)
    assert not [name for name in names if "profil" in name.lower()]


def test_live_layers_cover_the_steps_compute_ops():
    from tfpgo.models import load_model

    case = load_model("cnn", "infer", 2)
    import tensorflow as tf

    inputs = tuple(tf.nest.map_structure(np.asarray, list(case.inputs)))
    profile = openvino_layers.profile_anchors(case.function, inputs, "cnn", threads=2, calls=1)
    assert [engine.engine for engine in profile.engines] == list(anchors.OPENVINO_PRECISIONS)
    assert set(profile.refused) == {anchors.TFLITE}
    concrete, _ = anchors.traced_step(case.function, inputs)
    compute = {
        op.name
        for op in concrete.graph.get_operations()
        if op.type in ("Conv2D", "Relu", "MaxPool", "Mean", "MatMul")
    }
    for engine in profile.engines:
        covered = {op for layer in engine.layers for op in layer.tf_ops}
        assert compute <= covered, (engine.engine, compute - covered)
        assert all(bool(layer.tf_ops) != bool(layer.unattributed) for layer in engine.layers)


def test_a_training_step_is_refused_by_every_engine_in_one_line_each():
    import tensorflow as tf

    from tfpgo.models import load_model

    case = load_model("mlp", "train", 2)
    inputs = tuple(tf.nest.map_structure(np.asarray, list(case.inputs)))
    profile = openvino_layers.profile_anchors(case.function, inputs, "mlp")
    assert not profile.engines and set(profile.refused) == set(anchors.ENGINES)
    for engine in anchors.OPENVINO_PRECISIONS:
        assert profile.refused[engine].startswith("the step writes variables (")
    assert profile.refused[anchors.TFLITE] == openvino_layers.TFLITE_NO_PER_OP_TIMES


def test_the_tuner_bounds_its_targets_by_the_fastest_float32_anchor(tmp_path, monkeypatch):
    """--tune on an inference step profiles the anchors first and hands the
    fastest float32 engine's layers to the loop (the tile search's
    bound); a training step, which the anchors refuse, hands none. The
    workload carries --max-output-error where --precision bf16 gave one."""
    from tfpgo.flow import lower_stage, stages
    from tfpgo.iree.program import Workload
    from tfpgo.models import load_model
    from tfpgo.runtime.anchor_profile import ANCHOR_PROFILE
    from tfpgo.tune import loop

    handed = []
    workloads = []

    def tune(*args, **kwargs):
        handed.append(args[4])
        workloads.append(args[1])

    monkeypatch.setattr(loop, "tune", tune)
    options = stages.FlowOptions(tune_budget_s=60)
    case = load_model("cnn", "infer", 2)
    workload = Workload("main", (), (), 1, 0, {}, {})
    program: tuple[Any, ...] = (Path("s.mlir"), workload, None)  # the lowering's
    lower_stage.tuner(tmp_path, options, lambda _: None, case)(*program)
    assert workloads[0].output_budget is None
    profile = AnchorProfile.read(tmp_path / ANCHOR_PROFILE)
    fastest = profile.fastest(anchors.FLOAT32_ENGINES)
    assert fastest is not None and fastest.engine in anchors.FLOAT32_ENGINES
    assert handed[0].anchor == fastest
    assert any(op.endswith("/convolution") for op in handed[0].anchor.op_ps({}))
    train = load_model("mlp", "train", 2)
    allowed = dataclasses.replace(options, max_output_error=0.02)
    lower_stage.tuner(tmp_path / "train", allowed, lambda _: None, train)(*program)
    assert handed[1].anchor is None and workloads[1].output_budget == 0.02
