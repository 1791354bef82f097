"""Rule `auto_clustering`: XLA auto-clustering, the milder alternative to
`jit_compile`, on the same evidence.

`jit_compile=True` compiles the whole step or fails; auto-clustering lets
TensorFlow's `MarkForCompilationPass` cut the graph into the clusters XLA can
compile and run the rest with TF kernels (`cluster_N/_XlaRun` in the trace).
On CPU it needs two of TensorFlow's XLA flags, read when TensorFlow loads
(`TF_XLA_FLAGS="--tf_xla_auto_jit=2 --tf_xla_cpu_global_jit"`, the same as
`tf.config.optimizer.set_jit("autoclustering")` plus the CPU switch), so
baseline and candidate each run in a worker process (`--auto-jit`). Clusters
draw random numbers with XLA's generator: on a step with dropout the numerics
are not comparable (`tfpgo.proposer.numerics`).
"""

from __future__ import annotations

from tfpgo.analysis import Analysis
from tfpgo.proposer.jit_compile import MIN_SHARE, fusion_evidence
from tfpgo.proposer.proposal import Proposal

RULE = "auto_clustering"
XLA_FLAGS = ("--tf_xla_auto_jit=2", "--tf_xla_cpu_global_jit")


def propose(analysis: Analysis) -> list[Proposal]:
    found = fusion_evidence(analysis)
    if found is None:
        return []
    evidence, figures = found
    return [
        Proposal(
            rule=RULE,
            change="let XLA compile the clusters it can, TF kernels run the rest: "
            f"TF_XLA_FLAGS='{' '.join(XLA_FLAGS)}'",
            reason=f"{figures} (the rule fires at {MIN_SHARE:.0%} of any): fusion may help, "
            "and auto-clustering keeps what XLA cannot compile on TF's kernels",
            evidence=evidence,
            worker_flags=("--auto-jit",),
            other_random_numbers=True,
        )
    ]
