"""The MLIR side, seen from Python: running the profile-guided pipeline on an
exported module and reading back what it did (`attribution.json`), and lowering
an annotated module to StableHLO and linalg."""
