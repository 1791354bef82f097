"""TensorFlow's own GPU kernels (`tf_op` = `node:Type`) on the TF-style fixture
(tests/data/gpu/tf_gpu.xplane.pb, written by make_tf_gpu_fixture.py with exactly the
stats TensorFlow's GPU tracer writes), checked against xprof's framework_op_stats."""

import json
import shutil
from pathlib import Path

import pytest

from tfpgo.attribution.op_profile import build_op_profile
from tfpgo.trace.device import device_rows
from tfpgo.trace.readers import read_trace

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "gpu" / "tf_gpu.xplane.pb"
# kernels and memsets each op launched per step (make_tf_gpu_fixture.OPS)
KERNELS = {
    "IteratorGetNext": 1,  # the input copy
    "sequential/conv/Conv2D": 3,  # cuDNN: two kernels and a memset
    "sequential/dense/MatMul": 1,
    "sequential/dense/BiasAdd": 1,
    "sequential/dense/Relu": 1,
}
STEPS = 3


@pytest.fixture(scope="module")
def table():
    return read_trace(FIXTURE)


@pytest.fixture(scope="module")
def profile(table):
    return build_op_profile(table)


def framework_op_stats(path: Path) -> dict[tuple[str, str], tuple[float, float, int]]:
    """{(host or device, op): (total µs, self µs, occurrences)} from xprof."""
    from xprof.convert import raw_to_tool_data

    data, _ = raw_to_tool_data.xspace_to_tool_data([str(path)], "framework_op_stats", {})
    table = json.loads(data)[0]
    columns = [c["id"] for c in table["cols"]]
    rows = [dict(zip(columns, (v.get("v") for v in r["c"]), strict=True)) for r in table["rows"]]
    return {
        (r["host_or_device"], r["operation"]): (
            r["total_time"],
            r["total_self_time"],
            int(r["occurrences"]),
        )
        for r in rows
        if r["type"] != "IDLE"
    }


def test_device_time_per_op_equals_xprof_framework_op_stats(profile, tmp_path):
    path = tmp_path / FIXTURE.name  # xprof caches beside its input
    shutil.copyfile(FIXTURE, path)
    theirs = framework_op_stats(path)
    device = {op: figures for (where, op), figures in theirs.items() if where == "Device"}
    ours = {op.name: op for op in profile.ops if op.device_count}
    assert set(ours) == set(device) == set(KERNELS)
    for name, (_, self_us, _) in device.items():
        assert ours[name].device_self_ps / 1e6 == pytest.approx(self_us, rel=1e-3), name
    host = {op: figures for (where, op), figures in theirs.items() if where == "Host"}
    for name, (_, self_us, count) in host.items():
        assert profile.by_name()[name].self_ps / 1e6 == pytest.approx(self_us, rel=1e-3), name
        assert profile.by_name()[name].count == count


def test_the_tf_op_rule_puts_each_kernel_on_the_op_that_launched_it(profile):
    for name, kernels in KERNELS.items():
        op = profile.by_name()[name]
        assert op.device_count == kernels * STEPS, name
        assert op.count == STEPS  # the host op events, unchanged by the device plane
    rules = {k.rule for k in profile.device_kernels if k.ops}
    assert rules == {"tf_op"}


def test_a_copy_no_op_issued_is_listed_apart_and_nothing_is_dropped(profile):
    totals = profile.totals
    (runtime_copy,) = [k for k in profile.device_kernels if not k.ops]
    assert (runtime_copy.kind, runtime_copy.reason, runtime_copy.count) == (
        "memcpy_h2d",
        "no_framework_op",
        STEPS,
    )
    assert totals.device_attributed_ps + runtime_copy.total_ps == totals.device_ps
    (h2d,) = [c for c in profile.device_copies if c.kind == "memcpy_h2d"]
    assert h2d.total_ps - h2d.attributed_ps == runtime_copy.total_ps
    (memset,) = [c for c in profile.device_copies if c.kind == "memset"]
    assert memset.attributed_ps == memset.total_ps > 0


def test_launches_link_to_kernels_and_give_them_their_step(table):
    rows = set(device_rows(table).tolist())
    linked = {int(b): int(a) for a, b in table.flows.tolist() if b in rows}
    assert set(linked) == rows  # every device event has its launch
    assert all(table.step[kernel] == table.step[launch] for kernel, launch in linked.items())
    assert sorted(set(table.step[sorted(rows)].tolist())) == list(range(STEPS))
