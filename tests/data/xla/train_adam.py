"""tfpgo hook: a Keras MLP training step (Adam) compiled by XLA (`jit_compile=True`).

    bazel run //:pgo -- --model tests/data/xla/train_adam.py --mode train

XLA copies a weight that a step both reads after its update and needs for an
input gradient (a snapshot of the variable, with no TF node in its metadata);
here only the small output layer needs one, so the matrix products dominate.
"""

import keras
import tensorflow as tf


def tfpgo_model(batch_size):
    keras.utils.set_random_seed(0)
    model = keras.Sequential(
        [
            keras.Input((512,)),
            keras.layers.Dense(1024, activation="relu", name="hidden"),
            keras.layers.Dense(10, name="logits"),
        ]
    )
    optimizer = keras.optimizers.Adam(1e-3)

    @tf.function(jit_compile=True)
    def train_step(x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(x, training=True) - y))
        variables = model.trainable_variables
        optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables, strict=True))
        return loss

    x = tf.random.stateless_normal((batch_size, 512), seed=(0, 1))
    y = tf.random.stateless_normal((batch_size, 10), seed=(0, 2))
    return train_step, (x, y)
