"""`pgo --optimize`: every applicable proposal applied to the loaded step and
measured against the baseline; the samples and verdicts in `optimize.json`
(format `tfpgo.optimize` v1, docs/formats.md).

A proposal that cannot be applied to this step (`NotApplicable`) is recorded
with the reason and not measured: nothing is applied on a guess, and nothing
is reported without a measurement. A proposal with rivals (`xla_regions`
against whole-program `jit_compile`) is also timed against each rival in the
same run, and each rival against the baseline: the change is advised only when it
helps and beats every rival (`advised`), and a rival that beat it and helps is
advised in its place (`advised_rival`), so such a rule advises the best of the
three.
The candidate with the lowest measured ratio, of those no rival beat, is
profiled once more with the profiler and its op profile diffed against the
baseline's (`optimize/diff.md`, `.html`, `.svg`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from tfpgo.analysis import Analysis
from tfpgo.atomic import atomic_output_file
from tfpgo.attribution.op_profile import OpProfile
from tfpgo.documents import expect_format, read_json
from tfpgo.errors import UserError
from tfpgo.models import ModelCase
from tfpgo.proposer import propose
from tfpgo.proposer.ab import (
    CONFIRM_FLOOR,
    NOISE,
    ABResult,
    ABSamples,
    Verdict,
    interleave,
    judge,
    judge_twice,
    second_text,
    step_timer,
    wants_second,
)
from tfpgo.proposer.numerics import NumericsCheck, NumericsStatus, check_numerics, judge_outputs
from tfpgo.proposer.proposal import (
    Evidence,
    EvidenceKind,
    NotApplicable,
    Proposal,
    advice_json,
    narrowed,
)
from tfpgo.proposer.worker import ModelSpec, WorkerArm, profile_in_worker

FORMAT = "tfpgo.optimize"
VERSION = 1
DIFF_DIR = "optimize"  # the best candidate's profile and its diff, under the output dir
# A proposal not advised is profiled over at least this many steps to make a
# narrower one (`Proposal.refine`, named by `narrowed`).
REFINE_STEPS = 3


@dataclass(frozen=True)
class ABSettings:
    repetitions: int = 10  # blocks an arm
    steps: int = 10  # steps a block
    warmup: int = 2  # unmeasured steps of each arm first
    noise: float = NOISE
    # A gain between this and `noise` is measured twice; the worse A/B counts
    # (ab.judge_twice).
    floor: float = CONFIRM_FLOOR
    # Time candidates whose numerics cannot be checked (a nondeterministic step, a
    # change that draws other random numbers); their trials say so.
    time_unchecked: bool = False


@dataclass(frozen=True)
class RivalTrial:
    """A proposal's candidate timed against a rival's (`Proposal.rivals`): the A/B
    with the rival as the baseline arm, so a ratio below 1 says the candidate wins;
    and the rival timed against the baseline in the same run (`own_samples`, the
    baseline as arm A), so that the better of the two can be advised in its place."""

    rule: str
    samples: ABSamples
    result: ABResult
    own_samples: ABSamples | None = None
    own_result: ABResult | None = None

    def to_json(self) -> dict[str, Any]:
        own = None
        if self.own_samples is not None and self.own_result is not None:
            own = {"samples": self.own_samples.to_json(), "result": self.own_result.to_json()}
        return {
            "rule": self.rule,
            "samples": self.samples.to_json(),
            "result": self.result.to_json(),
            "against_baseline": own,
        }


@dataclass(frozen=True)
class Trial:
    """One proposal and what came of it: measured, or the reason it was not."""

    rule: str
    change: str
    reason: str
    evidence: tuple[Evidence, ...]
    not_applicable: str = ""  # why it was not applied; "" when measured
    samples: ABSamples | None = None
    result: ABResult | None = None  # with a second A/B, the worse of the two
    numerics: str = ""  # the numerics check: what was restored, compared, found
    rivals: tuple[RivalTrial, ...] = ()
    # The second A/B of a gain under the noise floor (ab.wants_second), or None.
    samples_again: ABSamples | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            **advice_json(self.rule, self.change, self.reason, self.evidence),
            "not_applicable": self.not_applicable,
            "numerics": self.numerics,
            "samples": self.samples.to_json() if self.samples else None,
            "samples_again": self.samples_again.to_json() if self.samples_again else None,
            "result": self.result.to_json() if self.result else None,
            "rivals": [rival.to_json() for rival in self.rivals],
            "advised": advised(self),
            "advised_instead": getattr(advised_rival(self), "rule", None),
        }


def faster_rival(trial: Trial) -> RivalTrial | None:
    """The first rival measured at least as fast as the trial's candidate (ratio
    candidate / rival ≥ 1), or None."""
    return next((rival for rival in trial.rivals if rival.result.ratio >= 1), None)


def advised(trial: Trial) -> bool:
    """Whether the trial's change is advised: it helps against the baseline and
    every rival is slower than its candidate, so it is never slower than the better
    of the baseline and its rivals."""
    helps = trial.result is not None and trial.result.verdict is Verdict.HELPS
    return helps and faster_rival(trial) is None


def advised_rival(trial: Trial) -> RivalTrial | None:
    """The rival advised in place of a trial's change that is not: one measured at
    least as fast as the candidate that also helps against the baseline (the fastest
    such against the baseline), or None. With `advised`, a rule with rivals advises
    the best of the baseline, its candidate and its rivals, never one slower than
    another of them."""
    if advised(trial):
        return None
    helping = {
        rival.own_result.ratio: rival
        for rival in trial.rivals
        if rival.result.ratio >= 1
        and rival.own_result is not None
        and rival.own_result.verdict is Verdict.HELPS
    }
    return helping[min(helping)] if helping else None


@dataclass(frozen=True)
class OptimizeResult:
    baseline: str  # the loaded step's name
    settings: ABSettings
    trials: tuple[Trial, ...]
    best: str | None = None  # rule of the measured candidate with the lowest ratio
    diff_summary: tuple[tuple[str, str], ...] = ()  # its profile diff's summary rows
    diff_files: tuple[str, ...] = ()  # the diff's files, relative to the output dir

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
                "statistic": "ratio of geometric means of block mean step times; Welch t "
                "interval on log block means, exponentiated",
            },
            "trials": [trial.to_json() for trial in self.trials],
            "best": self.best,
            "diff_summary": [list(row) for row in self.diff_summary],
            "diff_files": list(self.diff_files),
        }

    def write(self, path: Path) -> None:
        with atomic_output_file(path) as handle:
            handle.write(json.dumps(self.to_json(), indent=1) + "\n")


def read(path: Path) -> OptimizeResult:
    """An optimize.json with every verdict recomputed from its stored samples
    (`ab.judge`), so what a reader sees never depends on a stored verdict."""
    document = read_json(path)
    expect_format(path, document, FORMAT)
    method = document["method"]
    # Documents from before second A/Bs have no floor: each trial is judged once.
    floor = method.get("confirm_floor", method["noise"])
    settings = ABSettings(
        method["repetitions"], method["steps"], method["warmup"], method["noise"], floor
    )
    trials = []
    for item in document["trials"]:
        samples = ABSamples.from_json(item["samples"]) if item["samples"] else None
        again = item.get("samples_again")
        samples_again = ABSamples.from_json(again) if again else None
        confidence = item["result"]["confidence"] if item["result"] else None
        result = None
        if samples and confidence:
            result, _ = judge_twice(samples, samples_again, settings.noise, floor, confidence)
        evidence = tuple(
            Evidence(EvidenceKind(e["kind"]), e["subject"], e["share"], e["detail"])
            for e in item["evidence"]
        )
        rivals = tuple(_read_rival(rival, settings.noise) for rival in item.get("rivals", ()))
        trials.append(
            Trial(
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
            )
        )
    return OptimizeResult(
        document["baseline"],
        settings,
        tuple(trials),
        document["best"],
        tuple(tuple(row) for row in document["diff_summary"]),
        tuple(document["diff_files"]),
    )


def _read_rival(item: dict[str, Any], noise: float) -> RivalTrial:
    samples = ABSamples.from_json(item["samples"])
    result = judge(samples, noise, item["result"]["confidence"])
    own = item.get("against_baseline")
    if own is None:
        return RivalTrial(item["rule"], samples, result)
    own_samples = ABSamples.from_json(own["samples"])
    own_result = judge(own_samples, noise, own["result"]["confidence"])
    return RivalTrial(item["rule"], samples, result, own_samples, own_result)


def run_optimize(
    case: ModelCase,
    spec: ModelSpec | None,
    analysis: Analysis,
    baseline_profile: OpProfile,
    out: Path,
    settings: ABSettings,
    profile_steps: int = 0,
    progress: Callable[[str], None] | None = None,
) -> OptimizeResult:
    """Measures every proposal for `analysis` on `case`; writes `out/optimize.json`
    and, with `profile_steps`, profiles the best candidate and diffs it against
    `baseline_profile` into `out/optimize/`."""
    from tfpgo.diff import compare
    from tfpgo.diff.output import summary_rows, write_outputs

    note = progress or (lambda _message: None)
    trials, arms = [], {}
    pending = list(propose(analysis))
    while pending:
        proposal = pending.pop(0)
        head = (proposal.rule, proposal.change, proposal.reason, proposal.evidence)
        try:
            measured = _measure(proposal, case, spec, settings, note)
        except NotApplicable as reason:
            note(f"{proposal.rule}: not applied: {reason}")
            trials.append(Trial(*head, not_applicable=str(reason)))
            continue
        samples, again, candidate = measured.samples, measured.again, measured.candidate
        outcome, other = judge_twice(samples, again, settings.noise, settings.floor)
        note(f"{proposal.rule}: {describe(outcome)}{second_text(other)}")
        rivals = tuple(
            RivalTrial(
                rule,
                rival_samples,
                judge(rival_samples, settings.noise),
                own_samples,
                judge(own_samples, settings.noise),
            )
            for rule, rival_samples, own_samples in measured.against
        )
        for rival in rivals:
            assert rival.own_result is not None  # measured just now
            note(f"{proposal.rule} against {rival.rule}: {describe(rival.result)}")
            note(f"{rival.rule} against the baseline: {describe(rival.own_result)}")
        trials.append(Trial(*head, samples=samples, result=outcome, numerics=measured.numerics,
                            rivals=rivals, samples_again=again))  # fmt: skip
        if (instead := advised_rival(trials[-1])) is not None:
            note(f"{proposal.rule}: not advised; {instead.rule} is, the fastest measured")
        arms[proposal.rule] = (proposal, candidate)
        if proposal.refine is not None and not advised(trials[-1]):
            directory = out / DIFF_DIR / proposal.rule
            directory.mkdir(parents=True, exist_ok=True)
            steps = max(profile_steps, REFINE_STEPS)
            note(f"{proposal.rule}: not advised; profiling the candidate, {steps} steps")
            profile = _profile_candidate(proposal, candidate, spec, directory, settings, steps)
            narrower = proposal.refine(baseline_profile, profile, directory)
            if isinstance(narrower, str):
                note(f"{proposal.rule}: nothing narrower to try: {narrower}")
                trials.append(
                    Trial(
                        narrowed(proposal.rule),
                        "a narrower change, from the candidate re-profiled",
                        "",
                        (),
                        not_applicable=narrower,
                    )
                )
            else:
                pending.insert(0, narrower)
    ratios = {
        trial.rule: trial.result.ratio
        for trial in trials
        if trial.result is not None and faster_rival(trial) is None
    }
    best = min(
        (trial for trial in trials if trial.rule in ratios),
        key=lambda trial: ratios[trial.rule],
        default=None,
    )
    summary: tuple[tuple[str, str], ...] = ()
    files: tuple[str, ...] = ()
    if best is not None and profile_steps > 0:
        directory = out / DIFF_DIR
        directory.mkdir(parents=True, exist_ok=True)
        note(f"profiling the best candidate ({best.rule}), {profile_steps} steps")
        proposal, candidate = arms[best.rule]
        profile = _profile_candidate(proposal, candidate, spec, directory, settings, profile_steps)
        diff = compare(baseline_profile, profile, "baseline", best.rule)
        written = write_outputs(diff, directory)
        summary = tuple(summary_rows(diff))
        files = tuple(str(path.relative_to(out)) for path in written)
    result = OptimizeResult(
        case.name, settings, tuple(trials), best.rule if best else None, summary, files
    )
    result.write(out / "optimize.json")
    return result


@dataclass(frozen=True)
class Measured:
    """What `_measure` took of one proposal."""

    samples: ABSamples  # against the baseline
    again: ABSamples | None  # the second A/B of a gain under the noise floor
    candidate: ModelCase | None  # the candidate step, when it runs in this process
    numerics: str  # the candidate's numerics check
    # Per rival: its rule, its A/B against the candidate (the rival as the baseline
    # arm) and against the baseline (the rival as the candidate arm).
    against: tuple[tuple[str, ABSamples, ABSamples], ...] = ()


def _measure(
    proposal: Proposal,
    case: ModelCase,
    spec: ModelSpec | None,
    settings: ABSettings,
    note: Callable[[str], None],
) -> Measured:
    """The A/B samples of one proposal (twice for a gain under the noise floor),
    its candidate, numerics check and rivals' samples (`Measured`). Raises
    NotApplicable when the change cannot be made or the candidate computes
    something else."""

    def block_note(message: str) -> None:
        note(f"{proposal.rule}: {message}")

    def timed(
        baseline: Callable[[int], tuple[int, ...]], candidate: Callable[[int], tuple[int, ...]]
    ) -> tuple[ABSamples, ABSamples | None]:
        samples = interleave(baseline, candidate, settings.repetitions, settings.steps, block_note)
        if not wants_second(samples, settings.noise, settings.floor):
            return samples, None
        note(f"{proposal.rule}: a gain under {settings.noise:.0%}: measured a second time")
        return samples, interleave(
            baseline, candidate, settings.repetitions, settings.steps, block_note
        )

    def checked(numerics: NumericsCheck) -> str:
        """The check's description, once it allows timing; else NotApplicable."""
        note(f"{proposal.rule}: numerics: {numerics.describe()}")
        if numerics.status is NumericsStatus.FAILED:
            raise NotApplicable(f"numerics check failed: {numerics.describe()}")
        if not numerics.checked and not settings.time_unchecked:
            raise NotApplicable(
                f"{numerics.describe()} (--optimize-unchecked times it anyway, marked so)"
            )
        note(f"{proposal.rule}: {settings.repetitions} x {settings.steps} steps an arm")
        return numerics.describe()

    if proposal.apply is not None:
        candidate = proposal.apply(case)
        numerics = check_numerics(
            case, candidate, proposal.rtol, proposal.atol, proposal.other_random_numbers
        )
        described = checked(numerics)
        baseline_arm = step_timer(case.step, settings.warmup)
        candidate_arm = step_timer(candidate.step, settings.warmup)
        samples, again = timed(baseline_arm, candidate_arm)
        return Measured(samples, again, candidate, described)
    if spec is None:
        raise NotApplicable("needs a model the worker processes can load again")
    note(f"{proposal.rule}: starting baseline and candidate worker processes")
    started: list[WorkerArm] = []
    rival_flags = tuple(rival.worker_flags for rival in proposal.rivals)
    try:
        for flags in ((), proposal.worker_flags, *rival_flags):
            arm = WorkerArm(spec, settings.warmup, flags)
            started.append(arm)
        try:
            for arm in started:
                arm.wait_ready()
        except UserError as failure:
            raise NotApplicable(f"the worker did not start: {failure}") from None
        baseline_worker, candidate_worker, *rival_workers = started
        numerics = judge_outputs(
            baseline_worker.first_outputs,
            baseline_worker.again_outputs,
            candidate_worker.first_outputs,
            baseline_worker.random_ops,
            proposal.rtol,
            proposal.atol,
            proposal.other_random_numbers,
        )
        described = checked(replace(numerics, restored=baseline_worker.restored))
        samples, again = timed(baseline_worker, candidate_worker)
        against = []
        for rival, rival_worker in zip(proposal.rivals, rival_workers, strict=True):
            note(
                f"{proposal.rule}: against {rival.rule}, {settings.repetitions} x "
                f"{settings.steps} steps an arm"
            )
            against_candidate = interleave(
                rival_worker, candidate_worker, settings.repetitions, settings.steps
            )
            note(
                f"{rival.rule}: against the baseline, {settings.repetitions} x "
                f"{settings.steps} steps an arm"
            )
            against_baseline = interleave(
                baseline_worker, rival_worker, settings.repetitions, settings.steps
            )
            against.append((rival.rule, against_candidate, against_baseline))
    finally:
        for arm in started:
            arm.close()
    return Measured(samples, again, None, described, tuple(against))


def _profile_candidate(
    proposal: Proposal,
    candidate: ModelCase | None,
    spec: ModelSpec | None,
    directory: Path,
    settings: ABSettings,
    steps: int,
) -> OpProfile:
    """The candidate's op profile: profiled here, or in a worker process for a
    change made there."""
    from tfpgo.flow import trace_reader
    from tfpgo.models import profiling

    logdir = directory / "profile"
    if candidate is not None:
        profiling.profile(candidate, logdir, steps, settings.warmup)
    else:
        assert spec is not None  # measured in workers, so a spec was given
        profile_in_worker(spec, proposal.worker_flags, logdir, steps, settings.warmup)
    return trace_reader.run(
        logdir,
        op_profile_out=directory / "op_profile.json",
        hlo_profile_out=directory / "hlo_profile.json",
        build_graph=False,
    ).op_profile


def describe(result: ABResult) -> str:
    """`0.74x [0.71, 0.77] (95%): helps`."""
    if result.low is None or result.high is None:
        interval = "no interval (fewer than 2 blocks an arm)"
    else:
        interval = f"[{result.low:.3f}, {result.high:.3f}] ({result.confidence:.0%})"
    return f"step time {result.ratio:.3f}x {interval}: {result.verdict.value}"
