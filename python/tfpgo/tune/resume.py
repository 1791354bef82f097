"""--tune from the tuning database's record of its program: a finished run's
kept program built again (and confirmed against the original, or with
`--tune-budget 0` written as it is), or a run the budget cut short resumed
from what it kept (tfpgo.tune.records)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path

from tfpgo.ab.result import ABResult, Verdict
from tfpgo.errors import UserError
from tfpgo.iree.program import (
    PROGRAM_VMFB,
    ProfiledProgram,
    Workload,
    check_outputs,
    profile_program,
)
from tfpgo.iree.run import DEVICE
from tfpgo.tune import program_ab, tuned_output
from tfpgo.tune.candidates import Variant
from tfpgo.tune.db_records import ProgramRun
from tfpgo.tune.document import CandidateTrial, EndToEnd, Tuned, TuneDocument
from tfpgo.tune.records import Records
from tfpgo.tune.tile_configs import SPEC, without_spec

# How a candidate's whole program becomes a vmfb (StableHLO, vmfb, flags,
# timeout): `iree_run.compile_vmfb` here, or on a Dask cluster's workers
# (`tfpgo.iree.remote_compile`, `--scheduler`).
CompileVmfb = Callable[[Path, Path, Sequence[str], float | None], None]
# The final A/B of a program (second) against the original (first): its result,
# or None and why it could not be run.
# The final A/B: the original against a program on its driver.
Confirm = Callable[[Path, Path, str], tuple[ABResult | None, str]]


def resumed(
    last: ProgramRun,
    records: Records,
    stablehlo: Path,
    directory: Path,
    workload: Workload,
    note: Callable[[str], None],
) -> tuple[tuple[Variant, ProfiledProgram], CandidateTrial] | None:
    """The program a run cut short by its budget had kept, compiled and profiled to
    go on from, with the trial that says so; None when it kept nothing or cannot
    be built again (then the loop starts from the original)."""
    if not last.kept_something:
        return None
    directory.mkdir(parents=True, exist_ok=True)
    variant = _recorded_variant(last, records, stablehlo, directory, note, "starting over")
    if variant is None:
        return None
    program = _profiled_record(variant, directory, workload, note, "starting over")
    if program is None:
        return None
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(last.when))
    reason = f"resumed: what the run of {when} kept before its budget ran out"
    note(f"tune: {reason}")
    return (variant, program), CandidateTrial("tuning record", _change_of(last), "kept", reason)


def _recorded_variant(
    last: ProgramRun,
    records: Records,
    stablehlo: Path,
    directory: Path,
    note: Callable[[str], None],
    then: str,
) -> Variant | None:
    """The program `last` kept, ready to compile in `directory`; None, after a note
    saying what the loop does `then`, when it is no longer stored."""
    variant = records.variant_of(last, stablehlo, directory)
    if variant is None:
        note(f"tune: the program a recorded run kept is no longer stored; {then}")
    return variant


def _profiled_record(
    variant: Variant,
    directory: Path,
    workload: Workload,
    note: Callable[[str], None],
    then: str,
) -> ProfiledProgram | None:
    """A recorded program compiled, checked and profiled; None, after a note saying
    what the loop does `then`, when it cannot be built again."""
    try:
        return profile_program(
            variant.stablehlo,
            variant.flags,
            directory,
            workload,
            tuned_output.TUNED_VMFB,
            variant.driver,
        )
    except UserError as error:
        note(f"tune: the recorded program could not be built again ({error}); {then}")
        return None


def _change_of(run: ProgramRun) -> str:
    parts = [*(flag for flag in without_spec(run.flags)), *(["a tuning spec"] if run.spec else [])]
    if run.driver != DEVICE:
        parts.append(f"IREE's {run.driver} driver")
    return ", ".join(parts + (["a rewritten program"] if run.rewritten else [])) or "nothing"


def rebuilt(
    last: ProgramRun,
    records: Records,
    stablehlo: Path,
    workload: Workload,
    baseline: ProfiledProgram,
    out: Path,
    budget_s: float,
    note: Callable[[str], None],
    compile_vmfb: CompileVmfb,
    timeout_s: float,
    confirm: Confirm,
) -> TuneDocument | None:
    """The program a finished run kept (or, with `--tune-budget 0`, the last run
    of any kind), built from its record: compiled and checked, then confirmed
    against the original by one A/B (`confirm`), or with a budget of 0 written as
    it is. None when it can no longer be built (its rewritten program is not
    stored)."""
    directory = stablehlo.parent / "tune" / "recorded"
    directory.mkdir(parents=True, exist_ok=True)
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(last.when))
    runs = baseline.profile.runs
    if not last.kept_something:
        why = (
            f"the run of {when} finished and kept nothing: the program --lower iree compiled stays"
        )
        trial = CandidateTrial("tuning record", "nothing", "skipped", why)
        return TuneDocument(budget_s, runs, (trial,), (), (), None, None)
    variant = _recorded_variant(last, records, stablehlo, directory, note, "tuning again")
    if variant is None:
        return None
    change = _change_of(last)
    then = "" if last.ratio is None else f" (ratio {last.ratio:.3f} then)"
    if budget_s == 0:
        vmfb = directory / PROGRAM_VMFB
        try:
            compile_vmfb(variant.stablehlo, vmfb, variant.flags, timeout_s)
            max_abs = check_outputs(vmfb, workload, directory, variant.flags)
        except UserError as error:
            trial = CandidateTrial("tuning record", change, "rejected", str(error))
            document = TuneDocument(0, runs, (trial,), (), (), None, None, str(error))
            return document
        (out / tuned_output.TUNED_VMFB).write_bytes(vmfb.read_bytes())
        if last.spec:
            (out / SPEC).write_text(last.spec)
        same = records.rebuild_text(last, vmfb)
        reason = f"built from the run of {when}{then}, {same}; not timed (--tune-budget 0)"
        trial = CandidateTrial("tuning record", change, "kept", reason, None, max_abs)
        note(f"tune: {reason}: {tuned_output.TUNED_VMFB}")
        built = Tuned(tuned_output.TUNED_VMFB, "", (), last.driver)
        document = TuneDocument(0, runs, (trial,), (), last.flags, built, None)
        return document
    program = _profiled_record(variant, directory, workload, note, "tuning again")
    if program is None:
        return None
    # One sequential A/B: a settled gain stops it at its first look.
    overall, unconfirmed = confirm(baseline.vmfb, program.vmfb, variant.driver)
    reason = f"built from the run of {when}{then}, {records.rebuild_text(last, program.vmfb)}"
    trial = CandidateTrial(
        "tuning record", change, "kept", reason, None, program.profile.outputs_max_abs
    )
    end_to_end = None if overall is None else EndToEnd.of(overall, program.profile.outputs_max_abs)
    tuned = None
    if overall is not None and overall.verdict is Verdict.HELPS:
        tuned = tuned_output.keep(program, baseline.profile, variant, stablehlo, workload, out)
        note(f"tune: {reason}: {program_ab.result_text(overall)}")
    else:
        note(f"tune: {reason}, not confirmed against the original; the original stays")
    document = TuneDocument(
        budget_s, runs, (trial,), (), last.flags if tuned else (), tuned, end_to_end,
        unconfirmed,
    )  # fmt: skip
    return document
