"""Trace readers: formats detected by content, the same events from every form."""

import gzip
import json
import shutil
from typing import Any

import numpy as np
import pytest
import trace_fixtures as fx

from tfpgo.errors import UserError
from tfpgo.trace.events import ColumnStats, parse_op_name
from tfpgo.trace.readers import read_trace


def op_durations(table):
    """{op event name: sorted durations} of a table."""
    result: dict[str, list[int]] = {}
    for event in table.events():
        if event.is_op:
            result.setdefault(event.name, []).append(event.duration_ps)
    return {name: sorted(values) for name, values in result.items()}


def test_xplane_events_are_typed_records():
    table = read_trace(fx.XPLANE)
    assert table.source_kind == "xplane"
    ops = [e for e in table.events() if e.is_op]
    assert ops and all(e.plane == "/host:CPU" and e.step in (0, 1) for e in ops)
    fused = [e for e in ops if e.op_type == "_MklNativeFusedMatMul"]
    assert {e.node for e in fused} >= {"mlp_1/wide_1/Relu"}
    runtime = {e.name for e in table.events() if not e.is_op}
    assert {"ExecutorState::Process", "ThreadpoolListener::Record"} <= runtime
    assert table.start_ps.min() == 0
    assert len(table.flows) > 0  # producer/consumer context stats became flows


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("a/b/MatMul:MatMul", ("a/b/MatMul", "MatMul")),
        ("w/body/_1/x/add:AddV2", ("w/body/_1/x/add", "AddV2")),
        ("ExecutorState::Process", None),
        ("ThreadpoolListener::Record", None),
        ("EagerLocalExecute: __inference_f_91", None),
        ("infer", None),
        ("MemoryAllocation", None),
    ],
)
def test_op_name_recognition(name, expected):
    assert parse_op_name(name) == expected


def test_xspace_json_reads_like_the_protobuf():
    binary, text = read_trace(fx.XPLANE), read_trace(fx.XSPACE_JSON)
    assert text.source_kind == "xspace_json"
    assert len(binary) == len(text)
    assert np.array_equal(binary.start_ps, text.start_ps)
    assert np.array_equal(binary.duration_ps, text.duration_ps)
    assert [binary.names[i] for i in binary.name_id] == [text.names[i] for i in text.name_id]
    assert binary.steps == text.steps
    assert np.array_equal(binary.flows, text.flows)


def test_chrome_trace_from_xprof_has_the_same_ops():
    chrome = read_trace(fx.CHROME_GZ)
    assert chrome.source_kind == "chrome"
    assert op_durations(chrome) == op_durations(read_trace(fx.XPLANE))
    assert [m.step for m in chrome.steps] == [0, 1]


def test_chrome_trace_hosts_begin_end_and_flows():
    table = read_trace(fx.TWO_HOSTS)
    assert table.hosts == ["hostA", "hostB"]
    events = {e.name: e for e in table.events()}
    relu = events["model/dense/Relu:Relu"]  # a B/E pair
    assert (relu.start_ps, relu.duration_ps, relu.host) == (55_500_000, 4_500_000, "hostA")
    matmul, bias = events["model/dense/MatMul:MatMul"], events["model/out/BiasAdd:BiasAdd"]
    # `s` binds to the enclosing MatMul, `f` to the next slice on its thread
    assert table.flows.tolist() == [[matmul.index, bias.index]]
    assert [(m.host, m.step) for m in table.steps] == [("hostA", 0), ("hostB", 0)]
    assert events["marker"].duration_ps == 0


def test_detection_is_by_content_not_name(tmp_path):
    odd = tmp_path / "trace.bin"
    shutil.copyfile(fx.XPLANE, odd)
    assert read_trace(odd).source_kind == "xplane"
    plain = tmp_path / "plain.dat"
    plain.write_bytes(gzip.decompress(fx.CHROME_GZ.read_bytes()))
    assert read_trace(plain).source_kind == "chrome"


def test_logdir_newest_run_and_chosen_run(tmp_path):
    for run, host in (("2026_01_01_00_00_00", "old"), ("2026_02_01_00_00_00", "new")):
        run_dir = tmp_path / "plugins" / "profile" / run
        run_dir.mkdir(parents=True)
        shutil.copyfile(fx.XPLANE, run_dir / f"{host}.xplane.pb")
    newest = read_trace(tmp_path)
    assert newest.source.endswith("new.xplane.pb")
    older = read_trace(tmp_path, run="2026_01_01_00_00_00")
    assert older.source.endswith("old.xplane.pb")
    with pytest.raises(UserError, match="no run 'nope'; runs: 2026_01_01"):
        read_trace(tmp_path, run="nope")


