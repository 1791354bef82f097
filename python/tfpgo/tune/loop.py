"""The tuning loop: propose from the profile, compile, check, measure, keep what wins.

Each candidate (`tfpgo.tune.candidates`) is built on the current best program,
compiled, and its outputs checked against TensorFlow's with the tolerance of
`--lower iree`; a program that computes something else is rejected whatever
its speed. Then it is timed against the current best by the sequential paired
A/B (`tfpgo.tune.program_ab`: both programs in one process, called in turn, in
several processes loaded in random order, with the worker threads the original
runs fastest with; `helps` only when the whole interval lies below 1 and the
gain passes 1%). Only a candidate that helps becomes the current best. A budget bounds the loop: a
candidate is started only while time is left; while it lasts, a kept candidate
that repeats (dispatch-tiles) is tried once more after the others, on the
re-profiled program, where other dispatches are now the hot ones. Whatever IREE
does, no IREE tool of the stage runs past the budget plus one measurement
(`tools.tools_deadline`; each run has its own timeout too): a tool killed there,
or at its timeout twice (IREE 3.13's intermittent deadlock), rejects the
candidate it ran for, with IREE's line, or leaves the original program when it
was the final A/B. Candidates
compile here, or with
`--scheduler` on a Dask cluster's workers (`tfpgo.iree.remote_compile`); they are
measured here, one at a time, either way.

When something was kept, the tuned program is timed against the original in
the same run (the headline ratio) and profiled like the original
(`iree_profile.tuned.json`), so the report can say which TensorFlow ops each
change sped up. `tune.json` records every candidate, measured or not, and why.

With the tuning database (`tfpgo.tune.records`) the loop starts from what
earlier runs recorded of this program on this target (built again, resumed, or
candidates already measured left out), gives the tile search the records of
root ops it meets and this machine's limit, and records what it measured.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from tfpgo.ab.result import ABResult, Verdict
from tfpgo.dask_cluster import ClusterError
from tfpgo.errors import UserError
from tfpgo.iree import profile_document
from tfpgo.iree import run as iree_run
from tfpgo.iree.output_check import FLOAT32, program_precision, relative_to
from tfpgo.iree.program import (
    PROGRAM_VMFB,
    ProfiledProgram,
    Workload,
    check_outputs,
    profile_program,
)
from tfpgo.iree.tools import ToolTimeout, tool_timeout_s, tools_deadline
from tfpgo.runtime.anchor_profile import EngineLayers
from tfpgo.tune import program_ab, resume, tuned_output
from tfpgo.tune.candidates import (
    CANDIDATES,
    EVIDENCE,
    Candidate,
    CandidateContext,
    ProposedVariant,
    Variant,
)
from tfpgo.tune.dispatch_tiles import MIN_SHARE
from tfpgo.tune.document import (
    TUNE_DOCUMENT,
    CandidateTrial,
    Decision,
    EndToEnd,
    Tuned,
    TuneDocument,
)
from tfpgo.tune.headroom import held_back
from tfpgo.tune.records import Records, RunSummary, file_digest, from_record
from tfpgo.tune.resume import CompileVmfb
from tfpgo.tune.roofline import AT_LIMIT, MachineLimit, hot_fractions, model_fraction
from tfpgo.tune.tile_configs import SPEC, SPEC_FLAG, RootConfig, without_spec

# A candidate's compile may hang (IREE 3.13 now and then deadlocks with a tuning
# spec): it gets a few times what compiling the original took (all three forms of
# it), and at least MIN_COMPILE_TIMEOUT_S.
MIN_COMPILE_TIMEOUT_S, COMPILE_TIMEOUT_FACTOR = 60.0, 3.0
# The stage's IREE tools stop at the budget plus one measurement: a compile at its
# timeout and OVERRUN_ABS A/Bs run to their last process (a candidate's and the
# final one).
OVERRUN_ABS = 2


@dataclass(frozen=True)
class Tuning:
    """What `--tune` may spend: wall-clock seconds (candidates start only before
    the budget is spent) and an A/B's seconds of alternation at most."""

    budget_s: float  # 0: build from the tuning database's records, measuring nothing
    ab_s: float = program_ab.AB_S
    # The run's A/Bs, planned from the original program (tune).
    ab: program_ab.ProgramAB | None = None
    # The fastest float32 anchor's layers (CandidateContext).
    anchor: EngineLayers | None = None


