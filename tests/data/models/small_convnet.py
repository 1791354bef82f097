"""A small conv + dense Keras model as a tfpgo_model hook (lowering tests).

Biases start non-zero, as in a trained model: a zero bias is folded away by the
lowering, and the time of its (frozen) read then has no op left to sit on (the
report lists it as lost).
"""

import keras
import tensorflow as tf


def tfpgo_model(batch_size):
    bias = keras.initializers.RandomNormal(seed=7)
    inputs = keras.Input((16, 16, 3), name="image")
    x = keras.layers.Conv2D(8, 3, activation="relu", bias_initializer=bias, name="conv")(inputs)
    x = keras.layers.MaxPooling2D(name="pool")(x)
    x = keras.layers.Flatten(name="flat")(x)
    x = keras.layers.Dense(16, activation="relu", bias_initializer=bias, name="hidden")(x)
    outputs = keras.layers.Dense(4, bias_initializer=bias, name="out")(x)
    model = keras.Model(inputs, outputs, name="convnet")
    return model, (tf.random.stateless_normal((batch_size, 16, 16, 3), seed=(1, 2)),)
