"""The forms a 2-D filter gradient is rewritten into (tfpgo.mlir.conv_gradients),
each exact up to the order of the sums, as the text of a function of (input,
output gradient).

- `PATCHES`: the input's patches gathered by one `linalg.generic` (sample, tap
  row, tap column, channel, image), a matmul a sample, summed over the samples.
  Any stride and dilation; the patches are as many times the input as the
  kernel has taps.
- `TAPS_INPUT_MAJOR` and `TAPS_GRADIENT_MAJOR`: a matmul a kernel tap over a
  shifted view of the input, no patches. With unit stride, the padded input
  flattened row by row reads the tap `(i, j)` of the output gradient's position
  `q` (its rows padded to the input's width with zeros) at `q + i*dh*width +
  j*dw`: the tap is a contiguous slice, and its matmul reads it in place. With a
  stride `s`, the input is first split into its `s x s` phase planes (one
  transpose, the input's size), each tap then a slice of one plane. The
  two differ in which operand is made channel-major (one transpose) so that the
  matmul's reduction runs along its rows: the input (`[c, positions]` by the
  gradient `[positions, o]`) or the output gradient (`[o, positions]` by the
  input slice `[positions, c]`). Measured alone on a 2-core Xeon, one worker:
  the 3x3 gradient of 8x64x64x16 to 16 channels 4.0 ms as patches, 2.6 and 2.3
  as taps; 8x16x16x64 to 64 2.4, 1.2 and 2.7; 32x16x16x16 to 64 3.2, 4.4 and
  4.1. No form wins everywhere, so the lowering times the applicable ones alone
  (`IreeRun.choose_gradient_forms`).
- `DEPTHWISE_PER_SAMPLE` and `DEPTHWISE_WHOLE` (a depthwise gradient, a batch
  group a channel): no matmul, one `linalg.generic` multiplying each channel's
  input at the window's positions by its output gradient, summed per sample and
  then over samples, or over everything at once. IREE's grouped convolution ran
  a MobileNetV2 stride-2 one (8x32x32x48) 3.9x TensorFlow's time; alone, 4.0-5.3
  ms as XLA writes it, 1.3 and 1.4 as these sums (1.3 and 1.0 at stride 1).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

PATCHES = "batched matmul of patches"
TAPS_INPUT_MAJOR = "a matmul a tap, input channel-major"
TAPS_GRADIENT_MAJOR = "a matmul a tap, gradient channel-major"
FORMS = (PATCHES, TAPS_INPUT_MAJOR, TAPS_GRADIENT_MAJOR)
# A depthwise gradient's: no matmul, a product a channel summed over the window's
# positions, per sample then over samples, or over everything at once.
DEPTHWISE_PER_SAMPLE = "a depthwise sum a sample"
DEPTHWISE_WHOLE = "a depthwise sum"
DEPTHWISE_FORMS = (DEPTHWISE_PER_SAMPLE, DEPTHWISE_WHOLE)


@dataclass(frozen=True)
class FormChoice:
    """The form a filter gradient takes, and where the forms were timed alone,
    each one's time an invocation (ps), or why they could not be."""

    form: str
    alone_ps: tuple[tuple[str, float], ...] = ()
    why: str = ""


@dataclass(frozen=True)
class FilterGradient:
    """A covered filter gradient's shapes and window: input (n, h, w, c), output
    gradient (n, h', w', o), kernel taps (kh, kw), and per spatial dimension
    the padding, the window stride (the forward convolution's dilation) and the
    output gradient's dilation (its stride)."""

    element: str
    input_shape: tuple[int, ...]
    grad_shape: tuple[int, ...]
    taps: tuple[int, int]
    padding: tuple[tuple[int, int], ...]
    strides: tuple[int, ...]
    dilations: tuple[int, ...]
    depthwise: bool = False  # a batch group a channel: kernel (kh, kw, 1, c)

    @property
    def result_type(self) -> str:
        if self.depthwise:
            return _tensor(self.element, *self.taps, 1, self.input_shape[3])
        return _tensor(self.element, *self.taps, self.input_shape[3], self.grad_shape[3])

    def forms(self) -> tuple[str, ...]:
        """The forms that compute this gradient, the default first."""
        return DEPTHWISE_FORMS if self.depthwise else FORMS

    @property
    def padded_type(self) -> str:
        """The input's type padded as the window reads it (`_padded_input`)."""
        n, h, w, c = self.input_shape
        (top, bottom), (left, right) = self.padding
        return _tensor(self.element, n, h + top + bottom, w + left + right, c)

    @property
    def window(self) -> str:
        """Where the tap (i, j) at the output gradient's (y, x) reads the padded
        input (sample n, channel ch), as an affine map's results."""
        (sh, sw), (dh, dw) = self.strides, self.dilations
        return f"n, i * {sh} + y * {dh}, j * {sw} + x * {dw}, ch"

    def text(self) -> str:
        """`input x output gradient -> kernel`, with its window."""
        shapes = " x ".join("x".join(map(str, s)) for s in (self.input_shape, self.grad_shape))
        return (
            f"{shapes} -> {'x'.join(map(str, self.taps))}, padding {list(self.padding)}, "
            f"window strides {list(self.strides)}, dilation {list(self.dilations)}"
        )


