"""What Keras 3 removed: reported by rule, with the fix (not run)."""

import numpy as np
import tensorflow as tf
from tensorflow.keras import backend as K
from tensorflow.keras.preprocessing.image import ImageDataGenerator


def build(gen):
    x = tf.keras.Input((3,))
    h = tf.keras.layers.Dense(4)(x)
    total = tf.reduce_sum(h, axis=1)
    m = tf.keras.Model(x, [h, total])
    m.add_loss(K.mean(h))
    m.add_metric(total, name="total")
    m.compile(optimizer=tf.keras.optimizers.SGD(learning_rate=0.1, decay=1e-4), loss="mse")
    m.fit_generator(gen, 10, workers=4, use_multiprocessing=True)
    m.save("export_dir")
    m.save(path, save_format="tf")
    m.reset_states()
    f = K.function([x], [h])
    K.set_value(m.optimizer.lr, 0.01)
    r = K.sqrt(h)
    s = K.sum(h, *axes)
    lam = tf.keras.layers.Lambda(lambda t: tf.reduce_mean(t, axis=1))
    shape = K.int_shape(h)
    embed = tf.keras.layers.Embedding(10, 2, weights=[np.zeros((10, 2))])
    return ImageDataGenerator(rescale=1 / 255.0), f, r, s, lam, shape, embed
