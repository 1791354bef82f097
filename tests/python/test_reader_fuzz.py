"""Seeded fuzzing of the readers (tests/python/reader_fuzz.py): a few hundred
mutated inputs per reader, the same on every run, each ending in a valid result
or one clean line of error. The full runs (10,000 inputs and more per reader)
are `bazel run //bench:bench_fuzz_readers`. Below them: one regression test per
finding of those runs, on the smallest input that showed it."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

import pytest
import reader_fuzz

from tfpgo import cli, errors, toolpaths
from tfpgo.attribution.op_profile import OpProfile
from tfpgo.flow import trace_reader

SEED = 17
PYTHON_INPUTS = 300
CC_INPUTS = 600
TFPGO_OPT_INPUTS = 40


def _assert_clean(tally: reader_fuzz.Tally, count: int) -> None:
    assert tally.inputs == count
    assert not tally.findings, "\n".join(f"{f.index}: {f.what}" for f in tally.findings)
    # The mutations reach both outcomes, or the run proves little.
    assert tally.ok > 0 and tally.errors > 0


@pytest.mark.parametrize("reader", sorted(reader_fuzz.READERS))
def test_python_reader_survives_mutated_inputs(reader: str) -> None:
    tally = reader_fuzz.fuzz_python(reader_fuzz.READERS[reader], PYTHON_INPUTS, SEED)
    _assert_clean(tally, PYTHON_INPUTS)


def test_cc_op_profile_reader_survives_mutated_inputs() -> None:
    path = os.environ.get("TFPGO_READ_OP_PROFILES")
    if not path:
        pytest.skip("$TFPGO_READ_OP_PROFILES is not set (the Bazel target sets it)")
    tool = Path(path).resolve()
    tally = reader_fuzz.fuzz_op_profile_cc(tool, CC_INPUTS, SEED)
    _assert_clean(tally, CC_INPUTS)


def test_tfpgo_opt_reports_a_mutated_profile_in_one_line() -> None:
    tally = reader_fuzz.fuzz_tfpgo_opt(toolpaths.tfpgo_opt(), TFPGO_OPT_INPUTS, SEED)
    _assert_clean(tally, TFPGO_OPT_INPUTS)


def test_harness_reports_a_crash_and_goes_on(tmp_path: Path) -> None:
    """A driver that dies on one input: that input is the finding, the inputs
    after it are still read."""
    fake = tmp_path / "fake_reader"
    fake.write_text(
        '#!/bin/sh\nfor f in "$@"; do\n'
        '  if grep -q CRASH "$f"; then kill -SEGV $$; fi\n'
        '  echo "ok 1"\ndone\n'
    )
    fake.chmod(0o755)
    tally = reader_fuzz.Tally("fake")
    chunk = [b"{}", b"CRASH", b"{}", b"{}"]
    paths = []
    for index, data in enumerate(chunk):
        paths.append(tmp_path / f"{index}.json")
        paths[-1].write_bytes(data)
    reader_fuzz._run_batch(fake, paths, chunk, 0, tally)
    assert (tally.inputs, tally.ok) == (4, 3)
    assert [(f.index, f.data) for f in tally.findings] == [(1, b"CRASH")]


def test_mutations_are_deterministic() -> None:
    reader = reader_fuzz.READERS["op_profile"]
    first = list(reader_fuzz.inputs(reader, 50, SEED))
    assert first == list(reader_fuzz.inputs(reader, 50, SEED))
    assert first != list(reader_fuzz.inputs(reader, 50, SEED + 1))


# Regression tests: each was an exception other than UserError escaping a reader.


def _trace_cli_error(path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    out = tmp_path / "out"
    argv = ["--path-to-trace", str(path), "--quiet"]
    argv += ["--store-output", str(out / "dag.json"), "--op-profile", str(out / "op.json")]
    assert cli.run_main(trace_reader.main, argv, prog="trace_reader") == 1
    assert not out.exists() or not list(out.iterdir())  # no partial output
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("trace_reader: error: ")
    return lines[0]


def _chrome(tmp_path: Path, events: Sequence[object]) -> Path:
    path = tmp_path / "t.trace.json"
    path.write_text(json.dumps({"traceEvents": events}))
    return path


def test_deeply_nested_trace_json_is_a_user_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """json.loads raised RecursionError."""
    path = tmp_path / "t.trace.json"
    path.write_text('{"traceEvents": ' + "[" * 100_000)
    assert "nested too deeply" in _trace_cli_error(path, tmp_path, capsys)


def test_deeply_nested_op_profile_is_a_user_error(tmp_path: Path) -> None:
    """documents.read_json raised RecursionError."""
    path = tmp_path / "op_profile.json"
    path.write_text('{"format": "tfpgo.op_profile", "ops": ' + "[" * 100_000)
    with pytest.raises(errors.UserError, match="nested too deeply"):
        OpProfile.read(path)


@pytest.mark.parametrize(
    "event",
    [
        {"ph": "X", "name": "a", "ts": 1e309, "dur": 1},  # inf: OverflowError
        {"ph": "X", "name": "a", "ts": 1e30, "dur": 1},  # beyond int64 ps
        {"ph": "X", "name": "a", "ts": 1, "dur": -1e30},
    ],
)
def test_chrome_time_out_of_range_is_a_user_error(
    event: dict[str, object], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _chrome(tmp_path, [{**event, "pid": 1, "tid": 1}])
    assert "'a' has a" in _trace_cli_error(path, tmp_path, capsys)


@pytest.mark.parametrize(
    "event",
    [
        {"ph": "X", "name": "a", "ts": 1, "dur": 1, "pid": {"x": 1}, "tid": 1},
        {"ph": "X", "name": "a", "ts": 1, "dur": 1, "pid": 1, "tid": [1]},
        {"ph": "M", "name": "process_name", "pid": {}, "args": {"name": "p"}},
    ],
)
def test_chrome_object_as_pid_or_tid_is_a_user_error(
    event: dict[str, object], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An unhashable pid raised TypeError."""
    path = _chrome(tmp_path, [event])
    assert "pid or tid" in _trace_cli_error(path, tmp_path, capsys)