def tune(
    stablehlo: Path,
    workload: Workload,
    baseline: ProfiledProgram,
    out: Path,
    tuning: Tuning,
    note: Callable[[str], None] = lambda _: None,
    candidates: tuple[Candidate, ...] = CANDIDATES,
    compile_vmfb: CompileVmfb = iree_run.compile_vmfb,
    records: Records | None = None,
) -> TuneDocument:
    """Runs the loop (module docstring) from `baseline`, the profiled program of
    `stablehlo`, writing tune.json and, when a candidate was kept, the tuned
    program and its profile into `out`; `compile_vmfb` compiles each candidate.
    With `records` (the tuning database) it starts from what is recorded of this
    program and records what it measures (`tfpgo.tune.records`). Returns what
    tune.json records."""
    started_s = time.monotonic()
    deadline = started_s + tuning.budget_s
    timeout_s = max(MIN_COMPILE_TIMEOUT_S, COMPILE_TIMEOUT_FACTOR * baseline.compile_s)
    scratch = stablehlo.parent / "tune" / "threads"
    runs = program_ab.ProgramAB(
        baseline.vmfb, baseline.profile.run_dispatch_s, workload, scratch, tuning.ab_s, note
    )
    tuning = replace(tuning, ab=runs)
    overrun_s = tool_timeout_s(timeout_s) + OVERRUN_ABS * runs.longest_s()
    what = (
        f"--tune-budget ({tuning.budget_s:.0f} s) and one measurement past it ({overrun_s:.0f} s)"
    )
    run = _Run(
        stablehlo, workload, baseline, out, tuning, note, compile_vmfb, deadline, timeout_s, records
    )
    with tools_deadline(deadline + overrun_s, what):
        document = _tune(run, candidates)
    stale = records.stale() if records is not None else ()
    spent_s = round(time.monotonic() - started_s, 3)
    return _written(replace(document, tune_s=spent_s, stale=stale), out, note)


@dataclass(frozen=True)
class _Run:
    """What one `tune` works from and within: the original program, its workload
    and profile, where it writes, its budget and A/Bs, how it compiles, its
    deadline and compile timeout, and the tuning database's records (or None)."""

    stablehlo: Path
    workload: Workload
    baseline: ProfiledProgram
    out: Path
    tuning: Tuning
    note: Callable[[str], None]
    compile_vmfb: CompileVmfb
    deadline: float
    timeout_s: float
    records: Records | None

    @property
    def scratch(self) -> Path:
        return self.stablehlo.parent / "tune"


@dataclass
class _Loop:
    """The loop's state: the best program so far (its variant, its profile and
    the `CandidateContext` candidates decide from), and what was tried, decided and measured."""

    current: Variant
    program: ProfiledProgram
    context: CandidateContext
    trials: list[CandidateTrial] = field(default_factory=list)
    # Each decision, the flags its change added (a tuning spec aside) and the tiles.
    decisions: list[tuple[Decision, frozenset[str], frozenset[RootConfig]]] = field(
        default_factory=list
    )
    # Each trial measured this run, the program it was measured on and its flags.
    measured: list[tuple[CandidateTrial, Variant, tuple[str, ...]]] = field(default_factory=list)

    def now_on(self, variant: Variant, program: ProfiledProgram, profile_path: Path) -> None:
        """The loop goes on from `program` (written to `profile_path`): the next
        candidate decides from what it changed."""
        self.current, self.program = variant, program
        program.profile.write(profile_path)
        self.context = replace(self.context, profile_path=profile_path, profile=program.profile)


@dataclass(frozen=True)
class _Outcome:
    """What the final A/B made of the kept changes: the tuned program (None: the
    original stays), its end-to-end ratio, and why it could not be confirmed."""

    tuned: Tuned | None = None
    end_to_end: EndToEnd | None = None
    unconfirmed: str = ""


