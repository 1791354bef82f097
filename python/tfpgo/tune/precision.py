"""--precision bf16: the lower precision a user may allow --tune to try (issue 61).

Off by default: without it, no candidate changes precision, and a program that
computes in another one is refused outright (`Workload.checked`). With it,
--tune may demote the inputs of contractions (matmuls, convolutions, or both:
IREE's `--iree-global-opt-demote-contraction-inputs-type=bf16`) to bfloat16
where the CPU has bfloat16 units (AVX512-BF16 or AMX), with data tiling and
IREE's ukernels, without which IREE 3.13 computes bfloat16 in float32 code
(docs/tuning.md). Sums stay float32. Such a program must keep its outputs
within `--max-output-error` of TensorFlow's float32 ones, relative to their
largest magnitude, on the profiled batch (`Workload.output_budget`); the A/B
then decides whether it is faster.
"""

from __future__ import annotations

from tfpgo.iree.output_check import DEMOTE_OPERATIONS, DEMOTE_TYPE, FLOAT32

BF16 = "bf16"
PRECISIONS = (FLOAT32, BF16)
DEFAULT_MAX_OUTPUT_ERROR = 0.01
# LLVM's names of the CPU features that compute bfloat16 dot products.
BF16_UNITS = ("avx512bf16", "amx-bf16")
# What IREE 3.13 needs to reach the bfloat16 units at all (docs/tuning.md).
WITH_UNITS = ("--iree-opt-data-tiling", "--iree-llvmcpu-enable-ukernels=all")


def demotion_flags(operations: str) -> tuple[str, ...]:
    """iree-compile's flags that compute `operations` (all, matmul, conv) on
    bfloat16 inputs, on the CPU's bfloat16 units."""
    return (f"{DEMOTE_TYPE}=bf16", f"{DEMOTE_OPERATIONS}={operations}", *WITH_UNITS)