def test_logdir_with_two_hosts_keeps_host_identity(tmp_path):
    from tfpgo.trace.readers.xplane_proto import xplane_pb2

    run_dir = tmp_path / "plugins" / "profile" / "run"
    run_dir.mkdir(parents=True)
    for host in ("alpha", "beta"):
        space = xplane_pb2().XSpace()
        space.ParseFromString(fx.XPLANE.read_bytes())
        del space.hostnames[:]
        space.hostnames.append(host)
        (run_dir / f"{host}.xplane.pb").write_bytes(space.SerializeToString())
    table = read_trace(tmp_path)
    assert table.hosts == ["alpha", "beta"]
    single = read_trace(fx.XPLANE)
    assert len(table) == 2 * len(single)
    assert sorted({(m.host, m.step) for m in table.steps}) == [
        ("alpha", 0),
        ("alpha", 1),
        ("beta", 0),
        ("beta", 1),
    ]
    steps_by_host = {
        h: {e.step for e in table.events() if e.host == h and e.is_op} for h in table.hosts
    }
    assert steps_by_host == {"alpha": {0, 1}, "beta": {0, 1}}


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "empty file"),
        (b"\x1f\x8b\x08\x00garbage", "corrupt gzip"),
        (b'{"a": 1}', "JSON but not a trace"),
        (b'{"traceEvents": [', "invalid JSON"),
        (b'{"meta": {"format": "tfpgo.event_dag"}, "nodes": []}', "output of tfpgo"),
        (b'{"traceEvents": []}', "holds no events"),
        (b"\x0a\x05\x0a\x03abc", "holds no XSpace planes|no events"),
    ],
)
def test_bad_inputs_are_one_line_user_errors(tmp_path, content, message):
    path = tmp_path / "input"
    path.write_bytes(content)
    with pytest.raises(UserError, match=message) as error:
        read_trace(path)
    assert str(path) in str(error.value) and "\n" not in str(error.value)