def _tune(run: _Run, candidates: tuple[Candidate, ...]) -> TuneDocument:
    """`tune` within its tools' deadline: the records' exits, the loop, then the
    final A/B, the document and the records."""
    started_s = time.monotonic()
    run.scratch.mkdir(exist_ok=True)
    recorded = _from_records(run)
    if recorded is not None:
        return recorded
    limit = run.records.limit(run.note) if run.records is not None else None
    hot, whole = _at_limit(run.baseline.profile, limit)
    if whole is not None and whole >= AT_LIMIT:
        return _at_limit_document(run, candidates, hot, whole)
    loop = _start(run, limit)
    _try_candidates(run, loop, candidates)
    outcome = _confirm_kept(run, loop)
    final = _final_decisions(loop, outcome)
    flags = tuple(
        f"{SPEC_FLAG}{SPEC}" if flag.startswith(SPEC_FLAG) else flag for flag in loop.current.flags
    )
    kept_profile = (loop.program if outcome.tuned is not None else run.baseline).profile
    precision = program_precision(flags if outcome.tuned is not None else ())
    document = TuneDocument(
        run.tuning.budget_s,
        run.baseline.profile.runs,
        tuple(loop.trials),
        tuple(final),
        flags,
        outcome.tuned,
        outcome.end_to_end,
        outcome.unconfirmed,
        at_limit=hot,
        limit_fraction=whole,
        held_back=()
        if limit is None
        else held_back(kept_profile, limit, final, loop.trials, run.out),
        precision=precision,
        max_output_error=run.workload.output_budget,
        output_error=_output_error(run.workload, precision, kept_profile),
    )
    if run.records is not None:
        _record(run, run.records, loop, outcome, time.monotonic() - started_s)
    return document


def _output_error(
    workload: Workload, precision: str, kept: profile_document.IreeProfile
) -> float | None:
    """A program in a lower precision: its outputs' error against the expected
    ones relative to their largest magnitude (None in float32)."""
    if precision == FLOAT32:
        return None
    return relative_to(kept.outputs_max_abs, workload.expected)


def _from_records(run: _Run) -> TuneDocument | None:
    """The run the records settle: a finished run's (or with a budget of 0, the
    last run's) program built again, or with a budget of 0 and no record, the
    original kept; None when the loop runs."""
    records = run.records
    if records is None:
        return None
    last = records.last_run()
    if last is not None and (last.finished or run.tuning.budget_s == 0):

        def confirm(original: Path, tuned: Path, driver: str) -> tuple[ABResult | None, str]:
            return _confirmed(original, tuned, run.workload, run.tuning, driver)

        rebuilt = resume.rebuilt(
            last, records, run.stablehlo, run.workload, run.baseline, run.out,
            run.tuning.budget_s, run.note, run.compile_vmfb, run.timeout_s, confirm,
        )  # fmt: skip
        if rebuilt is not None:
            return rebuilt
    if run.tuning.budget_s == 0:
        why = f"{_NO_RECORD}{records.elsewhere()}: the program --lower iree compiled stays"
        return TuneDocument(0, run.baseline.profile.runs, (), (), (), None, None, why)
    return None


def _at_limit_document(
    run: _Run,
    candidates: tuple[Candidate, ...],
    hot: tuple[tuple[str, float], ...],
    whole: float,
) -> TuneDocument:
    """No candidate tried: each dispatch's bound is a floor no tuning goes below,
    and the program can gain at most 15%, which the budget is not spent on."""
    reason = (
        f"the program runs at {whole:.0%} of this machine's limit (the sum of its "
        "dispatches' roofline bounds over their time): within 15% of it, nothing left "
        "to gain here"
    )
    run.note(f"tune: {reason}; no candidate tried")
    skipped = tuple(CandidateTrial(c.name, "", "not tried", reason) for c in candidates)
    return TuneDocument(
        run.tuning.budget_s, run.baseline.profile.runs, skipped, (), (), None, None,
        at_limit=hot, limit_fraction=whole,
    )  # fmt: skip


def _start(run: _Run, limit: MachineLimit | None) -> _Loop:
    """The loop's state at its start: the original program, or the one a run the
    budget cut short had kept (its trial says so)."""
    tuning = run.tuning
    context = CandidateContext(
        run.out / "iree_profile.json", run.baseline.profile, run.workload, run.deadline,
        run.timeout_s, limit, run.records, None if tuning.ab is None else tuning.ab.call_s,
        tuning.anchor,
    )  # fmt: skip
    loop = _Loop(Variant(run.stablehlo), run.baseline, context)
    last = run.records.last_run() if run.records is not None else None
    if last is None or run.records is None:
        return loop
    directory = run.scratch / "resumed"
    resumed = resume.resumed(last, run.records, run.stablehlo, directory, run.workload, run.note)
    if resumed is not None:
        (variant, program), trial = resumed
        loop.trials.append(trial)
        loop.now_on(variant, program, directory / "iree_profile.json")
    return loop


