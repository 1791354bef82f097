"""`--optimize` results as report content: the measured proposals, those not
applied, and the best candidate's profile diff. Presentation only: every
figure comes from the `OptimizeResult` (optimize.json)."""

from __future__ import annotations

from tfpgo.proposer.ab import ABResult, judge_twice, second_text
from tfpgo.proposer.optimize import OptimizeResult, Trial, advised, advised_rival, faster_rival
from tfpgo.proposer.proposal import EvidenceKind

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
    return (
        f"Baseline `{result.baseline}` against each candidate: {settings.repetitions} blocks of "
        f"{settings.steps} steps an arm, interleaved AB, BA, ... after {settings.warmup} warmup "
        "steps each. Ratio: candidate / baseline of the geometric mean block step time; "
        "interval: Welch's t on the log block means; helps / hurts only when the whole "
        f"interval is below / above 1 and the ratio differs from 1 by more than "
        f"{settings.noise:.0%}; a gain between {settings.floor:.0%} and {settings.noise:.0%} "
        "is measured a second time and counts at the worse of its two A/Bs (judged at "
        f"{settings.floor:.0%}). Samples in optimize.json."
    )


def interval_text(outcome: ABResult) -> str:
    if outcome.low is None or outcome.high is None:
        return "–"
    return f"[{outcome.low:.3f}, {outcome.high:.3f}] ({outcome.confidence:.0%})"


def verdict_text(trial: Trial) -> str:
    """The verdict against the baseline and, for a trial with rivals, against each
    and whether the change is advised."""
    assert trial.result is not None  # measured trials only
    parts = [trial.result.verdict.value]
    if trial.samples and trial.samples_again:
        # Judged at the floor it counted at; the other A/B's ratio is what is added.
        _, other = judge_twice(trial.samples, trial.samples_again, floor=trial.result.noise)
        parts[0] += second_text(other)
    for rival in trial.rivals:
        outcome = rival.result
        parts.append(
            f"against {rival.rule} (B / it): {outcome.ratio:.3f} {interval_text(outcome)}, "
            f"{outcome.verdict.value}"
        )
    if trial.rivals:
        faster = faster_rival(trial)
        instead = advised_rival(trial)
        if advised(trial):
            parts.append("advised: faster than the baseline and every rival")
        elif instead is not None and instead.own_result is not None:
            own = instead.own_result
            parts.append(
                f"not advised: {instead.rule} is at least as fast and helps against the "
                f"baseline ({own.ratio:.3f} {interval_text(own)}): {instead.rule} advised instead"
            )
        elif faster is not None:
            parts.append(f"not advised: {faster.rule} is at least as fast")
        else:
            parts.append("not advised: no measured gain over the baseline")
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
