"""The wheel //:wheel makes, installed as a user installs it: into a fresh
virtual environment (`--system-site-packages`, so the TensorFlow and IREE of
this machine satisfy its pins; `--no-index`, no network), then used from a
clean environment (no PYTHONPATH, the working directory outside the checkout):
the README's `tfpgo.compile` lines in a user's script, the `tfpgo` command on a
hook, and the runtime alone without TensorFlow."""

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tfpgo import toolpaths
from tfpgo.flow import console, distribution

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
# What the README's block leaves undefined, built as a user builds it; the block
# runs 10 steps.
USER_PRELUDE = """\
import json, os, sys
import keras
import numpy as np
import tensorflow as tf

keras.utils.set_random_seed(0)
model = keras.Sequential(
    [keras.Input((8,)), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(1)]
)
optimizer = keras.optimizers.SGD(learning_rate=0.05)


@tf.function
def train_step(x, y):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(x, training=True) - y))
    gradients = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(gradients, model.trainable_variables))
    return loss


x = tf.random.stateless_normal((16, 8), seed=(1, 1))
y = tf.random.stateless_normal((16, 1), seed=(1, 2))
variables = train_step.get_concrete_function(x, y).variables  # the optimizer's too
start = [variable.numpy() for variable in variables]
start_loss = tf.reduce_mean(tf.square(model(x) - y))
"""
# TensorFlow's own 10 steps from the same start, against IREE's (the README's
# `loss` is the 10th step's, `model` holds what IREE trained).
USER_CHECK = """\
trained = [variable.numpy() for variable in model.trainable_variables]
for variable, value in zip(variables, start):
    variable.assign(value)
for _ in range(10):
    tf_loss = train_step(x, y)
np.testing.assert_allclose(loss, tf_loss.numpy(), rtol=1e-4)
for iree_value, variable in zip(trained, model.trainable_variables):
    np.testing.assert_allclose(iree_value, variable.numpy(), rtol=1e-4, atol=1e-6)
print(json.dumps({"tfpgo": tfpgo.__file__, "path": sys.path, "loss": float(loss),
                  "tf_loss": float(tf_loss), "start_loss": float(start_loss)}))
"""
HOOK = """\
import keras
import tensorflow as tf


def tfpgo_model(batch_size):
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((6,)), keras.layers.Dense(4, activation="relu")])
    return model, (tf.random.stateless_normal((batch_size, 6), seed=(3, 4)),)
"""
RUNTIME_ONLY = """\
import sys
import numpy as np
import tfpgo.runtime

step = tfpgo.runtime.load(sys.argv[1])
outputs = step(np.load(sys.argv[1] + "/program/parameter_0.npy"))
assert outputs.shape == (4, 4) and np.isfinite(outputs).all(), outputs
print(sorted({name.split(".")[0] for name in sys.modules} & {"tensorflow", "keras", "iree"}))
print("iree.compiler" in sys.modules)
"""


def readme_compile_block() -> str:
    """The README's Python block that calls tfpgo.compile, as written."""
    text = README.read_text()
    blocks = [b.split("```", 1)[0] for b in text.split("```python\n")[1:]]
    (block,) = [b for b in blocks if "tfpgo.compile(" in b]
    return block


def built_wheel() -> Path:
    """//:wheel: in the test's runfiles, else in this checkout's bazel-bin."""
    where = Path(os.environ["TEST_SRCDIR"]) / "tfpgo" if "TEST_SRCDIR" in os.environ else None
    found = sorted((where or ROOT / "bazel-bin").glob("tfpgo-*.whl"))
    assert len(found) == 1, f"one wheel expected, found {found}; bazel build //:wheel"
    return found[0]


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    """A fresh virtual environment with the wheel (and its flow extra) installed."""
    home = tmp_path_factory.mktemp("home")
    root = home / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(root)], check=True)
    install = [str(root / "bin" / "python"), "-m", "pip", "install", "--no-index"]
    install += ["--no-cache-dir", "--disable-pip-version-check", f"{built_wheel()}[flow]"]
    ran = subprocess.run(install, capture_output=True, text=True, env=_clean_env(root, home))
    assert ran.returncode == 0, ran.stdout[-2000:] + ran.stderr[-2000:]
    return root


def _clean_env(root: Path, home: Path) -> dict[str, str]:
    """A user's shell: the venv's bin first, no PYTHONPATH, nothing of Bazel's."""
    return {
        "PATH": f"{root / 'bin'}:/usr/bin:/bin",
        "HOME": str(home),
        "TF_CPP_MIN_LOG_LEVEL": "2",
        "LANG": "C.UTF-8",
    }


