"""A seeded training step with named arguments and a nest of outputs
(tfpgo.runtime tests): the test builds the same model, optimizer and batches
again from `build` and `batch`, and trains it both in TensorFlow and in IREE."""

import keras
import tensorflow as tf


def build():
    """The model, its optimizer and the training step, the same every call."""
    keras.utils.set_random_seed(7)
    model = keras.Sequential(
        [
            keras.Input((6,)),
            keras.layers.Dense(8, activation="tanh", name="hidden"),
            keras.layers.Dense(3, name="out"),
        ],
        name="runtime_train",
    )
    optimizer = keras.optimizers.Adam(learning_rate=0.05)

    @tf.function
    def train(features, target):
        with tf.GradientTape() as tape:
            logits = model(features, training=True)
            loss = tf.reduce_mean(tf.square(logits - target))
        gradients = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(gradients, model.trainable_variables, strict=True))
        return {"loss": loss, "logits": [logits]}

    return model, optimizer, train


def batch(batch_size, seed):
    """The `seed`-th batch: features and their target."""
    features = tf.random.stateless_normal((batch_size, 6), seed=(seed, 1))
    target = tf.random.stateless_normal((batch_size, 3), seed=(seed, 2))
    return features, target


def tfpgo_model(batch_size):
    _, _, train = build()
    return train, batch(batch_size, 0)
