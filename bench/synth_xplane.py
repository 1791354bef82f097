r"""Synthetic but realistic host traces of any size: an XSpace and the same events as Chrome JSON.

The shape copies a real TF 2.21 profile of a Keras model at host tracer level
3 (tests/data/trace_reader/mlp_infer.xplane.pb), scaled to a ResNet50-like op
list:

  * a `/host:CPU` plane; a `python3` line with one step per inference: the
    `infer` step marker (`step_num`, `_r`), the tf.function call chain
    (TFE_Py_ExecuteCancelable -> EagerExecute -> ... -> FunctionRun, which
    produces the executor's flow `_p`/`_pt=2`) and a first threadpool handoff;
  * two `tf_Compute/<id>` lines running the op list in batches: each batch is a
    `ThreadpoolListener::StartRegion` (consumer `_c`/`_ct=15`), an
    `ExecutorState::Process` (consumer of the FunctionRun flow) holding op events
    named `node:OpType`, a `ThreadpoolListener::Record` handing the next batch
    over, and a `StopRegion`;
  * two `tf_numa_-1_Eigen/<id>` lines running the shards of heavy kernels
    (fused convolutions, MatMul), each shard a StartRegion/StopRegion pair whose
    Record sits inside the op on the compute line;
  * a `Task Environment` plane, as the profiler writes it;
  * with `device=True` (the default), a GPU in the schema of real traces
    (../shared/fixtures/gpu, tests/data/gpu): every op but a variable read
    launches one kernel (a `cuLaunchKernel` event nested in the op, stats
    `correlation_id`, `device_id`) that runs on the `/device:GPU:0` plane's
    `Stream #7(Compute)` line after its launch (stats `correlation_id`, `tf_op` =
    `node:Type` and `kernel_details`, both refs as real traces have them), and each
    step copies its input on `Stream #8(MemcpyH2D)` (`memcpy_details`; `tf_op`
    every other step, so half the copies name no op).

The Chrome JSON holds exactly the XPlane's events in the form xprof's trace
viewer writes them (op events named by type with `long_name`, `args.flow` on
both ends of a flow, `step_num` on the marker), so both formats carry the same
event count. Generation is deterministic for a seed.

    PYTHONPATH=python python3 bench/synth_xplane.py --events 1000000 \
        --xplane /tmp/s.xplane.pb --chrome /tmp/s.json
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from tfpgo.trace.readers.xplane_proto import xplane_pb2

LINES = (
    "python3",
    "tf_Compute/334999291349658820",
    "tf_Compute/8338811177612966659",
    "tf_numa_-1_Eigen/-3780829903098109586",
    "tf_numa_-1_Eigen/2081044099190026136",
    "Stream #7(Compute)",
    "Stream #8(MemcpyH2D)",
)
PYTHON, COMPUTE, EIGEN, KERNELS, COPIES = 0, (1, 2), (3, 4), 5, 6
PLANES = ("/host:CPU", "/device:GPU:0")
PLANE_OF_LINE = (0, 0, 0, 0, 0, 1, 1)
INPUT_OP = "IteratorGetNext:IteratorGetNext"
BASE_NS = 1_795_300_000_000_000_000  # absolute line timestamps, as real profiles have
FUNCTION = "__inference_infer_91"
US = 1_000_000  # ps per microsecond
THREADPOOL_FLOW, EXECUTOR_FLOW = 15, 2  # TF's ContextType values for the two handoffs


class Ref(str):
    """A stat whose value refers to another stat-metadata name (XStat.ref_value)."""


# One event: (line, name, start_ps, duration_ps, ((stat name, value), ...)).
SynthEvent = tuple[int, str, int, int, tuple[tuple[str, object], ...]]


@dataclass(frozen=True)
class Op:
    """One node of the model's per-step op list: runtime name, kernel, mean µs, shards."""

    node: str
    kernel: str
    mean_us: float
    shards: int


