"""`pgo --optimize`: every applicable proposal applied to the loaded step and
measured against the baseline; the samples and verdicts in `optimize.json`
(format `tfpgo.optimize` v1, docs/formats.md).

A proposal that cannot be applied to this step (`NotApplicable`) is recorded
with the reason and not measured: nothing is applied on a guess, and nothing
is reported without a measurement. A proposal with rivals (`xla_regions`
against whole-program `jit_compile`) is also timed against each rival in the
same run, and each rival against the baseline, once the rival's outputs passed
the same numerics check as the candidate's; what is advised of the three is
decided in `tfpgo.proposer.trials` (a rival replaces the candidate only when
measured faster; with no difference, the simpler is advised).
A family of proposals (one and its narrowings, `Proposal.tests`) is judged at
Holm's levels (`blocks.holm_confidence`), every interval of a trial at its level.
Under a budget (`tfpgo.proposer.budget`), proposals are measured in the order of
the gain their profile promises, each only while the time left has room for it.
The candidate with the lowest measured ratio, of those no rival beat, is
profiled once more with the profiler and its op profile diffed against the
baseline's (`optimize/diff.md`, `.html`, `.svg`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tfpgo.ab.intervals import CONFIDENCE
from tfpgo.ab.result import ABResult, interval_text
from tfpgo.analysis import Analysis
from tfpgo.atomic import atomic_output_file
from tfpgo.attribution.op_profile import OpProfile
from tfpgo.documents import read_versioned
from tfpgo.models import ModelCase
from tfpgo.proposer import propose
from tfpgo.proposer.blocks import (
    STATISTIC,
    ABSamples,
    holm_confidence,
    judge,
    judge_twice,
    second_text,
)
from tfpgo.proposer.budget import Budget, profile_run_steps, promised, trial_steps
from tfpgo.proposer.measure import (
    ABSettings,
    Measured,
    ProfileReader,
    measure,
    profile_candidate,
)
from tfpgo.proposer.proposal import Evidence, EvidenceKind, NotApplicable, Proposal, narrowed
from tfpgo.proposer.trials import (
    BUDGET_SPENT,
    RivalTrial,
    Trial,
    advised,
    advised_rival,
    faster_rival,
    rejected_before,
)
from tfpgo.proposer.worker import ModelSpec

__all__ = ["ABSettings", "ModelSpec", "OptimizeResult", "read", "run_optimize"]

FORMAT = "tfpgo.optimize"
VERSION = 1
DIFF_DIR = "optimize"  # the best candidate's profile and its diff, under the output dir
# A proposal not advised is profiled over at least this many steps to make a
# narrower one (`Proposal.refine`, named by `narrowed`).
REFINE_STEPS = 3
MULTIPLE_TESTING = "holm"  # method.multiple_testing: how a family's levels are set


@dataclass(frozen=True)
class OptimizeResult:
    baseline: str  # the loaded step's name
    settings: ABSettings
    trials: tuple[Trial, ...]
    best: str | None = None  # rule of the measured candidate with the lowest ratio
    diff_summary: tuple[tuple[str, str], ...] = ()  # its profile diff's summary rows
    diff_files: tuple[str, ...] = ()  # the diff's files, relative to the output dir
    budget_s: float | None = None  # --optimize-budget, in seconds; None: none
    diff_not_made: str = ""  # why the best candidate was not profiled (BUDGET_SPENT)

    def to_json(self) -> dict[str, Any]:
        settings = self.settings
        return {
            "format": FORMAT,
            "version": VERSION,
            "baseline": self.baseline,
            "method": {
                "repetitions": settings.repetitions,
                "steps": settings.steps,
                "warmup": settings.warmup,
                "noise": settings.noise,
                "confirm_floor": settings.floor,
                "confidence": CONFIDENCE,
                "multiple_testing": MULTIPLE_TESTING,
                "time_unchecked": settings.time_unchecked,
                "budget_s": self.budget_s,
                "statistic": STATISTIC,
            },
            "trials": [trial.to_json() for trial in self.trials],
            "best": self.best,
            "diff_summary": [list(row) for row in self.diff_summary],
            "diff_files": list(self.diff_files),
            "diff_not_made": self.diff_not_made,
        }

    def write(self, path: Path) -> None:
        with atomic_output_file(path) as handle:
            handle.write(json.dumps(self.to_json(), indent=1) + "\n")


def read(path: Path) -> OptimizeResult:
    """An optimize.json with every verdict recomputed from its stored samples
    (`blocks.judge`), each trial at the level its family's earlier trials give it
    (Holm, recomputed too), so what a reader sees never depends on a stored
    verdict. Documents from before Holm's levels are judged at the confidence
    they stored."""
    return read_versioned(path, FORMAT, _result_from_json)


def _result_from_json(document: dict[str, Any]) -> OptimizeResult:
    method = document["method"]
    # Documents from before second A/Bs have no floor: each trial is judged once.
    floor = method.get("confirm_floor", method["noise"])
    settings = ABSettings(
        method["repetitions"],
        method["steps"],
        method["warmup"],
        method["noise"],
        floor,
        method.get("time_unchecked", False),
    )
    holm = method.get("multiple_testing") == MULTIPLE_TESTING
    trials: list[Trial] = []
    for item in document["trials"]:
        confidence = item["result"]["confidence"] if item["result"] else CONFIDENCE
        tests = int((item.get("multiple_testing") or {}).get("tests", 1))
        rejected = rejected_before(trials, item["rule"]) if holm else 0
        if holm:
            confidence = holm_confidence(tests, rejected, method["confidence"])
        trials.append(_read_trial(item, settings, confidence, tests, rejected))
    return OptimizeResult(
        document["baseline"],
        settings,
        tuple(trials),
        document["best"],
        tuple(tuple(row) for row in document["diff_summary"]),
        tuple(document["diff_files"]),
        method.get("budget_s"),
        document.get("diff_not_made", ""),
    )


def _read_trial(
    item: dict[str, Any], settings: ABSettings, confidence: float, tests: int, rejected: int
) -> Trial:
    samples = ABSamples.from_json(item["samples"]) if item["samples"] else None
    again = item.get("samples_again")
    samples_again = ABSamples.from_json(again) if again else None
    result = None
    if samples:
        noise, floor = settings.noise, settings.floor
        result, _ = judge_twice(samples, samples_again, noise, floor, confidence)
    evidence = tuple(
        Evidence(EvidenceKind(e["kind"]), e["subject"], e["share"], e["detail"])
        for e in item["evidence"]
    )
    rivals = tuple(
        _read_rival(rival, settings.noise, confidence) for rival in item.get("rivals", ())
    )
    return Trial(
        item["rule"],
        item["change"],
        item["reason"],
        evidence,
        item["not_applicable"],
        samples,
        result,
        item.get("numerics", ""),
        rivals,
        samples_again,
        item.get("not_tried", ""),
        tests,
        rejected,
    )


def _read_rival(item: dict[str, Any], noise: float, confidence: float) -> RivalTrial:
    """A rival judged at its trial's confidence (older documents stored the same)."""

    def judged(part: dict[str, Any] | None) -> tuple[ABSamples | None, ABResult | None]:
        if part is None or part["samples"] is None:
            return None, None
        samples = ABSamples.from_json(part["samples"])
        return samples, judge(samples, noise, confidence)

    samples, result = judged(item)
    own_samples, own_result = judged(item.get("against_baseline"))
    numerics = item.get("numerics", "")
    return RivalTrial(item["rule"], samples, result, own_samples, own_result, numerics)


