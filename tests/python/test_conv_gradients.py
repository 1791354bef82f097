"""tfpgo.mlir.conv_gradients: filter gradients of real TensorFlow convolutions
(XLA's StableHLO of the step), rewritten and run by IREE against TensorFlow's
own gradient, over strides, padding, dilation and kernel shapes."""

import re
from pathlib import Path

import numpy as np
import pytest
from iree_main import compiled_main

from tfpgo.errors import UserError
from tfpgo.iree.sites import location_names
from tfpgo.mlir import compiled_step, conv_gradient_forms, conv_gradients
from tfpgo.mlir.conv_gradient_forms import FORMS, PATCHES, FormChoice

# (input shape, kernel taps, output channels, strides, padding, dilations)
CASES = [
    ((2, 8, 8, 3), (3, 3), 4, 1, "SAME", 1),
    ((2, 9, 9, 3), (3, 3), 4, 2, "SAME", 1),
    ((2, 9, 9, 3), (3, 3), 4, 2, "VALID", 1),
    ((2, 10, 10, 3), (3, 3), 4, 1, "SAME", 2),
    ((2, 8, 8, 3), (1, 1), 4, 1, "VALID", 1),
    ((3, 8, 7, 2), (5, 3), 4, (2, 1), "SAME", 1),
    ((2, 7, 9, 3), (2, 4), 5, 1, "SAME", (2, 1)),
    ((1, 6, 5, 4), (3, 2), 3, 1, "VALID", 1),
    ((2, 8, 8, 3), (1, 1), 4, 2, "SAME", 1),  # XLA pads by -1: the input cropped
]


def _every_gradient_in(form):
    """A chooser giving every gradient `form` where it applies (patches elsewhere)."""

    def choose(gradients):
        return {g: FormChoice(form if form in g.forms() else PATCHES) for g in gradients}

    return choose


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
    # A copy: the host view lives only as long as the program's buffers.
    return np.array((result[0] if isinstance(result, tuple | list) else result).to_host())


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}-{c[1]}-{c[3]}-{c[4]}-{c[5]}" for c in CASES])
def test_each_form_of_a_filter_gradient_has_tensorflows_values(case, form, tmp_path):
    function, inputs = _gradient_step(*case)
    want = function(*inputs).numpy()
    step = compiled_step.compile_step(function, inputs)
    rewritten = conv_gradients.rewrite_filter_gradients(step.stablehlo, _every_gradient_in(form))
    assert rewritten.filter_gradients == 1
    assert rewritten.forms[0].form == form
    # Only the patches are gathered (one linalg.generic); the taps read slices.
    assert ("linalg.generic" in rewritten.text) == (rewritten.forms[0].form == PATCHES)
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


DEPTHWISE_CASES = [
    ((2, 8, 8, 3), (3, 3), 1, "SAME"),
    ((2, 9, 9, 4), (3, 3), 2, "SAME"),
    ((2, 8, 8, 4), (3, 3), 2, "SAME"),  # XLA crops the input: a negative padding
    ((1, 10, 7, 2), (5, 3), 2, "VALID"),
]


@pytest.mark.parametrize("form", conv_gradient_forms.DEPTHWISE_FORMS)
@pytest.mark.parametrize(
    "case", DEPTHWISE_CASES, ids=[f"{c[0]}-{c[1]}-{c[2]}-{c[3]}" for c in DEPTHWISE_CASES]
)
def test_each_form_of_a_depthwise_gradient_has_tensorflows_values(case, form, tmp_path):
    shape, taps, strides, padding = case
    function, inputs = _gradient_step(shape, taps, 1, strides, padding, 1, depthwise=True)
    want = function(*inputs).numpy()
    step = compiled_step.compile_step(function, inputs)
    rewritten = conv_gradients.rewrite_filter_gradients(step.stablehlo, _every_gradient_in(form))
    assert [f.form for f in rewritten.forms] == [form]
    assert "[f, 0, 1, b]x[i, 0, 1, o]" not in rewritten.text  # no filter gradient left
    got = _iree_gradient(step, rewritten.text, tmp_path)
    np.testing.assert_allclose(got, want, atol=1e-5 * np.abs(want).max(), rtol=0)


