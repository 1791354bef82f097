"""Runs `tf-profile-guided-pipeline` in tfpgo-opt and reads back what it did.

The pass pipeline is C++ (tensorflow_patch/); this module is the Python side of
the process boundary: it builds the pipeline string, runs the driver, and turns
its remarks into an `Attribution` record (which profile entries landed on ops,
which did not) for the report and the coverage check.
"""

from __future__ import annotations

import dataclasses
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from tfpgo.cli import UserError
from tfpgo.op_profile import OpProfile
from tfpgo.toolpaths import tfpgo_opt

# Ops XLA's auto-clustering puts into the graph TensorFlow runs, after the graph
# the MLIR was exported from: no op of the module can ever match them.
XLA_LAUNCH_OP_TYPES = frozenset({"_XlaCompile", "_XlaRun", "_XlaMerge"})

# Remarks of tf-annotate-operations-profile with report-unresolved=true.
_UNRESOLVED = re.compile(
    r"remark: profile entry '(?P<name>.*)' \((?P<self>\d+) ps self\) matches no"
)
_SUMMARY = re.compile(
    r"remark: annotated (?P<ops>\d+) ops and (?P<fused>\d+) fused ops from (?P<entries>\d+) "
    r"profile entries; (?P<attributed>\d+) of (?P<total>\d+) ps self time attributed"
)


@dataclass(frozen=True)
class UnresolvedEntry:
    """A runtime node name of the profile that matched no op of the module."""

    name: str
    self_ps: int


@dataclass(frozen=True)
class Attribution:
    """How much of the profile's op time landed on ops of the module."""

    annotated_ops: int
    fused_ops: int
    profile_entries: int
    attributed_self_ps: int
    profile_self_ps: int
    unresolved: tuple[UnresolvedEntry, ...]
    # Self time of unresolved XLA launch ops (XLA_LAUNCH_OP_TYPES), set by
    # `with_xla_launch`; left out of `coverage`, reported on their own.
    xla_launch_self_ps: int = 0

    @property
    def coverage(self) -> float:
        """Attributed share of the TF op self time that could land on the module
        (all of it but XLA launch ops); 1.0 for an empty profile."""
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
    unresolved = {entry.name for entry in attribution.unresolved}
    return sum(
        origin.total_ps
        for op in profile.ops
        if op.xla and op.name not in unresolved
        for origin in op.xla
    )


def pipeline_spec(op_profile: Path, op_graph: Path, top_k: int, min_share: float) -> str:
    """The `--tf-profile-guided-pipeline=` option string."""
    return (
        "enable-profile=true report-unresolved=true "
        f"path-to-profile={op_profile} top-k={top_k} min-share={min_share} "
        f"op-graph-output={op_graph}"
    )


def annotate_module(
    module: Path,
    op_profile: Path,
    annotated: Path,
    op_graph: Path,
    top_k: int = 10,
    min_share: float = 0.0,
) -> Attribution:
    """Annotates `module` with `op_profile`, writing `annotated` and `op_graph`."""
    spec = pipeline_spec(op_profile, op_graph, top_k, min_share)
    done = subprocess.run(
        [
            str(tfpgo_opt()),
            "--allow-unregistered-dialect",
            "--mlir-print-debuginfo",
            f"--tf-profile-guided-pipeline={spec}",
            str(module),
            "-o",
            str(annotated),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines()
        errors = [line for line in lines if "error:" in line]
        detail = errors[0] if errors else (lines[-1] if lines else f"exit status {done.returncode}")
        raise UserError(f"{module}: tfpgo-opt failed: {detail}")
    return parse_remarks(done.stderr)


def parse_remarks(stderr: str) -> Attribution:
    """Reads the annotate pass's remarks (report-unresolved=true)."""
    summary = _SUMMARY.search(stderr)
    if summary is None:
        raise UserError("tfpgo-opt printed no annotation summary; is it tfpgo's driver?")
    unresolved = tuple(
        sorted(
            (
                UnresolvedEntry(match["name"], int(match["self"]))
                for match in _UNRESOLVED.finditer(stderr)
            ),
            key=lambda entry: -entry.self_ps,
        )
    )
    return Attribution(
        annotated_ops=int(summary["ops"]),
        fused_ops=int(summary["fused"]),
        profile_entries=int(summary["entries"]),
        attributed_self_ps=int(summary["attributed"]),
        profile_self_ps=int(summary["total"]),
        unresolved=unresolved,
    )
