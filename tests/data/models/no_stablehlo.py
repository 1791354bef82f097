"""A tf.function hook whose tf.Unique has no StableHLO lowering in TF 2.21."""

import tensorflow as tf


def tfpgo_model(batch_size):
    @tf.function
    def step(x):
        values, _ = tf.unique(tf.reshape(tf.cast(x * 3.0, tf.int32), [-1]))
        return tf.reduce_sum(values)

    return step, (tf.random.stateless_normal((batch_size, 8), seed=(1, 2)),)
