"""A tf.function hook that draws a weight inside its step: a random op, which
TensorFlow's lowering draws with other bits than TensorFlow's kernel."""

import tensorflow as tf


def tfpgo_model(batch_size):
    @tf.function
    def step(x):
        w = tf.random.stateless_normal((16, 16), (3, 4))
        return tf.matmul(x, w)

    return step, (tf.random.stateless_normal((batch_size, 16), seed=(1, 2)),)
