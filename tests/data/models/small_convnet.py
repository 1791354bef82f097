"""A small conv + dense Keras model as a tfpgo_model hook (lowering tests).

Untrained, its biases are zero: the lowering folds each bias add away, so the
test also covers records that ride onto the ops a lowering keeps.
"""

import keras
import tensorflow as tf


def tfpgo_model(batch_size):
    inputs = keras.Input((16, 16, 3), name="image")
    x = keras.layers.Conv2D(8, 3, activation="relu", name="conv")(inputs)
    x = keras.layers.MaxPooling2D(name="pool")(x)
    x = keras.layers.Flatten(name="flat")(x)
    x = keras.layers.Dense(16, activation="relu", name="hidden")(x)
    outputs = keras.layers.Dense(4, name="out")(x)
    model = keras.Model(inputs, outputs, name="convnet")
    return model, (tf.random.stateless_normal((batch_size, 16, 16, 3), seed=(1, 2)),)
