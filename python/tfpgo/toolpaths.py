"""Finds tfpgo's compiled tools from Python: under `bazel run`/`bazel test`, in a
built work tree, or on PATH.

Order: the $TFPGO_OPT override, the runfiles of the running Bazel target, the
work tree's `bazel-bin`, then PATH. The first that exists wins, so a user can
always point at a tf-opt of a TensorFlow fork with TFPGO_OPT.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from tfpgo.errors import UserError

_REPO_ROOT = Path(__file__).resolve().parents[2]


def _runfiles_roots() -> list[Path]:
    roots = []
    for variable in ("RUNFILES_DIR", "TEST_SRCDIR"):
        if value := os.environ.get(variable):
            roots.append(Path(value))
    roots.append(Path(sys.argv[0] + ".runfiles"))
    for parent in Path(__file__).resolve().parents:
        if parent.name.endswith(".runfiles"):
            roots.append(parent)
    return roots


def xplane_columns() -> Path:
    """The `xplane-columns` decoder (tools/xplane-columns; $TFPGO_XPLANE_COLUMNS wins)."""
    if override := os.environ.get("TFPGO_XPLANE_COLUMNS"):
        path = Path(override)
        if not (path.is_file() and os.access(path, os.X_OK)):
            raise UserError(f"TFPGO_XPLANE_COLUMNS={override}: not an executable file")
        return path
    candidates = [root / "tfpgo" / "tools" / "xplane-columns" for root in _runfiles_roots()]
    candidates.append(_REPO_ROOT / "bazel-bin" / "tools" / "xplane-columns")
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    if found := shutil.which("xplane-columns"):
        return Path(found)
    raise UserError(
        "xplane-columns (the .xplane.pb decoder) not found; run through bazel, "
        "or build it with `bazel build //tools:xplane-columns`, or set TFPGO_XPLANE_COLUMNS"
    )


def tfpgo_opt() -> Path:
    """The `tfpgo-opt` binary (or whatever $TFPGO_OPT names)."""
    if override := os.environ.get("TFPGO_OPT"):
        path = Path(override)
        if not (path.is_file() and os.access(path, os.X_OK)):
            raise UserError(f"TFPGO_OPT={override}: not an executable file")
        return path
    candidates = [root / "tfpgo" / "tools" / "tfpgo-opt" for root in _runfiles_roots()]
    candidates.append(_REPO_ROOT / "bazel-bin" / "tools" / "tfpgo-opt")
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    if found := shutil.which("tfpgo-opt"):
        return Path(found)
    raise UserError(
        "tfpgo-opt not found; run through `bazel run //:pgo`, "
        "or build it with `bazel build //tools:tfpgo-opt`, or set TFPGO_OPT"
    )
