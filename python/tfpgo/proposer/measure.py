"""One proposal measured (`measure`): its change applied, its outputs checked
against the baseline's, then timed against it by interleaved A/B blocks; its
rivals checked and timed the same way; and its candidate profiled
(`profile_candidate`). `tfpgo.proposer.optimize` runs it for every proposal.

A change made in this process (`Proposal.apply`) is timed here; one TensorFlow
takes only when it loads (`Proposal.worker_flags`) runs the baseline, the
candidate and each rival each in a worker process, started side by side. A
candidate whose outputs differ is not timed (`NotApplicable`); a rival whose
outputs differ is recorded with its check and not timed; a check that cannot
decide (a nondeterministic step, other random numbers) allows timing only with
`time_unchecked` (`--optimize-unchecked`), and the check's text says so.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from tfpgo.ab.intervals import CONFIDENCE
from tfpgo.attribution.op_profile import OpProfile
from tfpgo.errors import UserError
from tfpgo.models import ModelCase
from tfpgo.proposer.blocks import (
    CONFIRM_FLOOR,
    NOISE,
    ABSamples,
    interleave,
    judge,
    step_timer,
    wants_second,
)
from tfpgo.proposer.numerics import NumericsCheck, NumericsStatus, check_numerics, judge_outputs
from tfpgo.proposer.proposal import NotApplicable, Proposal, Rival
from tfpgo.proposer.trials import RivalTrial
from tfpgo.proposer.worker import ModelSpec, WorkerArm, profile_in_worker

# Runs that many warmed-up steps of one arm, returns their wall times (ns).
BlockRunner = Callable[[int], tuple[int, ...]]
# Reads a profiled logdir into its op profile, writing op_profile.json (and
# hlo_profile.json) into the directory: the flow's trace reader, handed down (the
# trace stages come after the proposer's).
ProfileReader = Callable[[Path, Path], OpProfile]


@dataclass(frozen=True)
class ABSettings:
    repetitions: int = 10  # blocks an arm
    steps: int = 10  # steps a block
    warmup: int = 2  # unmeasured steps of each arm first
    noise: float = NOISE
    # A gain between this and `noise` is measured twice; the worse A/B counts
    # (blocks.judge_twice).
    floor: float = CONFIRM_FLOOR
    # Time candidates whose numerics cannot be checked (a nondeterministic step, a
    # change that draws other random numbers); their trials say so.
    time_unchecked: bool = False


@dataclass(frozen=True)
class Measured:
    """What `measure` took of one proposal."""

    samples: ABSamples  # against the baseline
    again: ABSamples | None  # the second A/B of a gain under the noise floor
    candidate: ModelCase | None  # the candidate step, when it runs in this process
    numerics: str  # the candidate's numerics check
    rivals: tuple[RivalTrial, ...] = ()  # each rival checked, and timed if it passed


def measure(
    proposal: Proposal,
    case: ModelCase,
    spec: ModelSpec | None,
    settings: ABSettings,
    note: Callable[[str], None],
    confidence: float = CONFIDENCE,
) -> Measured:
    """The A/B samples of one proposal (twice for a gain under the noise floor,
    judged at `confidence`), its candidate, numerics check and rivals (`Measured`).
    Raises NotApplicable when the change cannot be made or the candidate computes
    something else."""

    def block_note(message: str) -> None:
        note(f"{proposal.rule}: {message}")

    def timed(baseline: BlockRunner, candidate: BlockRunner) -> tuple[ABSamples, ABSamples | None]:
        samples = interleave(baseline, candidate, settings.repetitions, settings.steps, block_note)
        if not wants_second(samples, settings.noise, settings.floor, confidence):
            return samples, None
        note(f"{proposal.rule}: a gain under {settings.noise:.0%}: measured a second time")
        return samples, interleave(
            baseline, candidate, settings.repetitions, settings.steps, block_note
        )

    def checked(numerics: NumericsCheck) -> str:
        """The check's description, once it allows timing; else NotApplicable."""
        note(f"{proposal.rule}: numerics: {numerics.describe()}")
        if not timing_allowed(numerics, settings):
            raise NotApplicable(_not_timed_text(numerics))
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
    try:
        for flags in ((), proposal.worker_flags, *(r.worker_flags for r in proposal.rivals)):
            started.append(WorkerArm(spec, settings.warmup, flags))
        try:
            for arm in started:
                arm.wait_ready()
        except UserError as failure:
            raise NotApplicable(f"the worker did not start: {failure}") from None
        baseline_worker, candidate_worker, *rival_workers = started

        def outputs_check(
            worker: WorkerArm, rtol: float, atol: float, other: bool
        ) -> NumericsCheck:
            first, again = baseline_worker.first_outputs, baseline_worker.again_outputs
            random_ops = baseline_worker.random_ops
            check = judge_outputs(first, again, worker.first_outputs, random_ops, rtol, atol, other)
            return replace(check, restored=baseline_worker.restored)

        own = (proposal.rtol, proposal.atol, proposal.other_random_numbers)
        described = checked(outputs_check(candidate_worker, *own))
        samples, again = timed(baseline_worker, candidate_worker)
        rivals = []
        for rival, rival_worker in zip(proposal.rivals, rival_workers, strict=True):
            tolerance = (rival.rtol, rival.atol, rival.other_random_numbers)
            rival_numerics = outputs_check(rival_worker, *tolerance)
            arms = (baseline_worker, candidate_worker, rival_worker)
            rivals.append(rival_trial(rival, rival_numerics, arms, settings, confidence, note))
    finally:
        for arm in started:
            arm.close()
    return Measured(samples, again, None, described, tuple(rivals))


