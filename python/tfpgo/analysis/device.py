"""The device view of an op profile: the same breakdowns over device time.

On a GPU the host only launches what the device runs, so where the time goes is
a question about device time. `device_view` is the op profile with each entry's
device time in place of its host time (`self_ps` = `total_ps` = `device_self_ps`,
`count` = `device_count`) and the totals to match (`op_self_ps` = the attributed
device time, `non_op_ps` = the device's idle time inside the steps), so that the
phase, scope and op-type analysers and the profile diff run on it unchanged: one
rule each, for host and device time alike. The view itself has no device time
left (its device totals are 0): its time is the device's.
"""

from __future__ import annotations

import dataclasses

from tfpgo.attribution.op_profile import Durations, OpProfile, OpStats, Totals

_DEVICE_TOTALS = tuple(f.name for f in dataclasses.fields(Totals) if f.name.startswith("device_"))


def device_view(profile: OpProfile) -> OpProfile:
    """`profile` with device time as its time (see the module doc)."""
    ops = tuple(_device_entry(op) for op in profile.ops if op.device_count)
    totals = profile.totals
    return dataclasses.replace(
        profile,
        ops=ops,
        totals=dataclasses.replace(
            totals,
            op_self_ps=totals.device_attributed_ps,
            op_total_ps=totals.device_attributed_ps,
            non_op_ps=totals.device_idle_ps,
            op_events=sum(op.count for op in ops),
            **{name: 0 for name in _DEVICE_TOTALS},
        ),
        device_kernels=(),
        device_copies=(),
        device_steps=(),
    )


def _device_entry(op: OpStats) -> OpStats:
    return dataclasses.replace(
        op,
        count=op.device_count,
        total_ps=op.device_self_ps,
        self_ps=op.device_self_ps,
        mean_ps=op.device_self_ps // op.device_count,
        durations_ps=Durations(),
        device_self_ps=0,
        device_count=0,
        devices=(),
    )
