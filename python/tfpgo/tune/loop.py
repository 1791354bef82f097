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
from dataclasses import dataclass, replace
from pathlib import Path

from tfpgo.ab.result import ABResult, Verdict
from tfpgo.dask_cluster import ClusterError
from tfpgo.errors import UserError
from tfpgo.iree import profile_document
from tfpgo.iree import run as iree_run
from tfpgo.iree.program import ProfiledProgram, Workload, check_outputs, profile_program
from tfpgo.iree.tools import ToolTimeout, tool_timeout_s, tools_deadline
from tfpgo.tune import program_ab, resume, tuned_output
from tfpgo.tune.candidates import CANDIDATES, EVIDENCE, Candidate, Evidence, Proposal, Variant
from tfpgo.tune.dispatch_tiles import MIN_SHARE
from tfpgo.tune.document import (
    TUNE_DOCUMENT,
    Decision,
    EndToEnd,
    Trial,
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
    with tools_deadline(deadline + overrun_s, what):
        document = _tune(
            stablehlo, workload, baseline, out, tuning, note, candidates, compile_vmfb,
            deadline, timeout_s, records,
        )  # fmt: skip
    stale = records.stale() if records is not None else ()
    spent_s = round(time.monotonic() - started_s, 3)
    return _written(replace(document, tune_s=spent_s, stale=stale), out, note)


def _tune(
    stablehlo: Path,
    workload: Workload,
    baseline: ProfiledProgram,
    out: Path,
    tuning: Tuning,
    note: Callable[[str], None],
    candidates: tuple[Candidate, ...],
    compile_vmfb: CompileVmfb,
    deadline: float,
    timeout_s: float,
    records: Records | None,
) -> TuneDocument:
    """`tune` within its tools' deadline: the loop, then the final A/B."""
    started_s = time.monotonic()
    scratch = stablehlo.parent / "tune"
    scratch.mkdir(exist_ok=True)
    last = records.last_run() if records is not None else None
    if last is not None and records is not None and (last.finished or tuning.budget_s == 0):

        def confirm(original: Path, tuned: Path, driver: str) -> tuple[ABResult | None, str]:
            return _confirmed(original, tuned, workload, tuning, driver)

        rebuilt = resume.rebuilt(
            last, records, stablehlo, workload, baseline, out, tuning.budget_s, note,
            compile_vmfb, timeout_s, confirm,
        )  # fmt: skip
        if rebuilt is not None:
            return rebuilt
    if tuning.budget_s == 0 and records is not None:
        why = f"{_NO_RECORD}{records.elsewhere()}: the program --lower iree compiled stays"
        return TuneDocument(0, baseline.profile.runs, (), (), (), None, None, why)
    current, program = Variant(stablehlo), baseline
    limit = records.limit(note) if records is not None else None
    hot, whole = _at_limit(baseline.profile, limit)
    if whole is not None and whole >= AT_LIMIT:
        # Each dispatch's bound is a floor no tuning goes below: the program can
        # gain at most 15%, which the loop's budget is not spent looking for.
        reason = (
            f"the program runs at {whole:.0%} of this machine's limit (the sum of its "
            "dispatches' roofline bounds over their time): within 15% of it, nothing left "
            "to gain here"
        )
        note(f"tune: {reason}; no candidate tried")
        skipped = tuple(Trial(c.name, "", "not tried", reason) for c in candidates)
        return TuneDocument(
            tuning.budget_s, baseline.profile.runs, skipped, (), (), None, None,
            at_limit=hot, limit_fraction=whole,
        )  # fmt: skip
    evidence = Evidence(
        out / "iree_profile.json", baseline.profile, workload, deadline, timeout_s, limit, records,
        None if tuning.ab is None else tuning.ab.call_s,
    )  # fmt: skip
    trials: list[Trial] = []
    # Each decision, the flags its change added (a tuning spec aside) and the tiles.
    decisions: list[tuple[Decision, frozenset[str], frozenset[RootConfig]]] = []
    # Each trial measured this run, the program it was measured on and its flags.
    measured: list[tuple[Trial, Variant, tuple[str, ...]]] = []
    if last is not None and records is not None:
        resumed = resume.resumed(last, records, stablehlo, scratch / "resumed", workload, note)
        if resumed is not None:
            (current, program), trial = resumed
            trials.append(trial)
            program.profile.write(scratch / "resumed" / "iree_profile.json")
            evidence = replace(
                evidence,
                profile_path=scratch / "resumed" / "iree_profile.json",
                profile=program.profile,
            )
    measuring_s = 0.0  # the longest compile, check and A/B of a candidate so far
    # The candidates in order, then again those that repeat, while they are kept
    # (appended to the queue as it is walked).
    queue = [(candidate, 1) for candidate in candidates]
    for index, (candidate, round_) in enumerate(queue):
        name = candidate.name if round_ == 1 else f"{candidate.name} (round {round_})"
        # Room for this candidate's measurement and the final A/B, as long as the
        # longest so far: the budget bounds the whole loop, not only its starts.
        cutoff = deadline - 2 * measuring_s
        if time.monotonic() >= cutoff:
            trials.append(Trial(name, "", "not tried", "the --tune-budget was spent"))
            continue
        recorded = records.decided(current).get(name) if records is not None else None
        if recorded is not None and recorded.verdict != Verdict.HELPS.value:
            trials.append(Trial(name, recorded.change, "skipped", from_record(recorded)))
            note(f"tune: {name}: skipped: {trials[-1].reason}")
            continue
        directory = scratch / f"candidate_{index}"
        directory.mkdir()
        cut = records.cut() if records is not None else frozenset()
        proposal = _proposed(candidate, current, replace(evidence, deadline=cutoff), directory)
        _keep_evidence(directory, out, round_)
        # A candidate whose search the budget cut short is not recorded as decided:
        # the next run proposes it again, and its search resumes where it stopped.
        decided = records is None or records.cut() == cut
        if not isinstance(proposal, Proposal):
            trials.append(Trial(name, "", *proposal))
            if decided:
                measured.append((trials[-1], current, ()))
            note(f"tune: {name}: {proposal[0]}: {proposal[1]}")
            continue
        started = time.monotonic()
        trial = _measure(
            name,
            proposal,
            timeout_s,
            program.vmfb,
            current.driver,
            workload,
            directory,
            tuning,
            compile_vmfb,
        )
        trial, profiled = _profiled_if_kept(trial, proposal.variant, directory, workload)
        measuring_s = max(measuring_s, time.monotonic() - started)
        note(f"tune: {trial.name}: {trial.outcome}: {trial.reason}")
        trials.append(trial)
        if decided:
            measured.append((trial, current, tuple(without_spec(proposal.variant.flags))))
        made = [
            replace(decision, candidate=name, kept=trial.outcome == "kept")
            for decision in proposal.decisions
            or (_whole_program(proposal, trial, baseline.profile.runs),)
        ]
        added = frozenset(without_spec(proposal.variant.flags)) - frozenset(current.flags)
        tiles = frozenset(proposal.variant.tiles) - frozenset(current.tiles)
        if profiled is not None:
            if candidate.repeats:
                queue.append((candidate, round_ + 1))
            # Re-profiled: the next candidate decides from the program it changes.
            current, program = proposal.variant, profiled
            program.profile.write(directory / "iree_profile.json")
            evidence = replace(
                evidence, profile_path=directory / "iree_profile.json", profile=program.profile
            )
            made = [_measured_after(decision, program.profile) for decision in made]
        decisions.extend((decision, added, tiles) for decision in made)
    tuned = end_to_end = None
    unconfirmed = ""
    kept = ", ".join(trial.name for trial in trials if trial.outcome == "kept")
    if kept:
        # Each change won against the program before it; the whole must win against
        # the original too, or the original stays (never a slower program).
        overall, unconfirmed = _confirmed(
            baseline.vmfb, program.vmfb, workload, tuning, current.driver
        )
        if overall is not None:
            end_to_end = EndToEnd.of(overall, program.profile.outputs_max_abs)
        if overall is not None and overall.verdict is Verdict.HELPS:
            tuned = tuned_output.keep(program, baseline.profile, current, stablehlo, workload, out)
            note(f"tune: kept {kept}: {program_ab.result_text(overall)}")
        else:
            current = Variant(stablehlo)
            why = (
                unconfirmed
                if overall is None
                else f"{overall.verdict.value}: {program_ab.result_text(overall)}"
            )
            note(f"tune: {kept} not confirmed against the original ({why}); the original stays")
    # A kept change a later one dropped (data tiling drops a tuning spec), or one of
    # a whole that was not confirmed, is not in the final program.
    final = [
        replace(decision, kept=False)
        if decision.kept
        and (tuned is None or not added <= set(current.flags) or not tiles <= set(current.tiles))
        else decision
        for decision, added, tiles in decisions
    ]
    flags = tuple(
        f"{SPEC_FLAG}{SPEC}" if flag.startswith(SPEC_FLAG) else flag for flag in current.flags
    )
    document = TuneDocument(
        tuning.budget_s,
        baseline.profile.runs,
        tuple(trials),
        tuple(final),
        flags,
        tuned,
        end_to_end,
        unconfirmed,
        at_limit=hot,
        limit_fraction=whole,
        held_back=()
        if limit is None
        else held_back(
            (program if tuned is not None else baseline).profile, limit, final, trials, out
        ),
    )
    if records is not None:
        untried = tuple(trial.name for trial in trials if trial.outcome == "not tried")
        ratio = end_to_end.ratio if tuned is not None and end_to_end is not None else None
        vmfb = file_digest(out / tuned_output.TUNED_VMFB) if tuned is not None else ""
        summary = RunSummary(
            records.model or out.name, not untried, ratio, time.monotonic() - started_s, untried,
            vmfb,
        )  # fmt: skip
        records.record(
            [(trial, on, added, trial.outcome == "kept" and tuned is not None)
             for trial, on, added in measured],
            current if tuned is not None else Variant(stablehlo),
            stablehlo,
            summary,
        )  # fmt: skip
    return document


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
    candidate: Candidate, current: Variant, evidence: Evidence, directory: Path
) -> Proposal | tuple[str, str]:
    """The candidate's proposal, or its outcome and why there is none: `skipped`
    with the candidate's reason, `rejected` when an IREE tool or process it ran
    (a tile benchmark's compile, a generation's alternation) was killed or
    failed, with that line."""
    try:
        proposal = candidate.propose(current, evidence, directory)
    except ClusterError:
        raise  # not the candidate's fault, and no other can be compiled either
    except UserError as error:  # an IREE tool it ran hung, failed or was stopped
        return "rejected", str(error)
    return ("skipped", proposal) if isinstance(proposal, str) else proposal


