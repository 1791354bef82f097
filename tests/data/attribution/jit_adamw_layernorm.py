"""A `jit_compile=True` AdamW training step of a transformer block with
LayerNorm (issue 23): XLA's copies and the CPU tree-reduction rewrite's
reduce-window fusions carry no op_name of their own."""

import keras
import tensorflow as tf


def tfpgo_model(batch_size):
    layers = keras.layers
    inputs = keras.Input((32, 64), name="tokens")
    attention = layers.MultiHeadAttention(num_heads=4, key_dim=16, name="attention")
    x = layers.LayerNormalization(name="norm_attention")(inputs + attention(inputs, inputs))
    ffn = layers.Dense(256, activation="relu", name="ffn_up")(x)
    ffn = layers.Dense(64, name="ffn_down")(ffn)
    outputs = layers.LayerNormalization(name="norm_ffn")(x + ffn)
    model = keras.Model(inputs, outputs)
    optimizer = keras.optimizers.AdamW(learning_rate=1e-3)
    tokens = tf.random.stateless_normal((batch_size, 32, 64), seed=(1, 2))
    target = tf.random.stateless_normal((batch_size, 32, 64), seed=(3, 4))

    @tf.function(jit_compile=True)
    def train_step(x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(x, training=True) - y))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=True))
        return loss

    return train_step, (tokens, target)
