"""The shared CLI helpers: user paths, atomic outputs, one-line errors."""

import os
from pathlib import Path

import pytest

from tfpgo import atomic, cli, errors


def test_user_path_resolves_against_build_working_directory(monkeypatch, tmp_path):
    monkeypatch.setenv("BUILD_WORKING_DIRECTORY", str(tmp_path))
    assert cli.user_path("a/b.json") == tmp_path / "a" / "b.json"
    assert cli.user_path("/abs/x") == Path("/abs/x")


def test_user_path_without_bazel_uses_cwd(monkeypatch, tmp_path):
    monkeypatch.delenv("BUILD_WORKING_DIRECTORY", raising=False)
    monkeypatch.chdir(tmp_path)
    assert cli.user_path("x.json") == tmp_path / "x.json"


def test_atomic_output_file_leaves_nothing_on_failure(tmp_path):
    target = tmp_path / "out.json"
    with pytest.raises(RuntimeError), atomic.atomic_output_file(target) as handle:
        handle.write("{half")
        raise RuntimeError("boom")
    assert list(tmp_path.iterdir()) == []


def test_atomic_output_file_replaces_on_success(tmp_path):
    target = tmp_path / "out.json"
    target.write_text("old")
    with atomic.atomic_output_file(target) as handle:
        handle.write("new")
    assert target.read_text() == "new"
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]


def test_atomic_output_dir_swaps_whole_directory(tmp_path):
    target = tmp_path / "out"
    target.mkdir()
    (target / "stale").write_text("x")
    with atomic.atomic_output_dir(target) as staging:
        (staging / "fresh").write_text("y")
    assert sorted(p.name for p in target.iterdir()) == ["fresh"]
    with pytest.raises(ValueError), atomic.atomic_output_dir(target) as staging:
        (staging / "partial").write_text("z")
        raise ValueError
    assert sorted(p.name for p in target.iterdir()) == ["fresh"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_atomic_output_dir_never_replaces_a_file(tmp_path):
    target = tmp_path / "notes.txt"
    target.write_text("the user's file")
    with (
        pytest.raises(errors.UserError, match="exists and is not a directory"),
        atomic.atomic_output_dir(target) as staging,
    ):
        (staging / "x").write_text("y")
    assert target.read_text() == "the user's file"
    assert [p.name for p in tmp_path.iterdir()] == ["notes.txt"]


def test_run_main_turns_user_error_into_one_line(capsys):
    def failing(_argv):
        raise errors.UserError("trace.pb: not an XSpace protobuf; pass an .xplane.pb")

    assert cli.run_main(failing, [], prog="tool") == 1
    err = capsys.readouterr().err
    assert err == "tool: error: trace.pb: not an XSpace protobuf; pass an .xplane.pb\n"


def test_atomic_outputs_get_ordinary_permissions(tmp_path):
    target = tmp_path / "out.json"
    with atomic.atomic_output_file(target) as handle:
        handle.write("{}")
    with atomic.atomic_output_dir(tmp_path / "dir") as staging:
        (staging / "x").write_text("y")
    umask = os.umask(0)
    os.umask(umask)
    assert target.stat().st_mode & 0o777 == 0o666 & ~umask
    assert (tmp_path / "dir").stat().st_mode & 0o777 == 0o777 & ~umask


@pytest.mark.parametrize(
    ("module", "argv", "message"),
    [
        ("tfpgo.flow.pgo", ["--steps", "0"], "argument --steps: must be at least 1"),
        ("tfpgo.flow.pgo", ["--mode", "eval"], "argument --mode: invalid choice"),
        ("tfpgo.render.plot_graph", ["--no-such-flag"], "the following arguments are required"),
        ("tfpgo.flow.trace_reader", [], "the following arguments are required: --path-to-trace"),
    ],
)
def test_bad_flags_are_one_line(module, argv, message, capsys):
    """No usage block: one `prog: error:` line that says where the flags are."""
    import importlib

    parser = importlib.import_module(module).build_parser()
    with pytest.raises(SystemExit) as done:
        parser.parse_args(argv)
    assert done.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith(f"{parser.prog}: error: ") and message in err[0]
    assert err[0].endswith("(--help lists every flag)")
