"""k3-backend-op: `keras.backend` functions with an exact `keras.ops` equivalent (before: tf.keras 2.15)."""

import numpy as np
from tensorflow.keras import backend as K

x = K.cast(np.array([[1.0, -2.0], [3.0, 4.0]]), "float32")  # a tensor: some K functions take no arrays
parts = [
    K.sum(x, axis=1),
    K.mean(x),
    K.max(x, axis=0, keepdims=True),
    K.concatenate([x, x]),  # K's default axis is -1, keras.ops' 0
    K.expand_dims(K.abs(x)),
    K.argmax(x),
    K.clip(x, 0.0, 2.0),
    K.maximum(x, 0.5),
    K.pow(x, 2),
    K.cumsum(x),
    K.softmax(x),
    K.cast(K.greater(x, 0.0), "float32"),
    K.square(x) * K.epsilon(),
    K.not_equal(x, 1.0),
    K.tile(x, [1, 2]),
    K.permute_dimensions(x, (1, 0)),
    # N-D: (2, 1, 2) . (2, 3) contracts the last axis with the first, as NumPy's dot does
    K.dot(K.expand_dims(x, 1), K.cast(np.arange(6).reshape(2, 3), "float32")),
    [float(K.dtype(x) == "float32")],
]
RESULT = np.concatenate([np.ravel(np.asarray(p, dtype="float64")) for p in parts])
EXPECTED = [
    *[-1.0, 7.0, 1.5, 3.0, 4.0, 1.0, -2.0, 1.0, -2.0, 3.0, 4.0, 3.0, 4.0, 1.0, 2.0, 3.0, 4.0, 0.0, 1.0],
    *[1.0, 0.0, 2.0, 2.0, 1.0, 0.5, 3.0, 4.0, 1.0, 4.0, 9.0, 16.0, 1.0, -2.0, 4.0, 2.0],
    *[0.95257413, 0.04742587, 0.26894142, 0.73105858, 1.0, 0.0, 1.0, 1.0, 1e-7, 4e-7, 9e-7, 1.6e-6],
    *[0.0, 1.0, 1.0, 1.0, 1.0, -2.0, 1.0, -2.0, 3.0, 4.0, 3.0, 4.0, 1.0, 3.0, -2.0, 4.0],
    *[-6.0, -7.0, -8.0, 12.0, 19.0, 26.0, 1.0],
]
