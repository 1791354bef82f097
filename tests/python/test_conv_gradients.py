"""tfpgo.mlir.conv_gradients: filter gradients of real TensorFlow convolutions
(XLA's StableHLO of the step), rewritten and run by IREE against TensorFlow's
own gradient, over strides, padding, dilation and kernel shapes."""

from pathlib import Path

import numpy as np
import pytest
from iree_main import compiled_main

from tfpgo.iree.sites import location_names
from tfpgo.mlir import compiled_step, conv_gradients

# (input shape, kernel taps, output channels, strides, padding, dilations)
CASES = [
    ((2, 8, 8, 3), (3, 3), 4, 1, "SAME", 1),
    ((2, 9, 9, 3), (3, 3), 4, 2, "SAME", 1),
    ((2, 9, 9, 3), (3, 3), 4, 2, "VALID", 1),
    ((2, 10, 10, 3), (3, 3), 4, 1, "SAME", 2),
    ((2, 8, 8, 3), (1, 1), 4, 1, "VALID", 1),
    ((3, 8, 7, 2), (5, 3), 4, (2, 1), "SAME", 1),
]


def _gradient_step(shape, taps, channels, strides, padding, dilations, depthwise=False):
    """A jit-compiled step returning a convolution's filter gradient, and its input."""
    import tensorflow as tf

    rng = np.random.default_rng(sum(shape))
    x = tf.constant(rng.standard_normal(shape).astype(np.float32))
    kernel_shape = (*taps, shape[3], 1 if depthwise else channels)
    kernel = tf.Variable(rng.standard_normal(kernel_shape).astype(np.float32))

    @tf.function(jit_compile=True)
    def gradient(x):
        with tf.GradientTape() as tape:
            if depthwise:
                y = tf.nn.depthwise_conv2d(x, kernel, [1, strides, strides, 1], padding)
            else:
                y = tf.nn.conv2d(x, kernel, strides, padding, dilations=dilations)
            loss = tf.reduce_sum(y * y)
        return tape.gradient(loss, kernel)

    return gradient, (x,)


def _iree_gradient(step: compiled_step.CompiledStep, text: str, scratch: Path) -> np.ndarray:
    _, main = compiled_main(text, scratch, "gradient")
    result = main(*(np.asarray(v) for v in step.inputs))
    return (result[0] if isinstance(result, tuple | list) else result).to_host()


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}-{c[1]}-{c[3]}-{c[4]}-{c[5]}" for c in CASES])
def test_a_filter_gradient_is_a_batched_matmul_with_tensorflows_values(case, tmp_path):
    function, inputs = _gradient_step(*case)
    want = function(*inputs).numpy()
    step = compiled_step.compile_step(function, inputs)
    rewritten = conv_gradients.rewrite_filter_gradients(step.stablehlo)
    assert rewritten.filter_gradients == 1
    assert "[f, 0, 1, b]x[i, 0, 1, o]" not in rewritten.text  # no filter gradient left
    assert "stablehlo.dot_general" in rewritten.text
    got = _iree_gradient(step, rewritten.text, tmp_path)
    # The same sums in another order: float32 rounding, relative to the largest.
    np.testing.assert_allclose(got, want, atol=1e-5 * np.abs(want).max(), rtol=0)


def test_the_new_ops_carry_the_gradients_location():
    from iree.compiler import ir

    function, inputs = _gradient_step(*CASES[1])
    step = compiled_step.compile_step(function, inputs)
    rewritten = conv_gradients.rewrite_filter_gradients(step.stablehlo)
    with ir.Context() as context:
        context.allow_unregistered_dialects = True
        module = ir.Module.parse(rewritten.text)
        named: dict[str, set[str]] = {}

        def collect(op):
            named.setdefault(op.name, set()).update(location_names(op.location))
            return ir.WalkResult.ADVANCE

        module.operation.walk(collect)
    gradient = {name for name in named["stablehlo.dot_general"] if "Conv2DBackpropFilter" in name}
    assert gradient, named["stablehlo.dot_general"]
    for op in ("stablehlo.pad", "linalg.generic", "linalg.yield", "stablehlo.reduce"):
        assert gradient <= named[op], op


def test_a_depthwise_gradient_is_left_alone(tmp_path):
    function, inputs = _gradient_step((2, 8, 8, 3), (3, 3), 1, 1, "SAME", 1, depthwise=True)
    step = compiled_step.compile_step(function, inputs)
    rewritten = conv_gradients.rewrite_filter_gradients(step.stablehlo)
    assert rewritten.filter_gradients == 0 and rewritten.text == step.stablehlo
