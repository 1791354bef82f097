"""Runs `tf-profile-guided-pipeline` in tfpgo-opt and reads back what it did.

The pass pipeline is C++ (tensorflow_patch/); this module is the Python side of
the process boundary: it builds the pipeline string, runs the driver, and reads
the `tfpgo.attribution` document the annotate pass writes (docs/formats.md) into
an `Attribution` record (how each profile entry matched, which landed on no op
and why) for the report and the coverage check.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tfpgo import HOT_OPS
from tfpgo.attribution.op_profile import OpProfile
from tfpgo.documents import read_versioned
from tfpgo.errors import UserError
from tfpgo.mlir.diagnostics import first_error
from tfpgo.toolpaths import tfpgo_opt

ATTRIBUTION_FORMAT = "tfpgo.attribution"

# Ops XLA's auto-clustering puts into the graph TensorFlow runs, after the graph
# the MLIR was exported from: no op of the module can ever match them.
XLA_LAUNCH_OP_TYPES = frozenset({"_XlaCompile", "_XlaRun", "_XlaMerge"})


@dataclass(frozen=True)
class UnresolvedEntry:
    """A runtime node name of the profile that landed on no op of the module:
    unresolved, or removed by the IR pipeline (`reason` says which)."""

    name: str
    self_ps: int
    reason: str = "matches no op"
    device_ps: int = 0  # its device time (op profile v3)


@dataclass(frozen=True)
class MergedEntry:
    """A runtime node name the IR pipeline merged into other op(s)."""

    name: str
    self_ps: int
    ops: tuple[str, ...]
    # "location": a rewrite fused its location into `ops`; "name": CSE, found by
    # op type and name up to TF's `_<k>` uniquifiers (split over `ops`).
    merged_by: str


@dataclass(frozen=True)
class ResolvedEntry:
    """A runtime node name that landed on op(s) under another name: through a
    function body, branch or call, or a renaming rule (`rule`,
    docs/attribution_rules.md)."""

    name: str
    self_ps: int
    ops: tuple[str, ...]
    rule: str = ""


@dataclass(frozen=True)
class Attribution:
    """How much of the profile's op time landed on ops of the module."""

    annotated_ops: int
    fused_ops: int
    profile_entries: int
    attributed_self_ps: int
    profile_self_ps: int
    unresolved: tuple[UnresolvedEntry, ...]
    removed: tuple[UnresolvedEntry, ...] = ()
    merged: tuple[MergedEntry, ...] = ()
    resolved: tuple[ResolvedEntry, ...] = ()
    # Self time of unresolved XLA launch ops (XLA_LAUNCH_OP_TYPES), set by
    # `with_xla_launch`; left out of `coverage`, reported on their own.
    xla_launch_self_ps: int = 0
    # Device time of the profile's entries, and the part that landed on ops
    # (0 and 0 for a trace without device planes).
    profile_device_ps: int = 0
    attributed_device_ps: int = 0

    @property
    def coverage(self) -> float:
        """Attributed share of the time that could land on the module: the device
        time when the trace has any (the host only launched it), else the TF op
        self time but XLA launch ops; 1.0 for an empty profile."""
        if self.profile_device_ps > 0:
            return self.attributed_device_ps / self.profile_device_ps
        possible = self.profile_self_ps - self.xla_launch_self_ps
        if possible <= 0:
            return 1.0
        return self.attributed_self_ps / possible

    def with_xla_launch(self, profile: OpProfile) -> Attribution:
        """This attribution with the self time of its unresolved XLA launch ops."""
        launch = {op.name for op in profile.ops if set(op.op_types) <= XLA_LAUNCH_OP_TYPES}
        launch_ps = sum(e.self_ps for e in self.unresolved if e.name in launch)
        return dataclasses.replace(self, xla_launch_self_ps=launch_ps)


def xla_annotated_ps(profile: OpProfile, attribution: Attribution) -> int:
    """HLO instruction time that landed on ops of the module: the XLA parts of
    every profile entry the annotate pass resolved."""
    unresolved = {entry.name for entry in attribution.unresolved + attribution.removed}
    return sum(
        origin.total_ps
        for op in profile.ops
        if op.xla and op.name not in unresolved
        for origin in op.xla
    )


def pipeline_spec(
    op_profile: Path,
    op_graph: Path,
    top_k: int,
    min_share: float,
    attribution: Path,
    carry_in_location: bool = False,
) -> str:
    """The `--tf-profile-guided-pipeline=` option string."""
    return (
        "enable-profile=true "
        f"path-to-profile={op_profile} top-k={top_k} min-share={min_share} "
        f"op-graph-output={op_graph} attribution-output={attribution} "
        f"carry-in-location={'true' if carry_in_location else 'false'}"
    )