def run_optimize(
    case: ModelCase,
    spec: ModelSpec | None,
    analysis: Analysis,
    baseline_profile: OpProfile,
    out: Path,
    settings: ABSettings,
    profile_steps: int = 0,
    progress: Callable[[str], None] | None = None,
    budget: Budget | None = None,
    *,
    read_profile: ProfileReader,
) -> OptimizeResult:
    """Measures every proposal for `analysis` on `case`, within `budget` if one is
    given (module docstring); writes `out/optimize.json` and, with
    `profile_steps`, profiles the best candidate and diffs it against
    `baseline_profile` into `out/optimize/`. `read_profile` reads the candidates'
    profiles (a refinement's, the best's)."""
    run = _OptimizeRun(
        case,
        spec,
        baseline_profile,
        out,
        settings,
        profile_steps,
        budget,
        read_profile,
        progress or (lambda _message: None),
    )
    run.try_all(list(propose(analysis)))
    best = _best(run.trials)
    diff = run.diff_best(best) if best is not None and profile_steps > 0 else _BestDiff()
    result = OptimizeResult(
        case.name,
        settings,
        tuple(run.trials),
        best.rule if best else None,
        diff.summary,
        diff.files,
        budget.seconds if budget is not None else None,
        diff.not_made,
    )
    result.write(out / "optimize.json")
    return result


