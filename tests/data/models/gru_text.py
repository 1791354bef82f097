"""A small Keras text GRU (Embedding -> GRU -> Dense, 10 tokens) as a
tfpgo_model hook. Its training step's loop gradient, traced outside XLA, sizes
its TensorLists at run time, which XLA refuses: the lowering traces it again
under jit_compile (tfpgo.mlir.compiled_step)."""

import tensorflow as tf


def tfpgo_model(batch_size):
    layers = tf.keras.layers
    tokens = tf.keras.Input((10,), dtype="int32")
    x = layers.Embedding(100, 8)(tokens)
    x = layers.GRU(16)(x)
    model = tf.keras.Model(tokens, layers.Dense(3)(x))
    ids = tf.random.stateless_uniform((batch_size, 10), (1, 2), 1, 100, dtype=tf.int32)
    return model, (ids,)
