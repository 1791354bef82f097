"""Built-in and user models: each builds and runs one inference and one training step."""

import os

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


def _lookup_saved_model(path):
    """A SavedModel like TensorFlow's StaticHashTableModule testdata (a string input
    of unknown rank) with a second, fully sized signature."""
    import tensorflow as tf

    class Lookup(tf.Module):
        def __init__(self):
            super().__init__()
            self.table = tf.lookup.StaticHashTable(
                tf.lookup.KeyValueTensorInitializer(["0", "1"], [10, 11], tf.string, tf.int64),
                default_value=-1,
            )

        @tf.function(input_signature=[tf.TensorSpec(None, tf.string, name="word")])
        def lookup(self, word):
            return self.table.lookup(word)

        @tf.function(input_signature=[tf.TensorSpec((None, 3), tf.int32, name="ids")])
        def total(self, ids):
            return tf.reduce_sum(ids, axis=1)

    module = Lookup()
    tf.saved_model.save(
        module, str(path), signatures={"serving_default": module.lookup, "total": module.total}
    )


def test_saved_model_signature_and_example_inputs(tmp_path):
    from tfpgo.models.user import SignatureChoice

    saved = tmp_path / "lookup"
    _lookup_saved_model(saved)
    with pytest.raises(UserError) as error:
        models.load_model(str(saved), "infer", 2)
    assert str(error.value) == (
        f"{saved}: input 'word' (string) has an unknown rank; give example inputs with "
        "--input word=SHAPE[:DTYPE], e.g. --input word=4"
    )
    case = models.load_model(str(saved), "infer", 2, SignatureChoice(inputs=("word=4",)))
    assert case.step()["output_0"].numpy().tolist() == [10, 11, -1, -1]  # "0", "1", "2", "3"
    total = models.load_model(str(saved), "infer", 5, SignatureChoice("total"))
    assert total.inputs[0].shape == (5, 3) and total.inputs[0].dtype.name == "int32"
    assert "(total)" in total.description
    with pytest.raises(UserError) as error:
        models.load_model(str(saved), "infer", 2, SignatureChoice("serve"))
    assert str(error.value).endswith(
        "no signature 'serve'; it has serving_default, total: choose one with --signature NAME"
    )
    for inputs, message in (
        (("words=4",), "--input words: signature 'serving_default' of .* its inputs: word"),
        (("word=4:strng",), "--input word: unknown dtype 'strng'"),
        (("word",), "--input word: expected NAME=SHAPE"),
    ):
        with pytest.raises(UserError, match=message):
            models.load_model(str(saved), "infer", 2, SignatureChoice(inputs=inputs))
    with pytest.raises(UserError, match=r"shape \[2, 2\] does not fit"):
        models.load_model(str(saved), "infer", 2, SignatureChoice("total", ("ids=2x2",)))


TF_SRC = os.environ.get("TF_SRC", "")


@pytest.mark.skipif(not TF_SRC, reason="set TF_SRC to a TensorFlow source tree")
def test_every_saved_model_of_tensorflows_testdata_runs_or_is_one_error_line():
    """tensorflow/cc/saved_model/testdata: each SavedModel profiles its step, or
    stops with one UserError line (never another exception)."""
    from pathlib import Path

    from tfpgo.models.user import SAVED_MODEL_FILES, SignatureChoice

    root = Path(TF_SRC) / "tensorflow" / "cc" / "saved_model" / "testdata"
    found = sorted({p.parent for name in SAVED_MODEL_FILES for p in root.rglob(name)})
    assert len(found) >= 15
    ran, refused = [], []
    for directory in found:
        try:
            models.load_model(str(directory), "infer", 2).step()
            ran.append(str(directory.relative_to(root)))
        except UserError as error:
            assert "\n" not in str(error) and str(error).startswith(str(directory))
            refused.append(str(directory.relative_to(root)))
    assert {"half_plus_two_pbtxt/00000123", "x_plus_y_v2_debuginfo", "AssetModule"} <= set(ran)
    assert {"StaticHashTableModule", "CyclicModule", "bert1"} <= set(refused)
    table = root / "StaticHashTableModule"
    case = models.load_model(str(table), "infer", 2, SignatureChoice(inputs=("word=4",)))
    assert case.step()["output_0"].shape == (4,)