def test_a_depthwise_gradient_takes_the_per_sample_sum_unless_told():
    function, inputs = _gradient_step((2, 8, 8, 3), (3, 3), 1, 1, "SAME", 1, depthwise=True)
    step = compiled_step.compile_step(function, inputs)
    rewritten = conv_gradients.rewrite_filter_gradients(step.stablehlo)
    assert [f.form for f in rewritten.forms] == [conv_gradient_forms.DEPTHWISE_PER_SAMPLE]


def test_a_grouped_gradient_is_left_alone(tmp_path):
    """Two groups of two channels: neither a full convolution nor a depthwise one."""
    import tensorflow as tf

    rng = np.random.default_rng(3)
    x = tf.constant(rng.standard_normal((2, 8, 8, 4)).astype(np.float32))
    kernel = tf.Variable(rng.standard_normal((3, 3, 2, 4)).astype(np.float32))

    @tf.function(jit_compile=True)
    def gradient(x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tf.nn.conv2d(x, kernel, 1, "SAME") ** 2)
        return tape.gradient(loss, kernel)

    step = compiled_step.compile_step(gradient, (x,))
    rewritten = conv_gradients.rewrite_filter_gradients(step.stablehlo)
    assert rewritten.text == step.stablehlo
    assert [(f.form, f.why) for f in rewritten.forms] == [
        (
            conv_gradients.CONVOLUTION,
            "batch_group_count 2 (grouped, or a depth multiplier above 1)",
        )
    ]


def _gradient(input_shape, grad_shape, element="f32", dilations=(1, 1)):
    return conv_gradient_forms.FilterGradient(
        element, input_shape, grad_shape, (3, 3), ((1, 1), (1, 1)), (1, 1), dilations
    )


def test_the_screen_times_every_form_of_a_gradient_and_takes_the_fastest():
    """Each form compiled and timed alone: a choice among them, with each one's
    time; a budget spent leaves the default, saying so."""
    from tfpgo.tune import gradient_screen

    unit = _gradient((2, 8, 8, 4), (2, 8, 8, 4))
    choice = gradient_screen.chooser()((unit,))[unit]
    assert [form for form, _ in choice.alone_ps] == list(FORMS) and not choice.why
    assert all(ps > 0 for _, ps in choice.alone_ps)
    fastest = min(choice.alone_ps, key=lambda pair: pair[1])
    patches_ps = dict(choice.alone_ps)[PATCHES]
    # Another form only where it beat the patches by more than the noise.
    assert choice.form in (fastest[0], PATCHES)
    if choice.form != PATCHES:
        assert dict(choice.alone_ps)[choice.form] < patches_ps
    spent = gradient_screen.chooser(budget_s=0)((unit,))
    assert spent[unit].form == PATCHES and "were spent" in spent[unit].why
    # A depthwise gradient's two sums, timed against the per-sample one.
    depthwise = conv_gradient_forms.FilterGradient(
        "f32", (2, 8, 8, 4), (2, 4, 4, 4), (3, 3), ((0, 1), (0, 1)), (1, 1), (2, 2), True
    )
    (timed,) = gradient_screen.chooser()((depthwise,)).values()
    assert [form for form, _ in timed.alone_ps] == list(conv_gradient_forms.DEPTHWISE_FORMS)
    assert timed.form in conv_gradient_forms.DEPTHWISE_FORMS and not timed.why


def test_a_gradient_the_screen_cannot_time_stays_patches_and_says_why(tmp_path):
    from tfpgo.tune import gradient_screen

    choice = gradient_screen.time_forms(_gradient((1, 4, 4, 2), (1, 4, 4, 2), "bf16"), tmp_path)
    assert choice.form == PATCHES
    assert choice.why == "forms not timed: a bf16 gradient cannot be timed alone here"