def gradient_function(gradient: FilterGradient, form: str, name: str = "gradient") -> str:
    """`func.func @name(%input, %grad) -> kernel` computing `gradient` in `form`."""
    n, h, w, c = gradient.input_shape
    o = gradient.grad_shape[3]
    t = gradient.element
    body = _BODIES[form](gradient)
    return "\n".join(
        [
            f"func.func @{name}(%input: {_tensor(t, n, h, w, c)}, "
            f"%grad: {_tensor(t, *gradient.grad_shape[:3], o)}) -> {gradient.result_type} {{",
            f"  %zero = stablehlo.constant dense<0.0> : tensor<{t}>",
            *body,
            f"  return %kernel : {gradient.result_type}",
            "}",
            "",
        ]
    )


def _tensor(element: str, *shape: int) -> str:
    return f"tensor<{'x'.join(str(size) for size in shape)}x{element}>"


def _patches(gradient: FilterGradient) -> list[str]:
    """The input padded; its patches gathered by one `linalg.generic` whose
    input map is the window (`tap * stride + position * dilation`); a matmul a
    sample; the sum over samples; the kernel's layout (h, w, in, out)."""
    n, _, _, c = gradient.input_shape
    _, gh, gw, o = gradient.grad_shape
    kh, kw = gradient.taps
    t = gradient.element
    rows, grads = kh * kw * c, gh * gw

    def tensor(*shape: int) -> str:
        return _tensor(t, *shape)

    patches = tensor(n, kh, kw, c, gh, gw)
    window = f"(n, i, j, ch, y, x) -> ({gradient.window})"
    parallel = ", ".join(['"parallel"'] * 6)
    return [
        _padded_input(gradient),
        f"  %empty = tensor.empty() : {patches}",
        f"  %patches = linalg.generic {{indexing_maps = [affine_map<{window}>, "
        "affine_map<(n, i, j, ch, y, x) -> (n, i, j, ch, y, x)>], "
        f"iterator_types = [{parallel}]}} ins(%padded : {gradient.padded_type}) "
        f"outs(%empty : {patches}) {{",
        f"  ^bb0(%in: {t}, %out: {t}):",
        f"    linalg.yield %in : {t}",
        f"  }} -> {patches}",
        f"  %lhs = stablehlo.reshape %patches : ({patches}) -> {tensor(n, rows, grads)}",
        f"  %rhs = stablehlo.reshape %grad : ({tensor(n, gh, gw, o)}) -> {tensor(n, grads, o)}",
        "  %each = stablehlo.dot_general %lhs, %rhs, batching_dims = [0] x [0], "
        f"contracting_dims = [2] x [1] : ({tensor(n, rows, grads)}, "
        f"{tensor(n, grads, o)}) -> {tensor(n, rows, o)}",
        "  %sum = stablehlo.reduce(%each init: %zero) applies stablehlo.add across "
        f"dimensions = [0] : ({tensor(n, rows, o)}, tensor<{t}>) -> {tensor(rows, o)}",
        f"  %kernel = stablehlo.reshape %sum : ({tensor(rows, o)}) -> {gradient.result_type}",
    ]


def _padded_input(gradient: FilterGradient, size: tuple[int, int] | None = None) -> str:
    """`%padded` = the input padded as the window reads it, or above and left so
    and below and right to `size` (rows, columns)."""
    n, h, w, c = gradient.input_shape
    (top, bottom), (left, right) = gradient.padding
    if size is not None:
        bottom, right = size[0] - h - top, size[1] - w - left
    t = gradient.element
    return (
        f"  %padded = stablehlo.pad %input, %zero, low = [0, {top}, {left}, 0], "
        f"high = [0, {bottom}, {right}, 0], interior = [0, 0, 0, 0] : "
        f"({_tensor(t, n, h, w, c)}, tensor<{t}>) -> "
        f"{_tensor(t, n, h + top + bottom, w + left + right, c)}"
    )


@dataclass(frozen=True)
class _Flat:
    """The gradient's flat view of its input: the padded input split into one
    plane a stride phase (`planes`, rows and columns; one plane at unit stride),
    each plane flattened row by row and the planes laid end to end; each tap's
    offset in it; the output gradient's positions (its rows at a plane's width)."""

    planes: tuple[int, int]
    rows: int
    width: int
    offsets: tuple[int, ...]
    positions: int

    @property
    def size(self) -> int:
        return self.planes[0] * self.planes[1] * self.rows * self.width


