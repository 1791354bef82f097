"""Rule `layout_optimizer`: Grappler's layout optimizer off when transposes are hot.

Grappler's layout optimizer (`tensorflow/core/grappler/optimizers/
generic_layout_optimizer.cc`) converts layout-sensitive ops to the device's
preferred layout and inserts `Transpose` ops around them; on a CPU it may
turn NCHW convolutions to NHWC. When transposes take a large share of op
time, the step may run faster without the conversion (the kernels then run
in the model's own layout). Transposes the model itself asks for stay either
way: the A/B measurement decides. The option is read when a function's graph
is optimized, so baseline and candidate each run in a worker process
(`--grappler layout_optimizer=off`). Kernels in another layout sum in
another order: the default tolerance applies.
"""

from __future__ import annotations

from tfpgo.analysis import Analysis
from tfpgo.proposer.proposal import Evidence, EvidenceKind, Proposal

RULE = "layout_optimizer"
MIN_SHARE = 0.1
TRANSPOSES = frozenset({"Transpose", "ConjugateTranspose"})


def propose(analysis: Analysis) -> list[Proposal]:
    op_self = analysis.totals.op_self_ps
    rows = [row for row in analysis.op_types if row.op_type in TRANSPOSES]
    share = sum(row.self_ps for row in rows) / op_self if op_self > 0 else 0.0
    if share < MIN_SHARE:
        return []
    evidence = tuple(
        Evidence(EvidenceKind.OP_TYPE, row.op_type, row.self_ps / op_self, f"{row.count} runs")
        for row in rows
    )
    return [
        Proposal(
            rule=RULE,
            change="Grappler's layout optimizer off: "
            "tf.config.optimizer.set_experimental_options({'layout_optimizer': False})",
            reason=f"transposes take {share:.0%} of op self time (the rule fires at "
            f"{MIN_SHARE:.0%}); the layout optimizer inserts them around layout-sensitive ops",
            evidence=evidence,
            worker_flags=("--grappler", "layout_optimizer=off"),
        )
    ]
