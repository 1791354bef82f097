"""tfpgo hook: a small Keras CNN inference step compiled by XLA (`jit_compile=True`).

bazel run //:pgo -- --model tests/data/xla/infer.py
"""

import keras
import tensorflow as tf


def tfpgo_model(batch_size):
    keras.utils.set_random_seed(0)
    model = keras.Sequential(
        [
            keras.Input((16, 16, 3)),
            keras.layers.Conv2D(16, 3, padding="same", activation="relu", name="conv"),
            keras.layers.MaxPooling2D(name="pool"),
            keras.layers.Flatten(name="flatten"),
            keras.layers.Dense(128, activation="relu", name="hidden"),
            keras.layers.Dense(10, name="logits"),
        ]
    )

    @tf.function(jit_compile=True)
    def infer_step(images):
        return tf.nn.softmax(model(images, training=False))

    return infer_step, (tf.random.stateless_normal((batch_size, 16, 16, 3), seed=(0, 3)),)
