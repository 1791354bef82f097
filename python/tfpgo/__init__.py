"""tfpgo: profile-guided annotation for TensorFlow's MLIR.

Stages, one module each, data flowing one way:
models/profiling -> trace readers -> events -> dag, op_profile -> render, report -> flow.
"""

__version__ = "0.1.0"
