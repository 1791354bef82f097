"""Rule `remapper`: Grappler's remapper back on when products and their bias
and activation run as separate ops while it is off.

Grappler's remapper (`tensorflow/core/grappler/optimizers/remapper.cc`) fuses
`MatMul`/`Conv2D` + `BiasAdd` + an activation into one kernel (`_FusedMatMul`,
`_FusedConv2D`, oneDNN's `_MklFused*`): one pass over the output instead of
three. It is on by default; a process that turned it off
(`tf.config.optimizer.set_experimental_options({'remapping': False})`) runs
the chains unfused. The rule fires when it is off here and `BiasAdd` plus
activations take `MIN_SHARE` of op self time next to unfused products. The
option is read when a function's graph is optimized: baseline and candidate
run in worker processes, the candidate with `--grappler remapping=on`
(applied after the model is loaded, so a model that turns it off is
overridden in the candidate only).
"""

from __future__ import annotations

from tfpgo.analysis import Analysis
from tfpgo.proposer.proposal import Evidence, EvidenceKind, Proposal

RULE = "remapper"
MIN_SHARE = 0.1
PRODUCTS = frozenset({"MatMul", "Conv2D", "DepthwiseConv2dNative", "BatchMatMulV2"})
CHAINED = frozenset({"BiasAdd", "Relu", "Relu6", "Elu", "LeakyRelu", "Tanh", "Sigmoid"})


def propose(analysis: Analysis) -> list[Proposal]:
    op_self = analysis.totals.op_self_ps
    if op_self <= 0 or remapping_enabled():
        return []
    chained = [row for row in analysis.op_types if row.op_type in CHAINED]
    products = [row for row in analysis.op_types if row.op_type in PRODUCTS]
    share = sum(row.self_ps for row in chained) / op_self
    if share < MIN_SHARE or not products:
        return []
    evidence = (
        Evidence(EvidenceKind.OP_TYPE, "BiasAdd and activations as their own ops", share),
        *(
            Evidence(EvidenceKind.OP_TYPE, row.op_type, row.self_ps / op_self, f"{row.count} runs")
            for row in (*products, *chained)
        ),
    )
    return [
        Proposal(
            rule=RULE,
            change="Grappler's remapper on: "
            "tf.config.optimizer.set_experimental_options({'remapping': True})",
            reason=f"BiasAdd and activations run as separate ops, {share:.0%} of op self time "
            f"(the rule fires at {MIN_SHARE:.0%}), while the remapper is off in this process",
            evidence=evidence,
            worker_flags=("--grappler", "remapping=on"),
        )
    ]


def remapping_enabled() -> bool:
    """Grappler's remapper setting in this process (on unless turned off)."""
    import tensorflow as tf

    return tf.config.optimizer.get_experimental_options().get("remapping", True) is not False
