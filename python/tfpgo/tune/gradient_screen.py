"""Each filter gradient's forms timed alone, the fastest taken: the lowering's
chooser for tfpgo.mlir.conv_gradients.

The forms (tfpgo.mlir.conv_gradient_forms) trade the patches' traffic (as many
times the input as the kernel has taps) against matmuls a tap with a small
product each; which wins depends on the shapes (patches on 32x16x16x16 to 64
channels, the taps by 1.7x on 8x64x64x16 to 16, both measured here); a
depthwise gradient's two sums likewise (per sample faster at stride 2, whole at
stride 1). So each distinct gradient is compiled alone in every form that
computes it, the programs timed in one process called in turn
(tfpgo.tune.program_ab's `generation`: each form's paired ratio to the default,
the patches or the per-sample sum), and another form is taken only when it is
faster by more than the A/B's noise. The largest gradients go first; those the
budget leaves untimed, or IREE cannot compile or run, keep the default, and say
why.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from tfpgo.errors import UserError
from tfpgo.iree import run as iree_run
from tfpgo.iree.alternation import Arm
from tfpgo.mlir.conv_gradient_forms import FilterGradient, FormChoice, gradient_function
from tfpgo.mlir.conv_gradients import FormChooser
from tfpgo.tune import program_ab
from tfpgo.tune.form_cache import FormCache
from tfpgo.tune.program_ab import SCREEN_MARGIN

# How long the lowering may spend timing forms, and one form's compile.
SCREEN_BUDGET_S = 120.0
COMPILE_TIMEOUT_S = 120.0
_DTYPES = {"f32": "float32", "f64": "float64", "f16": "float16"}


def chooser(budget_s: float = SCREEN_BUDGET_S, cache: FormCache | None = None) -> FormChooser:
    """A `FormChooser` timing forms for at most `budget_s` seconds a call; with
    a `cache`, a gradient timed before on this target takes the form kept there,
    and each newly timed choice is kept."""

    def choose(gradients: tuple[FilterGradient, ...]) -> dict[FilterGradient, FormChoice]:
        deadline = time.monotonic() + budget_s
        choices = {}
        with tempfile.TemporaryDirectory(prefix="tfpgo_gradient_forms_") as scratch:
            for index, gradient in enumerate(sorted(gradients, key=_work, reverse=True)):
                if cache is not None and (kept := cache.get(gradient)) is not None:
                    choices[gradient] = kept
                    continue
                if time.monotonic() >= deadline:
                    why = f"forms not timed: the {budget_s:.0f} s for timing them were spent"
                    choices[gradient] = FormChoice(gradient.forms()[0], why=why)
                    continue
                directory = Path(scratch) / f"gradient_{index}"
                directory.mkdir()
                choices[gradient] = time_forms(gradient, directory)
                if cache is not None and not choices[gradient].why:
                    cache.put(gradient, choices[gradient])
        return choices

    return choose


def _work(gradient: FilterGradient) -> int:
    """Multiply-adds of the gradient: what orders them, largest first."""
    n, _, _, c = gradient.input_shape
    _, gh, gw, o = gradient.grad_shape
    products = o if gradient.depthwise else o * c
    return n * gh * gw * products * gradient.taps[0] * gradient.taps[1]


def time_forms(gradient: FilterGradient, directory: Path) -> FormChoice:
    """`gradient` in each of its forms, compiled and timed alone against its
    default (the first): the fastest, with every form's time an invocation."""
    forms = gradient.forms()
    default = forms[0]
    try:
        if gradient.element not in _DTYPES:
            raise UserError(f"a {gradient.element} gradient cannot be timed alone here")
        inputs = (
            _filled(directory / "input.npy", gradient.input_shape, gradient.element),
            _filled(directory / "grad.npy", gradient.grad_shape, gradient.element),
        )
        arms = []
        for index, form in enumerate(forms):
            program = directory / f"form_{index}.mlir"
            program.write_text(gradient_function(gradient, form, "main"))
            vmfb = program.with_suffix(".vmfb")
            iree_run.compile_vmfb(program, vmfb, (), COMPILE_TIMEOUT_S)
            arms.append(Arm(str(vmfb), "main", inputs))
        timed = program_ab.generation(arms[0], arms[1:], directory, "a filter gradient's forms")
    except UserError as error:
        return FormChoice(default, why=f"forms not timed: {error}")
    # Each form at its paired ratio to the default, times the default's median.
    default_ps = timed[0][1]
    others = tuple(
        (form, ps / beside * default_ps)
        for form, (ps, beside) in zip(forms[1:], timed, strict=True)
    )
    fastest_form, fastest = min(others, key=lambda pair: pair[1])
    chosen = fastest_form if fastest < (1 - SCREEN_MARGIN) * default_ps else default
    return FormChoice(chosen, ((default, default_ps), *others))


def _filled(path: Path, shape: tuple[int, ...], element: str) -> str:
    """A .npy file of `shape` holding values of a gradient's magnitude."""
    import numpy as np

    rng = np.random.default_rng(len(shape))
    np.save(path, rng.standard_normal(shape).astype(_DTYPES[element]))
    return str(path)
