"""tfpgo hook: one step mixing TensorFlow kernels, an XLA-compiled function and
XLA auto-clustering (`_XlaCompile`/`_XlaRun` ops).

    bazel run //:pgo -- --model tests/data/xla/mixed.py

The step is a plain `tf.function`. Its encoder runs as TensorFlow kernels, its
head is a `jit_compile=True` function (run by the executor as one call node),
and auto-clustering compiles the clusterable ops around the `tf.unique` that
XLA cannot compile. Importing this file turns auto-clustering on for the
process (the CPU needs `--tf_xla_cpu_global_jit`; TensorFlow reads the flags
when it first clusters a graph, after this import).
"""

import os

os.environ["TF_XLA_FLAGS"] = "--tf_xla_auto_jit=2 --tf_xla_cpu_global_jit"

import keras
import tensorflow as tf

tf.config.optimizer.set_jit("autoclustering")


def tfpgo_model(batch_size):
    keras.utils.set_random_seed(0)
    encoder = keras.layers.Dense(256, activation="tanh", name="encoder")
    head = keras.Sequential(
        [
            keras.Input((256,)),
            keras.layers.Dense(512, activation="relu", name="hidden"),
            keras.layers.Dense(256, name="logits"),
        ],
        name="head",
    )

    @tf.function(jit_compile=True)
    def compiled_head(features):
        return tf.nn.softmax(head(features))

    @tf.function
    def mixed_step(x):
        features = encoder(x)
        probabilities = compiled_head(features)
        buckets, _ = tf.unique(tf.reshape(tf.cast(features > 0.5, tf.int32), [-1]))
        scale = tf.cast(tf.reduce_sum(buckets), tf.float32) + 1.0
        return tf.reduce_sum(probabilities * features, axis=1) / scale

    return mixed_step, (tf.random.stateless_normal((batch_size, 256), seed=(0, 4)),)
