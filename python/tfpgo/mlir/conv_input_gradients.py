"""Input gradients of strided 2-D convolutions rewritten, exactly, as one
unit-stride convolution whose output channels are the output's phases.

XLA writes the `Conv2DBackpropInput` of a convolution with stride `s` as a
convolution of the output gradient dilated by `s` (`lhs_dilation`): of every
`s * s` positions it reads, all but one are zeros, and IREE's CPU pipeline
multiplies them all (on a 2-core Xeon, a ResNet-style step's 3x3 stride-2
input gradients ran 3.5-5.3x TensorFlow's oneDNN time).

An output position `p = s * a + r` (phase `r`) meets a nonzero of the dilated
input only through the taps `k = k0 + s * m` with `k0 = (low - r) mod s`, at the
output gradient's position `a + m + e` with `e = (r + k0 - low) / s`. So every
phase is a unit-stride convolution of the output gradient with the taps `k0,
k0 + s, ...`; aligned on the smallest `e`, the phases share one window, the
taps a phase lacks being zeros. The phases' kernels stacked on the output
channels make one convolution (IREE's `conv_2d_nhwc_hwcf`, built in that
layout), whose output is reshaped phase by phase into place (a depth-to-space).
A 3x3 stride-2 gradient becomes one 2x2 convolution with four times the
channels: 16 taps' work instead of 36. Every new op carries the convolution's
location.

Only what this covers is rewritten: 2-D, input dilation above 1 with unit
window strides and kernel dilation, one feature group and one batch group, no
window reversal, the input and result `[b, 0, 1, f]`, the kernel's spatial
dimensions first, and outputs a whole number of phases long.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from tfpgo.mlir.conv_gradients import CONVOLUTION, GradientForm, attribute_ints, gradient_form
from tfpgo.mlir.ir_edit import replace_with_function

PHASES = "one convolution, the phases as channels"
_COVERED_DIMENSIONS = re.compile(
    r"#stablehlo\.conv<\[b, 0, 1, f\]x\[0, 1, [io], [io]\]->\[b, 0, 1, f\]>"
)


@dataclass(frozen=True)
class _Axis:
    """One spatial dimension: its stride (the input dilation), the shared
    window, the output gradient's padding (negative: cropped), and per phase
    its first tap, taps and offset in the window."""

    stride: int
    window: int
    low: int
    high: int
    first_taps: tuple[int, ...]
    taps: tuple[int, ...]
    offsets: tuple[int, ...]


@dataclass(frozen=True)
class _Dilated:
    """A covered input gradient: its element type, shapes (output gradient,
    kernel, result), whether the kernel is `[0, 1, o, i]`, and its two axes."""

    element: str
    shapes: tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]
    kernel_out_first: bool
    axes: tuple[_Axis, _Axis]


def rewrite_input_gradients(text: str) -> tuple[str, tuple[GradientForm, ...]]:
    """`text` (StableHLO printed with debug locations) with every covered
    input-dilated convolution as one convolution of its phases; each one's form."""
    if "stablehlo.convolution" not in text or "lhs_dilat" not in text:
        return text, ()
    from iree.compiler import ir

    with ir.Context() as context:
        context.allow_unregistered_dialects = True
        module = ir.Module.parse(text)
        found: list[tuple[Any, _Dilated | str]] = []

        def collect(op: Any) -> Any:
            if op.name == "stablehlo.convolution" and _dilation(op) != (1, 1):
                found.append((op, _covered(op)))
            return ir.WalkResult.ADVANCE

        module.operation.walk(collect)
        forms = []
        for convolution, dilated in found:
            if isinstance(dilated, str):
                forms.append(gradient_form(convolution, CONVOLUTION, dilated))
                continue
            forms.append(gradient_form(convolution, PHASES))
            replace_with_function(convolution, _phases_function(dilated))
        if not any(form.form == PHASES for form in forms):
            return text, tuple(forms)
        return module.operation.get_asm(enable_debug_info=True), tuple(forms)


