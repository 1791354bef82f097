"""tfpgo.compile in the caller's process (python/tfpgo/flow/compiled.py): a
Keras model and a training `tf.function` profiled, lowered to IREE and returned
as the step; the caller's variables as they were; each bad argument one
UserError line naming it."""

import subprocess
import sys
from typing import Any

import keras
import numpy as np
import pytest
import tensorflow as tf

import tfpgo
from tfpgo.errors import UserError
from tfpgo.flow import compiled as compiled_module
from tfpgo.flow import distribution
from tfpgo.models.case import Mode
from tfpgo.toolpaths import python_env

QUICK: dict[str, Any] = {"steps": 1, "warmup": 1}


def _model(seed: int) -> keras.Model:
    keras.utils.set_random_seed(seed)
    return keras.Sequential(
        [keras.Input((6,)), keras.layers.Dense(8, activation="tanh"), keras.layers.Dense(2)]
    )


def _train_step(model: keras.Model):
    optimizer = keras.optimizers.SGD(learning_rate=0.1)

    @tf.function
    def train_step(x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(x, training=True) - y))
        gradients = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(gradients, model.trainable_variables, strict=True))
        return loss

    return train_step


def _batch() -> tuple[tf.Tensor, tf.Tensor]:
    return (
        tf.random.stateless_normal((4, 6), seed=(1, 1)),
        tf.random.stateless_normal((4, 2), seed=(1, 2)),
    )


def test_a_keras_model_is_compiled_for_inference(tmp_path, capsys):
    model = _model(3)
    x, _ = _batch()
    result = tfpgo.compile(model, x, output_dir=tmp_path / "out", **QUICK)
    assert result.output_dir == tmp_path / "out" and result.report.is_file()
    assert (result.output_dir / "program.json").is_file()
    assert result.step is not None
    np.testing.assert_allclose(result.step(x.numpy()), model(x).numpy(), rtol=1e-4, atol=1e-6)
    err = capsys.readouterr().err  # pgo's progress lines, stage by stage
    assert "[pgo 1/9] model: Keras model" in err and "[pgo 9/9] report:" in err


def test_a_training_function_trains_in_iree_as_in_tensorflow(tmp_path):
    model = _model(5)
    train_step = _train_step(model)
    x, y = _batch()
    train_step.get_concrete_function(x, y)  # the optimizer's variables exist from here
    before = [v.numpy() for v in train_step.get_concrete_function(x, y).variables]
    result = tfpgo.compile(train_step, x, y, output_dir=tmp_path / "out", **QUICK)
    after = [v.numpy() for v in train_step.get_concrete_function(x, y).variables]
    for was, now in zip(before, after, strict=True):  # profiling trained nothing for good
        np.testing.assert_array_equal(was, now)
    assert result.step is not None
    losses = [float(result.step(x, y)) for _ in range(5)]
    expected = [float(train_step(x, y)) for _ in range(5)]
    np.testing.assert_allclose(losses, expected, rtol=1e-4)
    trained = [v.numpy() for v in model.variables]
    result.step.assign_to(model)
    for want, variable in zip(trained, model.variables, strict=True):
        np.testing.assert_allclose(variable.numpy(), want, rtol=1e-4, atol=1e-6)


def test_the_mode_follows_what_the_function_writes():
    model = _model(1)
    x, y = _batch()
    train = compiled_module.model_case(_train_step(model), (x, y), None)
    infer = compiled_module.model_case(tf.function(lambda x: model(x)), (x,), None)
    assert (train.mode, infer.mode) == (Mode.TRAIN, Mode.INFER)
    assert (train.name, train.batch_size) == ("train_step", 4)


def test_annotating_only_returns_no_step(tmp_path):
    x, _ = _batch()
    result = tfpgo.compile(_model(2), x, lower=None, output_dir=tmp_path / "out", **QUICK)
    assert result.step is None and result.report.is_file()
    assert not (result.output_dir / "program.json").exists()


def _refusal(*args, **kwargs) -> str:
    with pytest.raises(UserError) as raised:
        tfpgo.compile(*args, **kwargs)
    message = str(raised.value)
    assert "\n" not in message
    return message


@pytest.mark.parametrize(
    ("kwargs", "cause"),
    [
        ({"lower": "gpu"}, "lower='gpu': use one of 'stablehlo', 'linalg', 'iree' or None"),
        ({"lower": "linalg", "tune": True}, "tune=True tunes the program IREE compiles"),
        ({"tune_minutes": 1.0}, "tune_minutes bounds the tuning: add tune=True"),
        ({"tune": True, "tune_minutes": -1.0}, "tune_minutes=-1.0: give 0 or a positive"),
        ({"steps": 0}, "steps=0: profile at least 1 step"),
        ({"warmup": -1}, "warmup=-1: give 0 or more warmup steps"),
        ({"tuning_db": False}, "tuning_db is for tune=True"),
        (
            {"tune": True, "tune_minutes": 0, "tuning_db": False},
            "tune_minutes=0 builds from the tuning database's records",
        ),
        ({"mode": "serve"}, "unknown mode 'serve'; use 'infer' or 'train'"),
        ({"driver": "cuda"}, "driver: 'cuda' is no CPU driver of IREE's"),
        ({"lower": "linalg", "driver": "local-sync"}, "driver= runs the program IREE compiles"),
        ({"max_output_error": 0.01}, "max_output_error bounds what tune=True may try"),
        ({"tune": True, "max_output_error": 0.0}, "max_output_error=0.0: give a share above 0"),
    ],
)
def test_a_bad_keyword_is_one_line_naming_it(kwargs, cause, tmp_path):
    x, _ = _batch()
    assert cause in _refusal(_model(0), x, output_dir=tmp_path / "out", **kwargs)


def test_a_bad_step_or_arguments_is_one_line(tmp_path):
    model = _model(0)
    x, _ = _batch()
    assert "example_args: give the arguments one step is called with" in _refusal(model)
    message = _refusal(lambda x: x, x, output_dir=tmp_path / "out")
    assert message.startswith("step: a function; give a tf.function or a Keras model")
    wrong = tf.function(lambda x: model(x))
    assert "<lambda>(*example_args) does not trace: ValueError" in _refusal(
        wrong, tf.zeros((4, 5)), output_dir=tmp_path / "out"
    )


def test_an_output_dir_holding_the_users_files_is_refused(tmp_path):
    keep = tmp_path / "notes"
    keep.mkdir()
    (keep / "mine.txt").write_text("mine")
    x, _ = _batch()
    assert "not a previous pgo output" in _refusal(_model(0), x, output_dir=keep, **QUICK)
    assert (keep / "mine.txt").read_text() == "mine"


def test_without_the_flows_packages_the_call_names_the_extra(monkeypatch):
    monkeypatch.setitem(distribution.EXTRAS, "flow", {"tfpgo-absent-package": "tfpgo_absent"})
    message = _refusal(_model(0), _batch()[0])
    assert message == (
        "tfpgo.compile needs tfpgo-absent-package, which this Python lacks; "
        "pip install 'tfpgo[flow]' (the base wheel is the runtime only)"
    )


def test_import_tfpgo_imports_no_flow():
    """`import tfpgo` is cheap: the flow (and TensorFlow) load on tfpgo.compile."""
    code = "import sys, tfpgo; print(sorted(m for m in sys.modules if m.startswith('tfpgo')))"
    ran = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=python_env()
    )
    assert ran.stdout.strip() == "['tfpgo']"
