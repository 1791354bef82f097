"""Per-op profile: self time, percentiles, totals, JSON, agreement with xprof."""

import json
import shutil

import numpy as np
import pytest
import trace_fixtures as fx

from tfpgo.attribution.op_profile import OpProfile, build_op_profile, nearest_rank
from tfpgo.errors import UserError
from tfpgo.trace.events import TableBuilder
from tfpgo.trace.readers import read_trace


def table_of(events, steps=()):
    """events: (name, start, duration, line); steps: (step, start, end) markers on 'py'."""
    builder = TableBuilder("synthetic", "test")
    for step, start, end in steps:
        track = builder.track_id("h", "/host:CPU", "py")
        first = builder.add_columns(
            track, np.array([builder.name_id("train")]), np.array([start]), np.array([end - start])
        )
        builder.step_events.append((first, step))
    for name, start, duration, line in events:
        track = builder.track_id("h", "/host:CPU", line)
        builder.add_columns(
            track, np.array([builder.name_id(name)]), np.array([start]), np.array([duration])
        )
    return builder.build()


def test_self_time_excludes_directly_nested_ops():
    table = table_of(
        [
            ("f/call:PartitionedCall", 0, 100, "a"),
            ("f/body/x:MatMul", 10, 30, "a"),
            ("f/body/x/inner:Relu", 15, 5, "a"),  # nested in MatMul, not directly in the call
            ("f/body/y:Add", 50, 20, "a"),
            ("other:Add", 20, 40, "b"),  # overlaps in time, but on another line
            ("ExecutorState::Process", 0, 200, "a"),  # runtime event: neither op nor parent
        ]
    )
    ops = build_op_profile(table).by_name()
    assert ops["f/call"].self_ps == 100 - 30 - 20
    assert ops["f/body/x"].self_ps == 30 - 5
    assert ops["f/body/x/inner"].self_ps == 5
    assert ops["other"].self_ps == 40
    assert "ExecutorState::Process" not in ops


def test_statistics_and_types_per_runtime_name():
    durations = [7, 1, 5, 3, 9, 2, 8, 4, 6, 10]
    events = [
        ("n/a:MatMul" if i % 2 else "n/a:_MklNativeFusedMatMul", i * 100, d, "t")
        for i, d in enumerate(durations)
    ]
    op = build_op_profile(table_of(events)).ops[0]
    assert op.name == "n/a"
    assert op.op_types == ("MatMul", "_MklNativeFusedMatMul")
    assert op.durations_ps == tuple(sorted(durations))
    assert (op.count, op.total_ps, op.min_ps, op.max_ps) == (10, 55, 1, 10)
    assert (op.mean_ps, op.p50_ps, op.p95_ps, op.first_start_ps) == (5, 5, 10, 0)
    assert nearest_rank(np.array([1, 2, 3, 4]), 0.5) == 2


def test_totals_and_non_op_time():
    table = table_of(
        [("a:X", 10, 20, "t0"), ("b:Y", 20, 20, "t1"), ("c:Z", 110, 10, "t0")],
        steps=[(0, 0, 100), (1, 100, 150)],
    )
    profile = build_op_profile(table)
    assert profile.steps == (0, 1)
    totals = profile.totals
    assert (totals.op_total_ps, totals.op_self_ps, totals.op_events) == (50, 50, 3)
    assert totals.events == 5 and totals.wall_ps == 150
    # step 0: ops cover [10, 40) of [0, 100); step 1: [110, 120) of [100, 150)
    assert totals.non_op_ps == (100 - 30) + (50 - 10)
    assert [op.name for op in profile.ops] == ["a", "b", "c"]
    assert profile.step_wall_ps == (100, 50)


def test_step_walls_need_a_marker_for_every_step():
    table = table_of([("a:X", 10, 20, "t0")])
    assert build_op_profile(table).step_wall_ps == ()


