"""An IREE dispatch profile (`iree_profile.json`) read as an op profile, so that
`compare` diffs two compiled programs as it diffs two TensorFlow runs.

Two views, one time: `by="op"` gives each tf node the IREE time its dispatches'
parts put on it (the profile's `ops`: equal integer parts of each dispatch);
`by="dispatch"` gives each dispatch function its own time. Dispatch time no tf
node carries is the view's time on no op (`non_op_ps`), as a TensorFlow run's
time between ops is: Σ self + non_op_ps is every profiled dispatch picosecond.
Counts are the profiled runs (`op`) or the dispatch's invocations (`dispatch`).
A dispatch profile holds totals, not single executions: an entry's minimum,
maximum and percentiles are 0 (not measured; the diff reads none of them).
"""

from __future__ import annotations

from tfpgo.attribution.op_profile import Durations, OpProfile, OpStats, Totals
from tfpgo.iree.profile_document import IreeProfile

VIEWS = ("op", "dispatch")


def iree_view(profile: IreeProfile, by: str) -> OpProfile:
    if by == "op":
        timed = [(name, "tf", profile.runs, ps) for name, ps in profile.op_ps.items()]
    else:
        timed = [(d.name, "dispatch", d.count, d.total_ps) for d in profile.dispatches]
    ops = tuple(_entry(name, kind, count, ps) for name, kind, count, ps in timed)
    attributed = sum(op.self_ps for op in ops)
    totals = Totals(
        wall_ps=profile.dispatch_ps,
        op_total_ps=attributed,
        op_self_ps=attributed,
        non_op_ps=profile.dispatch_ps - attributed,
        op_events=sum(op.count for op in ops),
        events=sum(d.count for d in profile.dispatches),
    )
    return OpProfile(profile.source, (), tuple(range(profile.runs)), totals, ops)


def _entry(name: str, kind: str, count: int, ps: int) -> OpStats:
    mean = ps // count if count else 0
    return OpStats(name, (kind,), count, ps, ps, mean, 0, 0, 0, 0, 0, Durations())
