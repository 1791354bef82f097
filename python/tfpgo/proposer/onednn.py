"""Rule `onednn`: oneDNN's kernels for a step dominated by matrix products and
convolutions that ran without them.

TensorFlow's x86 builds carry oneDNN kernels for MatMul, Conv2D and their
gradients, but turn them on by default only on CPUs with the newer vector
extensions; elsewhere `TF_ENABLE_ONEDNN_OPTS=1` turns them on. The op profile
tells which ran: oneDNN's kernels carry the `_Mkl` prefix (`tfpgo.analysis.
op_type` folds them onto the TF op type, the kernel rows keep the name).

The rule fires when matrix products and convolutions (op types containing
`MatMul` or `Conv`) take at least `MIN_SHARE` of op self time and no kernel
of the profile is a oneDNN one. A profile that already ran oneDNN kernels gets
no proposal: oneDNN is kept. The setting is read when TensorFlow loads, so
baseline and candidate each run in a worker process (`tfpgo.proposer.worker`).
oneDNN changes float round-off only (TensorFlow's own notice says as much), not
what is computed: the numerics check uses the default tolerance.
"""

from __future__ import annotations

from tfpgo.analysis import Analysis
from tfpgo.analysis.op_type import OpTypeRow
from tfpgo.proposer.proposal import Evidence, EvidenceKind, Proposal

RULE = "onednn"
MIN_SHARE = 0.5
TOP_EVIDENCE = 5
_ONEDNN_KERNEL = "_Mkl"


def dense_compute(analysis: Analysis) -> tuple[list[OpTypeRow], float]:
    """The matrix-product and convolution op types (hottest first) and their share
    of op self time: what this rule and the mixed-precision rule act on."""
    dense = [row for row in analysis.op_types if "MatMul" in row.op_type or "Conv" in row.op_type]
    return dense, sum(row.self_ps for row in dense) / analysis.totals.op_self_ps


def propose(analysis: Analysis) -> list[Proposal]:
    op_self = analysis.totals.op_self_ps
    if op_self <= 0:
        return []
    if any(k.kernel.startswith(_ONEDNN_KERNEL) for row in analysis.op_types for k in row.kernels):
        return []  # oneDNN already runs: keep it
    dense, share = dense_compute(analysis)
    if share < MIN_SHARE:
        return []
    evidence = [
        Evidence(
            EvidenceKind.OP_TYPE,
            "matrix products and convolutions",
            share,
            f"{len(dense)} op types, no oneDNN (_Mkl) kernel in the profile",
        )
    ]
    for row in dense[:TOP_EVIDENCE]:  # op_types come by self time, descending
        kernels = ", ".join(k.kernel for k in row.kernels)
        evidence.append(
            Evidence(EvidenceKind.OP_TYPE, row.op_type, row.self_ps / op_self, f"kernel {kernels}")
        )
    return [
        Proposal(
            rule=RULE,
            change="run oneDNN's kernels: TF_ENABLE_ONEDNN_OPTS=1",
            reason=f"matrix products and convolutions take {share:.0%} of op self time (the "
            f"rule fires at {MIN_SHARE:.0%}) and ran on TensorFlow's own kernels",
            evidence=tuple(evidence),
            worker_flags=("--onednn", "1"),
        )
    ]