def resnet50_ops() -> list[Op]:
    """A ResNet50-shaped op list as Keras 3 on TF 2.21 (oneDNN fused kernels) runs it."""
    ops = [Op("resnet50_1/conv1_conv_1/convolution/ReadVariableOp", "ReadVariableOp", 2.0, 0)]
    ops.append(Op("resnet50_1/conv1_relu_1/Relu", "_MklNativeFusedConv2D", 900.0, 8))
    ops.append(Op("resnet50_1/pool1_pool_1/MaxPool2d", "MaxPool", 120.0, 4))
    for stage, blocks in ((2, 3), (3, 4), (4, 6), (5, 3)):
        for block in range(1, blocks + 1):
            scope = f"resnet50_1/conv{stage}_block{block}"
            convs = (0, 1, 2, 3) if block == 1 else (1, 2, 3)
            for conv in convs:
                ops.append(
                    Op(
                        f"{scope}_{conv}_conv_1/convolution/ReadVariableOp",
                        "ReadVariableOp",
                        1.5,
                        0,
                    )
                )
                for var in ("ReadVariableOp", "ReadVariableOp_1", "Cast/ReadVariableOp"):
                    ops.append(Op(f"{scope}_{conv}_bn_1/{var}", "ReadVariableOp", 0.5, 0))
                heavy = 600.0 / stage if conv != 3 else 250.0 / stage
                fused = (
                    f"{scope}_{conv}_relu_1/Relu"
                    if conv in (1, 2)
                    else f"{scope}_{conv}_bn_1/FusedBatchNormV3"
                )
                ops.append(Op(fused, "_MklNativeFusedConv2D", heavy, 4 if heavy > 100 else 2))
            ops.append(Op(f"{scope}_add_1/Add", "AddV2", 40.0, 0))
            ops.append(Op(f"{scope}_out_1/Relu", "Relu", 22.0, 0))
    ops.append(Op("resnet50_1/avg_pool_1/Mean", "Mean", 35.0, 2))
    ops.append(Op("resnet50_1/predictions_1/MatMul/ReadVariableOp", "ReadVariableOp", 1.0, 0))
    ops.append(Op("resnet50_1/predictions_1/BiasAdd", "_MklNativeFusedMatMul", 210.0, 2))
    ops.append(Op("resnet50_1/predictions_1/Softmax", "Softmax", 15.0, 0))
    return ops


class _Clock:
    """Deterministic durations: each op keeps its own mean, each run varies by ±30%.
    `device_ps` is when the GPU's compute stream is next free; `device` whether
    there is a GPU."""

    def __init__(self, seed: int, device: bool = True) -> None:
        self.rng = random.Random(seed)
        self.device = device
        self.device_ps = 0

    def ps(self, mean_us: float) -> int:
        return max(1000, int(mean_us * US * self.rng.uniform(0.7, 1.3)))


def _op_mean(op: Op) -> float:
    return op.mean_us * (0.8 + (zlib.crc32(op.node.encode()) % 40) / 100)


