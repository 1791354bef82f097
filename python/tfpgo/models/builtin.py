"""Built-in models, each as an inference step or a training step.

Sizes are chosen so a few profiled steps take seconds on a laptop CPU, except
ResNet50 (the realistic, large case used by the benchmark). Layer names are
explicit so node names in traces and MLIR are stable across runs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tfpgo.models.case import Mode, ModelCase

DEFAULT_MODEL = "mlp"

# name -> one-line description (also shown by `--help` of the tools).
BUILTIN_MODELS: dict[str, str] = {
    "mlp": "MLP 1024-4096-64-10; the 1024x4096 dense layer takes ~90% of the FLOPs",
    "cnn": "small CNN on 32x32x3; the 16->64 channel 3x3 conv dominates",
    "resnet50": "keras.applications.ResNet50, weights=None, 224x224x3 (large)",
    "transformer": "one Transformer encoder block: MultiHeadAttention, LayerNorm, FFN",
    "rnn": "GRU(128) over 32 steps (a tf.while loop at run time) and a dense head",
}


def build(name: str, mode: Mode, batch_size: int) -> ModelCase:
    """The ModelCase of a built-in model (`name` must be in BUILTIN_MODELS)."""
    import keras  # heavy: imported only when a model is built (seeded by load_model)

    model, input_shapes = _BUILDERS[name](keras)
    inputs = example_inputs(input_shapes, batch_size)
    return keras_case(name, model, inputs, mode, batch_size, BUILTIN_MODELS[name])


def example_inputs(shapes: list[tuple[int, ...]], batch_size: int) -> tuple[Any, ...]:
    """Deterministic float32 inputs of `shapes` with the batch dimension prepended."""
    import numpy as np
    import tensorflow as tf

    rng = np.random.default_rng(0)
    return tuple(
        tf.constant(rng.standard_normal((batch_size, *shape), dtype=np.float32)) for shape in shapes
    )


def keras_case(
    name: str,
    model: Any,
    inputs: tuple[Any, ...],
    mode: Mode,
    batch_size: int,
    description: str = "",
) -> ModelCase:
    """Wraps a Keras model as a tf.function inference or training step.

    Training minimizes the mean squared output against a fixed random target
    with SGD: the loss does not matter for profiling, the backward pass and the
    optimizer update do.
    """
    import tensorflow as tf

    def call(xs: tuple[Any, ...], training: bool) -> Any:
        return model(xs[0] if len(xs) == 1 else list(xs), training=training)

    if mode is Mode.INFER:

        @tf.function(jit_compile=False)
        def infer(*xs: Any) -> Any:
            return call(xs, training=False)

        return ModelCase(name, mode, batch_size, infer, inputs, description)

    import keras

    optimizer = keras.optimizers.SGD(learning_rate=1e-3)
    target = tf.random.stateless_normal(tf.shape(call(inputs, training=False)), seed=(1, 2))

    @tf.function(jit_compile=False)
    def train(*args: Any) -> Any:
        *xs, goal = args
        with tf.GradientTape() as tape:
            # float32 loss under a mixed-precision policy too (a no-op cast otherwise)
            outputs = tf.cast(call(tuple(xs), training=True), goal.dtype)
            loss = tf.reduce_mean(tf.square(outputs - goal))
        variables = model.trainable_variables
        optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables, strict=True))
        return loss

    return ModelCase(name, mode, batch_size, train, (*inputs, target), description)


def _mlp(keras: Any) -> tuple[Any, list[tuple[int, ...]]]:
    layers = keras.layers
    inputs = keras.Input((1024,), name="features")
    x = layers.Dense(4096, activation="relu", name="wide")(inputs)
    x = layers.Dense(64, activation="relu", name="narrow")(x)
    outputs = layers.Dense(10, name="logits")(x)
    return keras.Model(inputs, outputs, name="mlp"), [(1024,)]


def _cnn(keras: Any) -> tuple[Any, list[tuple[int, ...]]]:
    layers = keras.layers
    inputs = keras.Input((32, 32, 3), name="image")
    x = layers.Conv2D(16, 3, padding="same", activation="relu", name="conv_in")(inputs)
    x = layers.MaxPooling2D(name="pool")(x)
    x = layers.Conv2D(64, 3, padding="same", activation="relu", name="conv_big")(x)
    x = layers.GlobalAveragePooling2D(name="gap")(x)
    outputs = layers.Dense(10, name="logits")(x)
    return keras.Model(inputs, outputs, name="cnn"), [(32, 32, 3)]


def _resnet50(keras: Any) -> tuple[Any, list[tuple[int, ...]]]:
    model = keras.applications.ResNet50(weights=None, input_shape=(224, 224, 3))
    return model, [(224, 224, 3)]


def _transformer(keras: Any) -> tuple[Any, list[tuple[int, ...]]]:
    layers = keras.layers
    seq, width = 64, 128
    inputs = keras.Input((seq, width), name="tokens")
    attention = layers.MultiHeadAttention(num_heads=4, key_dim=32, name="attention")
    x = layers.LayerNormalization(name="norm_attention")(inputs + attention(inputs, inputs))
    ffn = layers.Dense(512, activation="relu", name="ffn_up")(x)
    ffn = layers.Dense(width, name="ffn_down")(ffn)
    outputs = layers.LayerNormalization(name="norm_ffn")(x + ffn)
    return keras.Model(inputs, outputs, name="transformer"), [(seq, width)]


def _rnn(keras: Any) -> tuple[Any, list[tuple[int, ...]]]:
    layers = keras.layers
    inputs = keras.Input((32, 64), name="sequence")
    x = layers.GRU(128, name="gru")(inputs)
    outputs = layers.Dense(10, name="logits")(x)
    return keras.Model(inputs, outputs, name="rnn"), [(32, 64)]


_BUILDERS: dict[str, Callable[[Any], tuple[Any, list[tuple[int, ...]]]]] = {
    "mlp": _mlp,
    "cnn": _cnn,
    "resnet50": _resnet50,
    "transformer": _transformer,
    "rnn": _rnn,
}
