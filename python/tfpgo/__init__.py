"""tfpgo: profile-guided annotation for TensorFlow's MLIR.

Stages, one module each, data flowing one way:
models/profiling -> trace readers -> events -> dag, op_profile -> render, report -> flow.
"""

__version__ = "0.1.0"

# How many of the hottest ops are marked hot unless told otherwise: the flow,
# the pipeline run from Python, the pictures, and (kept equal, tested) the
# `top-k` default of tf-profile-mark-hotspots in passes.td.
HOT_OPS = 5
