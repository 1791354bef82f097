"""Cuts a real `.xplane.pb` down to a test fixture: drops the Python tracer's events
(names starting with `$`) and the XLA compiler's thread-pool lines, keeps every other
event, stat and plane (device planes, launches, steps, HLO protos) byte for byte.

    python3 tests/data/gpu/trim_trace.py IN.xplane.pb OUT.xplane.pb
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "python"))

from tfpgo.trace.readers.xplane_proto import xplane_pb2

_DROPPED_LINES = ("tf_pjrt_compile_thread_pool/",)


def trim(source: Path, target: Path) -> None:
    space = xplane_pb2().XSpace()
    space.ParseFromString(source.read_bytes())
    for plane in space.planes:
        python_frames = {key for key, m in plane.event_metadata.items() if m.name.startswith("$")}
        kept_lines = [line for line in plane.lines if not line.name.startswith(_DROPPED_LINES)]
        del plane.lines[:]
        plane.lines.extend(kept_lines)
        for line in plane.lines:
            events = [e for e in line.events if e.metadata_id not in python_frames]
            del line.events[:]
            line.events.extend(events)
        for key in python_frames:
            del plane.event_metadata[key]
    target.write_bytes(space.SerializeToString())


if __name__ == "__main__":
    trim(Path(sys.argv[1]), Path(sys.argv[2]))
