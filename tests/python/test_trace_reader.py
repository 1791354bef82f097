"""trace_reader: library run() and the CLI in-process (flags, filters, errors)."""

import json

import pytest
import trace_fixtures as fx

from tfpgo import cli
from tfpgo.attribution.op_profile import OpProfile
from tfpgo.flow import trace_reader
from tfpgo.trace.dag_json import read_dag
from tfpgo.trace.event_filter import EventFilter, parse_steps


def run_cli(argv):
    return cli.run_main(trace_reader.main, argv, prog="trace_reader")


def test_cli_writes_both_documents(tmp_path, capsys):
    dag_path, profile_path = tmp_path / "mlir_graph.json", tmp_path / "op_profile.json"
    status = run_cli(
        [
            "--path-to-trace",
            str(fx.XPLANE),
            "--store-output",
            str(dag_path),
            "--op-profile",
            str(profile_path),
        ]
    )
    assert status == 0
    dag, profile = read_dag(dag_path), OpProfile.read(profile_path)
    assert len(dag) == profile.totals.op_events
    assert "mlp_1/wide_1/Relu" in capsys.readouterr().out  # the summary names the hot op


def test_paths_are_relative_to_the_users_directory(tmp_path, monkeypatch):
    monkeypatch.setenv("BUILD_WORKING_DIRECTORY", str(tmp_path))
    assert (
        run_cli(["--path-to-trace", str(fx.XPLANE), "--op-profile", "out/p.json", "--quiet"]) == 0
    )
    assert (tmp_path / "out" / "p.json").exists()


def test_library_run_returns_records(tmp_path):
    result = trace_reader.run(fx.CHROME_GZ, op_profile_out=tmp_path / "p.json")
    assert result.dag is not None and result.dag_path is None
    assert result.op_profile == OpProfile.read(tmp_path / "p.json")
    assert set(result.timings_s) >= {"read", "op_profile", "dag", "write"}


def test_outputs_record_the_source_as_shown(tmp_path):
    """A caller reading from a staging directory names where the trace will be."""
    result = trace_reader.run(
        fx.XPLANE,
        dag_out=tmp_path / "g.json",
        op_profile_out=tmp_path / "p.json",
        show_source=lambda source: source.replace(str(fx.XPLANE.parent), "/final"),
    )
    expected = f"/final/{fx.XPLANE.name}"
    assert result.source == expected
    assert json.loads((tmp_path / "p.json").read_text())["source"] == expected
    assert read_dag(tmp_path / "g.json").meta["source"] == expected


def test_filters(tmp_path):
    full = trace_reader.run(fx.XPLANE).op_profile
    one_step = trace_reader.run(fx.XPLANE, filters=EventFilter(steps=frozenset({1})))
    assert one_step.op_profile.steps == (1,)
    assert {op.count for op in one_step.op_profile.ops} == {1}
    by_name = trace_reader.run(fx.XPLANE, filters=EventFilter(name_regex="wide"))
    assert {op.name for op in by_name.op_profile.ops} == {
        op.name for op in full.ops if "wide" in op.name
    }
    slow = trace_reader.run(fx.XPLANE, filters=EventFilter(min_duration_ps=10**8))
    assert all(op.min_ps >= 10**8 for op in slow.op_profile.ops)
    assert parse_steps("0,2,5-7") == {0, 2, 5, 6, 7}
    out = tmp_path / "p.json"
    assert (
        run_cli(
            [
                "--path-to-trace",
                str(fx.TWO_HOSTS),
                "--hosts",
                "hostB",
                "--thread",
                "worker",
                "--start-us",
                "60",
                "--end-us",
                "100",
                "--op-profile",
                str(out),
                "--quiet",
            ]
        )
        == 0
    )
    document = json.loads(out.read_text())
    assert document["hosts"] == ["hostB"]
    assert [op["name"] for op in document["ops"]] == ["model/out/BiasAdd"]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--steps", "x"], "--steps 'x'"),
        (["--name", "("], "invalid regular expression"),
        (["--steps", "99"], "no event passes the filters"),
    ],
)
def test_bad_filters_are_one_line_errors(tmp_path, capsys, extra, message):
    out = tmp_path / "p.json"
    status = run_cli(["--path-to-trace", str(fx.XPLANE), "--op-profile", str(out), *extra])
    assert status == 1
    err = capsys.readouterr().err
    assert err.startswith("trace_reader: error: ") and message in err
    assert err.count("\n") == 1
    assert list(tmp_path.iterdir()) == []


