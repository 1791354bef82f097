"""Every flag of the six command lines, given what users get wrong: wrong types,
out-of-range values, missing and unreadable files, files of another format, and
outputs that cannot be written.

Each case must end with a nonzero exit status, exactly one line on stderr (the
`prog: error: ...` line, argparse's included: tfpgo.cli.ArgumentParser prints no
usage block), no traceback, and nothing written: the directory the case runs in
(BUILD_WORKING_DIRECTORY, where every output of the cases points) is the same
after it as before.

The flags come from each tool's own argparse parser, so a flag added without a
bad input in these tables fails `test_every_flag_has_bad_inputs`. Every case
runs in-process with the step that would do the real work (profiling a model,
serving Model Explorer or TensorBoard) replaced by one that fails the test:
every bad input is refused before any work starts. One TensorBoard case runs
the real script in its own process.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest

import tfpgo
from tfpgo.cli import run_main
from tfpgo.diff import profile_diff
from tfpgo.flow import pgo, trace_reader
from tfpgo.models import profiling
from tfpgo.render import explore, plot_graph

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
TENSORBOARD = ROOT / "tools" / "tfpgo_tensorboard.py"


def _load_tensorboard_tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("tfpgo_tensorboard", TENSORBOARD)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


tensorboard_tool = _load_tensorboard_tool()


class WouldWork(Exception):
    """A bad input got past every check to the real work."""


# Templates: each argv token is formatted with the paths of `world` below.
#   {missing}      a path that does not exist
#   {unreadable}   a file without read permission (root reads any file: a directory)
#   {blocked}      a regular file: {blocked}/x cannot be created
#   {text}         a text file that is no trace, JSON, MLIR or model (also .json, .pb, .py, ...)
#   {out}          a path that does not exist, where outputs may go
#   {kept}         an output of an earlier run (also .svg); {kept_dir} a directory of them
#   {previous}     the output directory of an earlier pgo run
#   {foreign}      a directory holding a user's file
#   {empty_dir}    an empty directory
#   {saved_model}  a directory that passes for a SavedModel until it is loaded
#   {busy}         a TCP port something listens on
#   {trace} {mlir} {graph} {profile}  small real fixtures (tests/data)

# (flag, what is wrong, the arguments after the tool's base arguments)
PGO = [
    ("--model", "missing .py", "--model {missing}.py"),
    ("--model", "unknown name", "--model mpl"),
    ("--model", "unreadable", "--model {unreadable}"),
    ("--model", "a text file as .keras", "--model {text}.keras"),
    ("--model", "a text file as .py", "--model {text}.py"),
    ("--model", "not a model type", "--model {text}"),
    ("--model", "a directory without saved_model.pb", "--model {empty_dir}"),
    ("--mode", "unknown", "--mode eval"),
    ("--signature", "not a SavedModel", "--signature serving_other"),
    ("--signature", "empty", "--model {saved_model} --signature {empty}"),
    ("--input", "no =", "--model {saved_model} --input x"),
    ("--input", "non-ASCII digits", "--model {saved_model} --input x=\uff14x4"),
    ("--input", "negative dimension", "--model {saved_model} --input x=-4"),
    ("--input", "not a SavedModel", "--input x=4"),
    ("--steps", "zero", "--steps 0"),
    ("--steps", "not a number", "--steps five"),
    ("--warmup", "negative", "--warmup -1"),
    ("--warmup", "not a number", "--warmup 1.5"),
    ("--batch-size", "zero", "--batch-size 0"),
    ("--batch-size", "not a number", "--batch-size x"),
    ("--host-tracer-level", "above 3", "--host-tracer-level 4"),
    ("--host-tracer-level", "negative", "--host-tracer-level -1"),
    ("--python-tracer-level", "above 1", "--python-tracer-level 2"),
    ("--python-tracer-level", "not a number", "--python-tracer-level on"),
    ("--device-tracer-level", "above 1", "--device-tracer-level 2"),
    ("--device-tracer-level", "not a number", "--device-tracer-level on"),
    ("--output-dir", "a regular file", "--output-dir {text}"),
    ("--output-dir", "under a regular file", "--output-dir {blocked}/out"),
    ("--output-dir", "a user's directory", "--output-dir {foreign}"),
    ("--output-dir", "the working directory", "--output-dir ."),
    (
        "--output-dir",
        "a previous output, kept when the trace is bad",
        "--output-dir {previous} --from-trace {text}.pb --mlir {mlir}",
    ),
    ("--top-k", "negative", "--top-k -1"),
    ("--top-k", "not a number", "--top-k many"),
    ("--min-share", "above 1", "--min-share 1.5"),
    ("--min-share", "negative", "--min-share -0.1"),
    ("--min-share", "not a number", "--min-share nan"),
    ("--from-trace", "missing", "--from-trace {missing} --mlir {mlir}"),
    ("--from-trace", "unreadable", "--from-trace {unreadable} --mlir {mlir}"),
    ("--from-trace", "a text file", "--from-trace {text}.pb --mlir {mlir}"),
    ("--from-trace", "an empty directory", "--from-trace {empty_dir} --mlir {mlir}"),
    ("--from-trace", "without --mlir", "--from-trace {trace}"),
    ("--mlir", "missing", "--from-trace {trace} --mlir {missing}.mlir"),
    ("--mlir", "unreadable", "--from-trace {trace} --mlir {unreadable}"),
    ("--mlir", "a text file", "--from-trace {trace} --mlir {text}.mlir"),
    ("--mlir", "without --from-trace", "--mlir {mlir}"),
    ("--formats", "unknown format", "--formats svg,jpeg"),
    ("--formats", "none", "--formats ,"),
    ("--lower", "unknown level", "--lower llvm"),
    ("--lower", "iree from a trace", "--lower iree --from-trace {trace} --mlir {mlir}"),
    ("--min-coverage", "above 1", "--min-coverage 2"),
    ("--min-coverage", "not a number", "--min-coverage most"),
    ("--optimize", "with a value", "--optimize=yes"),
    ("--optimize", "with --from-trace", "--optimize --from-trace {trace} --mlir {mlir}"),
    ("--ab-repetitions", "zero", "--optimize --ab-repetitions 0"),
    ("--ab-steps", "zero", "--optimize --ab-steps 0"),
    ("--optimize-unchecked", "without --optimize", "--optimize-unchecked"),
    ("--optimize-budget", "zero", "--optimize --optimize-budget 0"),
    ("--optimize-budget", "infinite", "--optimize --optimize-budget inf"),
    ("--optimize-budget", "not a number", "--optimize --optimize-budget soon"),
    ("--optimize-budget", "without --optimize", "--optimize-budget 5"),
    ("--unroll-ops", "negative", "--lower stablehlo --unroll-ops -1"),
    ("--unroll-ops", "not a number", "--lower stablehlo --unroll-ops many"),
    ("--unroll-ops", "without --lower", "--unroll-ops 100"),
    ("--tune", "with a value", "--tune=1"),
    ("--tune", "without --lower iree", "--tune"),
    ("--tune-budget", "negative", "--tune --lower iree --tune-budget -1"),
    ("--tune-budget", "zero without records", "--tune --lower iree --tune-budget 0 --no-tuning-db"),
    ("--tuning-db", "without --tune", "--tuning-db t.db"),
    ("--tuning-db", "with --no-tuning-db", "--tune --lower iree --tuning-db t.db --no-tuning-db"),
    ("--no-tuning-db", "without --tune", "--no-tuning-db"),
    ("--retune", "without --tune", "--retune"),
    ("--retune", "with a build from records", "--tune --lower iree --tune-budget 0 --retune"),
    ("--tune-budget", "infinite", "--tune --lower iree --tune-budget inf"),
    ("--tune-budget", "not a number", "--tune --lower iree --tune-budget soon"),
    ("--tune-budget", "without --tune", "--lower iree --tune-budget 5"),
    ("--precision", "unknown", "--tune --lower iree --precision fp8"),
    ("--precision", "without --tune", "--lower iree --precision bf16"),
    ("--max-output-error", "without --precision", "--tune --lower iree --max-output-error 0.1"),
    ("--max-output-error", "zero", "--tune --lower iree --precision bf16 --max-output-error 0"),
    ("--max-output-error", "above 1", "--tune --lower iree --precision bf16 --max-output-error 2"),
    (
        "--max-output-error",
        "not a number",
        "--tune --lower iree --precision bf16 --max-output-error no",
    ),
    ("--explore", "with a value", "--explore=1"),
    ("--explore-port", "above 65535", "--explore --explore-port 70000"),
    ("--explore-port", "zero", "--explore --explore-port 0"),
    ("--explore-port", "in use", "--explore --explore-port {busy}"),
    ("--scheduler", "not an address", "--scheduler tcp://10.0.0.1:port"),
    ("--host-workers", "zero", "--host-workers 0"),
    ("--host-workers", "not a number", "--host-workers all"),
    ("--scheduler-timeout", "zero", "--scheduler-timeout 0"),
    ("--scheduler-timeout", "not a number", "--scheduler-timeout nan"),
]

TRACE_READER = [
    ("--path-to-trace", "missing", "--path-to-trace {missing}.xplane.pb"),
    ("--path-to-trace", "unreadable", "--path-to-trace {unreadable}"),
    ("--path-to-trace", "a text file", "--path-to-trace {text}.pb"),
    ("--path-to-trace", "a JSON of another kind", "--path-to-trace {profile}"),
    ("--path-to-trace", "an empty directory", "--path-to-trace {empty_dir}"),
    ("--store-output", "under a regular file", "--store-output {blocked}/g.json"),
    ("--store-output", "a directory", "--store-output {empty_dir}"),
    ("--op-profile", "kept when the trace is bad", "--op-profile {kept} --path-to-trace {text}"),
    ("--op-profile", "under a regular file", "--op-profile {blocked}/p.json"),
    ("--hlo-profile", "under a regular file", "--hlo-profile {blocked}/h.json"),
    ("--run", "no such run", "--run nope"),
    ("--dag-events", "unknown", "--dag-events some"),
    ("--scheduler", "not an address", "--scheduler http://10.0.0.1:8786"),
    ("--host-workers", "zero", "--host-workers 0"),
    ("--host-workers", "negative", "--host-workers -2"),
    ("--scheduler-timeout", "negative", "--scheduler-timeout -1"),
    ("--scheduler-timeout", "not a number", "--scheduler-timeout nan"),
    ("--start-us", "not a number", "--start-us soon"),
    ("--start-us", "after the end", "--start-us 1e12"),
    ("--end-us", "not a number", "--end-us later"),
    ("--end-us", "before the start", "--start-us 10 --end-us 5"),
    ("--steps", "not a list", "--steps one"),
    ("--steps", "a reversed range", "--steps 3-1"),
    ("--steps", "no such step", "--steps 999"),
    ("--hosts", "no such host", "--hosts nohost"),
    ("--thread", "bad regex", "--thread ("),
    ("--name", "bad regex", "--name [z-a]"),
    ("--min-duration-us", "negative", "--min-duration-us -1"),
    ("--min-duration-us", "not a number", "--min-duration-us long"),
    ("--progress", "with --quiet", "--quiet --progress"),
    ("--progress", "with a value", "--progress=1"),
    ("--quiet", "with a value", "--quiet=1"),
]

PLOT_GRAPH = [
    ("--path-to-mlir-graph", "missing", "--path-to-mlir-graph {missing}.json"),
    ("--path-to-mlir-graph", "unreadable", "--path-to-mlir-graph {unreadable}"),
    ("--path-to-mlir-graph", "a text file", "--path-to-mlir-graph {text}.json"),
    ("--path-to-mlir-graph", "a JSON of another kind", "--path-to-mlir-graph {profile}"),
    ("-o", "under a regular file", "-o {blocked}/g.svg"),
    ("-o", "unknown extension", "-o {out}.jpeg"),
    ("-o", "kept when the graph is bad", "-o {kept}.svg --path-to-mlir-graph {text}.json"),
    ("--output", "a directory", "--output {empty_dir}"),
    ("-s", "without -o", "--export-csv {out}.csv -s"),
    ("--save-all", "with a value", "--save-all=1"),
    ("--metric", "unknown", "--metric heat"),
    ("--hot-k", "negative", "--hot-k -1"),
    ("--hot-k", "not a number", "--hot-k ten"),
    ("--hot-share", "above 1", "--hot-share 2"),
    ("--hot-share", "not a number", "--hot-share half"),
    ("--depth", "zero", "--depth 0"),
    ("--nodes", "zero", "--nodes 0"),
    ("--nodes", "not a number", "--nodes all"),
    ("--engine", "unknown", "--engine tikz"),
    ("--export-model-explorer", "under a regular file", "--export-model-explorer {blocked}/m"),
    (
        "--export-model-explorer-kernels",
        "under a regular file",
        "--export-model-explorer-kernels {blocked}/k.json",
    ),
    ("--export-trace", "under a regular file", "--export-trace {blocked}/t.json"),
    ("--export-speedscope", "under a regular file", "--export-speedscope {blocked}/s.json"),
    ("--export-csv", "under a regular file", "--export-csv {blocked}/c.csv"),
    ("--op-profile", "without --export-csv", "--op-profile {profile}"),
    ("--op-profile", "missing", "--export-csv {out}.csv --op-profile {missing}.json"),
    ("--op-profile", "unreadable", "--export-csv {out}.csv --op-profile {unreadable}"),
    ("--op-profile", "a text file", "--export-csv {out}.csv --op-profile {text}.json"),
    ("--op-profile", "a JSON of another kind", "--export-csv {out}.csv --op-profile {graph}"),
]

# Positionals are named by their dest.
PROFILE_DIFF = [
    ("a", "missing", "{missing}.json {profile}"),
    ("a", "unreadable", "{unreadable} {profile}"),
    ("a", "a text file", "{text}.json {profile}"),
    ("a", "a JSON of another kind", "{graph} {profile}"),
    ("a", "a directory without op_profile.json", "{empty_dir} {profile}"),
    ("b", "missing", "{profile} {missing}.json"),
    ("b", "a text file", "{profile} {text}"),
    ("b", "unreadable", "{profile} {unreadable}"),
    ("-o", "a regular file", "{profile} {profile} -o {text}"),
    ("-o", "a previous diff, kept when B is bad", "{profile} {text}.json -o {kept_dir}"),
    ("--output-dir", "under a regular file", "{profile} {profile} --output-dir {blocked}/d"),
    ("--rows", "zero", "{profile} {profile} --rows 0"),
    ("--rows", "not a number", "{profile} {profile} --rows x"),
    ("--by", "not a view", "{profile} {profile} --by kernel"),
    ("--by", "dispatch, of op profiles", "{profile} {profile} --by dispatch"),
]

EXPLORE = [
    ("output_dir", "missing", "{missing}"),
    ("output_dir", "a regular file", "{text}"),
    ("output_dir", "no pgo output", "{empty_dir}"),
    ("output_dir", "unreadable", "{unreadable}"),
    ("--port", "above 65535", "{explored} --port 70000"),
    ("--port", "zero", "{explored} --port 0"),
    ("--port", "not a number", "{explored} --port http"),
    ("--port", "in use", "{explored} --port {busy}"),
]

TENSORBOARD_CASES = [
    ("--logdir", "missing", "--logdir {missing}"),
    ("--logdir", "a regular file", "--logdir {text}"),
    ("--logdir", "empty, and no --db", "--logdir {empty}"),
    ("--logdir_spec", "with --logdir", "--logdir_spec a:{empty_dir}"),
    ("--host", "not an address of this machine", "--host 192.0.2.1"),
    ("--host", "with --bind_all", "--host 127.0.0.1 --bind_all"),
    ("--bind_all", "with a value", "--bind_all=yes"),
    ("--port", "above 65535", "--port 70000"),
    ("--port", "negative", "--port -1"),
    ("--port", "not a number", "--port http"),
    ("--port", "in use", "--port {busy}"),
    ("--reuse_port", "not a bool", "--reuse_port maybe"),
    ("--load_fast", "unknown", "--load_fast sometimes"),
    (
        "--load_fast",
        "with --detect_file_replacement",
        "--load_fast true --detect_file_replacement true",
    ),
    ("--extra_data_server_flags", "unclosed quote", "--extra_data_server_flags '--x"),
    ("--grpc_creds_type", "unknown", "--grpc_creds_type tls"),
    ("--grpc_data_provider", "no value", "--grpc_data_provider"),
    ("--purge_orphaned_data", "not a bool", "--purge_orphaned_data maybe"),
    ("--db", "no value", "--db"),
    ("--db_import", "with a value", "--db_import=1"),
    ("--inspect", "with --logdir_spec", "--inspect --logdir {empty} --logdir_spec a:{empty_dir}"),
    ("--inspect", "with a value", "--inspect=1"),
    ("--version_tb", "with a value", "--version_tb=1"),
    ("--tag", "no value", "--tag"),
    ("--event_file", "missing", "--inspect --logdir {empty} --event_file {missing}"),
    ("--event_file", "with --logdir", "--inspect --event_file {text}"),
    ("--path_prefix", "no leading slash", "--path_prefix tb"),
    ("--window_title", "no value", "--window_title"),
    ("--max_reload_threads", "not a number", "--max_reload_threads some"),
    ("--reload_interval", "negative", "--reload_interval -1"),
    ("--reload_task", "unknown", "--reload_task fork"),
    ("--reload_multifile", "not a bool", "--reload_multifile maybe"),
    ("--reload_multifile_inactive_secs", "not a number", "--reload_multifile_inactive_secs day"),
    ("--generic_data", "unknown", "--generic_data maybe"),
    ("--samples_per_plugin", "not NAME=N", "--samples_per_plugin images"),
    ("--detect_file_replacement", "not a bool", "--detect_file_replacement maybe"),
    ("--master_tpu_unsecure_channel", "no value", "--master_tpu_unsecure_channel"),
    ("--helpfull", "with a value", "--helpfull=1"),
    ("--undefok", "no value", "--undefok"),
]


@dataclass(frozen=True)
class Tool:
    prog: str
    build_parser: Callable[[], argparse.ArgumentParser]
    main: Callable[[list[str]], int]
    base: str  # arguments every case starts from: together they would run the tool
    cases: list[tuple[str, str, str]]


TOOLS = {
    "pgo": Tool("pgo", pgo.build_parser, pgo.main, "--output-dir {out}", PGO),
    "trace_reader": Tool(
        "trace_reader",
        trace_reader.build_parser,
        trace_reader.main,
        "--path-to-trace {trace} --store-output {out}/g.json --op-profile {out}/p.json",
        TRACE_READER,
    ),
    "plot_graph": Tool(
        "plot_graph",
        plot_graph.build_parser,
        plot_graph.main,
        "--path-to-mlir-graph {graph}",
        PLOT_GRAPH,
    ),
    "profile_diff": Tool(
        "profile_diff",
        profile_diff.build_parser,
        profile_diff.main,
        "",
        PROFILE_DIFF,
    ),
    "explore": Tool("explore", explore.build_parser, explore.main, "", EXPLORE),
    "tensorboard": Tool(
        "tensorboard",
        tensorboard_tool.build_parser,
        tensorboard_tool.main,
        "--logdir {empty_dir}",
        TENSORBOARD_CASES,
    ),
}


def _actions(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    """The tool's own arguments: not --help, nor the absl flags that absl's parser
    (TensorBoard's) inherits from whatever modules the process has imported (absl
    parses those; a bad value of one is a test of its own below)."""
    return [
        action
        for action in parser._actions
        if not isinstance(action, argparse._HelpAction) and not hasattr(action, "_flag_instance")
    ]


def _flags(parser: argparse.ArgumentParser) -> set[str]:
    """Every option string, and the dest of every positional."""
    return {flag for action in _actions(parser) for flag in action.option_strings or [action.dest]}


@pytest.mark.parametrize("tool", TOOLS.values(), ids=TOOLS.keys())
def test_every_flag_has_bad_inputs(tool):
    """A flag added to a tool needs its bad inputs here; a case for a flag the tool
    no longer has goes."""
    flags = _flags(tool.build_parser())
    covered = {flag for flag, _, _ in tool.cases}
    assert flags - covered == set(), "flags without a bad input in the table"
    assert covered - flags == set(), "cases for flags the tool does not have"


# Inputs found wrong only by doing the work they are for: pgo announces the stage
# (`[pgo 1/4] trace: reading ...`) before its one error line. A protobuf has no
# magic number: whether a file is an XSpace is known only by decoding it.
IN_A_STAGE = {
    ("pgo", "--from-trace", "a text file"),
    ("pgo", "--output-dir", "a previous output, kept when the trace is bad"),
}


def _cases() -> Iterator[object]:
    for name, tool in TOOLS.items():
        for flag, what, args in tool.cases:
            in_a_stage = (name, flag, what) in IN_A_STAGE
            yield pytest.param(name, args, in_a_stage, id=f"{name} {flag} {what}")


def _value_missing_cases() -> Iterator[object]:
    """Every flag that takes a value given none; every switch given one."""
    for name, tool in TOOLS.items():
        for action in _actions(tool.build_parser()):
            if not action.option_strings:
                continue
            flag = action.option_strings[-1]
            if action.nargs == 0:
                yield pytest.param(name, f"{flag}=x", id=f"{name} {flag}=x")
            else:
                yield pytest.param(name, flag, id=f"{name} {flag} without a value")


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> Iterator[dict[str, str]]:
    """The directory every case runs in, and the paths the templates name."""
    root = tmp_path_factory.mktemp("world")
    text = root / "text"
    text.write_text("this is neither a trace, nor JSON, nor MLIR, nor a model\n")
    for suffix in (".json", ".pb", ".mlir", ".keras", ".py"):
        shutil.copy(text, f"{text}{suffix}")
    unreadable = root / "unreadable"
    if os.geteuid() == 0:  # root reads a file of any mode: a directory stands for it
        (unreadable / "x").mkdir(parents=True)
    else:
        shutil.copy(DATA / "render" / "mlp_op_profile.json", unreadable)
        unreadable.chmod(0)
    (root / "blocked").write_text("a regular file\n")
    (root / "foreign").mkdir()
    (root / "foreign" / "thesis.tex").write_text("the user's own file\n")
    (root / "empty_dir").mkdir()
    (root / "saved_model").mkdir()
    (root / "saved_model" / "saved_model.pb").write_bytes(b"not a SavedModel")
    (root / "kept").write_text("an earlier run's output\n")
    (root / "kept.svg").write_text("<svg/>\n")
    (root / "kept_dir").mkdir()
    (root / "kept_dir" / "diff.md").write_text("an earlier diff\n")
    (root / "previous").mkdir()
    for name in ("report.md", "op_profile.json"):
        (root / "previous" / name).write_text("an earlier run's output\n")
    (root / "explored").mkdir()
    (root / "explored" / "model.annotated.mlir").write_text("module {\n}\n")
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        paths = {
            name: str(root / name)
            for name in (
                "missing",
                "unreadable",
                "blocked",
                "text",
                "out",
                "foreign",
                "empty_dir",
                "saved_model",
                "explored",
                "kept",
                "kept_dir",
                "previous",
            )
        }
        paths |= {
            "root": str(root),
            "empty": "",
            "busy": str(busy.getsockname()[1]),
            "trace": str(DATA / "trace_reader" / "mlp_infer.xplane.pb"),
            "mlir": str(DATA / "trace_reader" / "mlp_infer.mlir"),
            "graph": str(DATA / "render" / "mlp_op_graph.json"),
            "profile": str(DATA / "render" / "mlp_op_profile.json"),
        }
        yield paths
    if os.geteuid() != 0:
        unreadable.chmod(0o644)


@pytest.fixture
def no_real_work(monkeypatch):
    """Profiling and serving fail the case: a bad input must be refused before them."""

    def refuse(*_args, **_kwargs):
        raise WouldWork("the bad input reached the real work")

    monkeypatch.setattr(profiling, "profile", refuse)
    monkeypatch.setattr(explore, "serve", refuse)
    monkeypatch.setattr(tensorboard_tool, "serve", refuse)


def _snapshot(root: Path) -> dict[str, tuple[int, int, int]]:
    """Every path under `root`: its mode, and a file's size and modification time
    (a directory's time changes when a staged output is made and removed)."""
    entries = {}
    for path in root.rglob("*"):
        stat = path.lstat()
        written = (0, 0) if path.is_dir() else (stat.st_size, stat.st_mtime_ns)
        entries[str(path.relative_to(root))] = (stat.st_mode, *written)
    return entries


def _argv(tool: Tool, args: str, world: dict[str, str]) -> list[str]:
    case = [token.format(**world) for token in args.split()]
    base = [token.format(**world) for token in tool.base.split()]
    return [*base, *case]


def _check_refused(
    name: str, argv: list[str], world, monkeypatch, capfd, in_a_stage: bool = False
) -> str:
    tool = TOOLS[name]
    root = Path(world["root"])
    monkeypatch.setenv("BUILD_WORKING_DIRECTORY", str(root))
    monkeypatch.chdir(root)
    before = _snapshot(root)
    capfd.readouterr()
    status: int | str | None
    try:
        status = run_main(tool.main, argv, prog=tool.prog)
    except SystemExit as exited:
        status = exited.code
    out, err = capfd.readouterr()
    if in_a_stage:
        announced = [line for line in err.splitlines() if line.startswith(f"[{tool.prog} ")]
        assert announced, "a case said to fail in a stage fails before any"
        err = "".join(line + "\n" for line in err.splitlines()[len(announced) :])
    lines = [line for line in err.splitlines() if line.strip()]
    assert status not in (0, None), f"accepted: {argv}\nstdout: {out}\nstderr: {err}"
    assert "Traceback" not in out + err, err
    assert len(lines) == 1 and err.count("\n") == 1, f"not one line:\n{err}"
    assert lines[0].startswith(f"{tool.prog}: error: "), lines[0]
    assert _snapshot(root) == before, "the case left something behind"
    return lines[0]


@pytest.mark.parametrize(("name", "args", "in_a_stage"), _cases())
def test_bad_input_is_one_line(name, args, in_a_stage, world, no_real_work, monkeypatch, capfd):
    argv = _argv(TOOLS[name], args, world)
    line = _check_refused(name, argv, world, monkeypatch, capfd, in_a_stage)
    # The line names what is wrong: the flag, or the value given.
    named = [part for token in argv for part in token.split("=")]
    assert any(token and token in line for token in named), line


@pytest.mark.parametrize(("name", "args"), _value_missing_cases())
def test_a_flag_without_its_value_is_one_line(name, args, world, no_real_work, monkeypatch, capfd):
    tool = TOOLS[name]
    base = [token.format(**world) for token in tool.base.split()]
    line = _check_refused(name, [*base, args], world, monkeypatch, capfd)
    assert args.split("=")[0] in line, line


def test_tensorboard_absl_flag_of_a_bad_value_is_one_line(world, monkeypatch, capfd):
    """absl's parser accepts every absl flag the process defines (absl.logging's
    --verbosity, once anything imported it); absl parses their values."""
    from absl import logging  # noqa: F401 (defines --verbosity)

    argv = ["--logdir", world["empty_dir"], "--verbosity", "loud"]
    line = _check_refused("tensorboard", argv, world, monkeypatch, capfd)
    assert "--verbosity" in line, line


def test_tensorboard_script_bad_port_is_one_line(world):
    """The real script, in its own process: TensorBoard's own bad-port message was
    two lines (its log line and its stderr line)."""
    env = dict(os.environ, PYTHONPATH=str(Path(tfpgo.__file__).resolve().parents[1]))
    done = subprocess.run(
        [sys.executable, str(TENSORBOARD), "--logdir", world["empty_dir"], "--port", "70000"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=120,
    )
    assert done.returncode == 1, done.stderr
    assert done.stderr.splitlines() == [
        "tensorboard: error: --port 70000: must be a TCP port from 0 to 65535 (0: any)"
    ]
