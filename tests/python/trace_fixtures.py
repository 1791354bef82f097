"""Paths of the trace fixtures in tests/data/trace_reader (see regenerate.py there)."""

from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "data" / "trace_reader"
XPLANE = DATA / "mlp_infer.xplane.pb"
XSPACE_JSON = DATA / "mlp_infer.xspace.json"
CHROME_GZ = DATA / "mlp_infer.trace.json.gz"
MLIR = DATA / "mlp_infer.mlir"
TWO_HOSTS = DATA / "two_hosts_flows.json"