def _try_candidates(run: _Run, loop: _Loop, candidates: tuple[Candidate, ...]) -> None:
    """The candidates in order, then again those that repeat, while they are kept
    (appended to the queue as it is walked), each while the budget leaves room."""
    measuring_s = 0.0  # the longest compile, check and A/B of a candidate so far
    queue = [(candidate, 1) for candidate in candidates]
    for index, (candidate, round_) in enumerate(queue):
        name = candidate.name if round_ == 1 else f"{candidate.name} (round {round_})"
        # Room for this candidate's measurement and the final A/B, as long as the
        # longest so far: the budget bounds the whole loop, not only its starts.
        cutoff = run.deadline - 2 * measuring_s
        if time.monotonic() >= cutoff:
            loop.trials.append(CandidateTrial(name, "", "not tried", "the --tune-budget was spent"))
            continue
        records = run.records
        recorded = records.decided(loop.current).get(name) if records is not None else None
        if recorded is not None and recorded.verdict != Verdict.HELPS.value:
            loop.trials.append(
                CandidateTrial(name, recorded.change, "skipped", from_record(recorded))
            )
            run.note(f"tune: {name}: skipped: {loop.trials[-1].reason}")
            continue
        started = time.monotonic()
        again = _try(run, loop, candidate, name, index, round_, cutoff)
        if again:
            queue.append((candidate, round_ + 1))
        measuring_s = max(measuring_s, time.monotonic() - started)


def _try(
    run: _Run,
    loop: _Loop,
    candidate: Candidate,
    name: str,
    index: int,
    round_: int,
    cutoff: float,
) -> bool:
    """One candidate proposed, measured against the best program so far, and kept
    when it helps; whether it goes again (one that repeats, kept)."""
    directory = run.scratch / f"candidate_{index}"
    directory.mkdir()
    records = run.records
    cut = records.cut() if records is not None else frozenset()
    context = replace(loop.context, deadline=cutoff)
    proposal = _proposed(candidate, loop.current, context, directory)
    _keep_evidence(directory, run.out, round_)
    # A candidate whose search the budget cut short is not recorded as decided:
    # the next run proposes it again, and its search resumes where it stopped.
    decided = records is None or records.cut() == cut
    if not isinstance(proposal, ProposedVariant):
        loop.trials.append(CandidateTrial(name, "", *proposal))
        if decided:
            loop.measured.append((loop.trials[-1], loop.current, ()))
        run.note(f"tune: {name}: {proposal[0]}: {proposal[1]}")
        return False
    trial = _measure(
        name, proposal, run.timeout_s, loop.program.vmfb, loop.current.driver, run.workload,
        directory, run.tuning, run.compile_vmfb,
    )  # fmt: skip
    trial, profiled = _profiled_if_kept(trial, proposal.variant, directory, run.workload)
    run.note(f"tune: {trial.name}: {trial.outcome}: {trial.reason}")
    loop.trials.append(trial)
    flags = tuple(without_spec(proposal.variant.flags))
    if decided:
        loop.measured.append((trial, loop.current, flags))
    made = [
        replace(decision, candidate=name, kept=trial.outcome == "kept")
        for decision in proposal.decisions
        or (_whole_program(proposal, trial, run.baseline.profile.runs),)
    ]
    added = frozenset(flags) - frozenset(loop.current.flags)
    tiles = frozenset(proposal.variant.tiles) - frozenset(loop.current.tiles)
    if profiled is not None:
        loop.now_on(proposal.variant, profiled, directory / "iree_profile.json")
        made = [_measured_after(decision, profiled.profile) for decision in made]
    loop.decisions.extend((decision, added, tiles) for decision in made)
    return profiled is not None and candidate.repeats


