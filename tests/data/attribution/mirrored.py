"""A tf.distribute.MirroredStrategy training step over two logical CPUs (issue 23):
the graph partitioner sends values between the replicas as `<src>/_<k>` and
Grappler's dependency optimizer groups cross-device control edges into
`GroupCrossDeviceControlEdges_<k>/<node>`. The logical devices are made when the
hook runs: run it in a fresh process (`pgo` is one)."""

import keras
import tensorflow as tf


def tfpgo_model(batch_size):
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration(), tf.config.LogicalDeviceConfiguration()]
    )
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    with strategy.scope():
        model = keras.Sequential(
            [keras.Input((64,)), keras.layers.Dense(128, activation="relu"), keras.layers.Dense(10)]
        )
        optimizer = keras.optimizers.SGD(1e-2)
    x = tf.random.stateless_normal((batch_size, 64), seed=(1, 2))
    y = tf.random.stateless_normal((batch_size, 10), seed=(3, 4))

    def replica_step(x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(x, training=True) - y))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=True))
        return loss

    @tf.function
    def train_step(x, y):
        losses = strategy.run(replica_step, args=(x, y))
        return strategy.reduce(tf.distribute.ReduceOp.MEAN, losses, axis=None)

    return train_step, (x, y)