def test_bad_input_leaves_no_output(tmp_path, capsys):
    bad = tmp_path / "bad.xplane.pb"
    bad.write_bytes(fx.XPLANE.read_bytes()[:1000])
    outputs = tmp_path / "out"
    status = run_cli(
        [
            "--path-to-trace",
            str(bad),
            "--store-output",
            str(outputs / "g.json"),
            "--op-profile",
            str(outputs / "p.json"),
        ]
    )
    assert status == 1
    err = capsys.readouterr().err
    assert str(bad) in err and "Traceback" not in err and err.count("\n") == 1
    assert not outputs.exists()


def test_help_explains_every_flag(capsys):
    with pytest.raises(SystemExit) as exit_info:
        trace_reader.main(["--help"])
    assert exit_info.value.code == 0
    text = capsys.readouterr().out
    for flag in (
        "--path-to-trace",
        "--store-output",
        "--op-profile",
        "--run",
        "--dag-events",
        "--start-us",
        "--end-us",
        "--steps",
        "--hosts",
        "--thread",
        "--name",
        "--min-duration-us",
        "--progress",
        "--quiet",
    ):
        assert flag in text


def test_progress_goes_to_stderr(tmp_path, capsys):
    assert (
        run_cli(
            [
                "--path-to-trace",
                str(fx.XPLANE),
                "--store-output",
                str(tmp_path / "g.json"),
                "--progress",
            ]
        )
        == 0
    )
    err = capsys.readouterr().err
    assert "trace_reader: read" in err and "trace_reader: DAG:" in err


@pytest.mark.parametrize("failing", ["build_op_profile", "write_dag", "OpProfile.write"])
def test_a_failure_while_the_dag_is_written_leaves_no_output(tmp_path, monkeypatch, failing):
    """The DAG JSON is written on a thread while the op profile is computed and
    written: a failure on either side leaves no document and no staging file."""

    def fail(*args, **kwargs):
        raise OSError(f"{failing} failed")

    owner, _, name = failing.rpartition(".")
    monkeypatch.setattr(OpProfile if owner else trace_reader, name, fail)
    with pytest.raises(OSError, match=f"{failing} failed"):
        trace_reader.run(
            fx.XPLANE, dag_out=tmp_path / "mlir_graph.json", op_profile_out=tmp_path / "p.json"
        )
    assert list(tmp_path.iterdir()) == []


def test_a_trace_without_op_events_still_gets_both_documents(tmp_path):
    """No TF op event: an empty DAG and an empty op profile are written, and why."""
    trace = tmp_path / "trace.json"
    event = {"ph": "X", "name": "python_call", "ts": 1, "dur": 5, "pid": 1, "tid": 1}
    trace.write_text(json.dumps({"traceEvents": [event]}))
    messages: list[str] = []
    result = trace_reader.run(
        trace,
        dag_out=tmp_path / "mlir_graph.json",
        op_profile_out=tmp_path / "op_profile.json",
        progress=messages.append,
    )
    assert read_dag(tmp_path / "mlir_graph.json").table.source == str(trace)
    assert len(read_dag(tmp_path / "mlir_graph.json")) == 0
    assert OpProfile.read(tmp_path / "op_profile.json").ops == ()
    assert result.empty_reason and any("the op profile is empty" in m for m in messages)


def test_huge_traces_only_tune_the_allocator(tmp_path):
    """The allocator setting (process-wide) is made from HUGE_TRACE_BYTES of input
    on, a file's or a logdir's, and glibc takes it."""
    from tfpgo.trace.allocator import HUGE_TRACE_BYTES, return_freed_memory_early

    assert not trace_reader._is_huge(fx.DATA / "mlp_infer.xplane.pb")
    big = tmp_path / "logdir" / "plugins" / "profile" / "run" / "host.xplane.pb"
    big.parent.mkdir(parents=True)
    with big.open("wb") as handle:
        handle.truncate(HUGE_TRACE_BYTES)  # sparse: no disk used
    assert trace_reader._is_huge(big) and trace_reader._is_huge(tmp_path / "logdir")
    assert not trace_reader._is_huge(tmp_path / "missing.xplane.pb")
    assert return_freed_memory_early()  # glibc (Debian): mallopt accepted
