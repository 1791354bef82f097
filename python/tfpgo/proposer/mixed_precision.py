"""Rule `mixed_precision`: compute matrix products and convolutions in
bfloat16 when they dominate the step and the CPU computes bfloat16 natively.

Keras's `mixed_bfloat16` policy keeps the variables in float32 and computes
the layers in bfloat16: half the memory traffic, and on CPUs with bfloat16
instructions (AVX512_BF16, AMX) faster products. Without them TensorFlow
converts back and forth and the step gets slower, so the rule asks oneDNN
what it found at run time (`ONEDNN_VERBOSE=1` prints the instruction set it
dispatches to, `isa:...`; the wheel's build flags say nothing about the CPU
it runs on) and stays silent when bfloat16 is not in it.

The rule fires when op types containing `MatMul` or `Conv` take at least
`MIN_SHARE` of op self time. The policy applies when the model is built, so
baseline and candidate each load the model in a worker process
(`tfpgo.proposer.worker --precision mixed_bfloat16`), built-in models and
`.py` hooks only.

Tolerance from the dtype: bfloat16 keeps 8 significant bits (machine epsilon
2^-7); a layer's products and sums round to it once per stored result, and the
errors of a step's layers partly cancel. The check allows `ROUNDINGS` epsilons
relative (6.4 × 2^-7 = 0.05) on the first step's outputs. The loss of a
training step is computed before its update, so a loss scale (which scales
only the gradients) does not enter.
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys

from tfpgo.analysis import Analysis
from tfpgo.proposer.onednn import dense_compute
from tfpgo.proposer.proposal import Evidence, EvidenceKind, Proposal

RULE = "mixed_precision"
MIN_SHARE = 0.5
POLICY = "mixed_bfloat16"
BFLOAT16_EPSILON = 2.0**-7
ROUNDINGS = 6.4
RTOL = ROUNDINGS * BFLOAT16_EPSILON
TOP_EVIDENCE = 3
_ISA_PREFIX = "onednn_verbose,v1,info,cpu,isa:"
_PROBE = "import tensorflow as tf; a = tf.ones((16, 16)); tf.linalg.matmul(a, a).numpy()"


def propose(analysis: Analysis) -> list[Proposal]:
    op_self = analysis.totals.op_self_ps
    if op_self <= 0:
        return []
    dense, share = dense_compute(analysis)
    isa = onednn_isa()
    if share < MIN_SHARE or "bfloat16" not in isa:
        return []
    evidence = [
        Evidence(EvidenceKind.OP_TYPE, "matrix products and convolutions", share),
        Evidence(EvidenceKind.CPU, "oneDNN's instruction set at run time", 1.0, isa),
    ]
    evidence += [
        Evidence(EvidenceKind.OP_TYPE, row.op_type, row.self_ps / op_self, f"{row.count} runs")
        for row in dense[:TOP_EVIDENCE]
    ]
    return [
        Proposal(
            rule=RULE,
            change=f"compute in bfloat16, variables in float32: Keras policy {POLICY}",
            reason=f"matrix products and convolutions take {share:.0%} of op self time (the "
            f"rule fires at {MIN_SHARE:.0%}) and oneDNN runs bfloat16 natively here; "
            f"outputs checked within {ROUNDINGS:g} bfloat16 epsilons ({RTOL:.3g} relative)",
            evidence=tuple(evidence),
            worker_flags=("--precision", POLICY),
            rtol=RTOL,
        )
    ]


@functools.cache
def onednn_isa() -> str:
    """What oneDNN reports as its instruction set when TensorFlow runs a matmul in a
    fresh process (`ONEDNN_VERBOSE=1`); "" when it reports none (oneDNN off)."""
    env = dict(os.environ, ONEDNN_VERBOSE="1", TF_CPP_MIN_LOG_LEVEL="3")
    env.setdefault("PYTHONPATH", os.pathsep.join(p for p in sys.path if p))
    try:
        done = subprocess.run(
            [sys.executable, "-c", _PROBE], env=env, capture_output=True, text=True, timeout=300
        )
    except subprocess.TimeoutExpired:
        return ""
    for line in (done.stdout + done.stderr).splitlines():
        if line.startswith(_ISA_PREFIX):
            return line[len(_ISA_PREFIX) :].strip()
    return ""
