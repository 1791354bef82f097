"""A small training step updated by `keras.optimizers.AdamW` (issue 23: the phase table puts
every update op under optimizer, whatever the optimizer's scope is named)."""

import keras
import tensorflow as tf


def tfpgo_model(batch_size):
    model = keras.Sequential(
        [keras.Input((32,)), keras.layers.Dense(64, activation="relu"), keras.layers.Dense(8)]
    )
    optimizer = keras.optimizers.AdamW(learning_rate=1e-3)
    x = tf.random.stateless_normal((batch_size, 32), seed=(1, 2))
    y = tf.random.stateless_normal((batch_size, 8), seed=(3, 4))

    @tf.function
    def train_step(x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(x, training=True) - y))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=True))
        return loss

    return train_step, (x, y)