def _profiled_if_kept(
    trial: Trial, variant: Variant, directory: Path, workload: Workload
) -> tuple[Trial, ProfiledProgram | None]:
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


def _whole_program(proposal: Proposal, trial: Trial, runs: int) -> Decision:
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
    proposal: Proposal,
    compile_timeout_s: float,
    current_vmfb: Path,
    current_driver: str,
    workload: Workload,
    directory: Path,
    tuning: Tuning,
    compile_vmfb: CompileVmfb,
) -> Trial:
    """Compiles the proposal, checks its outputs, and times it against the current
    best, each on its driver: kept only if it helps."""
    vmfb = directory / "model.iree.vmfb"
    variant = proposal.variant
    try:  # a program IREE cannot compile (or hangs on), or one that computes otherwise
        compile_vmfb(variant.stablehlo, vmfb, variant.flags, compile_timeout_s)
        max_abs = check_outputs(vmfb, workload, directory)
    except ClusterError:
        raise  # not the candidate's fault, and no other can be compiled either
    except UserError as error:
        return Trial(name, proposal.change, "rejected", str(error))
    try:
        result = _ab(current_vmfb, vmfb, workload, tuning, (current_driver, variant.driver))
    except ToolTimeout as error:  # an A/B process hung, or the deadline passed
        return Trial(name, proposal.change, "rejected", str(error), None, max_abs)
    outcome = "kept" if result.verdict is Verdict.HELPS else "rejected"
    reason = f"{result.verdict.value}: {program_ab.result_text(result)}"
    return Trial(name, proposal.change, outcome, reason, result, max_abs)


def _ab(
    baseline: Path, candidate: Path, workload: Workload, tuning: Tuning, drivers: tuple[str, str]
) -> ABResult:
    assert tuning.ab is not None, "tune plans the A/Bs before it measures"
    return tuning.ab.measure(baseline, candidate, drivers)