def _confirm_kept(run: _Run, loop: _Loop) -> _Outcome:
    """The kept changes, whole, against the original: each won against the program
    before it; the whole must win against the original too, or the original stays
    (never a slower program)."""
    kept = ", ".join(trial.name for trial in loop.trials if trial.outcome == "kept")
    if not kept:
        return _Outcome()
    overall, unconfirmed = _confirmed(
        run.baseline.vmfb, loop.program.vmfb, run.workload, run.tuning, loop.current.driver
    )
    end_to_end = None
    if overall is not None:
        end_to_end = EndToEnd.of(overall, loop.program.profile.outputs_max_abs)
    if overall is not None and overall.verdict is Verdict.HELPS:
        tuned = tuned_output.keep(
            loop.program, run.baseline.profile, loop.current, run.stablehlo, run.workload, run.out
        )
        run.note(f"tune: kept {kept}: {program_ab.result_text(overall)}")
        return _Outcome(tuned, end_to_end, unconfirmed)
    loop.current = Variant(run.stablehlo)
    why = (
        unconfirmed
        if overall is None
        else f"{overall.verdict.value}: {program_ab.result_text(overall)}"
    )
    run.note(f"tune: {kept} not confirmed against the original ({why}); the original stays")
    return _Outcome(None, end_to_end, unconfirmed)


def _final_decisions(loop: _Loop, outcome: _Outcome) -> list[Decision]:
    """The decisions, each kept only if in the final program: a kept change a later
    one dropped (data tiling drops a tuning spec), or one of a whole that was not
    confirmed, is not."""
    current = loop.current
    return [
        replace(decision, kept=False)
        if decision.kept
        and (
            outcome.tuned is None
            or not added <= set(current.flags)
            or not tiles <= set(current.tiles)
        )
        else decision
        for decision, added, tiles in loop.decisions
    ]


def _record(run: _Run, records: Records, loop: _Loop, outcome: _Outcome, tune_s: float) -> None:
    """What the run measured and ended with, into the tuning database."""
    tuned = outcome.tuned
    untried = tuple(trial.name for trial in loop.trials if trial.outcome == "not tried")
    ratio = outcome.end_to_end.ratio if tuned is not None and outcome.end_to_end else None
    vmfb = file_digest(run.out / tuned_output.TUNED_VMFB) if tuned is not None else ""
    model = records.model or run.out.name
    summary = RunSummary(model, not untried, ratio, tune_s, untried, vmfb)
    records.record(
        [(trial, on, added, trial.outcome == "kept" and tuned is not None)
         for trial, on, added in loop.measured],
        loop.current if tuned is not None else Variant(run.stablehlo),
        run.stablehlo,
        summary,
    )  # fmt: skip


def _at_limit(
    profile: profile_document.IreeProfile, limit: MachineLimit | None
) -> tuple[tuple[tuple[str, float], ...], float | None]:
    """Each hot dispatch of the original program and the fraction of this
    machine's limit it reached, and the program's as a whole (none without the
    limit)."""
    if limit is None:
        return (), None
    timed = [(d.name, d.count, d.total_ps) for d in profile.dispatches]
    return hot_fractions(timed, limit, MIN_SHARE), model_fraction(timed, limit)


_NO_RECORD = (
    "--tune-budget 0 builds from the tuning database, which holds no run of this program on "
    "this target"
)


def _written(document: TuneDocument, out: Path, note: Callable[[str], None]) -> TuneDocument:
    """Writes tune.json; a stage that tried nothing says why in the run's output."""
    document.write(out / TUNE_DOCUMENT)
    if document.unconfirmed and not document.trials:
        note(f"tune: {document.unconfirmed}")
    return document


def _proposed(
    candidate: Candidate, current: Variant, context: CandidateContext, directory: Path
) -> ProposedVariant | tuple[str, str]:
    """The candidate's proposal, or its outcome and why there is none: `skipped`
    with the candidate's reason, `rejected` when an IREE tool or process it ran
    (a tile benchmark's compile, a generation's alternation) was killed or
    failed, with that line."""
    try:
        proposal = candidate.propose(current, context, directory)
    except ClusterError:
        raise  # not the candidate's fault, and no other can be compiled either
    except UserError as error:  # an IREE tool it ran hung, failed or was stopped
        return "rejected", str(error)
    return ("skipped", proposal) if isinstance(proposal, str) else proposal


