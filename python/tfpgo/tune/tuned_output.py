"""What --tune leaves in the output directory when it keeps a program: the
program and its StableHLO, its profile and timed executable sources, its
profile diffed against the default program's (per tf op and per dispatch), and
the tuning spec it was compiled with."""

from __future__ import annotations

from pathlib import Path

from tfpgo.diff.compare import compare
from tfpgo.diff.iree_view import iree_view
from tfpgo.diff.output import write_outputs
from tfpgo.iree import executable_sources, profile_document
from tfpgo.iree.program import ProfiledProgram, Workload
from tfpgo.mlir import annotate
from tfpgo.tune.candidates import Variant
from tfpgo.tune.document import OpChange, Tuned
from tfpgo.tune.tile_configs import SPEC, SPEC_FLAG

TUNED_PROFILE = "iree_profile.tuned.json"
TUNED_VMFB = "model.tuned.vmfb"
TUNED_BYTECODE = "model.tuned.stablehlo.mlirbc"
TUNED_STABLEHLO = "model.tuned.stablehlo.mlir"
TUNED_DISPATCHES = "model.tuned.dispatches.mlir"
# profile_diff's outputs, the default program (A) against the tuned (B), per tf
# op and dispatch by dispatch.
TUNE_DIFF = "tune_diff"
DIFF_ROWS = 20


def keep(
    tuned: ProfiledProgram,
    default: profile_document.IreeProfile,
    variant: Variant,
    original: Path,
    workload: Workload,
    out: Path,
) -> Tuned:
    """Writes into `out` the kept program, its profile and timed executable
    sources, its profile diffed against the `default` program's (profile_diff's
    outputs), the tuning spec it was compiled with, if any, and its StableHLO if
    a pass rewrote `original`; returns what tune.json says of it: the program,
    its profile, and per tf op its time before and after."""
    tuned.profile.write(out / TUNED_PROFILE)
    for by, directory in (("op", out / TUNE_DIFF), ("dispatch", out / TUNE_DIFF / "dispatches")):
        diff = compare(
            iree_view(default, by), iree_view(tuned.profile, by), "iree_profile.json", TUNED_PROFILE
        )
        write_outputs(diff, directory, DIFF_ROWS)
    executable_sources.write_dispatch_sources(
        tuned.sources, tuned.profile, workload.fused_into, out / TUNED_DISPATCHES, tuned.sites
    )
    (out / TUNED_VMFB).write_bytes(tuned.vmfb.read_bytes())
    (out / TUNED_BYTECODE).write_bytes(tuned.bytecode.read_bytes())
    for flag in variant.flags:
        if flag.startswith(SPEC_FLAG):
            (out / SPEC).write_bytes(Path(flag.removeprefix(SPEC_FLAG)).read_bytes())
    if variant.stablehlo != original:  # a pass rewrote it: readable, annotated, weights elided
        annotate.run_tfpgo_opt(
            variant.stablehlo,
            out / TUNED_STABLEHLO,
            [
                "--mlir-print-op-generic",
                f"--mlir-elide-elementsattrs-if-larger={executable_sources.ELIDE_ELEMENTS}",
                "--tf-profile-materialize-annotations",
            ],
        )
    return Tuned(TUNED_VMFB, TUNED_PROFILE, op_changes(default, tuned.profile), variant.driver)


def op_changes(
    before: profile_document.IreeProfile, after: profile_document.IreeProfile
) -> tuple[OpChange, ...]:
    """Per tf op, its compiled time over the profiled runs before and after (both
    profiles run as many times), largest saving first: which TensorFlow ops the
    kept changes sped up, or slowed."""
    names = sorted(
        set(before.op_ps) | set(after.op_ps),
        key=lambda name: (after.op_ps.get(name, 0) - before.op_ps.get(name, 0), name),
    )
    return tuple(
        OpChange(
            name,
            before.op_tf_ps.get(name, after.op_tf_ps.get(name, 0)),
            before.op_ps.get(name, 0),
            after.op_ps.get(name, 0),
        )
        for name in names
    )