def step_events(
    step: int, start_ps: int, ops: list[Op], clock: _Clock, ids: Iterator[int]
) -> tuple[list[SynthEvent], int]:
    """The events of one inference step from `start_ps`; returns them and the step's end."""
    events: list[SynthEvent] = []
    executor = 7_140_850_049_265_320_218 + step  # FunctionRun -> ExecutorState::Process
    function_id = -269_368_510_106_455_830 - step
    first_region = next(ids)
    t = start_ps + clock.ps(40)
    run_start = t + clock.ps(250)  # FunctionRun starts after the eager call chain
    record_at = run_start + clock.ps(8)
    t = record_at + clock.ps(30)
    region, batch, index = first_region, 0, 0
    while index < len(ops):
        size = 1 + clock.rng.randrange(6)
        line = COMPUTE[batch % 2]
        events.append(
            (
                line,
                "ThreadpoolListener::StartRegion",
                t,
                0,
                (("_ct", THREADPOOL_FLOW), ("_c", region)),
            )
        )
        process_start = t + clock.ps(1)
        t = process_start + clock.ps(2)
        next_region = next(ids) if index + size < len(ops) else None
        if next_region is not None:
            events.append(
                (
                    line,
                    "ThreadpoolListener::Record",
                    t,
                    0,
                    (("_pt", THREADPOOL_FLOW), ("_p", next_region)),
                )
            )
            t += clock.ps(1)
        for op in ops[index : index + size]:
            t = _op_events(events, line, op, t, clock, ids)
        events.append(
            (
                line,
                "ExecutorState::Process",
                process_start,
                t - process_start,
                (("id", function_id), ("iter_num", 0), ("_ct", EXECUTOR_FLOW), ("_c", executor)),
            )
        )
        t += clock.ps(0.5)
        events.append((line, "ThreadpoolListener::StopRegion", t, 0, ()))
        t += clock.ps(0.5)
        region = next_region or region
        index += size
        batch += 1
    run_end = t + clock.ps(5)
    end = run_end + clock.ps(60)
    if clock.device:
        events += _input_copy(step, start_ps, clock, ids)
    events += _python_events(
        step,
        start_ps,
        run_start,
        run_end,
        end,
        record_at,
        first_region,
        executor,
        function_id,
        clock,
    )
    return events, end + clock.ps(20)


