"""A small attention + dense Keras model as a tfpgo_model hook, for the tests of
TensorFlow's default export pipeline. TFPGO_OPTIMIZER picks the step: `adam` or
`momentum` (SGD with momentum) train the model, anything else runs inference;
`tfpgo.models.keras_case` builds the step (its training step uses SGD, so a
training step with another optimizer is written here as a tf.function)."""

import os

import keras
import tensorflow as tf


def _model():
    inputs = keras.Input((8, 16), name="tokens")
    attended = keras.layers.MultiHeadAttention(2, 8, name="attention")(inputs, inputs)
    x = keras.layers.LayerNormalization(name="norm")(inputs + attended)
    x = keras.layers.Dense(32, activation="relu", name="hidden")(x)
    outputs = keras.layers.Dense(4, name="out")(keras.layers.Flatten()(x))
    return keras.Model(inputs, outputs, name="net")


def tfpgo_model(batch_size):
    model = _model()
    tokens = tf.random.stateless_normal((batch_size, 8, 16), seed=(1, 2))
    choice = os.environ.get("TFPGO_OPTIMIZER", "")
    if choice not in ("adam", "momentum"):
        return model, (tokens,)
    optimizer = (
        keras.optimizers.Adam(1e-3)
        if choice == "adam"
        else keras.optimizers.SGD(1e-3, momentum=0.9)
    )
    target = tf.random.stateless_normal((batch_size, 4), seed=(3, 4))

    @tf.function
    def train(x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(x, training=True) - y))
        variables = model.trainable_variables
        optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables, strict=True))
        return loss

    return train, (tokens, target)
