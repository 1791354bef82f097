"""Filter gradients of 2-D convolutions rewritten, exactly, into matmuls IREE's
CPU pipeline compiles well.

TensorFlow's XLA compiler writes `Conv2DBackpropFilter` as a
`stablehlo.convolution` whose reduction runs over the batch and the image:
the input's channels are the convolution's batch, the samples its features,
the output gradient its kernel (`[f, 0, 1, b]x[i, 0, 1, o]->[0, 1, b, f]`), and
the kernel's taps its output positions. IREE's CPU pipeline is built for the
forward layouts and runs this one on its generic path: on a 2-core Xeon, a
3x3 filter gradient of a 32x16x16x16 input with 64 output channels ran 20-34
ms (two runs) against TensorFlow's 1.3-1.5 (oneDNN).

Each output position `p` (a tap) of the kernel reads the padded input at
`p * window_stride + q * rhs_dilation` for every position `q` of the output
gradient, so the gradient is a sum of matmuls; tfpgo.mlir.conv_gradient_forms
writes it three ways (the input's patches, or a matmul a tap over a shifted
view of the input, either operand channel-major). Measured on that gradient as
patches: 3.0 ms instead of 34 (IREE's own `--iree-global-opt-use-im2col-for-convs`:
5.5). Which form is fastest depends on the shapes, so `choose` (the lowering's
`IreeRun.choose_gradient_forms`: each form timed alone) picks one per gradient;
without it, patches. Every new op carries the convolution's location, so its
record rides on and the lower levels split its time over them.

Only what these forms cover is rewritten: 2-D, one feature group, one batch
group or one a channel (depthwise, a depth multiplier of 1), no input
dilation, no window reversal; any other convolution is left as it is.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from tfpgo.mlir.conv_gradient_forms import (
    FilterGradient,
    FormChoice,
    gradient_function,
)
from tfpgo.mlir.ir_edit import replace_with_function

# The dimension numbers XLA gives a 2-D filter gradient.
_FILTER_GRADIENT = "[f, 0, 1, b]x[i, 0, 1, o]->[0, 1, b, f]"
_DIMENSIONS = re.compile(r"#stablehlo\.conv<(.*)>")

# The form of a filter gradient left as it was (`GradientForm.form`).
CONVOLUTION = "convolution (left)"

# Picks a form for each distinct gradient (tfpgo.mlir.conv_gradient_forms).
FormChooser = Callable[[tuple[FilterGradient, ...]], Mapping[FilterGradient, FormChoice]]


@dataclass(frozen=True)
class GradientForm:
    """A filter gradient of the module: its tf node, its shapes, the form it took
    and, where left a convolution, why; where the forms were timed alone, each
    one's time an invocation (ps)."""

    name: str
    shapes: str  # input x output gradient -> kernel
    form: str
    why: str = ""
    alone_ps: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True)
class ConvRewrites:
    """The module text after the rewrite and each filter gradient's form."""

    text: str
    forms: tuple[GradientForm, ...] = ()

    @property
    def filter_gradients(self) -> int:
        return rewritten_count(self.forms)


def rewritten_count(forms: tuple[GradientForm, ...]) -> int:
    """How many of `forms` were rewritten (not left convolutions)."""
    return sum(form.form != CONVOLUTION for form in forms)


def rewrite_filter_gradients(text: str, choose: FormChooser | None = None) -> ConvRewrites:
    """`text` (StableHLO printed with debug locations) with every 2-D filter
    gradient the module docstring covers in the form `choose` picks for it
    (patches without `choose`)."""
    if "stablehlo.convolution" not in text or _FILTER_GRADIENT not in text:
        return ConvRewrites(text)
    from iree.compiler import ir

    with ir.Context() as context:
        context.allow_unregistered_dialects = True
        module = ir.Module.parse(text)
        found: list[tuple[Any, FilterGradient | str]] = []

        def collect(op: Any) -> Any:
            if _is_filter_gradient(op):
                found.append((op, _covered(op)))
            return ir.WalkResult.ADVANCE

        module.operation.walk(collect)
        covered = tuple(dict.fromkeys(g for _, g in found if isinstance(g, FilterGradient)))
        choices = dict(choose(covered)) if choose is not None and covered else {}
        forms = []
        for convolution, gradient in found:
            if isinstance(gradient, str):
                forms.append(gradient_form(convolution, CONVOLUTION, gradient))
                continue
            choice = choices.get(gradient, FormChoice(gradient.forms()[0]))
            forms.append(gradient_form(convolution, choice.form, choice.why, choice.alone_ps))
            replace_with_function(convolution, gradient_function(gradient, choice.form))
        rewrites = ConvRewrites(text, tuple(forms))
        if not rewrites.filter_gradients:
            return rewrites
        return replace(rewrites, text=module.operation.get_asm(enable_debug_info=True))