def _op_events(
    events: list[SynthEvent], line: int, op: Op, t: int, clock: _Clock, ids: Iterator[int]
) -> int:
    """The op on its compute line, its shards on the Eigen lines, its kernel on the
    GPU; returns its end."""
    duration = clock.ps(_op_mean(op))
    events.append((line, f"{op.node}:{op.kernel}", t, duration, ()))
    if clock.device and op.kernel != "ReadVariableOp":
        events += _kernel_launch(line, op, t + duration // 4, clock, next(ids))
    if op.shards:
        slot = duration // (op.shards + 1)
        for shard in range(op.shards):
            handoff = next(ids)
            at = t + slot * shard // 2 + 1000
            events.append(
                (
                    line,
                    "ThreadpoolListener::Record",
                    at,
                    0,
                    (("_pt", THREADPOOL_FLOW), ("_p", handoff)),
                )
            )
            eigen = EIGEN[shard % 2]
            begin = t + slot * (shard // 2) * 2 + 2000 + shard % 2 * 500
            events.append(
                (
                    eigen,
                    "ThreadpoolListener::StartRegion",
                    begin,
                    0,
                    (("_ct", THREADPOOL_FLOW), ("_c", handoff)),
                )
            )
            events.append((eigen, "ThreadpoolListener::StopRegion", begin + slot, 0, ()))
    return t + duration + clock.ps(1)


def _kernel_launch(line: int, op: Op, at: int, clock: _Clock, correlation: int) -> list[SynthEvent]:
    """A `cuLaunchKernel` inside the op and its kernel on the compute stream."""
    launch = clock.ps(3)
    start = max(clock.device_ps, at + launch + clock.ps(4))
    duration = clock.ps(_op_mean(op) / 3)
    clock.device_ps = start + duration + clock.ps(1)
    kernel = f"volta_{op.kernel.lower().lstrip('_')}_kernel"
    details = Ref(f"regs:64 static_shared:0 dynamic_shared:{1024 * (len(op.node) % 7)}")
    return [
        (line, "cuLaunchKernel", at, launch, (("correlation_id", correlation), ("device_id", 0))),
        (
            KERNELS,
            kernel,
            start,
            duration,
            (
                ("correlation_id", correlation),
                ("tf_op", Ref(f"{op.node}:{op.kernel}")),
                ("kernel_details", details),
            ),
        ),
    ]


def _input_copy(step: int, start: int, clock: _Clock, ids: Iterator[int]) -> list[SynthEvent]:
    """The step's input copied host to device, launched from the python thread; every
    other step's copy names the input op, the rest name none (as the runtime's own)."""
    correlation = next(ids)
    at = start + clock.ps(20)
    copy_start = at + clock.ps(6)
    stats: tuple[tuple[str, object], ...] = (
        ("correlation_id", correlation),
        ("memcpy_details", Ref("kind_src:pinned kind_dst:device size:602112 async:1")),
    )
    if step % 2 == 0:
        stats += (("tf_op", Ref(INPUT_OP)),)
    launch = (("correlation_id", correlation), ("device_id", 0))
    return [
        (PYTHON, "cuMemcpyHtoDAsync_v2", at, clock.ps(4), launch),
        (COPIES, "MemcpyH2D", copy_start, clock.ps(50), stats),
    ]


def _python_events(
    step: int,
    start: int,
    run_start: int,
    run_end: int,
    end: int,
    record_at: int,
    region: int,
    executor: int,
    function_id: int,
    clock: _Clock,
) -> list[SynthEvent]:
    """The python thread's call chain of one tf.function call."""
    nested: list[tuple[str, int, int, tuple[tuple[str, object], ...]]] = [
        ("infer", start, end - start, (("step_num", step), ("_r", 1))),
        (
            "infer",
            start + clock.ps(30),
            end - start - clock.ps(60),
            (("tf_function_call", Ref("notTraced-nonXla")), ("tracing_count", 1)),
        ),
    ]
    t = start + clock.ps(120)
    for name, stats in (
        ("TFE_Py_ExecuteCancelable", ()),
        ("EagerExecute", (("eager_op", Ref(FUNCTION)), ("is_func", 1))),
        (f"EagerLocalExecute: {FUNCTION}", ()),
    ):
        nested.append((name, t, run_end + (end - run_end) // 2 - t, stats))
        t += clock.ps(10)
    nested.append(("EagerCopyToDevice", t, clock.ps(20), ()))
    nested.append(("ValidateInputTypeAndPlacement", t + clock.ps(60), clock.ps(1.4), ()))
    for name in ("EagerKernelExecute", "KernelAndDeviceFunc::Run"):
        t += clock.ps(3)
        nested.append((name, t + clock.ps(60), run_end - t - clock.ps(60), ()))
    nested.append(
        (
            "FunctionRun",
            run_start,
            run_end - run_start,
            (("id", function_id), ("_r", 1), ("_pt", EXECUTOR_FLOW), ("_p", executor)),
        )
    )
    nested.append(
        ("ThreadpoolListener::Record", record_at, 0, (("_pt", THREADPOOL_FLOW), ("_p", region)))
    )
    nested.append(("TFE_DeleteTensorHandle", end - clock.ps(15), clock.ps(1.2), ()))
    return [(PYTHON, name, s, d, stats) for name, s, d, stats in nested]


def steps(target_events: int, seed: int = 1, device: bool = True) -> Iterator[list[SynthEvent]]:
    """Steps of events until at least `target_events` were produced."""
    ops, clock = resnet50_ops(), _Clock(seed, device)
    ids = iter(range(1, 1 << 62))
    produced, step, t = 0, 0, 5 * US
    while produced < target_events:
        events, t = step_events(step, t, ops, clock, ids)
        produced += len(events)
        step += 1
        yield events


class XPlaneWriter:
    """Streams events into an XSpace file: each line's serialized events go to a
    scratch file as they come, and `write` splices them into the XSpace. Memory
    stays flat at any size (a 1 GB-class trace needs no XSpace in memory); the file
    is the one protobuf would serialize from the whole message, field for field."""

    _FLUSH_EVENTS = 50_000

    def __init__(self, scratch: Path) -> None:
        self.pb = xplane_pb2()
        self.scratch = scratch
        self.metadata = [self.pb.XPlane() for _ in PLANES]  # event and stat metadata only
        self.buffers = [self.pb.XLine() for _ in LINES]  # events only, flushed
        self.files = [(scratch / f"line{number}.bin").open("wb") for number in range(len(LINES))]
        self.names: list[dict[str, int]] = [{} for _ in PLANES]
        self.stats: list[dict[str, int]] = [{} for _ in PLANES]
        self.count = 0
        self.device_events = 0

    def _name(self, name: str, plane: int) -> int:
        names, metadata = self.names[plane], self.metadata[plane]
        if (key := names.get(name)) is None:
            key = names[name] = len(names) + 1
            metadata.event_metadata[key].id = key
            metadata.event_metadata[key].name = name
            if ":" in name and "::" not in name:
                metadata.event_metadata[key].display_name = name.rsplit(":", 1)[1]
        return key

    def _stat(self, name: str, plane: int) -> int:
        stats, metadata = self.stats[plane], self.metadata[plane]
        if (key := stats.get(name)) is None:
            key = stats[name] = len(stats) + 1
            metadata.stat_metadata[key].id = key
            metadata.stat_metadata[key].name = name
        return key

    def add(self, events: list[SynthEvent]) -> None:
        for line, name, start, duration, stats in sorted(events, key=lambda e: (e[0], e[2], -e[3])):
            plane = PLANE_OF_LINE[line]
            self.device_events += plane
            event = self.buffers[line].events.add(
                metadata_id=self._name(name, plane), offset_ps=start, duration_ps=duration
            )
            for stat_name, value in stats:
                key = self._stat(stat_name, plane)
                if isinstance(value, Ref):
                    event.stats.add(metadata_id=key, ref_value=self._stat(value, plane))
                else:
                    event.stats.add(metadata_id=key, int64_value=value)
        self.count += len(events)
        for line, file in enumerate(self.files):
            if len(self.buffers[line].events) >= self._FLUSH_EVENTS:
                file.write(self.buffers[line].SerializeToString())  # the events' field-4 records
                self.buffers[line] = self.pb.XLine()  # a new arena: Clear() keeps the memory

    def write(self, path: Path) -> None:
        for buffer, file in zip(self.buffers, self.files, strict=True):
            file.write(buffer.SerializeToString())
            file.close()
        with path.open("wb") as out:
            for plane, name in enumerate(PLANES):
                if plane == 0 or self.device_events:  # no GPU plane without a GPU
                    self._write_plane(out, plane, name)
            out.write(self._environment().SerializeToString())  # a last plane, hostnames

    def _write_plane(self, out: BinaryIO, plane: int, name: str) -> None:
        """XSpace.planes[i]: the plane's lines (spliced from the scratch files), then
        its metadata."""
        lines = []
        for number, line_name in enumerate(LINES):
            if PLANE_OF_LINE[number] != plane:
                continue
            head = self.pb.XLine(id=number + 1, name=line_name, timestamp_ns=BASE_NS)
            tail = self.pb.XLine(display_name=line_name)
            body = self.scratch / f"line{number}.bin"
            lines.append((head.SerializeToString(), body, tail.SerializeToString()))
        head = self.pb.XPlane(id=plane, name=name).SerializeToString()
        metadata = self.metadata[plane].SerializeToString()
        line_sizes = [len(h) + b.stat().st_size + len(t) for h, b, t in lines]
        plane_size = len(head) + len(metadata)
        plane_size += sum(1 + len(_varint(size)) + size for size in line_sizes)
        out.write(b"\x0a" + _varint(plane_size) + head)
        for (line_head, body, line_tail), size in zip(lines, line_sizes, strict=True):
            out.write(b"\x1a" + _varint(size) + line_head)  # XPlane.lines
            with body.open("rb") as events:
                shutil.copyfileobj(events, out, 1 << 22)
            out.write(line_tail)
            body.unlink()
        out.write(metadata)

    def _environment(self) -> Any:
        environment = self.pb.XSpace()
        plane = environment.planes.add(id=1, name="Task Environment")
        for key, name in enumerate(("profile_start_time", "profile_stop_time"), start=1):
            plane.stat_metadata[key].id = key
            plane.stat_metadata[key].name = name
            plane.stats.add(metadata_id=key, uint64_value=BASE_NS + key)
        environment.hostnames.append("vm")
        return environment


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


class ChromeWriter:
    """Streams events as xprof's trace viewer JSON (a list of X/i/M events)."""

    def __init__(self, path: Path) -> None:
        self.file = path.open("w")
        self.file.write(
            '{"displayTimeUnit":"ns","metadata":{"highres-ticks":true},"traceEvents":[\n'
        )
        self.file.write('{"args":{"name":"/host:CPU"},"name":"process_name","ph":"M","pid":701}')
        self.file.write(
            ',\n{"args":{"name":"/device:GPU:0"},"name":"process_name","ph":"M","pid":702}'
        )
        for line, name in enumerate(LINES):
            self.file.write(
                f',\n{{"args":{{"name":"{name}"}},"name":"thread_name","ph":"M",'
                f'"pid":{701 + PLANE_OF_LINE[line]},"tid":{line + 1}}}'
            )
        self.count = 0

    def add(self, events: list[SynthEvent], step: int) -> None:
        out = []
        for line, name, start, duration, stats in events:
            args: dict[str, object] = {"group_id": str(step)}
            for stat_name, value in stats:
                if stat_name in ("_p", "_c"):
                    args["flow"] = str(value)
                elif stat_name not in ("_pt", "_ct", "_r"):
                    args[stat_name] = str(value)
            shown = name
            if ":" in name and "::" not in name:
                shown = name.rsplit(":", 1)[1]
                args["long_name"] = name
            elif "step_num" in args:
                shown = f"{name} {step}"
            time = f'"ts":{start // 1000 / 1000}'
            shape = f'"ph":"X","dur":{duration // 1000 / 1000}' if duration else '"ph":"i","s":"t"'
            out.append(
                f',\n{{"args":{json.dumps(args)},"name":{json.dumps(shown)},{shape},'
                f'"pid":{701 + PLANE_OF_LINE[line]},"tid":{line + 1},{time}}}'
            )
        self.file.write("".join(out))
        self.count += len(events)

    def close(self) -> None:
        self.file.write("\n]}\n")
        self.file.close()


def generate(
    target_events: int,
    xplane: Path | None = None,
    chrome: Path | None = None,
    seed: int = 1,
    device: bool = True,
) -> int:
    """Writes the trace in the asked formats; returns its event count (>= target).
    `device`: with the GPU's events (see the module doc)."""
    with tempfile.TemporaryDirectory(
        prefix="synth_xplane_", dir=xplane.parent if xplane else None
    ) as scratch:
        xplane_writer = XPlaneWriter(Path(scratch)) if xplane else None
        chrome_writer = ChromeWriter(chrome) if chrome else None
        count = 0
        for step, events in enumerate(steps(target_events, seed, device)):
            if xplane_writer:
                xplane_writer.add(events)
            if chrome_writer:
                chrome_writer.add(events, step)
            count += len(events)
        if xplane_writer and xplane:
            xplane_writer.write(xplane)
        if chrome_writer:
            chrome_writer.close()
    return count


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--xplane", type=Path, help="write the XSpace here (.xplane.pb)")
    parser.add_argument("--chrome", type=Path, help="write the Chrome trace JSON here")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--no-device", action="store_true", help="a host trace, no GPU")
    args = parser.parse_args()
    if not (args.xplane or args.chrome):
        parser.error("give --xplane and/or --chrome")
    count = generate(args.events, args.xplane, args.chrome, args.seed, not args.no_device)
    print(f"{count:,} events")
    return 0


if __name__ == "__main__":
    sys.exit(main())
