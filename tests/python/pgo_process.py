"""`pgo` in its own process, as `bazel run //:pgo` runs it (for tests whose model
changes process-wide state: XLA flags, logical devices)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import tfpgo

PGO = Path(__file__).resolve().parents[2] / "tools" / "pgo.py"


def run_pgo(flags: list[str]) -> subprocess.CompletedProcess[str]:
    """Runs pgo with `flags`; asserts it succeeded (its stderr's tail otherwise)."""
    package_root = str(Path(tfpgo.__file__).resolve().parents[1])
    env = dict(os.environ, PYTHONPATH=package_root, TF_CPP_MIN_LOG_LEVEL="2")
    done = subprocess.run(
        [sys.executable, str(PGO), *flags], env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done
