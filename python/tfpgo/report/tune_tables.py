"""The report's "Tuning" section (`--tune`): what was tried and measured, what was
kept, and which TensorFlow ops the kept changes sped up."""

from __future__ import annotations

from tfpgo.proposer.ab import ABResult
from tfpgo.render.metrics import format_ps
from tfpgo.tune.document import TuneDocument

TUNE_TITLE = "Tuning (--tune)"
TRIAL_HEADER = ["candidate", "change", "outcome", "ratio (95% interval)", "why"]
OP_HEADER = ["tf op", "TF a step", "IREE before", "IREE after", "after / before"]


def tune_summary(document: TuneDocument) -> str:
    """One paragraph: the kept changes and the tuned program against the original."""
    tuned = document.tuned
    tried = sum(1 for trial in document.trials if trial.result is not None)
    minutes = document.budget_s / 60
    budget = f"{len(document.trials)} candidates, {tried} measured, budget {minutes:g} min"
    if tuned is None:
        return f"{budget}: none beat the program --lower iree compiled; it stays as it was."
    return (
        f"{budget}: kept {', '.join(document.kept)}. The tuned program "
        f"({tuned.vmfb}) takes {tuned.result.candidate_ms:.1f} ms a run against "
        f"{tuned.result.baseline_ms:.1f} ms, {_ratio(tuned.result)}, timed in the same run; "
        f"outputs within {tuned.max_abs:.3g} of TensorFlow's; its profile is {tuned.profile}."
    )


def trial_rows(document: TuneDocument) -> list[list[str]]:
    return [
        [
            trial.name,
            trial.change or "–",
            trial.outcome,
            _ratio(trial.result) if trial.result else "–",
            trial.reason,
        ]
        for trial in document.trials
    ]


def op_rows(document: TuneDocument, tf_steps: int, top: int) -> list[list[str]]:
    """The tf ops whose compiled time changed most, a step each, savings first."""
    if document.tuned is None:
        return []
    runs = max(document.runs, 1)
    rows = []
    for op in document.tuned.ops[:top]:
        if op.after_ps == op.before_ps:
            continue
        ratio = f"{op.after_ps / op.before_ps:.2f}x" if op.before_ps else "–"
        rows.append(
            [
                op.name,
                format_ps(op.tf_self_ps // max(tf_steps, 1)),
                format_ps(op.before_ps // runs),
                format_ps(op.after_ps // runs),
                ratio,
            ]
        )
    return rows


def _ratio(result: ABResult) -> str:
    if result.low is None or result.high is None:
        return f"{result.ratio:.3f}"
    return f"{result.ratio:.3f} ({result.low:.3f}–{result.high:.3f})"