def test_truncated_and_missing_inputs(tmp_path):
    truncated = tmp_path / "cut.xplane.pb"
    truncated.write_bytes(fx.XPLANE.read_bytes()[: len(fx.XPLANE.read_bytes()) // 2])
    with pytest.raises(UserError, match="not a valid XSpace protobuf"):
        read_trace(truncated)
    with pytest.raises(UserError, match="no such file"):
        read_trace(tmp_path / "absent.pb")
    empty_dir = tmp_path / "empty"
    empty_dir.mkdir()
    with pytest.raises(UserError, match="no plugins/profile"):
        read_trace(empty_dir)


def _events_through_protobuf(path):
    """The events of an .xplane.pb read with protobuf's Python API, as the reader did
    before the native decoder: the specification the decoder's output must meet.
    Returns (events as (track, name, start, duration, stats) sorted by the native
    order, flows as a set of event pairs, step markers)."""
    from tfpgo.trace.readers.hlo_metadata import METADATA_PLANE
    from tfpgo.trace.readers.xplane_proto import xplane_pb2

    space = xplane_pb2().XSpace()
    space.ParseFromString(path.read_bytes())
    host = space.hostnames[0] if space.hostnames else path.name.split(".")[0]
    stamps = [line.timestamp_ns for plane in space.planes for line in plane.lines]
    base = min(stamps) if stamps else 0
    events: list[tuple[tuple[str, str, str], str, int, int, dict[str, Any]]] = []
    producers: dict[tuple[int, int], int] = {}
    consumers: list[tuple[tuple[int, int], int]] = []
    launches: dict[int, int] = {}  # correlation id -> the first host event with it
    launched: list[tuple[int, int]] = []  # (correlation id, device event)
    steps: list[int] = []
    for plane in space.planes:
        if plane.name == METADATA_PLANE:
            continue
        stat_names = {key: value.name for key, value in plane.stat_metadata.items()}
        for line in plane.lines:
            for event in line.events:
                index = len(events)
                entry = plane.event_metadata.get(event.metadata_id)
                name = entry.name if entry is not None else f"<metadata {event.metadata_id}>"
                kept: dict[str, Any] = {}
                flow: dict[str, int] = {}
                for stat in event.stats:
                    key = stat_names.get(stat.metadata_id, str(stat.metadata_id))
                    if key in ("_p", "_c", "_pt", "_ct"):
                        flow[key] = stat.uint64_value or stat.int64_value
                        continue
                    which = stat.WhichOneof("value")
                    value: Any = getattr(stat, which) if which else None
                    if which == "ref_value":
                        value = stat_names.get(value, value)
                    elif which == "bytes_value":
                        value = value.hex()
                    kept[key] = value
                if "_p" in flow:
                    producers.setdefault((flow.get("_pt", 0), flow["_p"]), index)
                if "_c" in flow:
                    consumers.append(((flow.get("_ct", 0), flow["_c"]), index))
                if "correlation_id" in kept and plane.name.startswith("/device:"):
                    launched.append((kept["correlation_id"], index))
                elif "correlation_id" in kept:
                    launches.setdefault(kept["correlation_id"], index)
                if "step_num" in kept:
                    steps.append(int(kept["step_num"]))
                start = event.offset_ps + (line.timestamp_ns - base) * 1000
                track = (host, plane.name, line.display_name or line.name)
                events.append((track, name, start, event.duration_ps, kept))
    flows = {(producers[key], c) for key, c in consumers if producers.get(key, c) != c}
    flows |= {(launches[key], d) for key, d in launched if key in launches}
    return events, flows, steps


@pytest.mark.parametrize(
    "path",
    sorted(fx.DATA.parent.rglob("*.xplane.pb")),
    ids=lambda p: str(p.relative_to(p.parents[2])),
)
def test_native_decoder_gives_what_protobuf_gives(path):
    """Every real fixture: the same events, names, tracks, times, stats, flows and
    steps as reading the XSpace with protobuf's Python API."""
    events, flows, steps = _events_through_protobuf(path)
    table = read_trace(path)
    assert len(table) == len(events)
    lowest = min(start for _, _, start, _, _ in events)
    for index, (track, name, start, duration, kept) in enumerate(events):
        t = table.tracks[int(table.track_id[index])]
        assert (t.host, t.plane, t.line) == track
        assert table.names[int(table.name_id[index])] == name
        assert int(table.start_ps[index]) == start - lowest
        assert int(table.duration_ps[index]) == max(duration, 0)
        assert table.stats.get(index, {}) == kept
    assert dict(table.stats.items()) == {row: table.stats[row] for row in table.stats}
    assert set(map(tuple, table.flows.tolist())) == flows
    assert sorted(m.step for m in table.steps) == sorted(steps)


@pytest.mark.parametrize("step", ["infer", "mixed", "train_adam"])
def test_rows_with_a_stat_are_those_whose_stats_hold_it(step):
    """The vectorized lookup over column stats equals scanning every event's stats."""
    table = read_trace(fx.DATA.parent / "xla" / step / "trace.xplane.pb")
    for name in ("hlo_op", "step_num", "no_such_stat"):
        scanned = sorted(row for row, stats in table.stats.items() if name in stats)
        assert table.rows_with_stat(name).tolist() == scanned, name
    assert table.rows_with_stat("hlo_op").size > 0


@pytest.mark.parametrize(
    "path",
    sorted(fx.DATA.parent.rglob("*.xplane.pb")),
    ids=lambda p: str(p.relative_to(p.parents[2])),
)
def test_stats_json_rendered_from_columns_equals_json_dumps(path):
    """The event DAG's stats text, rendered from the columns in chunks, is exactly
    what json.dumps gives for each event's stats dict."""
    stats = read_trace(path).stats
    assert isinstance(stats, ColumnStats)
    rendered: dict[int, str] = {}
    for begin in range(0, max(stats) + 1, 97):
        rows, texts = stats.json_texts(begin, begin + 97)
        rendered.update(zip(rows.tolist(), texts, strict=True))
    assert rendered == {row: json.dumps(s, separators=(",", ":")) for row, s in stats.items()}


def test_stats_json_of_strings_doubles_and_a_stat_given_twice():
    stats = ColumnStats()
    name, text, ratio = stats.name_id("name"), stats.name_id('q"uote'), stats.name_id("ratio")
    rows = np.array([0, 0, 2, 2, 2, 5])
    keys = np.array([name, ratio, text, name, text])
    keys = np.append(keys, name)
    values = np.array([stats.string_id("a\\b"), 0, 7, stats.string_id("é\n"), 8, -3])
    strings = np.array([True, False, False, True, False, False])
    stats.add(rows, keys, values, {1: 0.25}, strings)
    rows_out, texts = stats.json_texts(0, 6)
    assert rows_out.tolist() == [0, 2, 5]
    assert [json.loads(t) for t in texts] == [
        {"name": "a\\b", "ratio": 0.25},
        {'q"uote': 8, "name": "é\n"},
        {"name": -3},
    ]
    assert texts == [json.dumps(stats[r], separators=(",", ":")) for r in (0, 2, 5)]
    assert stats.json_texts(3, 5)[1] == []
