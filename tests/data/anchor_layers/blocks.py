"""MobileNetV2's inverted residual blocks in small (record.py records it): 1x1
expansions, depthwise 3x3s and 1x1 projections, each with a batch norm (trained
looking: offsets and means not zero) and ReLU6, and residual adds."""

import tensorflow as tf


def tfpgo_model(batch_size):
    layers = tf.keras.layers
    moments = tf.keras.initializers.RandomUniform(0.1, 0.5, seed=3)

    def norm(name):
        return layers.BatchNormalization(
            beta_initializer=moments, moving_mean_initializer=moments, name=name
        )

    images = tf.keras.Input((16, 16, 3))
    x = layers.Conv2D(8, 3, 2, "same", use_bias=False, name="stem")(images)
    x = layers.ReLU(6.0)(norm("stem_bn")(x))
    for block in range(2):
        y = layers.Conv2D(24, 1, use_bias=False, name=f"expand{block}")(x)
        y = layers.ReLU(6.0)(norm(f"expand_bn{block}")(y))
        y = layers.DepthwiseConv2D(3, padding="same", use_bias=False, name=f"depthwise{block}")(y)
        y = layers.ReLU(6.0)(norm(f"depthwise_bn{block}")(y))
        y = layers.Conv2D(8, 1, use_bias=False, name=f"project{block}")(y)
        x = x + norm(f"project_bn{block}")(y)
    x = layers.GlobalAveragePooling2D()(x)
    model = tf.keras.Model(images, layers.Dense(10, name="head")(x))
    return model, (tf.random.stateless_normal((batch_size, 16, 16, 3), (1, 2)),)
