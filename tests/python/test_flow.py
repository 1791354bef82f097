"""The whole flow end to end on real TensorFlow models (tfpgo.flow.stages, //:pgo)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tfpgo.attribution.op_profile import OpProfile
from tfpgo.cli import run_main
from tfpgo.flow import pgo
from tfpgo.flow.conservation import check_output

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

EXPECTED_FILES = {
    "profile",
    "model.mlir",
    "mlir_graph.json",
    "op_profile.json",
    "model.annotated.mlir",
    "op_graph.json",
    "op_graph.svg",
    "op_graph.png",
    "event_dag.svg",
    "event_dag.png",
    "model_explorer.json",
    "trace.json",
    "speedscope.json",
    "op_profile.csv",
    "analysis.json",
    "scope_chart.svg",
    "report.md",
    "report.html",
}


def _pgo_binary() -> Path | None:
    for variable in ("TEST_SRCDIR", "RUNFILES_DIR"):
        if root := os.environ.get(variable):
            candidate = Path(root, "tfpgo", "pgo")
            if candidate.exists():
                return candidate
    return None


def _run(tmp_path: Path, *args: str) -> tuple[int, Path]:
    out = tmp_path / "out"
    status = run_main(pgo.main, ["--output-dir", str(out), "--steps", "2", *args], prog="pgo")
    return status, out


def _hot_profiler_ops(annotated: str) -> list[str]:
    return [line for line in annotated.splitlines() if "profiler_hot = 1 " in line]


def _successful_run(tmp_path_factory, name: str, *args: str) -> Path:
    status, out = _run(tmp_path_factory.mktemp(name), *args)
    assert status == 0
    return out


@pytest.fixture(scope="module")
def rnn_run(tmp_path_factory):
    """A GRU: its steps run in a while loop (body/cond functions)."""
    return _successful_run(tmp_path_factory, "rnn", "--model", "rnn", "--batch-size", "4")


@pytest.fixture(scope="module")
def train_run(tmp_path_factory):
    return _successful_run(
        tmp_path_factory, "train", "--model", "mlp", "--mode", "train", "--batch-size", "16"
    )


@pytest.mark.parametrize("run", ["rnn_run", "train_run"])
def test_flow_writes_every_output(run, request):
    out = request.getfixturevalue(run)
    assert EXPECTED_FILES.issubset(path.name for path in out.iterdir())
    assert list((out / "profile" / "plugins" / "profile").glob("*/*.xplane.pb"))
    page = (out / "report.html").read_text()
    # Every SVG is embedded: the scope chart and both graphs (tooltips on hover,
    # a page that stands alone).
    assert page.count("<svg") == 3 and "<?xml" not in page
    assert "<title>" in page.split("<h2>Pictures</h2>")[1]
    assert not [path for path in out.parent.iterdir() if path.name.startswith(".out")]


@pytest.fixture(scope="module")
def transformer_train_run(tmp_path_factory):
    """Attention, LayerNorm (Grappler rewrites its add tree) and their gradients."""
    return _successful_run(
        tmp_path_factory,
        "transformer",
        "--model",
        "transformer",
        "--mode",
        "train",
        "--batch-size",
        "4",
    )


@pytest.mark.parametrize("run", ["rnn_run", "train_run", "transformer_train_run"])
def test_hot_ops_carry_profiler_data_and_coverage_is_complete(run, request):
    out = request.getfixturevalue(run)
    annotated = (out / "model.annotated.mlir").read_text()
    hottest = _hot_profiler_ops(annotated)
    assert len(hottest) == 1
    assert "profiler_data = {" in hottest[0]
    _every_name_attributed(out)


def _every_name_attributed(out: Path) -> None:
    """Every runtime name of the profile landed on an op: none unresolved or
    removed. What matched is decided by names, not by how the run's time fell
    (a share of measured time would move with one slow op)."""
    attribution = json.loads((out / "attribution.json").read_text())
    matched = attribution["by_match"]
    assert matched["unresolved"]["entries"] == matched["removed"]["entries"] == 0, matched
    assert attribution["attributed_self_ps"] == attribution["profile_self_ps"]


@pytest.mark.parametrize("run", ["train_run", "transformer_train_run"])
def test_analysis_accounts_for_every_picosecond_of_the_op_profile(run, request):
    out = request.getfixturevalue(run)
    totals = OpProfile.read(out / "op_profile.json").totals
    analysis = json.loads((out / "analysis.json").read_text())
    phases = {row["phase"]: row["self_ps"] for row in analysis["phases"]}
    assert sum(phases.values()) == totals.op_self_ps
    assert phases["forward"] > 0 and phases["backward"] > 0 and phases["optimizer"] > 0
    assert analysis["non_op_ps"] == totals.non_op_ps
    assert analysis["scopes"]["self_ps"] == totals.op_self_ps
    assert sum(row["self_ps"] for row in analysis["op_types"]) == totals.op_self_ps
    report = (out / "report.md").read_text()
    assert "![time by layer scope](scope_chart.svg)" in report


@pytest.mark.parametrize("run", ["rnn_run", "train_run"])
def test_report_top_op_agrees_with_op_profile(run, request):
    out = request.getfixturevalue(run)
    profile = OpProfile.read(out / "op_profile.json")
    report = (out / "report.md").read_text()
    runtime_table = report.split("## Hottest runtime ops (op profile)")[1]
    first_row = runtime_table.strip().splitlines()[2]
    assert first_row.split("|")[1].strip() == profile.ops[0].name
    graph = json.loads((out / "op_graph.json").read_text())
    timed = [node for node in graph["nodes"] if node.get("profiler_data")]
    top = max(timed, key=lambda node: node["profiler_data"]["self"])
    mlir_table = report.split("## Hottest MLIR ops")[1]
    assert mlir_table.strip().splitlines()[2].split("|")[2].strip() == top["name"]


def _match(pattern: str, text: str) -> re.Match[str]:
    """The first match of `pattern`, which the test requires to be there."""
    found = re.search(pattern, text)
    assert found is not None, f"no match for {pattern!r}"
    return found


def _function_body(module: str, prefix: str) -> str:
    """The text of the first function whose name starts with `prefix`."""
    start = _match(rf"func\.func (?:private )?@{prefix}\w*\(", module).start()
    end = module.index("\n  }", start)
    return module[start:end]


def test_rnn_annotations_land_inside_the_while_body_and_cond(rnn_run):
    """Runtime names `.../while/body/_k/...` land on ops of the body function,
    `.../while/cond/_k/...` on ops of the cond function, with every iteration."""
    annotated = (rnn_run / "model.annotated.mlir").read_text()
    body = _function_body(annotated, "rnn_1_gru_1_while_body")
    cond = _function_body(annotated, "rnn_1_gru_1_while_cond")
    assert body.count("profiler_data = {count") >= 10
    assert cond.count("profiler_data = {count") >= 1
    profile = OpProfile.read(rnn_run / "op_profile.json")
    less = next(
        op for op in profile.ops if op.name.endswith("/while/cond/_0/rnn_1/gru_1/while/Less")
    )
    assert f"count = {less.count} : i64" in cond


HOOK_FILE = """
import tensorflow as tf


