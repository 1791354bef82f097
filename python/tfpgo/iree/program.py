"""One StableHLO program under IREE: compiled, checked against TensorFlow, timed.

`--lower iree` profiles the lowered program once (`profile_program`); `--tune`
compiles variants of it, times each against the current best
(tfpgo.tune.program_ab), and profiles the one it keeps the same way as the
first.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from tfpgo.iree import executable_sources, output_check, profile_document
from tfpgo.iree import run as iree_run
from tfpgo.iree.sites import SiteOps, compile_sites

# A compiled program's file in its directory: the default program's in the output
# directory (`--lower iree`), each candidate's in its own (`--tune`).
PROGRAM_VMFB = "model.iree.vmfb"
# Reading the sites compiles only up to IREE's flow phase, with no codegen:
# ResNet50's takes a few seconds; a longer one is IREE's intermittent deadlock.
SITES_TIMEOUT_S = 300


@dataclass(frozen=True)
class Workload:
    """What every variant of the program runs on and is checked and profiled with:
    the entry function, the step's inputs (.npy files), the outputs expected
    (TensorFlow's, or the original program's where those cannot match), the
    profiled runs, and per tf op its TensorFlow self time and the op whose kernel
    ran it (`fused_into`)."""

    entry: str
    inputs: tuple[Path, ...]
    expected: tuple[Any, ...]
    runs: int
    warmup: int
    tf_self_ps: dict[str, int]
    fused_into: dict[str, str]
    # Whose outputs `expected` holds (output_check.TENSORFLOW or ORIGINAL_PROGRAM).
    expected_from: str = output_check.TENSORFLOW
    # Why IREE's outputs may differ from TensorFlow's, its program being right
    # (it draws random numbers with other bits); "" when they may not.
    may_differ: str = ""
    # Per output, how far XLA's own float32 sums land from TensorFlow's (jit_compile
    # of a training step; output_check.compare_outputs); () where not measured.
    reassociation: tuple[float, ...] = ()
    # --max-output-error where --precision allows a lower one: the largest error
    # the outputs of a program computing in it may have, relative to the
    # expected ones' largest magnitude; None: every program computes in float32.
    output_budget: float | None = None

    def checked(self, outputs: Sequence[Any], flags: Sequence[str]) -> float:
        """max |outputs - expected|, once the outputs of a program of `flags` are
        held to their tolerance: float32's, or for a program in a lower precision
        the user's budget (one UserError line where they are not, or where no
        lower precision is allowed)."""
        precision = output_check.program_precision(flags)
        if precision == output_check.FLOAT32:
            return output_check.compare_outputs(
                self.entry, outputs, self.expected, self.expected_from, self.reassociation
            )
        if self.output_budget is None:
            raise output_check.OutputsDiffer(
                f"iree level: the program computes with {precision}, which only --precision allows"
            )
        return output_check.within_budget(self.entry, outputs, self.expected, self.output_budget)

    def held_to(self, outputs: tuple[Any, ...]) -> Workload:
        """This workload expecting `outputs`, the original program's (which draw
        the same random bits as its variants), and tolerating no mismatch."""
        return replace(
            self, expected=outputs, expected_from=output_check.ORIGINAL_PROGRAM, may_differ=""
        )


@dataclass(frozen=True)
class ProfiledProgram:
    """A compiled program and its dispatch profile (`iree_profile.json`)."""

    profile: profile_document.IreeProfile
    sources: Any  # the executable sources, parsed (executable_sources.parse_sources)
    sites: dict[str, tuple[SiteOps, ...]]  # per dispatch function, its sites' ops
    vmfb: Path
    bytecode: Path  # the StableHLO, weights included
    compile_s: float  # how long compiling it took (its three forms)
    outputs: tuple[Any, ...] = ()  # of one run on the workload's inputs


def profile_program(
    stablehlo: Path,
    flags: Sequence[str],
    directory: Path,
    workload: Workload,
    name: str,
    driver: str = iree_run.DEVICE,
) -> ProfiledProgram:
    """Compiles `stablehlo` with `flags` into `directory`, checks its outputs against
    the expected ones (one UserError line if they differ; where the workload says
    why TensorFlow's may differ, the profile says so instead), and profiles its
    dispatches on IREE's `driver`; the profile names the program `name` (the
    vmfb's file name in the output)."""
    directory.mkdir(parents=True, exist_ok=True)
    vmfb = directory / PROGRAM_VMFB
    sources = directory / "executable_sources.mlir"
    bytecode = directory / "model.stablehlo.mlirbc"
    started = time.monotonic()
    iree_run.compile_module(stablehlo, vmfb, sources, bytecode, flags)
    compile_s = time.monotonic() - started
    outputs = iree_run.run_outputs(
        vmfb, workload.entry, workload.inputs, len(workload.expected), directory
    )
    unchecked = ""
    try:
        max_abs = workload.checked(outputs, flags)
    except output_check.OutputsDiffer:
        if not workload.may_differ:
            raise
        max_abs = output_check.largest_difference(outputs, workload.expected)
        unchecked = workload.may_differ
    sites = compile_sites(stablehlo, (*iree_run.IREE_FLAGS, *flags), directory, SITES_TIMEOUT_S)
    timings = iree_run.profile_dispatches(
        vmfb, workload.entry, workload.inputs, workload.runs, directory, workload.warmup, driver
    )
    parsed = executable_sources.parse_sources(sources)
    profile = iree_run.build_profile(
        name,
        workload.entry,
        workload.runs,
        workload.warmup,
        max_abs,
        timings,
        executable_sources.dispatch_sources(parsed),
        workload.tf_self_ps,
        workload.fused_into,
        sites,
        unchecked,
    )
    return ProfiledProgram(profile, parsed, sites, vmfb, bytecode, compile_s, outputs)


def check_outputs(vmfb: Path, workload: Workload, scratch: Path, flags: Sequence[str]) -> float:
    """The largest |IREE - expected| over the outputs of one run of the program
    `vmfb` compiled with `flags`; outputs beyond their tolerance
    (`Workload.checked`) are one UserError line."""
    outputs = iree_run.run_outputs(
        vmfb, workload.entry, workload.inputs, len(workload.expected), scratch
    )
    return workload.checked(outputs, flags)
