"""Writes tf_gpu.xplane.pb: a TensorFlow GPU step as TensorFlow's profiler records it.

No TensorFlow wheel for CUDA 13 exists, so no real TF-GPU trace can be made on
the machines at hand. This writes exactly the planes, lines and stats TensorFlow
writes (TF 2.21 / XLA sources, `third_party/xla/xla/tsl/profiler/utils/
xplane_schema.cc` for the names):

  * `/host:CPU`: the Python thread's `train` step markers (stats `step_num`, `_r`);
    an executor thread whose op events are named `<node>:<type>` (the executor's
    `AnnotatedTraceMe` around `OpKernel::TraceString`,
    `tensorflow/core/common_runtime/executor.cc`); inside each op the CUDA driver
    calls it made, with `correlation_id` and `device_id` (the CUPTI collector's API
    events, `third_party/xla/xla/backends/profiler/gpu/cupti_collector.cc`, which
    names a kernel launch after its kernel);
  * `/device:GPU:0`: one line per stream (`Stream #7(Compute)`, `Stream #8(MemcpyH2D)`),
    kernel events named by the kernel with `correlation_id`, `kernel_details` and
    `tf_op` = the annotation open at launch, `<node>:<type>` (a ref stat, as the
    collector adds it); a cuDNN convolution launches two kernels for one op; copies
    `MemcpyH2D` (`memcpy_details`): the input's with the `IteratorGetNext` op, one
    the runtime made with no op at all; a `Memset` from the convolution.

    python3 tests/data/gpu/make_tf_gpu_fixture.py   (writes beside this file)
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2] / "python"))

from tfpgo.trace.readers.xplane_proto import xplane_pb2  # noqa: E402

BASE_NS = 1_795_600_000_000_000_000
US = 1_000_000  # ps
STEPS = 3
# (node:type, host µs, kernels: (name, µs) launched by it, memset µs or 0)
OPS = (
    ("IteratorGetNext:IteratorGetNext", 6.0, (), 0.0),
    (
        "sequential/conv/Conv2D:Conv2D",
        14.0,
        (
            ("void cudnn::cnn::conv2d_grouped_direct_kernel<float>", 41.5),
            ("cudnn_infer_volta_scudnn_128x64_relu_small_nn_v1", 23.25),
        ),
        1.5,
    ),
    ("sequential/dense/MatMul:MatMul", 9.0, (("volta_sgemm_128x64_nn", 17.75),), 0.0),
    (
        "sequential/dense/BiasAdd:BiasAdd",
        5.0,
        (
            (
                "void tensorflow::BiasNHWCKernel<float>(int, float const*, float*, int)",
                3.5,
            ),
        ),
        0.0,
    ),
    (
        "sequential/dense/Relu:Relu",
        4.0,
        (("void Eigen::internal::EigenMetaKernel<Eigen::TensorEvaluator<...>, long>", 2.75),),
        0.0,
    ),
)
KERNEL_DETAILS = "regs:64 static_shared:0 dynamic_shared:8192 grid:128,1,1 block:256,1,1"
INPUT_COPY_US = 12.25
RUNTIME_COPY_US = 4.5


class _Plane:
    """One plane being written: metadata ids handed out on first use."""

    def __init__(self, plane: object) -> None:
        self.plane = plane
        self.events: dict[str, int] = {}
        self.stats: dict[str, int] = {}

    def event_id(self, name: str) -> int:
        if name not in self.events:
            key = self.events[name] = len(self.events) + 1
            self.plane.event_metadata[key].id = key  # type: ignore[attr-defined]
            self.plane.event_metadata[key].name = name  # type: ignore[attr-defined]
        return self.events[name]

    def stat_id(self, name: str) -> int:
        if name not in self.stats:
            key = self.stats[name] = len(self.stats) + 1
            self.plane.stat_metadata[key].id = key  # type: ignore[attr-defined]
            self.plane.stat_metadata[key].name = name  # type: ignore[attr-defined]
        return self.stats[name]

    def add(
        self, line: object, name: str, start_ps: int, duration_ps: int, **stats: object
    ) -> None:
        event = line.events.add(  # type: ignore[attr-defined]
            metadata_id=self.event_id(name), offset_ps=start_ps, duration_ps=duration_ps
        )
        for key, value in stats.items():
            stat = event.stats.add(metadata_id=self.stat_id(key))
            if isinstance(value, str):  # strings are refs to stat metadata, as TF writes them
                stat.ref_value = self.stat_id(value)
            else:
                stat.int64_value = int(value)


def build() -> bytes:
    pb = xplane_pb2()
    space = pb.XSpace()
    space.hostnames.append("tfhost")
    host = _Plane(space.planes.add(id=1, name="/host:CPU"))
    device = _Plane(space.planes.add(id=2, name="/device:GPU:0"))
    python = host.plane.lines.add(id=1, name="python3", timestamp_ns=BASE_NS)
    executor = host.plane.lines.add(id=2, name="tf_Compute/42", timestamp_ns=BASE_NS)
    compute = device.plane.lines.add(id=7, name="Stream #7(Compute)", timestamp_ns=BASE_NS)
    copies = device.plane.lines.add(id=8, name="Stream #8(MemcpyH2D)", timestamp_ns=BASE_NS)
    correlation = 100
    t = 10 * US
    gpu = 0  # when the compute stream is next free
    for step in range(STEPS):
        step_start = t
        t += 5 * US
        for op, host_us, kernels, memset_us in OPS:
            op_start = t
            at = op_start + US
            if op.startswith("IteratorGetNext"):
                correlation += 1
                host.add(
                    executor,
                    "cuMemcpyHtoDAsync_v2",
                    at,
                    2 * US,
                    correlation_id=correlation,
                    device_id=0,
                )
                device.add(
                    copies,
                    "MemcpyH2D",
                    at + 3 * US,
                    int(INPUT_COPY_US * US),
                    correlation_id=correlation,
                    memcpy_details="kind_src:pinned kind_dst:device size:401408 dest:0 async:1",
                    tf_op=op,
                )
            for kernel, kernel_us in kernels:
                correlation += 1
                host.add(executor, kernel, at, US, correlation_id=correlation, device_id=0)
                start = max(gpu, at + 4 * US)
                device.add(
                    compute,
                    kernel,
                    start,
                    int(kernel_us * US),
                    correlation_id=correlation,
                    kernel_details=KERNEL_DETAILS,
                    tf_op=op,
                )
                gpu = start + int(kernel_us * US) + US // 2
                at += US + US // 4
            if memset_us:
                correlation += 1
                host.add(
                    executor,
                    "cuMemsetD32Async",
                    at,
                    US // 2,
                    correlation_id=correlation,
                    device_id=0,
                )
                start = max(gpu, at + 2 * US)
                device.add(
                    compute,
                    "Memset",
                    start,
                    int(memset_us * US),
                    correlation_id=correlation,
                    tf_op=op,
                )
                gpu = start + int(memset_us * US) + US // 2
            t = op_start + int(host_us * US)
            host.add(executor, op, op_start, t - op_start)
            t += US
        # a copy the runtime made on its own (no op was open): listed, never an op's
        correlation += 1
        host.add(python, "cuMemcpyHtoDAsync_v2", t, US, correlation_id=correlation, device_id=0)
        device.add(
            copies,
            "MemcpyH2D",
            t + 2 * US,
            int(RUNTIME_COPY_US * US),
            correlation_id=correlation,
            memcpy_details="kind_src:pageable kind_dst:device size:4 dest:0 async:0",
        )
        t = max(t, gpu) + 10 * US
        host.add(python, "train", step_start, t - step_start, step_num=step, _r=1)
        t += 5 * US
    for line in (python, executor, compute, copies):
        ordered = sorted(line.events, key=lambda e: (e.offset_ps, -e.duration_ps))
        del line.events[:]
        line.events.extend(ordered)
    return space.SerializeToString()


if __name__ == "__main__":
    (HERE / "tf_gpu.xplane.pb").write_bytes(build())