def rival_trial(
    rival: Rival,
    numerics: NumericsCheck,
    arms: tuple[BlockRunner, BlockRunner, BlockRunner],
    settings: ABSettings,
    confidence: float,
    note: Callable[[str], None],
) -> RivalTrial:
    """A rival whose outputs were compared with the baseline's (`numerics`): timed
    against the candidate (the rival as arm A) and against the baseline, judged at
    `confidence`; not timed when its numerics forbid it, as a candidate's would.
    `arms`: the baseline's, the candidate's and the rival's block runners."""
    baseline, candidate, own = arms
    note(f"{rival.rule}: numerics: {numerics.describe()}")
    if not timing_allowed(numerics, settings):
        note(f"{rival.rule}: not timed: {_not_timed_text(numerics)}")
        return RivalTrial(rival.rule, None, None, numerics=numerics.describe())
    blocks = f"{settings.repetitions} x {settings.steps} steps an arm"
    note(f"{rival.rule}: against the candidate, {blocks}")
    against_candidate = interleave(own, candidate, settings.repetitions, settings.steps)
    note(f"{rival.rule}: against the baseline, {blocks}")
    against_baseline = interleave(baseline, own, settings.repetitions, settings.steps)
    return RivalTrial(
        rival.rule,
        against_candidate,
        judge(against_candidate, settings.noise, confidence),
        against_baseline,
        judge(against_baseline, settings.noise, confidence),
        numerics.describe(),
    )


def timing_allowed(numerics: NumericsCheck, settings: ABSettings) -> bool:
    """A check that passed, or could not decide and --optimize-unchecked was given."""
    if numerics.status is NumericsStatus.FAILED:
        return False
    return numerics.checked or settings.time_unchecked


def _not_timed_text(numerics: NumericsCheck) -> str:
    if numerics.status is NumericsStatus.FAILED:
        return f"numerics check failed: {numerics.describe()}"
    return f"{numerics.describe()} (--optimize-unchecked times it anyway, marked so)"


def profile_candidate(
    proposal: Proposal,
    candidate: ModelCase | None,
    spec: ModelSpec | None,
    directory: Path,
    settings: ABSettings,
    steps: int,
    read_profile: ProfileReader,
) -> OpProfile:
    """The candidate's op profile: profiled here, or in a worker process for a
    change made there, into `directory`/profile, and read by `read_profile`."""
    from tfpgo.models import profiling

    logdir = directory / "profile"
    if candidate is not None:
        profiling.profile(candidate, logdir, steps, settings.warmup)
    else:
        assert spec is not None  # measured in workers, so a spec was given
        profile_in_worker(spec, proposal.worker_flags, logdir, steps, settings.warmup)
    return read_profile(logdir, directory)
