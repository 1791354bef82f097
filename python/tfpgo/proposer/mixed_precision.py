"""Rule `mixed_precision`: compute matrix products and convolutions in
bfloat16 when they dominate the step.

Keras's `mixed_bfloat16` policy keeps the variables in float32 and computes
the layers in bfloat16: half the memory traffic, and on CPUs with bfloat16
instructions faster products. On CPUs without them TensorFlow converts back
and forth and the step gets slower; the A/B measurement decides.

The rule fires when op types containing `MatMul` or `Conv` take at least
`MIN_SHARE` of op self time. The policy applies when the model is built, so
baseline and candidate each load the model in a worker process
(`tfpgo.proposer.worker --precision mixed_bfloat16`), built-in models and
`.py` hooks only. bfloat16 keeps about 3 significant digits: the numerics
check compares the first step's outputs (a training step's loss) within
`RTOL` relative, and a candidate off by more is not measured.
"""

from __future__ import annotations

from tfpgo.analysis import Analysis
from tfpgo.proposer.onednn import dense_compute
from tfpgo.proposer.proposal import Evidence, EvidenceKind, Proposal

RULE = "mixed_precision"
MIN_SHARE = 0.5
RTOL = 5e-2
TOP_EVIDENCE = 3


def propose(analysis: Analysis) -> list[Proposal]:
    op_self = analysis.totals.op_self_ps
    if op_self <= 0:
        return []
    dense, share = dense_compute(analysis)
    if share < MIN_SHARE:
        return []
    evidence = [Evidence(EvidenceKind.OP_TYPE, "matrix products and convolutions", share)]
    evidence += [
        Evidence(EvidenceKind.OP_TYPE, row.op_type, row.self_ps / op_self, f"{row.count} runs")
        for row in dense[:TOP_EVIDENCE]
    ]
    return [
        Proposal(
            rule=RULE,
            change="compute in bfloat16, variables in float32: Keras policy mixed_bfloat16",
            reason=f"matrix products and convolutions take {share:.0%} of op self time (the "
            f"rule fires at {MIN_SHARE:.0%}); outputs checked within {RTOL:g} relative",
            evidence=tuple(evidence),
            worker_flags=("--precision", "mixed_bfloat16"),
            rtol=RTOL,
        )
    ]
