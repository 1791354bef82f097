"""A tf.function hook with a tf.while_loop that writes a TensorArray: a loop over
TensorLists, which only TensorFlow's XLA bridge passes lower to StableHLO."""

import tensorflow as tf


def tfpgo_model(batch_size):
    weight = tf.constant(tf.random.stateless_normal((16, 16), seed=(3, 4)) * 0.3)

    @tf.function
    def step(x):
        states = tf.TensorArray(tf.float32, size=6)

        def body(i, h, states):
            h = tf.tanh(tf.matmul(h, weight) + x)
            return i + 1, h, states.write(i, h)

        _, _, states = tf.while_loop(lambda i, *_: i < 6, body, (0, tf.zeros_like(x), states))
        return tf.reduce_sum(states.stack(), axis=0)

    return step, (tf.random.stateless_normal((batch_size, 16), seed=(1, 2)),)