def _run(venv: Path, argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    cwd.mkdir(exist_ok=True)
    return subprocess.run(
        argv, cwd=cwd, capture_output=True, text=True, env=_clean_env(venv, cwd), timeout=540
    )


def test_the_readmes_compile_lines_train_as_tensorflow_does(venv, tmp_path):
    block = readme_compile_block()
    assert len(block.strip().splitlines()) <= 5, block
    script = tmp_path / "train.py"
    script.write_text(USER_PRELUDE + block + USER_CHECK)
    ran = _run(venv, [str(venv / "bin" / "python"), str(script)], tmp_path / "work")
    assert ran.returncode == 0, ran.stderr[-3000:]
    result = json.loads(ran.stdout.strip().splitlines()[-1])
    assert Path(result["tfpgo"]).is_relative_to(venv), result["tfpgo"]
    assert not [entry for entry in result["path"] if entry.startswith(str(ROOT))]
    assert result["loss"] < result["start_loss"]  # ten steps of SGD did train
    assert (tmp_path / "work" / "tfpgo_out" / "program.json").is_file()
    assert "[pgo 7/9] lower:" in ran.stderr  # the flow's progress, as pgo shows it


def test_the_tfpgo_command_runs_the_flow_on_a_hook(venv, tmp_path):
    (tmp_path / "hook.py").write_text(HOOK)
    argv = [str(venv / "bin" / "tfpgo"), "--model", "../hook.py", "--lower", "iree"]
    argv += ["--steps", "1", "--warmup", "1", "--batch-size", "4", "--output-dir", "out"]
    ran = _run(venv, argv, tmp_path / "work")
    assert ran.returncode == 0, ran.stderr[-3000:]
    out = tmp_path / "work" / "out"
    assert (out / "report.html").is_file() and (out / "program.json").is_file()
    assert ran.stdout.strip().splitlines()[-1] == f"tfpgo: report: {out / 'report.html'}"
    runtime = tmp_path / "runtime.py"
    runtime.write_text(RUNTIME_ONLY)
    ran = _run(venv, [str(venv / "bin" / "python"), str(runtime), str(out)], tmp_path / "serve")
    assert ran.returncode == 0, ran.stderr[-3000:]
    # the runtime loaded IREE's runtime only: no TensorFlow, no Keras, no compiler
    assert ran.stdout.splitlines() == ["['iree']", "False"]


def test_a_bad_flag_of_the_command_is_one_line(venv, tmp_path):
    ran = _run(venv, [str(venv / "bin" / "tfpgo"), "--lower", "gpu"], tmp_path)
    assert ran.returncode == 2 and ran.stderr.count("\n") == 1
    assert ran.stderr.startswith("tfpgo: error: argument --lower: invalid choice: 'gpu'")


def test_the_base_wheel_requires_the_runtime_only_and_pins_the_rest():
    with zipfile.ZipFile(built_wheel()) as wheel:
        names = wheel.namelist()
        metadata = wheel.read(next(n for n in names if n.endswith(".dist-info/METADATA")))
        entry_points = wheel.read(next(n for n in names if n.endswith("entry_points.txt")))
    requires = [
        line.removeprefix("Requires-Dist: ")
        for line in metadata.decode().splitlines()
        if line.startswith("Requires-Dist: ")
    ]
    base = [line.split("==")[0] for line in requires if "extra ==" not in line]
    assert base == list(distribution.RUNTIME)
    pinned = (ROOT / "requirements.txt").read_text().splitlines()
    assert all(line.split(";")[0] in pinned for line in requires)
    flow = [line.split("==")[0] for line in requires if 'extra == "flow"' in line]
    assert flow == list(distribution.EXTRAS["flow"])
    assert {f"tfpgo/bin/{tool}" for tool in ("tfpgo-opt", "xplane-columns")} <= set(names)
    assert "tfpgo/bin/libtfpgo_kernels.so" in names
    assert b"tfpgo = tfpgo.flow.console:main" in entry_points


def test_without_the_flows_packages_the_command_names_the_extra(monkeypatch, capsys):
    monkeypatch.setitem(distribution.EXTRAS, "flow", {"tensorflow-cpu": "tfpgo_no_such_module"})
    assert console.main() == 1
    assert capsys.readouterr().err == (
        "tfpgo: error: the tfpgo command needs tensorflow-cpu, which this Python lacks; "
        "pip install 'tfpgo[flow]' (the base wheel is the runtime only)\n"
    )


def test_a_machine_without_debians_llvm_gets_one_line(tmp_path):
    with pytest.raises(toolpaths.UserError) as raised:
        toolpaths.check_llvm_libraries(tmp_path)
    assert str(raised.value) == (
        f"tfpgo-opt needs libMLIR.so.22.1, libLLVM.so.22.1 in {tmp_path}, Debian's LLVM 22 "
        "(apt-get install libmlir-22 llvm-22-dev); tfpgo's wheel is built for Debian with "
        "LLVM 22"
    )
    toolpaths.check_llvm_libraries(toolpaths.LLVM_LIBRARIES)  # this machine has them