def _dilation(op: Any) -> tuple[int, ...]:
    if "lhs_dilation" not in op.attributes:
        return (1, 1)
    return attribute_ints(op.attributes["lhs_dilation"], (1, 1))


def _covered(op: Any) -> _Dilated | str:
    """An input-dilated convolution's shapes and axes where the rewrite covers
    it, else why not."""
    from iree.compiler import ir

    attributes = {name: op.attributes[name] for name in op.attributes}
    for name in ("feature_group_count", "batch_group_count"):
        if name in attributes and ir.IntegerAttr(attributes[name]).value != 1:
            return f"{name} {ir.IntegerAttr(attributes[name]).value} (grouped or depthwise)"
    numbers = str(attributes.get("dimension_numbers"))
    if not _COVERED_DIMENSIONS.search(numbers):
        return f"dimension numbers {numbers}"
    for name in ("window_strides", "rhs_dilation"):
        if attribute_ints(attributes.get(name), (1, 1)) != (1, 1):
            return f"{name.replace('_', ' ')} besides the input dilation"
    if any(attribute_ints(attributes.get("window_reversal"), (0, 0))):
        return "window reversal"
    types = [ir.RankedTensorType(v.type) for v in (*op.operands, op.results[0])]
    if not all(t.has_static_shape and t.rank == 4 for t in types):
        return "dynamic shapes"
    grad, kernel, result = (tuple(t.shape) for t in types)
    dilation = attribute_ints(attributes.get("lhs_dilation"), (1, 1))
    padding = attribute_ints(attributes.get("padding"), (0, 0, 0, 0))
    axes = []
    for axis in (0, 1):
        stride, out = dilation[axis], result[1 + axis]
        if out % stride:
            return f"an output of {out} is not a whole number of {stride} phases"
        axes.append(_axis(stride, padding[2 * axis], kernel[axis], grad[1 + axis], out // stride))
    element, kernel_out_first = str(types[0].element_type), "x[0, 1, o, i]" in numbers
    return _Dilated(element, (grad, kernel, result), kernel_out_first, (axes[0], axes[1]))


def _axis(stride: int, low: int, kernel: int, length: int, outputs: int) -> _Axis:
    """One dimension's phases (the module docstring's `k0` and `e` a phase),
    aligned on the smallest `e` in one window."""
    first = [(low - r) % stride for r in range(stride)]
    taps = [max(0, -(-(kernel - k0) // stride)) for k0 in first]
    shifts = [(r + k0 - low) // stride for r, k0 in enumerate(first)]
    least = min(shifts)
    offsets = [shift - least for shift in shifts]
    window = max(max(t + o for t, o in zip(taps, offsets, strict=True)), 1)
    high = outputs + window + least - 1 - length
    return _Axis(stride, window, -least, high, tuple(first), tuple(taps), tuple(offsets))


def _tensor(element: str, *shape: int) -> str:
    return f"tensor<{'x'.join(str(size) for size in shape)}x{element}>"


def _phases_function(dilated: _Dilated) -> str:
    """`func.func @phases(%grad, %kernel) -> result`: the kernel in (h, w, in,
    out) layout, a kernel a phase (its taps, zeros where it has none), stacked
    on the output channels; one convolution; the phases put in place."""
    t = dilated.element
    (n, h, w, i), kernel_shape, (_, oh, ow, o) = dilated.shapes
    y, x = dilated.axes
    kh, kw = kernel_shape[0], kernel_shape[1]
    hwio = _tensor(t, kh, kw, i, o)
    phases = y.stride * x.stride
    lines = [
        f"func.func @phases(%grad: {_tensor(t, n, h, w, i)}, "
        f"%kernel: {_tensor(t, *kernel_shape)}) -> {_tensor(t, n, oh, ow, o)} {{",
        f"  %zero = stablehlo.constant dense<0.0> : tensor<{t}>",
    ]
    kernel = "%kernel"
    if dilated.kernel_out_first:
        lines.append(
            f"  %hwio = stablehlo.transpose %kernel, dims = [0, 1, 3, 2] : "
            f"({_tensor(t, *kernel_shape)}) -> {hwio}"
        )
        kernel = "%hwio"
    window = _tensor(t, y.window, x.window, i, o)
    names = []
    for ry in range(y.stride):
        for rx in range(x.stride):
            name = f"%phase{ry}_{rx}"
            lines += _phase_kernel(name, kernel, t, (kh, kw, i, o), (y, x), (ry, rx), window)
            names.append(name)
    stacked = _tensor(t, y.window, x.window, i, phases * o)
    a, b = oh // y.stride, ow // x.stride
    padded = _tensor(t, n, h + y.low + y.high, w + x.low + x.high, i)
    out = _tensor(t, n, a, b, phases * o)
    split = _tensor(t, n, a, b, y.stride, x.stride, o)
    placed = _tensor(t, n, a, y.stride, b, x.stride, o)
    lines += [
        f"  %stacked = stablehlo.concatenate {', '.join(names)}, dim = 3 : "
        f"({', '.join([window] * phases)}) -> {stacked}",
        f"  %input = stablehlo.pad %grad, %zero, low = [0, {y.low}, {x.low}, 0], "
        f"high = [0, {y.high}, {x.high}, 0], interior = [0, 0, 0, 0] : "
        f"({_tensor(t, n, h, w, i)}, tensor<{t}>) -> {padded}",
        "  %phases = stablehlo.convolution(%input, %stacked) "
        "dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], "
        "pad = [[0, 0], [0, 0]], lhs_dilate = [1, 1], rhs_dilate = [1, 1]} "
        "{batch_group_count = 1 : i64, feature_group_count = 1 : i64} : "
        f"({padded}, {stacked}) -> {out}",
        f"  %split = stablehlo.reshape %phases : ({out}) -> {split}",
        f"  %placed = stablehlo.transpose %split, dims = [0, 1, 3, 2, 4, 5] : "
        f"({split}) -> {placed}",
        f"  %result = stablehlo.reshape %placed : ({placed}) -> {_tensor(t, n, oh, ow, o)}",
        f"  return %result : {_tensor(t, n, oh, ow, o)}",
        "}",
        "",
    ]
    return "\n".join(lines)


def _phase_kernel(
    name: str,
    kernel: str,
    t: str,
    shape: tuple[int, int, int, int],
    axes: tuple[_Axis, _Axis],
    phase: tuple[int, int],
    window: str,
) -> list[str]:
    """`name` = the phase's kernel in the shared window: its taps (a strided
    slice of `kernel`, in (h, w, in, out) layout), zeros around them; all zeros
    where it has none."""
    kh, kw, i, o = shape
    (y, x), (ry, rx) = axes, phase
    if y.taps[ry] == 0 or x.taps[rx] == 0:
        return [
            f"  {name} = stablehlo.broadcast_in_dim %zero, dims = [] : (tensor<{t}>) -> {window}"
        ]
    ty, tx = y.taps[ry], x.taps[rx]
    fy, fx = y.first_taps[ry], x.first_taps[rx]
    taps = _tensor(t, ty, tx, i, o)
    low_y, low_x = y.offsets[ry], x.offsets[rx]
    high_y, high_x = y.window - ty - low_y, x.window - tx - low_x
    return [
        f"  {name}_taps = stablehlo.slice {kernel} "
        f"[{fy}:{fy + y.stride * (ty - 1) + 1}:{y.stride}, "
        f"{fx}:{fx + x.stride * (tx - 1) + 1}:{x.stride}, 0:{i}, 0:{o}] : "
        f"({_tensor(t, kh, kw, i, o)}) -> {taps}",
        f"  {name} = stablehlo.pad {name}_taps, %zero, low = [{low_y}, {low_x}, 0, 0], "
        f"high = [{high_y}, {high_x}, 0, 0], interior = [0, 0, 0, 0] : "
        f"({taps}, tensor<{t}>) -> {window}",
    ]
