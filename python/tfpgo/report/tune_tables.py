"""The report's "Tuning" section (`--tune`): what was changed, where, why, and what
it bought: every candidate with its verdict, every decision with its dispatch,
tf ops and times, and the TensorFlow ops the kept changes sped up."""

from __future__ import annotations

from tfpgo.ab.result import bounds_text, ratio_text
from tfpgo.iree.run import DEVICE
from tfpgo.render.metrics import format_ps
from tfpgo.tune.document import TuneDocument
from tfpgo.tune.roofline import AT_LIMIT

TUNE_TITLE = "Tuning (--tune)"
TRIAL_HEADER = ["candidate", "change", "outcome", "ratio [interval]", "why"]
OP_HEADER = ["tf op", "TF a step", "IREE before", "IREE after", "after / before"]
DECISION_HEADER = ["candidate", "dispatch", "tf ops", "change", "before", "after", "kept"]
HELD_BACK_TITLE = "Hot dispatches still below 85% of this machine's limit, and why"
HELD_BACK_HEADER = ["dispatch", "of its bound", "bound by", "what was tried (measured ratio)"]
SHOWN_OPS = 2


def limit_text(document: TuneDocument) -> str:
    """One line: how far each hot dispatch of the original program ran from this
    machine's limit, and whether anything is left to gain here ("" unknown)."""
    if not document.at_limit:
        return ""
    near = [name for name, fraction in document.at_limit if fraction >= AT_LIMIT]
    shown = ", ".join(
        f"{name.rsplit('_dispatch_', 1)[-1]} {fraction:.0%}" for name, fraction in document.at_limit
    )
    verdict = (
        "every hot dispatch runs within 15% of this machine's limit"
        if len(near) == len(document.at_limit)
        else f"{len(near)} of {len(document.at_limit)} within 15% of it"
    )
    whole = document.limit_fraction
    if whole is not None:
        gain = ": nothing left to gain here" if whole >= AT_LIMIT else ""
        verdict += f"; the program as a whole {whole:.0%}{gain}"
    return f"Fraction of this machine's limit (roofline) per hot dispatch: {shown}; {verdict}."


def stale_text(document: TuneDocument) -> str:
    """One line on the tuning database's records no run here applies ("" none)."""
    if not document.stale:
        return ""
    return (
        f"The tuning database holds records of {len(document.stale)} other target(s), never "
        f"applied here (stale): {'; '.join(document.stale)}. `bazel run //tools:tuning_db -- "
        "prune` drops them."
    )


def tune_summary(document: TuneDocument) -> str:
    """One paragraph: the kept changes and the tuned program against the original,
    and what it computes in."""
    return f"{_outcome(document)} {precision_text(document)}"


def precision_text(document: TuneDocument) -> str:
    """What precision the program --tune leaves computes in, and what it costs."""
    budget = document.max_output_error
    if budget is None:
        return "It computes in float32: without --precision bf16 no candidate changes that."
    if document.output_error is None:
        return (
            f"It computes in float32: --precision bf16 let --tune try bfloat16 contractions "
            f"within {budget:g} of the outputs' largest magnitude, and none was kept (the "
            "bf16-* rows say why)."
        )
    return (
        f"It computes with {document.precision}: its outputs differ from TensorFlow's float32 "
        f"ones by {document.output_error:.3g} of their largest magnitude (--max-output-error "
        f"{budget:g})."
    )


def _outcome(document: TuneDocument) -> str:
    tuned, whole = document.tuned, document.end_to_end
    tried = sum(1 for trial in document.trials if trial.result is not None)
    minutes = document.budget_s / 60
    budget = f"{len(document.trials)} candidates, {tried} measured, budget {minutes:g} min"
    if whole is None and document.unconfirmed:
        return (
            f"{budget}: {', '.join(document.kept)} won their own A/B, but together they could "
            f"not be timed against the original ({document.unconfirmed}); the program "
            "--lower iree compiled stays."
        )
    if whole is None:
        return f"{budget}: none beat the program --lower iree compiled; it stays as it was."
    if tuned is None:
        return (
            f"{budget}: {', '.join(document.kept)} won their own A/B, but together they were "
            f"not confirmed against the original ({whole.verdict}, ratio {whole.ratio:.3f}); "
            "the program --lower iree compiled stays."
        )
    interval = bounds_text(whole.ci_low, whole.ci_high)
    interval = f" {interval}" if interval else ""
    on = f", on IREE's {tuned.driver} driver" if tuned.driver != DEVICE else ""
    return (
        f"{budget}: kept {', '.join(document.kept)}. The tuned program ({tuned.vmfb}{on}) takes "
        f"{format_ps(whole.tuned_ps)} a run against {format_ps(whole.baseline_ps)}, ratio "
        f"{whole.ratio:.3f}{interval}, timed in the same run; outputs within "
        f"{whole.max_abs:.3g} of TensorFlow's; its profile is {tuned.profile}, diffed against "
        "the default's per tf op in tune_diff/diff.md and dispatch by dispatch in "
        "tune_diff/dispatches/diff.md."
    )


def trial_rows(document: TuneDocument) -> list[list[str]]:
    return [
        [
            trial.name,
            trial.change or "–",
            trial.outcome,
            ratio_text(trial.result) if trial.result else "–",
            trial.reason,
        ]
        for trial in document.trials
    ]


def decision_rows(document: TuneDocument) -> list[list[str]]:
    """Per decision: where, what, its time a run before and after, kept or not."""
    runs = max(document.runs, 1)
    rows = []
    for decision in document.decisions:
        ops = ", ".join(decision.tf_ops[:SHOWN_OPS])
        if len(decision.tf_ops) > SHOWN_OPS:
            ops += f", +{len(decision.tf_ops) - SHOWN_OPS} more"
        after = "–" if decision.after_ps is None else format_ps(decision.after_ps // runs)
        rows.append(
            [
                decision.candidate,
                decision.dispatch or "(whole program)",
                ops or "–",
                decision.change,
                format_ps(decision.before_ps // runs),
                after,
                "yes" if decision.kept else "no",
            ]
        )
    return rows


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


def held_back_rows(document: TuneDocument) -> list[list[str]]:
    """Per hot dispatch left below 85% of its roofline bound: how far, what sets
    the bound, and every try on it with its ratio ("nothing" when none was)."""
    return [
        [
            held.dispatch,
            f"{held.fraction:.0%}",
            held.bound_by,
            "; ".join(held.tries) or "nothing",
        ]
        for held in document.held_back
    ]
