"""tfpgo.runtime: the program `pgo --lower iree` made, run from Python as the step.

Real flows on two seeded hooks (tests/data/models/runtime_*.py), the same
steps built again here: outputs against TensorFlow's, training in IREE against
training in TensorFlow, the variables written back and checkpointed, and every
bad input one UserError line."""

import importlib.util
import json
import re
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tensorflow as tf

from tfpgo.errors import UserError
from tfpgo.flow.stages import FlowOptions, run_flow
from tfpgo.iree import target
from tfpgo.iree.tools import runtime_tool
from tfpgo.report.run_it import iree_command, python_snippet, run_it_text
from tfpgo.runtime import load, run_program
from tfpgo.runtime import step as runtime_step
from tfpgo.runtime import variables as step_variables
from tfpgo.runtime.manifest import ProgramManifest, Role, Tensor, iree_run_module_args

MODELS = Path(__file__).resolve().parents[1] / "data" / "models"
BATCH = 4
# IREE's float32 kernels against TensorFlow's, compounded over the steps.
LOSS_RTOL = 1e-4


def _hook(name: str):
    spec = importlib.util.spec_from_file_location(name, MODELS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _lowered(directory: Path, hook: str, mode: str, tune_budget_s: float | None = None) -> Path:
    run_flow(
        FlowOptions(
            model=str(MODELS / f"{hook}.py"),
            mode=mode,
            steps=2,
            warmup=1,
            batch_size=BATCH,
            output_dir=directory,
            formats=("svg",),
            lower=("stablehlo", "linalg", "iree"),
            tune_budget_s=tune_budget_s,
        )
    )
    return directory


@pytest.fixture(scope="module")
def infer_out(tmp_path_factory):
    return _lowered(tmp_path_factory.mktemp("infer") / "out", "runtime_infer", "infer")


@pytest.fixture(scope="module")
def train_out(tmp_path_factory):
    return _lowered(tmp_path_factory.mktemp("train") / "out", "runtime_train", "train")


def test_the_manifest_names_each_parameter_and_result_in_the_steps_terms(infer_out, train_out):
    infer = ProgramManifest.read(infer_out)
    assert [(p.role, p.name) for p in infer.parameters] == [
        (Role.INPUT, "image"),
        (Role.INPUT, 'options["scale"]'),
        (Role.INPUT, 'options["shift"]'),
    ]
    assert [r.name for r in infer.results] == ['output["logits"]', 'output["probabilities"]']
    assert infer.parameters[0].type_text() == f"{BATCH}x8x8x2xf32"
    train = ProgramManifest.read(train_out)
    inputs = [p.name for p in train.parameters if p.role is Role.INPUT]
    assert inputs == ["features", "target"]
    variables = {p.name: p for p in train.variables()}
    assert {"runtime_train/hidden/kernel", "runtime_train/out/bias", "adam/iteration"} <= set(
        variables
    )
    # Each written variable's result names it and points back at its parameter.
    for result in (r for r in train.results if r.role is Role.VARIABLE):
        assert result.alias is not None
        assert train.parameters[result.alias].name == result.name
        assert train.parameters[result.alias].alias == result.index
    assert variables["adam/learning_rate"].alias is None  # read, never written
    assert train.programs == {"default": "model.iree.vmfb"}
    assert train.target.iree_compile == target.runtime_version()
    assert "program.json" in (train_out / "report.md").read_text()


def test_an_inference_step_runs_with_its_own_arguments_and_outputs(infer_out):
    infer = _hook("runtime_infer").build()
    image, options = _hook("runtime_infer").example(BATCH)
    want = infer(image, options)
    step, on_the_caller = load(infer_out), load(infer_out, driver="local-sync")
    calls = (
        step(image, options),
        step(image=image, options={"scale": 2.0, "shift": 0.5}),
        on_the_caller(image, options),
    )
    for got in calls:
        assert sorted(got) == ["logits", "probabilities"]
        for name, value in got.items():
            np.testing.assert_allclose(value, want[name].numpy(), rtol=1e-3, atol=1e-5)


def test_a_training_step_trains_as_tensorflow_does(train_out, tmp_path):
    hook = _hook("runtime_train")
    model, optimizer, train = hook.build()
    _, _, twin_train = hook.build()  # the same start, trained by TensorFlow
    for function in (train, twin_train):  # the same first step: traced, slots made
        function(*hook.batch(BATCH, 0))
    step = load(train_out, variables=train)
    for seed in range(1, 21):
        features, target = hook.batch(BATCH, seed)
        got = step(features, target)
        want = twin_train(features, target)
        assert got["loss"] == pytest.approx(want["loss"].numpy(), rel=LOSS_RTOL), seed
        assert isinstance(got["logits"], list) and got["logits"][0].shape == (BATCH, 3)
    # Written back: the Keras model (and its optimizer) hold what IREE trained.
    step.assign_to(model)
    after = step.variables()
    assert after["adam/iteration"] == 21
    for variable in model.variables:
        np.testing.assert_array_equal(variable.numpy(), after[variable.path])
    # One step of each engine from there (optimizer slots too) is the same step.
    step.assign_to(train)
    features, target = hook.batch(BATCH, 99)
    assert step(features, target)["loss"] == pytest.approx(
        train(features, target)["loss"].numpy(), rel=LOSS_RTOL
    )
    # A checkpoint TensorFlow saves after IREE's training restores IREE's values.
    step.assign_to(train)
    saved = tf.train.Checkpoint(model=model, optimizer=optimizer).save(str(tmp_path / "ckpt"))
    restored_model, restored_optimizer, restored_train = hook.build()
    restored_train(*hook.batch(BATCH, 0))
    tf.train.Checkpoint(model=restored_model, optimizer=restored_optimizer).restore(saved)
    final = step.variables()
    for variable in [*restored_model.variables, *restored_optimizer.variables]:
        # this process's third Adam is `adam_3`; the profiled one was `adam`
        name = re.sub(r"_\d+(?=/|$)", "", variable.path)
        np.testing.assert_array_equal(variable.numpy(), final[name])


def test_a_training_step_starts_from_a_model_a_list_or_the_profiled_values(train_out):
    hook = _hook("runtime_train")
    model, _, _ = hook.build()
    profiled = load(train_out).variables()
    assert profiled["adam/iteration"] == 3  # warm-up and two profiled steps
    from_model = load(train_out, variables=model).variables()
    for variable in model.variables:
        np.testing.assert_array_equal(from_model[variable.path], variable.numpy())
    assert from_model["adam/iteration"] == 3  # the optimizer is not the model's
    kernel = model.get_layer("hidden").kernel
    from_list = load(train_out, variables=[kernel]).variables()
    np.testing.assert_array_equal(from_list["runtime_train/hidden/kernel"], kernel.numpy())
    out_kernel = "runtime_train/out/kernel"  # not given: the profiled value
    np.testing.assert_array_equal(from_list[out_kernel], profiled[out_kernel])


def _error(call) -> str:
    with pytest.raises(UserError) as raised:
        call()
    message = str(raised.value)
    assert "\n" not in message
    return message


def test_each_bad_argument_is_one_line_naming_it(infer_out):
    step = load(infer_out)
    image, options = _hook("runtime_infer").example(BATCH)
    assert _error(lambda: step(image[:2], options)).startswith(
        f"argument image: expected float32 of shape [{BATCH}, 8, 8, 2], got float32 of shape "
        f"[2, 8, 8, 2]"
    )
    assert "convert it to float32" in _error(lambda: step(tf.cast(image, tf.float64), options))
    assert _error(lambda: step(image, {"scale": 2.0})) == (
        "argument options: expected a dict with keys ['scale', 'shift'], got ['scale']"
    )
    assert _error(lambda: step(image)).startswith("argument options: missing")
    assert _error(lambda: step(image, options, bias=1)) == (
        "argument bias: the step has no such argument"
    )
    assert "a list of 1 items" in _error(lambda: step([image], options))
    assert _error(lambda: load(infer_out, program="fast")).startswith("program: 'fast'")
    assert _error(lambda: load(infer_out, driver="cuda")).startswith("driver: 'cuda' is no CPU")
    assert "kept no tuned program" in _error(lambda: load(infer_out, program="tuned"))
    asked = (runtime_step._process_threads or 0) + 1
    assert "already runs" in _error(lambda: load(infer_out, threads=asked))


def test_a_missing_corrupt_or_foreign_program_is_one_line(infer_out, tmp_path, monkeypatch):
    assert "no such output directory" in _error(lambda: load(tmp_path / "none"))
    assert "no program.json" in _error(lambda: load(tmp_path))
    copy = tmp_path / "copy"
    shutil.copytree(infer_out, copy)
    (copy / "model.iree.vmfb").write_bytes(b"not a flatbuffer")
    assert _error(lambda: load(copy)).startswith(f"{copy / 'model.iree.vmfb'}: IREE cannot load")
    manifest = json.loads((infer_out / "program.json").read_text())
    manifest["target"]["iree_compile"] = "3.1.0"
    (copy / "program.json").write_text(json.dumps(manifest))
    assert "compiled by iree-compile 3.1.0, but this process has IREE's runtime" in _error(
        lambda: load(copy)
    )
    (copy / "program.json").write_text('{"format": "tfpgo.program", "version": 1}')
    assert "malformed tfpgo.program document" in _error(lambda: load(copy))
    # Another CPU: one the program's features say it has, this one lacks.
    real = ProgramManifest.read(infer_out).target
    assert target.refusal(real, copy, target.host_features()) is None  # runs here
    lacking = {real.cpu_features[0]: False}
    monkeypatch.setattr(runtime_step, "host_features", lambda: lacking)
    assert f"compiled for another CPU ({real.cpu}, using {real.cpu_features[0]}" in _error(
        lambda: load(infer_out)
    )


def test_each_program_runs_on_the_driver_its_manifest_names(infer_out, tmp_path):
    """program.json's drivers (local-sync where --tune kept it) are what `load`,
    IREE's command and the report use; a manifest from before them runs on
    local-task, and a driver IREE has not is one line."""
    copy = tmp_path / "copy"
    shutil.copytree(infer_out, copy)
    document = json.loads((infer_out / "program.json").read_text())
    assert document["drivers"] == {"default": "local-task"}
    document["drivers"] = {"default": "local-sync"}
    (copy / "program.json").write_text(json.dumps(document))
    manifest = ProgramManifest.read(copy)
    step = load(copy)
    assert step.driver == "local-sync" and load(copy, driver="local-task").driver == "local-task"
    image, options = _hook("runtime_infer").example(BATCH)
    np.testing.assert_array_equal(
        step(image, options)["logits"], load(infer_out)(image, options)["logits"]
    )
    assert "--device=local-sync" in iree_run_module_args(manifest, "default")
    assert "each dispatch on the calling thread (IREE's local-sync driver" in run_it_text(
        manifest, copy
    )
    del document["drivers"]
    (copy / "program.json").write_text(json.dumps(document))
    assert ProgramManifest.read(copy).drivers == {"default": "local-task"}
    document["drivers"] = {"default": "cuda"}
    (copy / "program.json").write_text(json.dumps(document))
    assert "driver 'cuda' is no CPU driver of IREE's" in _error(lambda: load(copy))


def test_run_program_runs_the_step_and_saves_outputs_and_variables(train_out, tmp_path, capsys):
    saved = tmp_path / "out.npz"
    argv = ["--output-dir", str(train_out), "--steps", "3", "--save", str(saved)]
    assert run_program.main(argv) == 0
    assert "3 step(s) of model.iree.vmfb on local-task" in capsys.readouterr().out
    with np.load(saved) as arrays:
        assert 'output["loss"]' in arrays.files
        assert arrays["variables/adam/iteration"] == 6  # 3 profiled + 3 here
    bad = tmp_path / "bad.npz"
    np.savez(bad, x=np.zeros(3, np.float32))
    from tfpgo import cli

    argv = ["--output-dir", str(train_out), "--inputs", str(bad)]
    status = cli.run_main(run_program.main, argv, prog=run_program.PROG)
    err = capsys.readouterr().err
    assert status == 1 and err.startswith("run_program: error: ") and err.count("\n") == 1
    assert "x is no argument of the step (features, target)" in err


def test_the_reports_commands_run(infer_out, tmp_path):
    """The Run it section's iree-run-module command and Python snippet, run as
    written: IREE's tool prints the program's two results, the snippet's step
    the same values as tfpgo.runtime's."""
    manifest = ProgramManifest.read(infer_out)
    assert iree_command(manifest).startswith("iree-run-module \\\n    --module=model.iree.vmfb")
    args = iree_run_module_args(manifest, "default")
    args[0] = runtime_tool("iree-run-module")
    ran = subprocess.run(args, cwd=infer_out, capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.count(f"{BATCH}x5xf32=") == 2
    script = tmp_path / "snippet.py"
    code = python_snippet(manifest, infer_out)
    script.write_text(code + "\nnp.save('logits.npy', outputs['logits'])\n")
    pythonpath = str(Path(runtime_step.__file__).resolve().parents[2])
    env = {"PYTHONPATH": pythonpath, "PATH": "/usr/bin:/bin"}
    ran = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True,
        timeout=120, env=env,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    image, options = _hook("runtime_infer").example(BATCH)
    want = _hook("runtime_infer").build()(image, options)["logits"].numpy()
    np.testing.assert_allclose(np.load(tmp_path / "logits.npy"), want, rtol=1e-3, atol=1e-5)


def test_the_docs_training_loop_runs(train_out, tmp_path, monkeypatch):
    """docs/runtime.md's training loop, run as written in a directory whose
    pgo_out is the lowered training step, `build` and `batches` the hook's."""
    doc = (Path(__file__).resolve().parents[2] / "docs" / "runtime.md").read_text()
    (block,) = re.findall(r"```python\n(.*?)```", doc, re.S)
    (tmp_path / "pgo_out").symlink_to(train_out)
    monkeypatch.chdir(tmp_path)
    hook = _hook("runtime_train")
    namespace: dict[str, Any] = {
        "build": hook.build,
        "batches": [hook.batch(BATCH, seed) for seed in range(3)],
    }
    exec(block, namespace)
    assert np.isfinite(namespace["loss"]["loss"])
    assert list(tmp_path.glob("ckpt-1.index"))  # the checkpoint of what IREE trained
    trained = namespace["step"].variables()["runtime_train/out/kernel"]
    np.testing.assert_allclose(namespace["model"].get_layer("out").kernel.numpy(), trained)


def test_the_readmes_three_lines_run(infer_out, tmp_path, monkeypatch):
    """The README's Python block that loads pgo_out, run as written in a directory
    whose pgo_out is a lowered output, with the step's inputs (its tfpgo.compile
    block is test_wheel's)."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    block = re.search(r"```python\n(import tfpgo\.runtime\n.*?)```", readme, re.S)
    assert block is not None and len(block[1].strip().splitlines()) == 3
    (tmp_path / "pgo_out").symlink_to(infer_out)
    monkeypatch.chdir(tmp_path)
    image, options = _hook("runtime_infer").example(BATCH)
    namespace: dict[str, Any] = {"inputs": (image, options)}
    exec(block[1], namespace)
    want = _hook("runtime_infer").build()(image, options)
    np.testing.assert_allclose(namespace["outputs"]["logits"], want["logits"].numpy(), rtol=1e-3)


def test_tune_ends_with_the_step_as_a_users_loop_sees_it(tmp_path, capsys):
    """--tune's last line: the program it leaves and TensorFlow's step, each called
    from Python in turn (the seconds are the machine's; the line's form is the
    subject), and the manifest lists what --tune left."""
    out = _lowered(tmp_path / "out", "runtime_infer", "infer", tune_budget_s=1.0)
    err = capsys.readouterr().err
    line = re.search(
        r"step wall-clock \(a Python call, (\d+) interleaved calls each\): TensorFlow "
        r"[\d.]+ ms \[[\d.]+, [\d.]+\], (model\.\w+\.vmfb) [\d.]+ ms \[[\d.]+, [\d.]+\], [\d.]+x",
        err,
    )
    assert line is not None, err[-2000:]
    assert int(line[1]) >= 5
    assert line[2] == ProgramManifest.read(out).programs.get("tuned", "model.iree.vmfb")
    # An inference step: the engines a CPU user would pick instead took their turns.
    engines = re.search(
        r"; TFLite \(XNNPACK\) [\d.]+ ms \[.*\], OpenVINO f32 [\d.]+ ms \[.*\], "
        r"OpenVINO default [\d.]+ ms \[.*\], model\.\w+\.vmfb [\d.]+x the fastest of them "
        r"\((TFLite \(XNNPACK\)|OpenVINO f32|OpenVINO default)\)$",
        err[line.start() :].splitlines()[0],
    )
    assert engines is not None, err[line.start() :].splitlines()[0]


def test_a_notebooks_function_traced_in_another_order_is_matched_by_structure(train_out):
    """Issue 62: a notebook numbers Keras's layers after the models it built
    first (`hidden_2/kernel` is the profiled `hidden/kernel`), and XLA's retrace
    may order the program's parameters unlike the function's captures. The
    variables are then matched by name up to those numbers, shape and dtype."""
    hook = _hook("runtime_train")
    _, _, train = hook.build()
    train(*hook.batch(BATCH, 0))
    manifest = ProgramManifest.read(train_out)
    name = step_variables.variable_name
    want = {i: name(v) for i, v in step_variables.match(manifest, train).items()}
    renumbered = [
        replace(p, name=re.sub(r"^(\w+?)/", r"\1_2/", p.name)) if p.role is Role.VARIABLE else p
        for p in manifest.parameters
    ]
    inputs = [p for p in renumbered if p.role is Role.INPUT]
    carried = [p for p in renumbered if p.role is not Role.INPUT]
    other = replace(manifest, parameters=(*inputs, *reversed(carried)))
    got = {i: name(v) for i, v in step_variables.match(other, train).items()}
    assert got == want


def test_alike_variables_are_matched_in_the_order_keras_made_them(train_out):
    """Three variables alike in name (up to Keras's numbers), shape and dtype,
    beside another, where the program's order is not the function's: the first
    made is the first carried, whatever the numbers and the reading order."""
    manifest = ProgramManifest.read(train_out)
    scopes = ("dense", "dense_1", "dense_2")  # made in this order, valued 0, 1, 2
    made = [
        tf.Variable(np.full((2,), float(i), np.float32), name=f"{scope}/kernel")
        for i, scope in enumerate(scopes)
    ]
    other = tf.Variable(np.zeros((3,), np.float32), name="out/bias")

    @tf.function
    def reads(features, target):
        return features[0, 0] + made[2][0] + other[0] + made[0][0] + made[1][0]

    inputs = [p for p in manifest.parameters if p.role is Role.INPUT]
    first = len(inputs)
    alike = [f"dense_{4 + i}/kernel" for i in range(3)]  # numbered by another process
    carried = (
        *(Tensor(first + i, Role.VARIABLE, name, (2,), "float32") for i, name in enumerate(alike)),
        Tensor(first + 3, Role.VARIABLE, "out_1/bias", (3,), "float32"),
    )
    program = replace(manifest, parameters=(*inputs, *carried))
    matched = step_variables.match(program, reads)
    assert [float(matched[p.index][0]) for p in carried[:3]] == [0.0, 1.0, 2.0]
    assert matched[carried[3].index] is other