def _profiled_if_kept(
    trial: CandidateTrial, variant: Variant, directory: Path, workload: Workload
) -> tuple[CandidateTrial, ProfiledProgram | None]:
    """A kept trial's program profiled like the original (its vmfb the one just
    measured, copied: tools.compile_once); one that cannot be (an IREE tool hung
    or failed) is rejected after all, with why."""
    if trial.outcome != "kept":
        return trial, None
    try:
        profiled = profile_program(
            variant.stablehlo,
            variant.flags,
            directory / "kept",
            workload,
            tuned_output.TUNED_VMFB,
            variant.driver,
        )
    except UserError as error:
        reason = f"{trial.reason}; but its program could not be profiled again: {error}"
        return replace(trial, outcome="rejected", reason=reason), None
    return trial, profiled


def _confirmed(
    baseline: Path, tuned: Path, workload: Workload, tuning: Tuning, driver: str
) -> tuple[ABResult | None, str]:
    """The final A/B of the tuned program (on `driver`) against the original (on
    local-task), or why it could not be run (an IREE tool killed: a hang, or the
    stage's deadline)."""
    try:
        overall = _ab(baseline, tuned, workload, tuning, (iree_run.DEVICE, driver))
    except ToolTimeout as error:
        return None, str(error)
    return overall, ""


def _whole_program(proposal: ProposedVariant, trial: CandidateTrial, runs: int) -> Decision:
    """The decision of a whole-program option: its A/B's run times over as many
    runs as the profile has, or no time when it was not timed."""
    result = trial.result
    if result is None:
        return Decision("", "", (), proposal.change, 0, None, False)
    before, after = (round(ms * 1e9 * runs) for ms in (result.baseline_ms, result.candidate_ms))
    return Decision("", "", (), proposal.change, before, after, False)


def _measured_after(decision: Decision, after: profile_document.IreeProfile) -> Decision:
    """A decision's time after the change where the proposal could not know it: the
    kept program's dispatches that ran the decision's tf ops."""
    if decision.after_ps is not None:
        return decision
    ops = set(decision.tf_ops)
    spent = sum(d.total_ps for d in after.dispatches if ops & set(d.sources))
    return replace(decision, after_ps=spent)


def _keep_evidence(directory: Path, out: Path, round_: int) -> None:
    """Copies a candidate's EVIDENCE files into `out`; a later round's under
    its number (tiles.2.json)."""
    for name in EVIDENCE:
        if (directory / name).is_file():
            kept = name if round_ == 1 else f"{Path(name).stem}.{round_}{Path(name).suffix}"
            (out / kept).write_bytes((directory / name).read_bytes())


def _measure(
    name: str,
    proposal: ProposedVariant,
    compile_timeout_s: float,
    current_vmfb: Path,
    current_driver: str,
    workload: Workload,
    directory: Path,
    tuning: Tuning,
    compile_vmfb: CompileVmfb,
) -> CandidateTrial:
    """Compiles the proposal, checks its outputs, and times it against the current
    best, each on its driver: kept only if it helps."""
    vmfb = directory / PROGRAM_VMFB
    variant = proposal.variant
    try:  # a program IREE cannot compile (or hangs on), or one that computes otherwise
        compile_vmfb(variant.stablehlo, vmfb, variant.flags, compile_timeout_s)
        max_abs = check_outputs(vmfb, workload, directory, variant.flags)
    except ClusterError:
        raise  # not the candidate's fault, and no other can be compiled either
    except UserError as error:
        return CandidateTrial(name, proposal.change, "rejected", str(error))
    try:
        result = _ab(current_vmfb, vmfb, workload, tuning, (current_driver, variant.driver))
    except ToolTimeout as error:  # an A/B process hung, or the deadline passed
        return CandidateTrial(name, proposal.change, "rejected", str(error), None, max_abs)
    outcome = "kept" if result.verdict is Verdict.HELPS else "rejected"
    reason = f"{result.verdict.value}: {program_ab.result_text(result)}"
    return CandidateTrial(name, proposal.change, outcome, reason, result, max_abs)


def _ab(
    baseline: Path, candidate: Path, workload: Workload, tuning: Tuning, drivers: tuple[str, str]
) -> ABResult:
    assert tuning.ab is not None, "tune plans the A/Bs before it measures"
    return tuning.ab.measure(baseline, candidate, drivers)
