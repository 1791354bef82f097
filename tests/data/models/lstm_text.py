"""A small Keras text LSTM as the issue's model is built (Embedding ->
LSTM(sequences) -> LSTM -> Dense), 8 tokens, as a tfpgo_model hook: its last
layer's loop is the one IREE 3.13 crashed on (tfpgo.mlir.iree_loops)."""

import tensorflow as tf


def tfpgo_model(batch_size):
    layers = tf.keras.layers
    tokens = tf.keras.Input((8,), dtype="int32")
    x = layers.Embedding(50, 8)(tokens)
    x = layers.LSTM(12, return_sequences=True)(x)
    x = layers.LSTM(12)(x)
    model = tf.keras.Model(tokens, layers.Dense(3)(x))
    ids = tf.random.stateless_uniform((batch_size, 8), (1, 2), 1, 50, dtype=tf.int32)
    return model, (ids,)
