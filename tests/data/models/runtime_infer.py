"""A seeded inference step whose second argument is a dict, and whose outputs
nest (tfpgo.runtime tests): the test builds the same step again."""

import keras
import tensorflow as tf


def build():
    keras.utils.set_random_seed(3)
    model = keras.Sequential(
        [
            keras.Input((8, 8, 2)),
            keras.layers.Conv2D(4, 3, activation="relu", name="conv"),
            keras.layers.Flatten(name="flat"),
            keras.layers.Dense(5, name="out"),
        ],
        name="runtime_infer",
    )

    @tf.function
    def infer(image, options):
        logits = model(image, training=False) * options["scale"] + options["shift"]
        return {"probabilities": tf.nn.softmax(logits), "logits": logits}

    return infer


def example(batch_size):
    image = tf.random.stateless_normal((batch_size, 8, 8, 2), seed=(5, 1))
    options = {"shift": tf.constant(0.5), "scale": tf.constant(2.0)}
    return image, options


def tfpgo_model(batch_size):
    return build(), example(batch_size)
