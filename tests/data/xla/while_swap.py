"""A jit-compiled while loop that swaps two tensors each iteration: XLA's copy
insertion adds copies in the loop body between the body's parameter and its
root tuple, which carry no op_name and have no named instruction on either
side: the XLA-inserted bucket of a real trace."""

import tensorflow as tf


def tfpgo_model(batch_size):
    @tf.function(jit_compile=True)
    def step(x, y, n):
        def body(i, a, b):
            return i + 1, b, a

        _, a, b = tf.while_loop(lambda i, a, b: i < n, body, (tf.constant(0), x, y))
        return tf.matmul(a, b, transpose_b=True)

    x = tf.random.stateless_normal((batch_size, 256), seed=(1, 2))
    y = tf.random.stateless_normal((batch_size, 256), seed=(3, 4))
    return step, (x, y, tf.constant(5))