def _is_filter_gradient(op: Any) -> bool:
    """Whether `op` is a convolution with a 2-D filter gradient's dimension numbers."""
    if op.name != "stablehlo.convolution" or "dimension_numbers" not in op.attributes:
        return False
    numbers = _DIMENSIONS.search(str(op.attributes["dimension_numbers"]))
    return numbers is not None and numbers[1] == _FILTER_GRADIENT


def gradient_form(
    convolution: Any, form: str, why: str = "", alone_ps: tuple[tuple[str, float], ...] = ()
) -> GradientForm:
    """The record of a convolution gradient (its tf node from its location, its
    operand and result types) that took `form`."""
    from tfpgo.iree.sites import location_names

    name = next(iter(location_names(convolution.location)), str(convolution.location))
    types = [str(value.type) for value in (*convolution.operands, convolution.results[0])]
    shapes = f"{types[0]} x {types[1]} -> {types[2]}".replace("tensor<", "<")
    return GradientForm(name, shapes, form, why, alone_ps)


def _covered(op: Any) -> FilterGradient | str:
    """A filter gradient's (`_is_filter_gradient`) shapes and window where the
    rewrite covers it, else why not."""
    from iree.compiler import ir

    attributes = {name: op.attributes[name] for name in op.attributes}
    groups = {
        name: ir.IntegerAttr(attributes[name]).value if name in attributes else 1
        for name in ("feature_group_count", "batch_group_count")
    }
    if groups["feature_group_count"] != 1:
        return f"feature_group_count {groups['feature_group_count']} (grouped)"
    if attribute_ints(attributes.get("lhs_dilation"), (1, 1)) != (1, 1):
        return "input dilation"
    if any(attribute_ints(attributes.get("window_reversal"), (0, 0))):
        return "window reversal"
    # Negative padding crops the input (XLA's strided 1x1 gradients): the forms'
    # stablehlo.pad crops it the same way.
    padding = attribute_ints(attributes.get("padding"), (0, 0, 0, 0))
    if len(padding) != 4:
        return f"padding of {len(padding)} values"
    lhs, rhs = (ir.RankedTensorType(value.type) for value in op.operands)
    result = ir.RankedTensorType(op.results[0].type)
    if not (lhs.has_static_shape and rhs.has_static_shape and result.has_static_shape):
        return "dynamic shapes"
    batch_groups, channels = groups["batch_group_count"], lhs.shape[3]
    depthwise = batch_groups == channels == rhs.shape[3] and result.shape[2] == 1
    if batch_groups != 1 and not depthwise:
        return f"batch_group_count {batch_groups} (grouped, or a depth multiplier above 1)"
    return FilterGradient(
        str(lhs.element_type),
        tuple(lhs.shape),
        tuple(rhs.shape),
        (result.shape[0], result.shape[1]),
        ((padding[0], padding[1]), (padding[2], padding[3])),
        attribute_ints(attributes.get("window_strides"), (1, 1)),
        attribute_ints(attributes.get("rhs_dilation"), (1, 1)),
        depthwise and channels > 1,
    )


def attribute_ints(attribute: Any, default: tuple[int, ...]) -> tuple[int, ...]:
    """The integers of a dense array or elements attribute (booleans as 0/1)."""
    if attribute is None:
        return default
    return tuple(int(value) for value in re.findall(r"-?\d+|true|false", _values(attribute)))


def _values(attribute: Any) -> str:
    """An attribute's values as text: `array<i64: 1, 2>`, `dense<[[1, 1], [0, 0]]>`
    (a splat `dense<1> : tensor<2x2xi64>` spelled out), `array<i1: false, true>`."""
    text = str(attribute)
    splat = re.fullmatch(r"dense<(-?\d+)> : tensor<(\d+)x(\d+)xi64>", text)
    if splat is not None:
        return ", ".join([splat[1]] * (int(splat[2]) * int(splat[3])))
    text = re.sub(r"^(array<i\d+:|dense<)|>( : tensor<[^>]*>)?$", "", text)
    return text.replace("true", "1").replace("false", "0")