@dataclass(frozen=True)
class _BestDiff:
    """The best candidate's profile diff against the baseline: its summary rows and
    files (relative to the output dir), or why it was not made."""

    summary: tuple[tuple[str, str], ...] = ()
    files: tuple[str, ...] = ()
    not_made: str = ""


@dataclass
class _OptimizeRun:
    """One `run_optimize`: its arguments, the trials so far and the candidates measured."""

    case: ModelCase
    spec: ModelSpec | None
    baseline_profile: OpProfile
    out: Path
    settings: ABSettings
    profile_steps: int
    budget: Budget | None
    read_profile: ProfileReader
    note: Callable[[str], None]
    trials: list[Trial] = field(default_factory=list)
    # each measured proposal and its candidate, by rule: the best one is profiled again
    arms: dict[str, tuple[Proposal, ModelCase | None]] = field(default_factory=dict)

    def room(self, steps: int) -> bool:
        """Whether the budget, if any, has room for `steps` steps now."""
        return self.budget is None or self.budget.has_room(steps)

    def try_all(self, proposals: list[Proposal]) -> None:
        """A trial of each proposal, in the order of their promise under a budget; a
        narrower proposal is tried next after the one it narrows."""
        pending = proposals
        if self.budget is not None:
            pending.sort(key=promised, reverse=True)  # stable: rule order among equals
        while pending:
            proposal = pending.pop(0)
            measured = self._try(proposal)
            if measured is None or proposal.refine is None or advised(self.trials[-1]):
                continue
            narrower = self._narrow(proposal, measured.candidate)
            if isinstance(narrower, Proposal):
                pending.insert(0, narrower)
            else:
                self.trials.append(narrower)

    def _try(self, proposal: Proposal) -> Measured | None:
        """Appends the trial of `proposal`; its measurement, None if it was not measured."""
        head = (proposal.rule, proposal.change, proposal.reason, proposal.evidence)
        steps = trial_steps(proposal, self.settings)
        if not self.room(steps):
            self.note(f"{proposal.rule}: not tried: {BUDGET_SPENT}")
            self.trials.append(Trial(*head, not_tried=BUDGET_SPENT))
            return None
        rejected = rejected_before(self.trials, proposal.rule)
        confidence = holm_confidence(proposal.tests, rejected)
        started = self.budget.clock() if self.budget is not None else 0.0
        try:
            measured = measure(proposal, self.case, self.spec, self.settings, self.note, confidence)
        except NotApplicable as reason:
            self.note(f"{proposal.rule}: not applied: {reason}")
            self.trials.append(Trial(*head, not_applicable=str(reason)))
            return None
        if self.budget is not None:
            self.budget.took(steps, self.budget.clock() - started)
        samples, again = measured.samples, measured.again
        noise, floor = self.settings.noise, self.settings.floor
        outcome, other = judge_twice(samples, again, noise, floor, confidence)
        self.note(f"{proposal.rule}: {describe(outcome)}{second_text(other)}")
        for rival in measured.rivals:
            _note_rival(proposal.rule, rival, self.note)
        self.trials.append(Trial(*head, samples=samples, result=outcome, numerics=measured.numerics,
                                 rivals=measured.rivals, samples_again=again, tests=proposal.tests,
                                 rejected_before=rejected))  # fmt: skip
        if (instead := advised_rival(self.trials[-1])) is not None:
            self.note(
                f"{proposal.rule}: not advised; {instead.rule} is, measured faster or alone helping"
            )
        self.arms[proposal.rule] = (proposal, measured.candidate)
        return measured

    def _narrow(self, proposal: Proposal, candidate: ModelCase | None) -> Proposal | Trial:
        """The narrower proposal made from the candidate's profile, or the trial
        saying why there is none."""
        refine_steps = max(self.profile_steps, REFINE_STEPS)
        # Room for the profile and the narrowed proposal's trial, as long as this one.
        needed = profile_run_steps(refine_steps, self.settings)
        if not self.room(needed + trial_steps(proposal, self.settings)):
            self.note(f"{proposal.rule}: not narrowed: {BUDGET_SPENT}")
            return Trial(*_narrowed_head(proposal), not_tried=BUDGET_SPENT)
        directory = self.out / DIFF_DIR / proposal.rule
        profile = self._profiled(proposal, candidate, directory, refine_steps)
        return _refine(proposal, self.baseline_profile, profile, directory, self.note)

    def diff_best(self, best: Trial) -> _BestDiff:
        """Profiles the candidate of `best` and diffs it against the baseline, if the
        budget has room."""
        from tfpgo.diff import compare
        from tfpgo.diff.output import summary_rows, write_outputs

        if not self.room(profile_run_steps(self.profile_steps, self.settings)):
            self.note(f"the best candidate ({best.rule}) is not profiled: {BUDGET_SPENT}")
            return _BestDiff(not_made=BUDGET_SPENT)
        directory = self.out / DIFF_DIR
        self.note(f"the best candidate: {best.rule}")
        profile = self._profiled(*self.arms[best.rule], directory, self.profile_steps)
        diff = compare(self.baseline_profile, profile, "baseline", best.rule)
        written = write_outputs(diff, directory)
        files = tuple(str(path.relative_to(self.out)) for path in written)
        return _BestDiff(tuple(summary_rows(diff)), files)

    def _profiled(
        self, proposal: Proposal, candidate: ModelCase | None, directory: Path, steps: int
    ) -> OpProfile:
        directory.mkdir(parents=True, exist_ok=True)
        self.note(f"{proposal.rule}: profiling the candidate, {steps} steps")
        return profile_candidate(
            proposal, candidate, self.spec, directory, self.settings, steps, self.read_profile
        )


