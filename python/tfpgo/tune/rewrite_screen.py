"""Each form of convolution the `kxk` rewrite would change, timed alone both ways
before the whole program is.

`tf-profile-guided-conv-to-dot kernels=kxk` trades IREE's direct convolution for
one matmul per kernel tap. Measured alone here, that wins on deep layers with
few pixels (4x4x512: 14.8 -> 6.8 ms) and loses on shallow ones with many
(56x56x64: 9.5 -> 43 ms), and a profile's slowdown against TensorFlow does not
always tell them apart. So each distinct form (input, kernel, result, strides,
padding) the pass selects is compiled as a one-convolution program and as its
rewrite, both timed in one process called in turn (tfpgo.tune.program_ab's
`generation`: the rewrite's paired ratio to the convolution), and only the
forms whose rewrite is faster by more than the A/B noise are rewritten in the
program.

The rewrite timed is the pass's own, run on the one-convolution program with a
profile that selects it: one implementation of the rewrite.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tfpgo.errors import UserError
from tfpgo.iree import output_check, profile_document
from tfpgo.iree import run as iree_run
from tfpgo.iree.alternation import Arm
from tfpgo.mlir import annotate
from tfpgo.tune import program_ab
from tfpgo.tune.program_ab import SCREEN_MARGIN

CONV_TO_DOT = "tf-profile-guided-conv-to-dot"
_DTYPES = {"f32": "float32", "f16": "float16", "bf16": "float32", "f64": "float64"}
_SOURCE = "screened/convolution"


@dataclass(frozen=True)
class FormTiming:
    """One form of convolution, the sources of that form the pass selected, and
    its time an invocation (ps) alone as a convolution and rewritten, or why it
    could not be timed (IREE's line: the form is then left as it was)."""

    form: str
    sources: tuple[str, ...]
    convolution_ps: float | None
    rewritten_ps: float | None
    failed: str = ""

    @property
    def wins(self) -> bool:
        if self.convolution_ps is None or self.rewritten_ps is None:
            return False
        return self.rewritten_ps < (1 - SCREEN_MARGIN) * self.convolution_ps

    def to_json(self) -> dict[str, Any]:
        times = {
            "convolution_ps": None if self.convolution_ps is None else round(self.convolution_ps),
            "rewritten_ps": None if self.rewritten_ps is None else round(self.rewritten_ps),
        }
        failed = {"failed": self.failed} if self.failed else {}
        return {
            "form": self.form, "sources": list(self.sources), **times,
            "rewritten": self.wins, **failed,
        }  # fmt: skip


def screen(
    rewrites: list[dict[str, Any]], scratch: Path, deadline: float, compile_timeout_s: float
) -> list[FormTiming]:
    """Times each form of `rewrites` (the `rewritten` entries of a kxk
    `rewrites.json`), until `deadline` (a time.monotonic() value): forms left
    untimed are not rewritten."""
    forms: dict[tuple[Any, ...], list[str]] = {}
    for rewrite in rewrites:
        key = (
            rewrite["input"],
            rewrite["kernel"],
            rewrite["result"],
            tuple(rewrite["strides"]),
            tuple(rewrite["padding"]),
        )
        forms.setdefault(key, []).append(rewrite["source"])
    timings = []
    for index, (key, sources) in enumerate(forms.items()):
        if time.monotonic() >= deadline:
            break
        directory = scratch / f"form_{index}"
        directory.mkdir(parents=True, exist_ok=True)
        timings.append(_time_form(key, tuple(sources), directory, compile_timeout_s))
    return timings


def _time_form(
    key: tuple[Any, ...], sources: tuple[str, ...], directory: Path, compile_timeout_s: float
) -> FormTiming:
    input_shape, kernel_shape, result_shape, strides, padding = key
    convolution = directory / "convolution.mlir"
    convolution.write_text(_program(input_shape, kernel_shape, result_shape, strides, padding))
    profile = directory / "iree_profile.json"
    _selecting_profile().write(profile)
    rewritten = directory / "rewritten.mlir"
    annotate.run_tfpgo_opt(
        convolution,
        rewritten,
        [
            "--mlir-print-op-generic",
            f"--{CONV_TO_DOT}=target-profile={profile} kernels=kxk min-slowdown=1",
        ],
    )
    form = f"{input_shape} by {kernel_shape}, strides {list(strides)}, padding {list(padding)}"
    arms = []
    try:  # a form IREE cannot compile or run either way is left as it was
        inputs = (
            _filled(directory / "x.npy", input_shape, 0.5),
            _filled(directory / "w.npy", kernel_shape, 0.01),
        )
        for program in (convolution, rewritten):
            vmfb = program.with_suffix(".vmfb")
            iree_run.compile_vmfb(program, vmfb, (), compile_timeout_s)
            arms.append(Arm(str(vmfb), "main", inputs))
        ((rewritten_ps, convolution_ps),) = program_ab.generation(
            arms[0], arms[1:], directory, "conv-to-shifted-dots (a form timed alone)"
        )
    except UserError as error:
        return FormTiming(form, sources, None, None, str(error))
    return FormTiming(form, sources, convolution_ps, rewritten_ps)


def _filled(path: Path, shape: str, value: float) -> str:
    """A .npy file of `shape` (`2x9x8x5xf32`) holding `value` everywhere."""
    import numpy as np

    *dims, element = shape.split("x")
    if element not in _DTYPES:
        raise UserError(f"conv-to-shifted-dots: a form of {element} cannot be timed alone here")
    np.save(path, np.full([int(d) for d in dims], value, dtype=_DTYPES[element]))
    return str(path)


def _program(
    input_shape: str,
    kernel_shape: str,
    result_shape: str,
    strides: tuple[int, ...],
    padding: tuple[int, ...],
) -> str:
    """The convolution alone, its weights an argument, its profile in its
    location (the form the flow's StableHLO carries)."""
    top, bottom, left, right = padding
    x, w, y = (f"tensor<{shape}>" for shape in (input_shape, kernel_shape, result_shape))
    return f"""func.func @main(%x: {x}, %w: {w}) -> {y} {{
  %0 = "stablehlo.convolution"(%x, %w) <{{batch_group_count = 1 : i64,
      dimension_numbers = #stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>,
      feature_group_count = 1 : i64,
      padding = dense<[[{top}, {bottom}], [{left}, {right}]]> : tensor<2x2xi64>,
      window_strides = array<i64: {strides[0]}, {strides[1]}>}}> : ({x}, {w}) -> {y} loc(#conv)
  return %0 : {y}
}}
#conv = loc(fused<{{profiler_data = {{count = 1 : i64, dur = 1 : i64, max = 1 : i64,
    min = 1 : i64, p50 = 1 : i64, p95 = 1 : i64, self = 1 : i64, share = 1.0 : f64,
    source = "{_SOURCE}", total = 1 : i64, ts = 0 : i64}}}}>["{_SOURCE}"])
"""


def _selecting_profile() -> profile_document.IreeProfile:
    """A dispatch profile in which the convolution alone is slow (two of its
    picoseconds against TensorFlow's one): the pass rewrites it whatever the
    threshold."""
    site = profile_document.Site((_SOURCE,), 2, 1)
    dispatch = profile_document.Dispatch(
        "main_dispatch_0_conv", 1, 2, (_SOURCE,), 1, "compute", (site,)
    )
    return profile_document.IreeProfile(
        "convolution.vmfb", "main", 1, 0, 0.0, output_check.RTOL, output_check.ATOL, (dispatch,)
    )
