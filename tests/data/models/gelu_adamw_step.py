"""A tf.function hook: a one-block transformer's training step with GELU,
LayerNormalization and AdamW, as written. XLA's gradient of the GELU computes
exp(-x²) again, as the forward Erfc's expansion did, and IREE's CSE merges the
two (tfpgo.mlir.merged_work)."""

import tensorflow as tf


def tfpgo_model(batch_size):
    layers = tf.keras.layers
    tokens = tf.keras.Input((8, 16))
    y = layers.LayerNormalization(name="norm")(tokens)
    y = layers.Dense(32, activation="gelu", name="mlp_up")(y)
    x = tokens + layers.Dense(16, name="mlp_down")(y)
    model = tf.keras.Model(tokens, layers.Dense(4, name="head")(layers.Flatten()(x)))
    optimizer = tf.keras.optimizers.AdamW(learning_rate=1e-3)
    optimizer.build(model.trainable_variables)
    inputs = tf.random.stateless_normal((batch_size, 8, 16), (1, 2))
    labels = tf.random.stateless_uniform((batch_size,), (3, 4), 0, 4, dtype=tf.int32)

    @tf.function
    def train_step(x, y):
        with tf.GradientTape() as tape:
            logits = model(x, training=True)
            loss = tf.reduce_mean(
                tf.keras.losses.sparse_categorical_crossentropy(y, logits, from_logits=True)
            )
        variables = model.trainable_variables
        optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables, strict=True))
        return loss

    return train_step, (inputs, labels)
