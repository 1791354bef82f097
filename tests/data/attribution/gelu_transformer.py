"""A transformer block with a GELU feed-forward (issue 23): in its training step
Grappler's arithmetic optimizer composes the GELU gradient's unary chain into
one `_UnaryOpsComposition` kernel named `<root>/unary_ops_composition`."""

import keras
import tensorflow as tf


def tfpgo_model(batch_size):
    layers = keras.layers
    inputs = keras.Input((32, 64), name="tokens")
    attention = layers.MultiHeadAttention(num_heads=4, key_dim=16, name="attention")
    x = layers.LayerNormalization(name="norm_attention")(inputs + attention(inputs, inputs))
    ffn = layers.Dense(256, activation="gelu", name="ffn_up")(x)
    ffn = layers.Dense(64, name="ffn_down")(ffn)
    outputs = layers.LayerNormalization(name="norm_ffn")(x + ffn)
    model = keras.Model(inputs, outputs)
    return model, tf.random.stateless_normal((batch_size, 32, 64), seed=(1, 2))
