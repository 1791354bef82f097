"""Paths of the trace fixtures in tests/data/trace_reader (see regenerate.py there)."""

from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "data" / "trace_reader"
XPLANE = DATA / "mlp_infer.xplane.pb"
XSPACE_JSON = DATA / "mlp_infer.xspace.json"
CHROME_GZ = DATA / "mlp_infer.trace.json.gz"
MLIR = DATA / "mlp_infer.mlir"
TWO_HOSTS = DATA / "two_hosts_flows.json"


def device_events(trace: Path) -> dict[str, list[int]]:
    """Event name -> durations (ps) on the GPU planes of an .xplane.pb, read with
    the raw XSpace proto: the oracle of the device tests (CUPTI names copies
    `MemcpyH2D`, `MemcpyD2H`, ..., kernels by their symbol)."""
    from tfpgo.trace.readers.xplane_proto import xplane_pb2

    space = xplane_pb2().XSpace()
    space.ParseFromString(trace.read_bytes())
    found: dict[str, list[int]] = {}
    for plane in space.planes:
        if plane.name.startswith("/device:GPU:"):
            for line in plane.lines:
                for event in line.events:
                    name = plane.event_metadata[event.metadata_id].name
                    found.setdefault(name, []).append(event.duration_ps)
    return found
