"""The MLIR side, seen from Python: where tfpgo-opt is, running the
profile-guided pipeline on an exported module and reading back what it did
(`attribution.json`), and lowering an annotated module to StableHLO and linalg."""
