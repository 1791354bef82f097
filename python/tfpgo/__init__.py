"""tfpgo: profile-guided annotation for TensorFlow's MLIR.

Stages, one subpackage each, data flowing one way (`STAGES`, in order):
models (the model and its profiling) -> trace (readers, typed events, the
event DAG) -> attribution (the op profile, XLA's and devices' time on tf ops)
-> ab (the measurement layer: the A/B's statistics, verdict and result, for
the tuner and the Proposer) -> iree (the program compiled, run and profiled at
its dispatch sites) -> runtime (that program run from Python as the step,
`program.json`) -> mlir
(tfpgo-opt's annotation, lowering to StableHLO, linalg and IREE) -> analysis
(phases, scopes, op types) -> render (pictures, exports, tables) -> diff (two
profiles compared) -> proposer (advice, measured) -> tune (IREE's program
tuned) -> report -> tensorboard -> flow (the whole run). `SHARED` modules serve
every stage. A module imports its own stage, an earlier one or a shared module,
never a later one nor one of a stage `APART` from its own, lazily or for types
alike (tools/check_imports.py, part of `bazel test //...`).

`tfpgo.compile(step, *example_args)` runs the flow on a step built in the
caller's process (tfpgo.flow.compiled); it is imported on first use, so that
`import tfpgo` stays cheap and `tfpgo.runtime` alone needs neither TensorFlow
nor IREE's compiler.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tfpgo.flow.compiled import Compiled, compile

__version__ = "0.1.0"

STAGES = (
    "models", "trace", "attribution", "ab", "iree", "runtime", "mlir", "analysis", "render",
    "diff", "proposer", "tune", "report", "tensorboard", "flow",
)  # fmt: skip
# Stages that never import each other, though their order would let them: the
# tuner and the Proposer share only the measurement layer (`ab`), and the
# Proposer measures TensorFlow's steps, never IREE's programs.
APART = (("tune", "proposer"), ("proposer", "iree"))
SHARED = ("errors", "atomic", "documents", "cli", "toolpaths", "kernels", "dask_cluster")

# How many of the hottest ops are marked hot unless told otherwise: the flow,
# the pipeline run from Python, the pictures, and (kept equal, tested) the
# `top-k` default of tf-profile-mark-hotspots in passes.td.
HOT_OPS = 5


# Loaded by name, not by an import statement: the package's Bazel library is
# below every other, so it cannot depend on the flow's (a target that calls
# tfpgo.compile depends on //python:flow_compiled itself).
_LAZY = {"compile": "tfpgo.flow.compiled", "Compiled": "tfpgo.flow.compiled"}


def __getattr__(name: str) -> Any:
    """`tfpgo.compile` and `tfpgo.Compiled`, imported on first use (PEP 562)."""
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'tfpgo' has no attribute {name!r}")


__all__ = ["APART", "HOT_OPS", "SHARED", "STAGES", "Compiled", "__version__", "compile"]