@pytest.mark.parametrize("phase", ["X", "M"])
def test_chrome_args_not_an_object_is_a_user_error(
    phase: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    event = {"ph": phase, "name": "a", "ts": 1, "dur": 1, "pid": 1, "tid": 1, "args": [1]}
    path = _chrome(tmp_path, [event])
    assert "'args' that are not an object" in _trace_cli_error(path, tmp_path, capsys)


def test_chrome_step_number_beyond_int64_is_ignored(tmp_path: Path) -> None:
    """A huge args.step_num raised OverflowError building the table."""
    event = {"ph": "X", "name": "a", "ts": 1, "dur": 1, "pid": 1, "tid": 1}
    path = _chrome(tmp_path, [{**event, "args": {"step_num": 10**30}}])
    result = trace_reader.run(path, op_profile_out=tmp_path / "op.json")
    assert result.events == 1


def test_xspace_json_with_unknown_field_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """protobuf's ParseError spans two lines (found by atheris)."""
    path = tmp_path / "t.xspace.json"
    path.write_text(json.dumps({"planes": [{"lines": [{"events": [{"~ffset_ps": 1}]}]}]}))
    assert "not an XSpace" in _trace_cli_error(path, tmp_path, capsys)


@pytest.mark.parametrize(
    "document",
    [
        {"format": "tfpgo.op\nprofile", "version": 1},
        {
            "format": "tfpgo.op_profile",
            "version": 1,
            "source": "",
            "hosts": [],
            "steps": [],
            "totals": {"a\nb": 1},
            "ops": [],
        },
    ],
)
def test_op_profile_error_quoting_the_document_is_one_line(
    document: dict[str, object], tmp_path: Path
) -> None:
    """A newline in a format name or a key reached the message."""
    path = tmp_path / "op_profile.json"
    path.write_text(json.dumps(document))
    with pytest.raises(errors.UserError) as error:
        OpProfile.read(path)
    assert "\n" not in str(error.value)


def test_xspace_json_with_lone_surrogate_key_is_a_user_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """protobuf (upb) raised SystemError on a field name "\\ud800" (found by the
    10,000-input run)."""
    path = tmp_path / "t.xspace.json"
    path.write_text('{"planes": [{"lines": [{"events": [{"\\ud800": "13"}]}]}]}')
    assert "not valid Unicode" in _trace_cli_error(path, tmp_path, capsys)


def test_chrome_begin_end_far_apart_is_a_user_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """B and E each within int64 picoseconds, their difference not."""
    events = [
        {"ph": "B", "name": "a", "ts": -8e12, "pid": 1, "tid": 1},
        {"ph": "E", "name": "a", "ts": 8e12, "pid": 1, "tid": 1},
    ]
    path = _chrome(tmp_path, events)
    assert "beyond 26 days" in _trace_cli_error(path, tmp_path, capsys)
