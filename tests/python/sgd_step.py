"""A real TensorFlow training step for the compiled-step tests: plain SGD on one
weight matrix, a step counter it writes, and a variable it only reads."""

import numpy as np


def sgd_step():
    import tensorflow as tf

    weights = tf.Variable(np.arange(6, dtype=np.float32).reshape(3, 2), name="weights")
    steps = tf.Variable(0, dtype=tf.int64, name="steps")
    scale = tf.Variable(2.0, name="scale")  # read, never written

    @tf.function
    def step(x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tf.matmul(x, weights) * scale)
        weights.assign_sub(0.5 * tape.gradient(loss, weights))
        steps.assign_add(1)
        return loss

    x = tf.constant(np.ones((1, 3), np.float32))
    step(x)  # a step that ran: TensorFlow knows its function
    return step, (x,), (weights, steps, scale)