@tf.function
def attention_scores(queries, keys):
    return tf.nn.softmax(tf.matmul(queries, keys, transpose_b=True))


def tfpgo_model(batch_size):
    queries = tf.random.normal([batch_size, 64, 32])
    keys = tf.random.normal([batch_size, 64, 32])
    return attention_scores, (queries, keys)
"""


@pytest.fixture(scope="module")
def user_models(tmp_path_factory):
    """A SavedModel, a .keras file and a hook file, made the way users make them."""
    import keras

    root = tmp_path_factory.mktemp("user_models")
    model = keras.Sequential(
        [keras.Input((16,)), keras.layers.Dense(64, activation="relu"), keras.layers.Dense(8)]
    )
    model.export(str(root / "saved_model"), verbose=False)
    model.save(root / "model.keras")
    (root / "hook.py").write_text(HOOK_FILE)
    return root


@pytest.mark.parametrize("name", ["saved_model", "model.keras", "hook.py"])
def test_user_models_run_the_whole_flow(user_models, name, tmp_path):
    status, out = _run(tmp_path, "--model", str(user_models / name), "--batch-size", "4")
    assert status == 0
    _every_name_attributed(out)
    assert "profiler_data = {count" in (out / "model.annotated.mlir").read_text()


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ("4x16:float64", "dtype float64 does not match the signature's float32"),
        ("4x16:variant", "dtype variant does not match the signature's float32"),
        ("4x١٦", "expected NAME=SHAPE[:DTYPE]"),  # Arabic-Indic digits
        ("4x16:nosuchtype", "unknown dtype 'nosuchtype'"),
    ],
)
def test_saved_model_input_flags_are_one_line(user_models, tmp_path, capsys, given, message):
    import tensorflow as tf

    signature = tf.saved_model.load(str(user_models / "saved_model")).signatures["serving_default"]
    (name,) = signature.structured_input_signature[1]
    status, out = _run(
        tmp_path, "--model", str(user_models / "saved_model"), "--input", f"{name}={given}"
    )
    assert status == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("pgo: error: ") and message in err[-1], err
    assert not any("Traceback" in line for line in err)
    assert not out.exists()


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("    return tf.keras.layers.AveragePooling2D()", "tfpgo_model(4) failed: TypeError: "),
        ("    return 3", "tfpgo_model must return (model_or_function, example_inputs), not int"),
    ],
)
def test_a_failing_hook_names_its_own_error(tmp_path, capsys, body, message):
    hook = tmp_path / "hook.py"
    hook.write_text(f"import tensorflow as tf\n\n\ndef tfpgo_model(batch_size):\n{body}\n")
    status, out = _run(tmp_path, "--model", str(hook), "--batch-size", "4")
    assert status == 1
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith("pgo: error: ") and message in last, last
    assert not out.exists()


def test_hook_file_without_the_hook_is_one_line(tmp_path, capsys):
    broken = tmp_path / "no_hook.py"
    broken.write_text("x = 1\n")
    status, out = _run(tmp_path, "--model", str(broken))
    assert status == 1
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith("pgo: error: ") and "tfpgo_model" in last
    assert not out.exists()


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (("--input", "x=2"), "--signature and --input choose what a SavedModel directory runs"),
        (("--signature", "total"), "mlp is not one"),
        (("--input", "x=two"), "--input x=two: expected NAME=SHAPE[:DTYPE]"),
    ],
)
def test_signature_flags_are_checked_before_any_work(tmp_path, capsys, flags, message):
    status, out = _run(tmp_path, "--model", "mlp", *flags)
    assert status == 1
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith("pgo: error: ") and message in last
    assert not out.exists()


def test_from_trace_reuses_a_profile(rnn_run, tmp_path, capsys):
    status, out = _run(
        tmp_path,
        "--from-trace",
        str(rnn_run / "profile"),
        "--mlir",
        str(rnn_run / "model.mlir"),
    )
    assert status == 0
    assert (out / "report.html").exists()
    assert not (out / "profile").exists()
    # Four stages run (no model, profile, export, verify), numbered out of four.
    stages = re.findall(r"\[pgo (\d)/(\d)\] (\w+): done in", capsys.readouterr().err)
    assert stages == [
        ("1", "4", "trace"),
        ("2", "4", "annotate"),
        ("3", "4", "render"),
        ("4", "4", "report"),
    ]


def test_outputs_name_final_paths_not_the_staging_directory(train_run):
    """Outputs are written in a staging directory that is renamed at the end:
    the paths they record must be where the files are afterwards."""
    sources = [
        json.loads((train_run / "op_profile.json").read_text())["source"],
        json.loads((train_run / "mlir_graph.json").read_text())["meta"]["source"],
    ]
    for source in sources:
        assert Path(source).is_relative_to(train_run) and Path(source).is_file(), source
    trace = json.loads((train_run / "trace.json").read_text())
    assert (train_run / trace["otherData"]["source"]).is_file()
    profile = json.loads((train_run / "attribution.json").read_text())["profile"]
    assert (train_run / profile).is_file(), profile


@pytest.mark.parametrize("run", ["rnn_run", "train_run", "transformer_train_run"])
def test_every_output_conserves_time(run, request):
    """The conservation law (tfpgo.flow.conservation) on every op graph,
    Model Explorer file, CSV, trace and speedscope export and `--depth` view of the
    built-in models' runs: a while loop, a training step with fused kernels,
    attention with Grappler rewrites."""
    sums = check_output(request.getfixturevalue(run))
    assert {"op_graph.json", "model_explorer.json", "op_profile.csv", "trace.json",
            "speedscope.json", "op_graph.json --depth 2"} <= {s.file for s in sums}  # fmt: skip
    assert all(s.holds for s in sums)


def _rerun_into_a_copy(run: Path, tmp_path: Path, trace: str) -> tuple[int, Path]:
    """Copies `run` to tmp_path/pgo_out and re-runs it there from `trace`
    (relative to the copy; "." is the copy itself)."""
    out = tmp_path / "pgo_out"
    shutil.copytree(run, out)
    args = ("--output-dir", str(out), "--from-trace", str(out / trace))
    status, _ = _run(tmp_path, *args, "--mlir", str(out / "model.mlir"))
    return status, out


def test_from_trace_into_its_own_output_keeps_the_profile(rnn_run, tmp_path):
    """The README's `--from-trace pgo_out/profile --mlir pgo_out/model.mlir`
    with the default --output-dir pgo_out: the new output keeps the profile."""
    status, out = _rerun_into_a_copy(rnn_run, tmp_path, "profile")
    assert status == 0
    assert list((out / "profile").rglob("*.xplane.pb"))
    assert "- **trace**: profile\n" in (out / "report.md").read_text()
    assert Path(OpProfile.read(out / "op_profile.json").source).is_file()
    assert [path.name for path in tmp_path.iterdir()] == ["pgo_out"]


@pytest.mark.parametrize("kind", ["file", "user_dir", "working_dir", "parent_of_working_dir"])
def test_output_dir_holding_user_files_is_refused(kind, tmp_path, monkeypatch, capsys):
    """The output directory is replaced as a whole: never over a file, a
    directory of the user's or the directory the user runs from."""
    precious = tmp_path / "work" / "thesis.tex"
    precious.parent.mkdir()
    precious.write_text("the user's file")
    (tmp_path / "here").mkdir()
    monkeypatch.setenv("BUILD_WORKING_DIRECTORY", str(tmp_path / "here"))
    target = {
        "file": precious,
        "user_dir": precious.parent,
        "working_dir": Path("."),
        "parent_of_working_dir": tmp_path,
    }[kind]
    status = run_main(pgo.main, ["--output-dir", str(target), "--steps", "1"], prog="pgo")
    assert status == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("pgo: error: --output-dir ")
    assert precious.read_text() == "the user's file"
    assert sorted(path.name for path in tmp_path.rglob("*")) == ["here", "thesis.tex", "work"]


