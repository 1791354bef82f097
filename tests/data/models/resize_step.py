"""A tf.function hook whose bilinear resize neither TensorFlow pass pipeline
lowers to StableHLO in TF 2.21 (tf.ResizeBilinear), and XLA compiles."""

import tensorflow as tf


def tfpgo_model(batch_size):
    kernel = tf.random.stateless_normal((3, 3, 3, 4), seed=(3, 4))

    @tf.function
    def step(x):
        big = tf.image.resize(x, (24, 24), method="bilinear")
        return tf.nn.relu(tf.nn.conv2d(big, kernel, 1, "SAME"))

    return step, (tf.random.stateless_normal((batch_size, 12, 12, 3), seed=(1, 2)),)
