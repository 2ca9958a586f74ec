"""k3-backend-op: `keras.backend` functions with an exact `keras.ops` equivalent (before: tf.keras 2.15)."""

import numpy as np
from keras import backend as K
import keras

x = keras.ops.cast(np.array([[1.0, -2.0], [3.0, 4.0]]), "float32")  # a tensor: some K functions take no arrays
parts = [
    keras.ops.sum(x, axis=1),
    keras.ops.mean(x),
    keras.ops.max(x, axis=0, keepdims=True),
    keras.ops.concatenate([x, x], axis=-1),  # K's default axis is -1, keras.ops' 0
    keras.ops.expand_dims(keras.ops.abs(x), axis=-1),
    keras.ops.argmax(x, axis=-1),
    keras.ops.clip(x, 0.0, 2.0),
    keras.ops.maximum(x, 0.5),
    keras.ops.power(x, 2),
    keras.ops.cumsum(x, axis=0),
    keras.ops.softmax(x),
    keras.ops.cast(keras.ops.greater(x, 0.0), "float32"),
    keras.ops.square(x) * K.epsilon(),
    keras.ops.not_equal(x, 1.0),
    keras.ops.tile(x, [1, 2]),
    keras.ops.transpose(x, (1, 0)),
    # N-D: (2, 1, 2) . (2, 3) contracts the last axis with the first, as NumPy's dot does
    keras.ops.dot(keras.ops.expand_dims(x, 1), keras.ops.cast(np.arange(6).reshape(2, 3), "float32")),
    [float(keras.ops.dtype(x) == "float32")],
]
RESULT = np.concatenate([np.ravel(np.asarray(p, dtype="float64")) for p in parts])
EXPECTED = [
    *[-1.0, 7.0, 1.5, 3.0, 4.0, 1.0, -2.0, 1.0, -2.0, 3.0, 4.0, 3.0, 4.0, 1.0, 2.0, 3.0, 4.0, 0.0, 1.0],
    *[1.0, 0.0, 2.0, 2.0, 1.0, 0.5, 3.0, 4.0, 1.0, 4.0, 9.0, 16.0, 1.0, -2.0, 4.0, 2.0],
    *[0.95257413, 0.04742587, 0.26894142, 0.73105858, 1.0, 0.0, 1.0, 1.0, 1e-7, 4e-7, 9e-7, 1.6e-6],
    *[0.0, 1.0, 1.0, 1.0, 1.0, -2.0, 1.0, -2.0, 3.0, 4.0, 3.0, 4.0, 1.0, 3.0, -2.0, 4.0],
    *[-6.0, -7.0, -8.0, 12.0, 19.0, 26.0, 1.0],
]
