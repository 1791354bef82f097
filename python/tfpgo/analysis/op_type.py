"""Breakdown by op type: which kinds of ops take the time (MindSpore's op-type
analyser), each split into the kernels that ran it.

The op profile records the kernel as executed (the trace's op type). With
oneDNN, TensorFlow's layout pass renames kernels (`MatMul` runs as
`_MklMatMul`, the remapper's `_FusedMatMul` as `_MklNativeFusedMatMul`);
`tf_op_type` undoes that renaming, so one row says "MatMul" whichever kernel
ran it. An op name executed under several kernels (rare: a name reused across
function instantiations) counts under the kernels joined by "+": the op
profile does not split its time between them.
"""

from __future__ import annotations

from dataclasses import dataclass

from tfpgo.attribution.op_profile import OpProfile

_ONEDNN_PREFIXES = ("_MklNative", "_Mkl")
# oneDNN's layout conversion kernels have no TensorFlow op of their own.
_ONEDNN_ONLY = frozenset({"_MklToTf", "_MklInputConversion"})
# Public TensorFlow ops whose name starts with "Fused"; every other "Fused..."
# behind a oneDNN prefix is the remapper's internal `_Fused...` op.
_PUBLIC_FUSED = ("FusedBatchNorm", "FusedPadConv2D", "FusedResizeAndPadConv2D")


def tf_op_type(kernel: str) -> str:
    """The TensorFlow op a kernel implements: `_MklNativeFusedMatMul` -> `_FusedMatMul`."""
    if kernel in _ONEDNN_ONLY:
        return kernel
    for prefix in _ONEDNN_PREFIXES:
        if kernel.startswith(prefix) and len(kernel) > len(prefix):
            op = kernel[len(prefix) :]
            if op.startswith("Fused") and not op.startswith(_PUBLIC_FUSED):
                return "_" + op
            return op
    return kernel


@dataclass(frozen=True)
class KernelRow:
    kernel: str
    self_ps: int
    total_ps: int
    count: int  # executions
    ops: int  # distinct runtime names


@dataclass(frozen=True)
class OpTypeRow:
    op_type: str
    self_ps: int
    total_ps: int
    count: int
    ops: int
    kernels: tuple[KernelRow, ...]  # by self time, descending


def op_type_breakdown(profile: OpProfile) -> tuple[OpTypeRow, ...]:
    """One row per TF op type, by self time descending (then name)."""
    by_kernel: dict[str, list[int]] = {}
    for op in profile.ops:
        sums = by_kernel.setdefault("+".join(op.op_types), [0, 0, 0, 0])
        sums[0] += op.self_ps
        sums[1] += op.total_ps
        sums[2] += op.count
        sums[3] += 1
    grouped: dict[str, list[KernelRow]] = {}
    for kernel, sums in by_kernel.items():
        op_type = "+".join(tf_op_type(part) for part in kernel.split("+"))
        grouped.setdefault(op_type, []).append(KernelRow(kernel, *sums))
    rows = [
        OpTypeRow(
            op_type,
            sum(k.self_ps for k in kernels),
            sum(k.total_ps for k in kernels),
            sum(k.count for k in kernels),
            sum(k.ops for k in kernels),
            tuple(sorted(kernels, key=lambda k: (-k.self_ps, k.kernel))),
        )
        for op_type, kernels in grouped.items()
    ]
    return tuple(sorted(rows, key=lambda row: (-row.self_ps, row.op_type)))