# (input shape, kernel taps, output channels, strides, padding) of strided
# convolutions whose input gradients XLA writes with an input dilation.
INPUT_CASES = [
    ((2, 8, 8, 3), (3, 3), 4, 2, "SAME"),
    ((2, 8, 8, 3), (1, 1), 4, 2, "SAME"),
    ((2, 9, 9, 3), (3, 3), 4, 3, "SAME"),
    ((2, 10, 8, 2), (5, 3), 3, (2, 2), "VALID"),
    ((1, 12, 12, 2), (4, 4), 3, 2, "SAME"),
    ((2, 12, 6, 2), (2, 3), 3, (3, 2), "SAME"),
]


def _input_gradient_step(shape, taps, channels, strides, padding):
    """A jit-compiled step returning a convolution's input gradient."""
    import tensorflow as tf

    rng = np.random.default_rng(sum(shape) + 1)
    x = tf.constant(rng.standard_normal(shape).astype(np.float32))
    kernel = tf.constant(rng.standard_normal((*taps, shape[3], channels)).astype(np.float32))

    @tf.function(jit_compile=True)
    def gradient(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.nn.conv2d(x, kernel, strides, padding)
            loss = tf.reduce_sum(y * y)
        return tape.gradient(loss, x)

    return gradient, (x,)


_DILATED = re.compile(r"lhs_dilate = \[(?!1, 1\])")


@pytest.mark.parametrize(
    "case", INPUT_CASES, ids=[f"{c[0]}-{c[1]}-{c[3]}-{c[4]}" for c in INPUT_CASES]
)
def test_a_strided_input_gradient_is_one_convolution_of_its_phases_with_tensorflows_values(
    case, tmp_path
):
    from tfpgo.mlir import conv_input_gradients

    function, inputs = _input_gradient_step(*case)
    want = function(*inputs).numpy()
    step = compiled_step.compile_step(function, inputs)
    text, forms = conv_input_gradients.rewrite_input_gradients(step.stablehlo)
    assert [form.form for form in forms] == [conv_input_gradients.PHASES], forms
    assert "Conv2DBackpropInput" in forms[0].name
    assert _DILATED.search(step.stablehlo) and not _DILATED.search(text)  # no zeros multiplied
    got = _iree_gradient(step, text, tmp_path)
    np.testing.assert_allclose(got, want, atol=1e-5 * np.abs(want).max(), rtol=0)


def test_an_input_gradient_not_a_whole_number_of_phases_is_left_alone():
    from tfpgo.mlir import conv_input_gradients

    function, inputs = _input_gradient_step((2, 9, 9, 3), (3, 3), 4, 2, "SAME")
    step = compiled_step.compile_step(function, inputs)
    text, forms = conv_input_gradients.rewrite_input_gradients(step.stablehlo)
    assert text == step.stablehlo
    assert [(form.form, form.why) for form in forms] == [
        (conv_gradients.CONVOLUTION, "an output of 9 is not a whole number of 2 phases")
    ]


def test_a_timed_choice_is_kept_so_the_next_run_builds_the_same_program(tmp_path, monkeypatch):
    """The cache: the second choice of the same gradient on this target is the
    first's, timed nothing; an untimed one is not kept; a broken file is one line."""
    from tfpgo.tune import gradient_screen
    from tfpgo.tune.form_cache import FormCache

    cache = FormCache(tmp_path / "cache" / "gradient_forms.db")
    unit = _gradient((2, 8, 8, 4), (2, 8, 8, 4))
    (first,) = gradient_screen.chooser(cache=cache)((unit,)).values()
    assert not first.why

    def untimed(*args):
        raise AssertionError("timed again")

    monkeypatch.setattr(gradient_screen, "time_forms", untimed)
    (again,) = gradient_screen.chooser(cache=cache)((unit,)).values()
    assert again == first
    other = _gradient((1, 6, 6, 2), (1, 6, 6, 2))
    (spent,) = gradient_screen.chooser(budget_s=0, cache=cache)((other,)).values()
    assert spent.why and cache.get(other) is None
    broken = tmp_path / "broken.db"
    broken.write_text("not sqlite")
    with pytest.raises(UserError) as error:
        FormCache(broken).get(unit)
    assert str(error.value).startswith(f"{broken}: not a usable cache of gradient forms (")
    assert str(error.value).endswith("delete it, and the next run times the forms again")
