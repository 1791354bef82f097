"""Rule `threads`: one op at a time when the profile shows ops competing for
the cores.

TensorFlow runs independent ops concurrently on its inter-op pool (one thread
per core by default) while each op splits its own work over the intra-op pool
(also one thread per core). When ops overlap on a machine with few cores, each
op's intra-op work competes with the other op's: the step can get slower than
running them one after the other, each with all cores. The measured
concurrency is op self time (summed over threads) divided by the time in which
some op ran (the profile's span minus the time on no TF op); the span includes
the gaps between steps, so this is a lower bound of the concurrency while ops
run.

The rule fires when the concurrency reaches `MIN_CONCURRENCY` and proposes
`inter_op_parallelism_threads=1`. Thread pools are fixed when TensorFlow runs
its first op, so the candidate and the baseline each run in a worker process
(`tfpgo.proposer.worker`).
"""

from __future__ import annotations

import os

from tfpgo.analysis import Analysis
from tfpgo.proposer.proposal import Evidence, EvidenceKind, Proposal

RULE = "threads"
MIN_CONCURRENCY = 1.2


def propose(analysis: Analysis) -> list[Proposal]:
    found = concurrency_evidence(analysis)
    if found is None:
        return []
    concurrency, evidence = found
    cores = os.cpu_count() or 1
    return [
        Proposal(
            rule=RULE,
            change="run one op at a time: tf.config.threading inter_op_parallelism_threads=1 "
            "(intra-op pool unchanged)",
            reason=f"on average at least {concurrency:.2f} ops ran at once (the rule fires at "
            f"{MIN_CONCURRENCY}): concurrent ops share the intra-op threads of {cores} cores",
            evidence=(evidence,),
            worker_flags=("--inter-op", "1"),
            # the same kernels on the same intra-op pool: the same numbers, exactly
            rtol=0.0,
            atol=0.0,
        )
    ]


def concurrency_evidence(analysis: Analysis) -> tuple[float, Evidence] | None:
    """The measured concurrency (see the module doc) and its evidence, or None
    when it stays under MIN_CONCURRENCY: the one reading for the thread rules."""
    totals = analysis.totals
    busy = totals.wall_ps - totals.non_op_ps
    if busy <= 0 or totals.op_self_ps <= 0:
        return None
    concurrency = totals.op_self_ps / busy
    if concurrency < MIN_CONCURRENCY:
        return None
    cores = os.cpu_count() or 1
    evidence = Evidence(
        EvidenceKind.CONCURRENCY,
        "ops running at once",
        concurrency,
        f"op self time {totals.op_self_ps / 1e9:.1f} ms over "
        f"{busy / 1e9:.1f} ms with some op running; {cores} cores",
    )
    return concurrency, evidence
