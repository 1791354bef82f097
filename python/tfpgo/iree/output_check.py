"""A program's outputs checked: their largest difference from the expected ones
(TensorFlow's, or the original program's) and the tolerance they must keep."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tfpgo.errors import UserError

# Outputs must agree with TensorFlow's within RTOL relative + ATOL: float32
# kernels of another compiler reassociate sums.
RTOL = 1e-3
ATOL = 1e-5
# Beyond that, an output may differ by this many times what XLA's own float32
# sums of the same step do (a batch-norm training step's gradients reassociate
# over the batch and the image, and two compilers land ~1e-4 apart): within it
# the program is sound, beyond it IREE computes something else.
REASSOCIATION_FACTOR = 10.0
# Whose outputs a program's are compared with: TensorFlow's step, or (a step that
# draws random numbers, which IREE draws with other bits) the original program's.
TENSORFLOW, ORIGINAL_PROGRAM = "TensorFlow's", "the original program's"
# What a program computes in: float32, unless its iree-compile flags demote the
# inputs of contractions (--precision bf16, tfpgo.tune.precision).
FLOAT32 = "float32"
DEMOTE_TYPE = "--iree-global-opt-demote-contraction-inputs-type"
DEMOTE_OPERATIONS = "--iree-global-opt-demote-contraction-inputs-operations"
_FAMILIES = {"all": "contractions", "matmul": "matmuls", "conv": "convolutions"}


def program_precision(flags: Sequence[str]) -> str:
    """What a program of these iree-compile flags computes in."""
    narrow = next((f.partition("=")[2] for f in flags if f.startswith(DEMOTE_TYPE + "=")), "")
    operations = next(
        (f.partition("=")[2] for f in flags if f.startswith(DEMOTE_OPERATIONS + "=")), ""
    )
    if not narrow or operations not in _FAMILIES:
        return FLOAT32
    return f"{narrow} inputs to {_FAMILIES[operations]}"


def compare_outputs(
    entry: str,
    outputs: Sequence[Any],
    expected: Sequence[Any],
    whose: str = TENSORFLOW,
    reassociation: Sequence[float] = (),
) -> float:
    """max |IREE - expected| over the outputs; a mismatch beyond RTOL/ATOL is one
    UserError line (OutputsDiffer) naming `whose` outputs were expected, unless
    it is within REASSOCIATION_FACTOR times `reassociation[i]`: how far another
    compiler's float32 sums of the same step land from TensorFlow's on output i
    (`jit_compile`'s, tfpgo.mlir.compiled_step), which says what reordering the
    sums does to this step."""
    import numpy as np

    for index, (got, want) in enumerate(zip(outputs, expected, strict=True)):
        want = np.asarray(want)
        if got.shape == want.shape and np.allclose(got, want, rtol=RTOL, atol=ATOL):
            continue
        difference = largest_difference((got,), (want,))
        oracle = reassociation[index] if index < len(reassociation) else 0.0
        if got.shape == want.shape and difference <= REASSOCIATION_FACTOR * oracle:
            continue
        beside = f"; jit_compile's own max |Δ| {oracle:.3g}" if oracle else ""
        raise OutputsDiffer(
            f"iree level: output {index} of {entry} differs from {whose} "
            f"(max |Δ| {difference:.3g}{beside}, shapes {got.shape} and {want.shape}, tolerance "
            f"{RTOL:g} relative + {ATOL:g}"
            + (f" or {REASSOCIATION_FACTOR:g}x jit_compile's" if oracle else "")
            + ")"
        )
    return largest_difference(outputs, expected)


def relative_error(outputs: Sequence[Any], expected: Sequence[Any]) -> float:
    """max |got - want| over all outputs, over the largest |want| (inf where
    shapes differ)."""
    return relative_to(largest_difference(outputs, expected), expected)


def relative_to(difference: float, expected: Sequence[Any]) -> float:
    """`difference` as a share of the largest |value| of `expected` (itself
    where every value is 0)."""
    import numpy as np

    scale = max((float(np.abs(np.asarray(v)).max()) for v in expected if np.size(v)), default=0.0)
    return difference / scale if scale else difference


def within_budget(
    entry: str, outputs: Sequence[Any], expected: Sequence[Any], budget: float
) -> float:
    """max |got - want| of a program computing in a lower precision, whose
    outputs may differ from the expected float32 ones by `budget` of their
    largest magnitude (--max-output-error); beyond it, one line saying so."""
    error = relative_error(outputs, expected)
    if error > budget:
        raise OutputsDiffer(
            f"iree level: the outputs of {entry} in a lower precision differ from the "
            f"float32 ones by {error:.3g} of their largest magnitude, beyond --max-output-error "
            f"{budget:g}: the program is not kept (a larger budget would let it be timed)"
        )
    return largest_difference(outputs, expected)


def largest_difference(outputs: Sequence[Any], expected: Sequence[Any]) -> float:
    """max |IREE - expected| over outputs of the same shapes (inf where they differ)."""
    import numpy as np

    worst = 0.0
    for got, want in zip(outputs, expected, strict=True):
        want = np.asarray(want)
        if got.shape != want.shape:
            return float("inf")
        worst = max(worst, float(np.abs(got - want).max()) if got.size else 0.0)
    return worst


class OutputsDiffer(UserError):
    """IREE's outputs are not the expected ones: `what` says which and by how much;
    the line blames IREE unless a caller knows another cause."""

    def __init__(self, what: str) -> None:
        super().__init__(f"{what}: IREE computes something else; report it with model.iree.vmfb")
        self.what = what

    def __reduce__(self) -> tuple[type[OutputsDiffer], tuple[str]]:
        return OutputsDiffer, (self.what,)  # as it was made (pickled by a Dask worker)