def test_json_round_trip_and_version_check(tmp_path):
    profile = build_op_profile(read_trace(fx.XPLANE))
    path = tmp_path / "op_profile.json"
    profile.write(path)
    assert OpProfile.read(path) == profile
    document = json.loads(path.read_text())
    assert len(document["step_wall_ps"]) == len(document["steps"]) > 0
    # Documents written before step_wall_ps existed still read.
    path.write_text(json.dumps({k: v for k, v in document.items() if k != "step_wall_ps"}))
    assert OpProfile.read(path).step_wall_ps == ()
    assert (document["format"], document["version"], document["time_unit"]) == (
        "tfpgo.op_profile",
        3,
        "ps",
    )
    selfs = [op["self_ps"] for op in document["ops"]]
    assert selfs == sorted(selfs, reverse=True)
    # Version 1 (no XLA fields) still reads.
    version_1 = {k: v for k, v in document.items() if k != "xla_inserted"}
    path.write_text(json.dumps({**version_1, "version": 1}))
    assert OpProfile.read(path).ops == profile.ops
    document["version"] = 4
    path.write_text(json.dumps(document))
    with pytest.raises(UserError, match="is newer than this tool reads"):
        OpProfile.read(path)
    path.write_text("[1, 2]")
    with pytest.raises(UserError, match=r"not a tfpgo\.op_profile document"):
        OpProfile.read(path)


def xprof_framework_op_stats(path):
    """{operation name: (total us, self us)} from xprof's framework_op_stats table."""
    from xprof.convert import raw_to_tool_data

    data, _ = raw_to_tool_data.xspace_to_tool_data([str(path)], "framework_op_stats", {})
    table = json.loads(data)[0]
    columns = [c["id"] for c in table["cols"]]
    rows = [
        dict(zip(columns, (v.get("v") for v in row["c"]), strict=True)) for row in table["rows"]
    ]
    return {
        r["operation"]: (r["total_time"], r["total_self_time"]) for r in rows if r["type"] != "IDLE"
    }


@pytest.mark.parametrize("model", ["fixture", "rnn_train"])
def test_agrees_with_xprof_framework_op_stats(tmp_path, model):
    if model == "fixture":
        # xprof caches its conversions next to the input: work on a copy
        path = tmp_path / fx.XPLANE.name
        shutil.copyfile(fx.XPLANE, path)
    else:
        from tfpgo import models
        from tfpgo.models import profiling

        case = models.load_model("rnn", "train", batch_size=2)
        path = profiling.profile(case, tmp_path, steps=2, warmup=1).xplane_paths[0]
    ours = build_op_profile(read_trace(path)).by_name()
    theirs = xprof_framework_op_stats(path)
    assert set(ours) == set(theirs)
    for name, (total_us, self_us) in theirs.items():
        op = ours[name]
        assert op.total_ps / 1e6 == pytest.approx(total_us, rel=1e-3), name
        assert op.self_ps / 1e6 == pytest.approx(self_us, rel=1e-3), name


def test_overlap_with_windows_matches_a_brute_force_count():
    """The binary-search overlap equals counting covered picoseconds one by one."""
    from tfpgo.attribution.op_profile import _overlap, _union

    rng = np.random.default_rng(7)
    for _ in range(200):
        count = int(rng.integers(0, 30))
        starts = rng.integers(0, 500, count)
        ends = starts + rng.integers(0, 60, count)
        window_starts = np.sort(rng.integers(0, 550, 4))
        window_ends = window_starts + rng.integers(0, 120, 4)
        covered = np.zeros(700, dtype=bool)
        for start, end in zip(starts, ends, strict=True):
            covered[start:end] = True
        expected = sum(
            int(covered[start:end].sum())
            for start, end in zip(window_starts, window_ends, strict=True)
        )
        union = _union(starts.astype(np.int64), ends.astype(np.int64))
        assert _overlap(union, window_starts, window_ends) == expected
