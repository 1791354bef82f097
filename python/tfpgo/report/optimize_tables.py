"""`--optimize` results as report content: the measured proposals, those not
applied, and the best candidate's profile diff. Presentation only: every
figure comes from the `OptimizeResult` (optimize.json)."""

from __future__ import annotations

from tfpgo.ab.result import interval_text
from tfpgo.proposer.blocks import judge_twice, second_text
from tfpgo.proposer.optimize import OptimizeResult
from tfpgo.proposer.proposal import EvidenceKind
from tfpgo.proposer.trials import (
    Difference,
    RivalTrial,
    Trial,
    advised,
    advised_rival,
    faster_rival,
    helps,
)

Table = tuple[str, list[str], list[list[str]]]

# The diff's step times come from profiled steps; the A/B ran without the profiler.
PROFILED_NOTE = (
    "the diff's step times are of profiled steps: the profiler's per-op cost weighs "
    "differently on the two steps (more on many TF ops than on few XLA kernels), so they "
    "can disagree with the A/B ratio, which is measured without the profiler and decides "
    "the verdict"
)

MEASURED_HEADER = [
    "proposal",
    "change",
    "evidence",
    "numerics",
    "step time A → B",
    "ratio B/A",
    "interval",
    "verdict",
]


def evidence_text(trial: Trial) -> str:
    parts = []
    for item in trial.evidence:
        ratio = item.kind is EvidenceKind.CONCURRENCY
        figure = f"{item.share:.2f}" if ratio else f"{item.share:.1%}"
        parts.append(f"{item.subject} {figure}" + (f" ({item.detail})" if item.detail else ""))
    return "; ".join(parts)


def method_text(result: OptimizeResult) -> str:
    settings = result.settings
    budget = (
        f" Budget {result.budget_s / 60:g} minutes: proposals in the order of the op-time "
        "share their evidence names, each started only with room for its measurement."
        if result.budget_s is not None
        else ""
    )
    return (
        f"Baseline `{result.baseline}` against each candidate: {settings.repetitions} blocks of "
        f"{settings.steps} steps an arm, interleaved AB, BA, ... after {settings.warmup} warmup "
        "steps each. Ratio: candidate / baseline, the 20% trimmed mean of each repetition's "
        "log-ratio of block mean step times; interval: Student's t on it (Tukey-McLaughlin); "
        "helps / hurts only when the whole "
        f"interval is below / above 1 and the ratio differs from 1 by more than "
        f"{settings.noise:.0%}; a gain between {settings.floor:.0%} and {settings.noise:.0%} "
        "is measured a second time and helps only when both A/Bs help at "
        f"{settings.floor:.0%}. A rule's narrowed proposals are tests of one question: each "
        "is judged at Holm's level (the interval's confidence). A rival is advised over a "
        "candidate only when their interval says it is faster; when it holds 1, no "
        "difference, and the simpler change (fewer ops under XLA) is advised. Samples in "
        f"optimize.json.{budget}"
    )


def rival_text(rival: RivalTrial) -> str:
    """The candidate (B) against one rival: ratio, interval and the difference."""
    if rival.result is None or rival.difference is None:
        return f"{rival.rule} not timed: {rival.numerics}"
    difference = {
        Difference.RIVAL_FASTER: f"{rival.rule} faster",
        Difference.NO_DIFFERENCE: "no difference",
        Difference.CANDIDATE_FASTER: "B faster",
    }[rival.difference]
    outcome = rival.result
    return (
        f"against {rival.rule} (B / it): {outcome.ratio:.3f} {interval_text(outcome)}, {difference}"
    )


def advice_text(trial: Trial) -> str:
    """What a trial with rivals advises, and why (tfpgo.proposer.trials)."""
    instead = advised_rival(trial)
    if advised(trial):
        same = [r.rule for r in trial.rivals if r.difference is Difference.NO_DIFFERENCE]
        if not same:
            return "advised: faster than the baseline and every rival"
        return (
            f"advised: it helps, and no difference from {', '.join(same)}: the simpler "
            "change (fewer ops under XLA)"
        )
    if instead is not None and instead.own_result is not None:
        own = instead.own_result
        why = "measured faster" if helps(trial) else "B does not help"
        return (
            f"not advised: {instead.rule} helps against the baseline ({own.ratio:.3f} "
            f"{interval_text(own)}; numerics: {instead.numerics}) and {why}: "
            f"{instead.rule} advised instead"
        )
    faster = faster_rival(trial)
    if faster is not None:
        return f"not advised: {faster.rule} is faster"
    return "not advised: no measured gain over the baseline"


def verdict_text(trial: Trial) -> str:
    """The verdict against the baseline and, for a trial with rivals, against each
    and what is advised."""
    assert trial.result is not None  # measured trials only
    parts = [trial.result.verdict.value]
    if trial.samples and trial.samples_again:
        # Judged at the floor and level it counted at; the other A/B's ratio is added.
        result = trial.result
        _, other = judge_twice(
            trial.samples, trial.samples_again, floor=result.min_gain, confidence=result.confidence
        )
        parts[0] += second_text(other)
    parts += [rival_text(rival) for rival in trial.rivals]
    if trial.rivals:
        parts.append(advice_text(trial))
    return "; ".join(parts)


def optimize_tables(result: OptimizeResult) -> list[Table]:
    rows = []
    for trial in result.trials:
        outcome = trial.result
        if outcome is None:
            continue
        rows.append(
            [
                trial.rule,
                trial.change,
                evidence_text(trial),
                trial.numerics or "–",
                f"{outcome.baseline_ms:.2f} ms → {outcome.candidate_ms:.2f} ms",
                f"{outcome.ratio:.3f}",
                interval_text(outcome),
                verdict_text(trial),
            ]
        )
    tables = [("Measured proposals", MEASURED_HEADER, rows)]
    skipped = [
        [trial.rule, trial.change, trial.not_applicable]
        for trial in result.trials
        if trial.not_applicable
    ]
    if skipped:
        tables.append(("Proposals not applied", ["proposal", "change", "why"], skipped))
    not_tried = [
        [trial.rule, trial.change, f"not tried: {trial.not_tried}"]
        for trial in result.trials
        if trial.not_tried
    ]
    if result.diff_not_made:
        profile = f"the best candidate ({result.best}) profiled and diffed"
        not_tried.append(["profile diff", profile, f"not tried: {result.diff_not_made}"])
    if not_tried:
        tables.append(("Proposals not tried", ["proposal", "change", "why"], not_tried))
    if result.diff_summary:
        title = f"Best candidate ({result.best}) against the baseline: profile diff"
        rows = [list(row) for row in result.diff_summary]
        rows.append(["note", PROFILED_NOTE])
        tables.append((title, ["", ""], rows))
    return tables


def no_proposal_text(result: OptimizeResult) -> str | None:
    if result.trials:
        return None
    return "No rule's evidence was met: nothing was proposed, nothing measured."