def _flat(gradient: FilterGradient) -> _Flat:
    """The tap (i, j) reads row `i * sh + y * dh` = `dh * (y + a) + r`: the row
    `y + a` of the plane of phase `r` (columns alike), so in the planes' flat
    view it reads the output gradient's position `y * width + x` shifted by the
    plane's start plus `a * width + b`, a contiguous slice."""
    _, h, w, _ = gradient.input_shape
    _, gh, _, _ = gradient.grad_shape
    (top, bottom), (left, right) = gradient.padding
    (sh, sw), (dh, dw) = gradient.strides, gradient.dilations
    width = -(-(w + left + right) // dw)
    shifts = [
        (divmod(i * sh, dh), divmod(j * sw, dw))
        for i in range(gradient.taps[0])
        for j in range(gradient.taps[1])
    ]
    within = [a * width + b for (a, _), (b, _) in shifts]
    positions = gh * width
    rows = max(-(-(h + top + bottom) // dh), math.ceil((max(within) + positions) / width))
    offsets = tuple(
        (r * dw + q) * rows * width + start
        for ((_, r), (_, q)), start in zip(shifts, within, strict=True)
    )
    return _Flat((dh, dw), rows, width, offsets, positions)


def _flat_input(gradient: FilterGradient, flat: _Flat) -> list[str]:
    """`%flat` = the input padded to whole planes, split into them (at unit
    stride, one: a reshape), flattened end to end: [n, flat.size, c]."""
    n, _, _, c = gradient.input_shape
    dh, dw = flat.planes
    t = gradient.element
    rows, cols = dh * flat.rows, dw * flat.width
    padded = _tensor(t, n, rows, cols, c)
    lines = [_padded_input(gradient, (rows, cols))]
    if (dh, dw) == (1, 1):
        return [
            *lines,
            f"  %flat = stablehlo.reshape %padded : ({padded}) -> {_tensor(t, n, flat.size, c)}",
        ]
    split = _tensor(t, n, flat.rows, dh, flat.width, dw, c)
    planes = _tensor(t, n, dh, dw, flat.rows, flat.width, c)
    return [
        *lines,
        f"  %split = stablehlo.reshape %padded : ({padded}) -> {split}",
        f"  %planes = stablehlo.transpose %split, dims = [0, 2, 4, 1, 3, 5] : "
        f"({split}) -> {planes}",
        f"  %flat = stablehlo.reshape %planes : ({planes}) -> {_tensor(t, n, flat.size, c)}",
    ]


def _taps(gradient: FilterGradient, input_major: bool) -> list[str]:
    """The input padded and flattened, the output gradient padded to its width
    and flattened, one channel-major (`input_major`: the input); a batched
    matmul a tap over its slice; the taps stacked and summed over samples."""
    n, _, _, c = gradient.input_shape
    _, gh, gw, o = gradient.grad_shape
    t = gradient.element
    flat = _flat(gradient)
    p, q, taps = flat.size, flat.positions, len(flat.offsets)

    def tensor(*shape: int) -> str:
        return _tensor(t, *shape)

    lines = [
        *_flat_input(gradient, flat),
        f"  %gpad = stablehlo.pad %grad, %zero, low = [0, 0, 0, 0], "
        f"high = [0, 0, {flat.width - gw}, 0], interior = [0, 0, 0, 0] : "
        f"({tensor(n, gh, gw, o)}, tensor<{t}>) -> {tensor(n, gh, flat.width, o)}",
        f"  %gflat = stablehlo.reshape %gpad : ({tensor(n, gh, flat.width, o)}) -> "
        f"{tensor(n, q, o)}",
    ]
    # Per tap: [n, rows, cols] of the matmul, reduced to [rows, cols] later.
    rows, cols = (c, o) if input_major else (o, c)
    if input_major:
        lines.append(
            f"  %major = stablehlo.transpose %flat, dims = [0, 2, 1] : ({tensor(n, p, c)}) -> "
            f"{tensor(n, c, p)}"
        )
    else:
        lines.append(
            f"  %major = stablehlo.transpose %gflat, dims = [0, 2, 1] : ({tensor(n, q, o)}) -> "
            f"{tensor(n, o, q)}"
        )
    stacked = []
    for index, offset in enumerate(flat.offsets):
        if input_major:
            lines.append(
                f"  %slice{index} = stablehlo.slice %major [0:{n}, 0:{c}, {offset}:{offset + q}] "
                f": ({tensor(n, c, p)}) -> {tensor(n, c, q)}"
            )
            lhs, rhs, types = f"%slice{index}", "%gflat", f"{tensor(n, c, q)}, {tensor(n, q, o)}"
        else:
            lines.append(
                f"  %slice{index} = stablehlo.slice %flat [0:{n}, {offset}:{offset + q}, 0:{c}] "
                f": ({tensor(n, p, c)}) -> {tensor(n, q, c)}"
            )
            lhs, rhs, types = "%major", f"%slice{index}", f"{tensor(n, o, q)}, {tensor(n, q, c)}"
        lines += [
            f"  %tap{index} = stablehlo.dot_general {lhs}, {rhs}, batching_dims = [0] x [0], "
            f"contracting_dims = [2] x [1] : ({types}) -> {tensor(n, rows, cols)}",
            f"  %one{index} = stablehlo.reshape %tap{index} : ({tensor(n, rows, cols)}) -> "
            f"{tensor(1, n, rows, cols)}",
        ]
        stacked.append(f"%one{index}")
    lines += [
        f"  %taps = stablehlo.concatenate {', '.join(stacked)}, dim = 0 : "
        f"({', '.join([tensor(1, n, rows, cols)] * taps)}) -> {tensor(taps, n, rows, cols)}",
        "  %sum = stablehlo.reduce(%taps init: %zero) applies stablehlo.add across "
        f"dimensions = [1] : ({tensor(taps, n, rows, cols)}, tensor<{t}>) -> "
        f"{tensor(taps, rows, cols)}",
    ]
    summed = "%sum"
    if not input_major:
        lines.append(
            f"  %ordered = stablehlo.transpose %sum, dims = [0, 2, 1] : "
            f"({tensor(taps, o, c)}) -> {tensor(taps, c, o)}"
        )
        summed = "%ordered"
    lines.append(
        f"  %kernel = stablehlo.reshape {summed} : ({tensor(taps, c, o)}) -> {gradient.result_type}"
    )
    return lines


def _depthwise(gradient: FilterGradient, per_sample: bool) -> list[str]:
    """The input padded; one `linalg.generic` multiplying each channel's input
    at the window's positions by its output gradient and summing over them
    (and the samples, unless `per_sample`: then a sum over samples follows)."""
    n, _, _, c = gradient.input_shape
    _, gh, gw, _ = gradient.grad_shape
    kh, kw = gradient.taps
    t = gradient.element
    parallel, sums = ("n, i, j, ch", "y, x") if per_sample else ("i, j, ch", "n, y, x")
    dims = f"({parallel}, {sums})"
    kinds = ", ".join(
        ['"parallel"'] * len(parallel.split(",")) + ['"reduction"'] * len(sums.split(","))
    )
    out = _tensor(t, n, kh, kw, c) if per_sample else _tensor(t, kh, kw, c)
    lines = [
        _padded_input(gradient),
        f"  %zeros = tensor.empty() : {out}",
        f"  %zero_element = arith.constant 0.0 : {t}",
        f"  %start = linalg.fill ins(%zero_element : {t}) outs(%zeros : {out}) -> {out}",
        f"  %sums = linalg.generic {{indexing_maps = ["
        f"affine_map<{dims} -> ({gradient.window})>, "
        f"affine_map<{dims} -> (n, y, x, ch)>, affine_map<{dims} -> ({parallel})>], "
        f"iterator_types = [{kinds}]}} ins(%padded, %grad : {gradient.padded_type}, "
        f"{_tensor(t, n, gh, gw, c)}) outs(%start : {out}) {{",
        f"  ^bb0(%in: {t}, %g: {t}, %acc: {t}):",
        f"    %product = arith.mulf %in, %g : {t}",
        f"    %sum = arith.addf %acc, %product : {t}",
        f"    linalg.yield %sum : {t}",
        f"  }} -> {out}",
    ]
    summed = "%sums"
    if per_sample:
        lines.append(
            "  %total = stablehlo.reduce(%sums init: %zero) applies stablehlo.add across "
            f"dimensions = [0] : ({out}, tensor<{t}>) -> {_tensor(t, kh, kw, c)}"
        )
        summed = "%total"
    lines.append(
        f"  %kernel = stablehlo.reshape {summed} : ({_tensor(t, kh, kw, c)}) -> "
        f"{gradient.result_type}"
    )
    return lines


_BODIES = {
    PATCHES: _patches,
    DEPTHWISE_PER_SAMPLE: lambda gradient: _depthwise(gradient, per_sample=True),
    DEPTHWISE_WHOLE: lambda gradient: _depthwise(gradient, per_sample=False),
    TAPS_INPUT_MAJOR: lambda gradient: _taps(gradient, input_major=True),
    TAPS_GRADIENT_MAJOR: lambda gradient: _taps(gradient, input_major=False),
}
