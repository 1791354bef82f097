"""Reading an MLIR tool's diagnostics for the one line a user is shown.

MLIR prints `location: error: message` lines (tfpgo-opt, iree-opt, TensorFlow's
pass pipelines in their exception text); the first error is the cause, the
notes and the rest follow from it.
"""

from __future__ import annotations


def first_error(diagnostics: str, fallback: str) -> str:
    """The first `error:` line (location included), else the first line of
    output (a crash names itself there), else `fallback`."""
    lines = [line for line in diagnostics.strip().splitlines() if line.strip()]
    errors = [line for line in lines if "error:" in line]
    return errors[0].strip() if errors else (lines[0].strip() if lines else fallback)


def error_message(diagnostics: str, fallback: str) -> str:
    """`first_error` without its location: for tools run on scratch files whose
    paths mean nothing to the user."""
    line = first_error(diagnostics, fallback)
    return line.split("error:", 1)[1].strip() if "error:" in line else line
