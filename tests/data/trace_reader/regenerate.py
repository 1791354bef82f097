"""Regenerates the trace fixtures of this directory (run by hand, not by tests).

    PYTHONPATH=python python3 tests/data/trace_reader/regenerate.py

mlp_infer.xplane.pb    built-in `mlp`, batch 8, 1 warmup + 2 profiled inference steps
mlp_infer.xspace.json  the same XSpace as protobuf-JSON (snake_case fields, as in the
                       reference's listings 4-5)
mlp_infer.trace.json.gz  the same XSpace converted by xprof's trace viewer (Chrome JSON)
mlp_infer.mlir         the profiled function exported with debug locations
"""

import gzip
import shutil
import tempfile
from pathlib import Path

from google.protobuf import json_format

from tfpgo import models
from tfpgo.models import profiling
from tfpgo.trace.readers.xplane_proto import xplane_pb2

HERE = Path(__file__).resolve().parent


def main() -> None:
    from xprof.convert import raw_to_tool_data

    case = models.load_model("mlp", "infer", batch_size=8)
    with tempfile.TemporaryDirectory() as logdir:
        run = profiling.profile(case, Path(logdir), steps=2, warmup=1)
        xplane = HERE / "mlp_infer.xplane.pb"
        shutil.copyfile(run.xplane_paths[0], xplane)
    (HERE / "mlp_infer.mlir").write_text(profiling.export_mlir(case))
    space = xplane_pb2().XSpace()
    space.ParseFromString(xplane.read_bytes())
    (HERE / "mlp_infer.xspace.json").write_text(
        json_format.MessageToJson(space, preserving_proto_field_name=True, indent=1)
    )
    with tempfile.TemporaryDirectory() as scratch:  # xprof caches next to its input
        copy = Path(scratch) / xplane.name
        shutil.copyfile(xplane, copy)
        trace, _ = raw_to_tool_data.xspace_to_tool_data([str(copy)], "trace_viewer", {})
    data = trace.encode() if isinstance(trace, str) else trace
    (HERE / "mlp_infer.trace.json.gz").write_bytes(gzip.compress(data, mtime=0))


if __name__ == "__main__":
    main()