def annotate_module(
    module: Path,
    op_profile: Path,
    annotated: Path,
    op_graph: Path,
    attribution: Path,
    top_k: int = HOT_OPS,
    min_share: float = 0.0,
    carry_in_location: bool = False,
) -> Attribution:
    """Annotates `module` with `op_profile`, writing `annotated`, `op_graph` and the
    `attribution` document; returns the attribution read from it. The document
    names the profile relative to itself when they share a directory (a flow's
    output is built in a staging directory that is renamed afterwards)."""
    where = attribution.parent.absolute()
    named = op_profile.absolute()
    if named.is_relative_to(where):
        named = named.relative_to(where)
    spec = pipeline_spec(named, op_graph.absolute(), top_k, min_share, attribution.absolute(),
                         carry_in_location)  # fmt: skip
    run_tfpgo_opt(
        module.absolute(), annotated.absolute(), [f"--tf-profile-guided-pipeline={spec}"], where
    )
    return read_attribution(attribution)


def run_tfpgo_opt(
    module: Path, output: Path, pass_flags: list[str], cwd: Path | None = None
) -> None:
    """Runs tfpgo-opt on `module` into `output` (relative paths from `cwd`); a
    failure is one UserError line naming the driver's first error."""
    done = subprocess.run(
        [
            str(tfpgo_opt()),
            "--allow-unregistered-dialect",
            "--mlir-print-debuginfo",
            *pass_flags,
            str(module),
            "-o",
            str(output),
        ],
        capture_output=True,
        text=True,
        check=False,
        cwd=cwd,
    )
    if done.returncode != 0:
        detail = first_error(done.stderr, f"exit status {done.returncode}")
        raise UserError(f"{module}: tfpgo-opt failed: {detail}")


def check_module(module: Path, flag: str) -> None:
    """One error line, before any work, when tfpgo-opt cannot parse `module`."""
    try:
        run_tfpgo_opt(module, Path(os.devnull), [])
    except UserError as error:
        detail = str(error).removeprefix(f"{module}: tfpgo-opt failed: ")
        raise UserError(
            f"{flag} {module}: not an MLIR module tfpgo-opt reads ({detail}); pass the "
            "tf-dialect MLIR of the step that was traced"
        ) from None


def read_attribution(path: Path) -> Attribution:
    """Reads a `tfpgo.attribution` document (docs/formats.md)."""
    return read_versioned(path, ATTRIBUTION_FORMAT, _attribution_from_json)


def _attribution_from_json(document: dict[str, Any]) -> Attribution:
    entries = document["entries"]
    by_match = document["by_match"]
    unresolved: list[UnresolvedEntry] = []
    removed: list[UnresolvedEntry] = []
    merged: list[MergedEntry] = []
    resolved: list[ResolvedEntry] = []
    for entry in entries:
        match = entry["match"]
        if match in ("unresolved", "removed", "folded"):
            found = UnresolvedEntry(
                entry["name"], entry["self_ps"], entry["reason"], entry.get("device_ps", 0)
            )
            (unresolved if match == "unresolved" else removed).append(found)
        elif match == "resolved":
            resolved.append(
                ResolvedEntry(
                    entry["name"], entry["self_ps"], tuple(entry["ops"]), entry.get("rule", "")
                )
            )
        elif match == "merged":
            merged.append(
                MergedEntry(
                    entry["name"], entry["self_ps"], tuple(entry["ops"]), entry["merged_by"]
                )
            )
    return Attribution(
        annotated_ops=document["annotated_ops"],
        fused_ops=document["fused_ops"],
        profile_entries=sum(tally["entries"] for tally in by_match.values()),
        attributed_self_ps=document["attributed_self_ps"],
        profile_self_ps=document["profile_self_ps"],
        unresolved=_hottest_first(unresolved),
        removed=_hottest_first(removed),
        merged=tuple(sorted(merged, key=lambda entry: -entry.self_ps)),
        resolved=tuple(resolved),
        profile_device_ps=document.get("profile_device_ps", 0),
        attributed_device_ps=document.get("attributed_device_ps", 0),
    )


def landed_on(attribution: Attribution) -> dict[str, tuple[str, ...]]:
    """Runtime name -> the op names it landed on, for every entry that landed under
    another name than its own (exact entries land on the op of their name)."""
    found = {entry.name: entry.ops for entry in attribution.resolved}
    found.update((entry.name, entry.ops) for entry in attribution.merged)
    return found


def _hottest_first(entries: list[UnresolvedEntry]) -> tuple[UnresolvedEntry, ...]:
    return tuple(sorted(entries, key=lambda entry: (-entry.device_ps, -entry.self_ps)))