def test_from_trace_of_the_output_dir_itself_is_refused(rnn_run, tmp_path, capsys):
    status, out = _rerun_into_a_copy(rnn_run, tmp_path, ".")
    assert status == 1
    assert "is the output directory itself" in capsys.readouterr().err
    assert (out / "profile").is_dir()


def test_trace_of_another_model_fails_cleanly(rnn_run, train_run, tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()  # a previous run's output: replaced only on success
    for name in ("report.md", "op_profile.json"):
        (out / name).write_text("previous run")
    status = run_main(
        pgo.main,
        [
            "--output-dir",
            str(out),
            "--from-trace",
            str(rnn_run / "profile"),
            "--mlir",
            str(train_run / "model.mlir"),
        ],
        prog="pgo",
    )
    assert status == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("pgo: error: ")
    assert "is this the trace of that module?" in err[-1]
    assert sorted(path.name for path in out.iterdir()) == ["op_profile.json", "report.md"]
    assert [path.name for path in tmp_path.iterdir()] == ["out"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--model", "nosuchmodel"], "no such built-in model or path"),
        (["--from-trace", "/nonexistent/trace.pb", "--mlir", "/nonexistent/m.mlir"], "no such"),
        (["--from-trace", "x.pb"], "--from-trace and --mlir go together"),
        (["--formats", "svg,bmp"], "--formats: unknown bmp"),
    ],
)
def test_bad_input_is_one_line(args, message, tmp_path, capsys):
    status, out = _run(tmp_path, *args)
    assert status == 1
    err = capsys.readouterr().err.strip().splitlines()
    # Only the error: checked before any stage is announced.
    assert len(err) == 1 and err[0].startswith("pgo: error: ") and message in err[0]
    assert not out.exists()


