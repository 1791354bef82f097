"""Built-in and user models: each builds and runs one inference and one training step."""

import numpy as np
import pytest

from tfpgo import models
from tfpgo.errors import UserError

SMALL_MODELS = ["mlp", "cnn", "transformer", "rnn"]


@pytest.mark.parametrize("mode", ["infer", "train"])
@pytest.mark.parametrize("name", SMALL_MODELS)
def test_builtin_model_runs_a_step(name, mode):
    case = models.load_model(name, mode, batch_size=2)
    assert case.mode is models.Mode(mode)
    outputs = np.asarray(case.step())
    assert np.all(np.isfinite(outputs))
    if mode == "infer":
        assert outputs.shape[0] == 2
    else:
        assert outputs.shape == ()  # the loss
    graph = case.concrete_function().graph
    op_types = {op.type for op in graph.get_operations()}
    if mode == "train":
        # the optimizer update is part of the profiled program
        updates = {"AssignSubVariableOp", "AssignAddVariableOp", "ResourceApplyGradientDescent"}
        assert op_types & updates


def test_resnet50_is_listed_but_not_built_here():
    assert "resnet50" in models.BUILTIN_MODELS  # built by bench/, too slow for a unit test


def test_unknown_model_is_a_user_error(tmp_path):
    with pytest.raises(UserError, match="no such built-in model or path"):
        models.load_model("nosuchmodel")
    with pytest.raises(UserError, match="unknown mode"):
        models.load_model("mlp", "fly")
    bad = tmp_path / "model.txt"
    bad.write_text("x")
    with pytest.raises(UserError, match="unknown model file type"):
        models.load_model(str(bad))


HOOK_KERAS = """
import keras

def tfpgo_model(batch_size):
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3, name="d")])
    return model, keras.random.normal((batch_size, 4))
"""

HOOK_FUNCTION = """
import tensorflow as tf

@tf.function
def square(x):
    return tf.matmul(x, x, name="product")

def tfpgo_model(batch_size):
    return square, (tf.ones((batch_size, batch_size)),)
"""


def test_hook_file_with_keras_model(tmp_path):
    hook = tmp_path / "mine.py"
    hook.write_text(HOOK_KERAS)
    case = models.load_model(str(hook), "train", batch_size=5)
    assert case.name == "mine"
    assert np.isfinite(np.asarray(case.step()))


def test_hook_file_with_tf_function(tmp_path):
    hook = tmp_path / "fn.py"
    hook.write_text(HOOK_FUNCTION)
    case = models.load_model(str(hook), "infer", batch_size=3)
    assert np.asarray(case.step()).shape == (3, 3)
    names = [op.name for op in case.concrete_function().graph.get_operations()]
    assert "product" in names


def test_hook_file_errors_are_one_line(tmp_path):
    missing = tmp_path / "nohook.py"
    missing.write_text("x = 1\n")
    with pytest.raises(UserError, match="defines no tfpgo_model"):
        models.load_model(str(missing))
    broken = tmp_path / "broken.py"
    broken.write_text("raise RuntimeError('boom')\n")
    with pytest.raises(UserError, match="importing failed: RuntimeError: boom"):
        models.load_model(str(broken))


def test_corrupt_keras_file_says_what_it_is(tmp_path):
    corrupt = tmp_path / "broken.keras"
    corrupt.write_bytes(b"not a zip archive")
    with pytest.raises(UserError) as error:
        models.load_model(str(corrupt))
    message = str(error.value)
    assert message.startswith(f"{corrupt}: not a .keras archive")
    assert "File not found" not in message and "model.save(" in message


def test_keras_file_and_saved_model(tmp_path):
    import keras
    import tensorflow as tf

    model = keras.Sequential([keras.Input((6,)), keras.layers.Dense(2, name="head")])
    keras_path = tmp_path / "m.keras"
    model.save(keras_path)
    case = models.load_model(str(keras_path), "infer", batch_size=4)
    assert np.asarray(case.step()).shape == (4, 2)

    saved = tmp_path / "saved"
    model.export(str(saved))
    case = models.load_model(str(saved), "infer", batch_size=3)
    outputs = tf.nest.flatten(case.step())
    assert outputs[0].shape == (3, 2)
    assert case.concrete_function() is not None
    with pytest.raises(UserError, match="inference only"):
        models.load_model(str(saved), "train")
    with pytest.raises(UserError, match=r"no saved_model\.pb"):
        models.load_model(str(tmp_path))
