"""k3-optimizer-lr: `lr=` of a Keras optimizer (before: standalone Keras 2.3.1)."""

import keras
import numpy as np

model = keras.models.Sequential(
    [keras.layers.Dense(1, input_shape=(1,), kernel_initializer="zeros", bias_initializer="zeros")]
)
model.compile(optimizer=keras.optimizers.SGD(learning_rate=0.5), loss="mse")
# one step of SGD on (w * 1 + b - 2) ** 2 from w = b = 0: both gradients are -4, so w = b = 2
model.fit(np.array([[1.0]]), np.array([[2.0]]), epochs=1, verbose=0)
RESULT = np.concatenate([np.ravel(w) for w in model.get_weights()])
EXPECTED = [2.0, 2.0]