def test_model_of_unknown_kind_is_refused_before_any_stage(tmp_path, capsys):
    notes = tmp_path / "model.txt"
    notes.write_text("not a model")
    status, out = _run(tmp_path, "--model", str(notes))
    assert status == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unknown model file type" in err[0]
    assert not out.exists()


def test_corrupt_trace_is_one_line(rnn_run, tmp_path, capsys):
    corrupt = tmp_path / "broken.xplane.pb"
    corrupt.write_bytes(b"\x0a\xff\xff\xff\x0fnot a protobuf")
    status, out = _run(
        tmp_path, "--from-trace", str(corrupt), "--mlir", str(rnn_run / "model.mlir")
    )
    assert status == 1
    assert capsys.readouterr().err.strip().splitlines()[-1].startswith("pgo: error: ")
    assert not out.exists()


def test_readme_main_command_runs_the_default_model(tmp_path):
    """`bazel run //:pgo` with no flags writes ./pgo_out where the user stands."""
    binary = _pgo_binary()
    if binary is None:
        pytest.skip("//:pgo is not in this test's runfiles (run through bazel test)")
    env = dict(os.environ, BUILD_WORKING_DIRECTORY=str(tmp_path))
    done = subprocess.run(
        [str(binary)], env=env, capture_output=True, text=True, check=False, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().endswith("report.html")
    assert "report:" in done.stdout.strip().splitlines()[-1]
    assert EXPECTED_FILES.issubset(path.name for path in (tmp_path / "pgo_out").iterdir())
    # Long stages report inside: the profiled steps, the trace reader's work.
    assert re.search(r"\[pgo 2/8\]   step 5/5: [\d.]+ ms", done.stderr)
    assert re.search(r"\[pgo 4/8\]   read [\d,]+ events", done.stderr)
    stages = re.findall(r"\[pgo \d/8\] (\w+): done in", done.stderr)
    assert stages == [
        "model",
        "profile",
        "export",
        "trace",
        "annotate",
        "verify",
        "render",
        "report",
    ]


if __name__ == "__main__":
    sys.exit(pytest.main([__file__]))
