"""tfpgo.runtime.anchors: TensorFlow Lite and OpenVINO as calls of a real step,
their outputs against TensorFlow's, and each refusal one line naming its cause."""

import numpy as np
import pytest

from tfpgo.models import load_model
from tfpgo.runtime import anchors, wallclock


def _inputs(case):
    import tensorflow as tf

    return tuple(tf.nest.map_structure(np.asarray, list(case.inputs)))


@pytest.mark.parametrize("model", ["mlp", "cnn", "transformer"])  # OpenVINO adds a scalar output
def test_each_engine_computes_tensorflows_outputs(model):
    case = load_model(model, "infer", 4)
    inputs = _inputs(case)
    want = np.asarray(wallclock.tensorflow_arm(case.function, inputs)())
    found = anchors.anchor_arms(case.function, inputs, threads=2)
    assert set(found.arms) == set(anchors.ENGINES) and not found.refused
    scale = np.abs(want).max()
    for engine, call in found.arms.items():
        (got,) = call()
        assert got.shape == want.shape, engine
        # float32 engines to float32 rounding; OpenVINO's default may compute in
        # bfloat16 (8 bits of mantissa) where the CPU has it.
        tolerance = 5e-2 if engine == anchors.OPENVINO_DEFAULT else 1e-4
        np.testing.assert_allclose(got, want, atol=tolerance * scale, rtol=0, err_msg=engine)


def test_a_training_step_is_refused_by_every_engine_in_one_line():
    case = load_model("mlp", "train", 4)
    found = anchors.anchor_arms(case.function, _inputs(case))
    assert not found.arms and set(found.refused) == set(anchors.ENGINES)
    for engine, why in found.refused.items():
        assert why.startswith("the step writes variables (") and "\n" not in why, engine
        assert why.endswith("runs inference only")


def test_an_op_no_engine_has_is_named():
    import tensorflow as tf

    step = tf.function(lambda x: tf.linalg.det(x))
    x = np.eye(3, dtype=np.float32)[None]
    step(x)
    found = anchors.anchor_arms(step, (x,))
    assert found.refused == {
        anchors.TFLITE: "cannot take the step (no builtin TFLite op for MatrixDeterminant)",
        anchors.OPENVINO_F32: "cannot take the step (no OpenVINO conversion rule for "
        "MatrixDeterminant)",
        anchors.OPENVINO_DEFAULT: "cannot take the step (no OpenVINO conversion rule for "
        "MatrixDeterminant)",
    }


def test_nested_arguments_and_outputs_keep_the_steps_order():
    """A dict argument (two scalars the engines order by name) and a dict of
    outputs: each engine is fed by the graph's placeholder names and returns the
    step's outputs flattened as `tf.nest.flatten` orders them."""
    import importlib.util
    from pathlib import Path

    import tensorflow as tf

    hook = Path(__file__).resolve().parents[1] / "data" / "models" / "runtime_infer.py"
    spec = importlib.util.spec_from_file_location("runtime_infer", hook)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    step, example = module.build(), module.example(4)
    inputs = tuple(tf.nest.map_structure(np.asarray, list(example)))
    want = tf.nest.flatten(wallclock.tensorflow_arm(step, inputs)())
    found = anchors.anchor_arms(step, inputs)
    for engine in (anchors.TFLITE, anchors.OPENVINO_F32):
        for got, expected in zip(found.arms[engine](), want, strict=True):
            np.testing.assert_allclose(got, expected, atol=1e-5, err_msg=engine)
