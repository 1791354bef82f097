"""tfpgo: profile-guided annotation for TensorFlow's MLIR.

Stages, one subpackage each, data flowing one way:
models (and profiling) -> trace (readers, events, DAG, op profile) -> mlir
(tfpgo-opt, attribution, lowering) -> analysis, diff, proposer -> render ->
report -> flow. `errors`, `atomic`, `cli`, `documents` and `toolpaths` serve
every stage.
"""

__version__ = "0.1.0"

# How many of the hottest ops are marked hot unless told otherwise: the flow,
# the pipeline run from Python, the pictures, and (kept equal, tested) the
# `top-k` default of tf-profile-mark-hotspots in passes.td.
HOT_OPS = 5
