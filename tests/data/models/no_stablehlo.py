"""A tf.function hook no route lowers to StableHLO in TF 2.21: its string ops
have no lowering in tf-stablehlo or the XLA bridge passes, and TensorFlow's XLA
compiler refuses strings."""

import tensorflow as tf


def tfpgo_model(batch_size):
    @tf.function
    def step(x):
        return tf.reduce_sum(tf.strings.length(tf.strings.as_string(x)))

    return step, (tf.random.stateless_normal((batch_size, 8), seed=(1, 2)),)
