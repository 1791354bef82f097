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
    return _plane_events(trace, "/device:GPU:")


def host_events(trace: Path) -> dict[str, list[int]]:
    """Event name -> durations (ps) on the host CPU plane, read as `device_events`
    reads the GPU's (XLA's runtime names each run of a program
    `CommonPjRtLoadedExecutable::Execute (<module>)`)."""
    return _plane_events(trace, "/host:CPU")


def _plane_events(trace: Path, plane_prefix: str) -> dict[str, list[int]]:
    from tfpgo.trace.readers.xplane_proto import xplane_pb2

    space = xplane_pb2().XSpace()
    space.ParseFromString(trace.read_bytes())
    found: dict[str, list[int]] = {}
    for plane in space.planes:
        if plane.name.startswith(plane_prefix):
            for line in plane.lines:
                for event in line.events:
                    name = plane.event_metadata[event.metadata_id].name
                    found.setdefault(name, []).append(event.duration_ps)
    return found


def hlo_proto(trace: Path):
    """The first HloProto on the metadata plane of an .xplane.pb, read with the raw
    protos (no tfpgo reader)."""
    from tfpgo.trace.readers.xplane_proto import hlo_pb2, xplane_pb2

    space = xplane_pb2().XSpace()
    space.ParseFromString(trace.read_bytes())
    plane = next(p for p in space.planes if p.name == "/host:metadata")
    stats = (stat for metadata in plane.event_metadata.values() for stat in metadata.stats)
    proto = hlo_pb2().HloProto()
    proto.ParseFromString(next(stat.bytes_value for stat in stats if stat.bytes_value))
    return proto


def fused_op_names(trace: Path, fusion: str) -> set[str]:
    """The framework ops a fusion of the trace's entry computation covers: the
    distinct `op_name`s of the instructions of its fused computation, from the raw
    HloProto (XLA's own record of what it fused)."""
    module = hlo_proto(trace).hlo_module
    computations = {c.id: c for c in module.computations}
    entry = computations[module.entry_computation_id]
    (called,) = next(i for i in entry.instructions if i.name == fusion).called_computation_ids
    return {i.metadata.op_name for i in computations[called].instructions if i.metadata.op_name}
