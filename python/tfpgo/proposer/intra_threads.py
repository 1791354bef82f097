"""Rule `intra_threads`: fewer intra-op threads per op when ops run at once.

Each op splits its work over the intra-op pool, one thread per core by
default; when the profile shows `c` ops running at once (the concurrency that
`threads` measures), `c` ops shard onto all cores each and oversubscribe them.
The alternative to running one op at a time (`threads`) keeps the ops
concurrent and gives each its share of the cores: `intra_op_parallelism_threads
= cores // ceil(c)`. Fewer shards reorder float sums, so the numerics check
uses the default tolerance, not an exact one. The pools are fixed when
TensorFlow runs its first op: baseline and candidate run in worker processes.
"""

from __future__ import annotations

import math
import os

from tfpgo.analysis import Analysis
from tfpgo.proposer.proposal import Proposal
from tfpgo.proposer.threads import MIN_CONCURRENCY, concurrency_evidence

RULE = "intra_threads"


def propose(analysis: Analysis) -> list[Proposal]:
    found = concurrency_evidence(analysis)
    cores = os.cpu_count() or 1
    if found is None or cores < 2:
        return []
    concurrency, evidence = found
    threads = max(1, cores // math.ceil(concurrency))
    return [
        Proposal(
            rule=RULE,
            change=f"intra-op threads {cores} → {threads} per op: tf.config.threading "
            f"intra_op_parallelism_threads={threads} (ops stay concurrent)",
            reason=f"on average at least {concurrency:.2f} ops ran at once (the rule fires at "
            f"{MIN_CONCURRENCY}), each sharding onto all {cores} cores",
            evidence=(evidence,),
            worker_flags=("--intra-op", str(threads)),
        )
    ]