def _best(trials: list[Trial]) -> Trial | None:
    """The measured trial with the lowest ratio, of those no rival beat."""
    ratios = {
        trial.rule: trial.result.ratio
        for trial in trials
        if trial.result is not None and faster_rival(trial) is None
    }
    return min(
        (trial for trial in trials if trial.rule in ratios),
        key=lambda trial: ratios[trial.rule],
        default=None,
    )


def _note_rival(rule: str, rival: RivalTrial, note: Callable[[str], None]) -> None:
    if rival.result is None or rival.own_result is None:
        note(f"{rule} against {rival.rule}: not timed: {rival.numerics}")
        return
    assert rival.difference is not None  # timed
    note(f"{rule} against {rival.rule}: {describe(rival.result)}: {rival.difference.value}")
    note(f"{rival.rule} against the baseline: {describe(rival.own_result)}")


def _narrowed_head(proposal: Proposal) -> tuple[str, str, str, tuple[Evidence, ...]]:
    """What a trial of the narrowing of `proposal` that was not made says."""
    return narrowed(proposal.rule), "a narrower change, from the candidate re-profiled", "", ()


def _refine(
    proposal: Proposal,
    baseline_profile: OpProfile,
    profile: OpProfile,
    directory: Path,
    note: Callable[[str], None],
) -> Proposal | Trial:
    """The narrower proposal `proposal.refine` makes from the baseline's and the
    candidate's profiles; or a trial saying why there is none."""
    assert proposal.refine is not None  # only proposals that refine
    narrower = proposal.refine(baseline_profile, profile, directory)
    if isinstance(narrower, str):
        note(f"{proposal.rule}: nothing narrower to try: {narrower}")
        return Trial(*_narrowed_head(proposal), not_applicable=narrower)
    return narrower


def describe(result: ABResult) -> str:
    """`step time 0.740x [0.712, 0.771] (95%): helps`."""
    interval = interval_text(result)
    if interval == "–":
        interval = "no interval (fewer than 2 blocks an arm)"
    return f"step time {result.ratio:.3f}x {interval}: {result.verdict.value}"
