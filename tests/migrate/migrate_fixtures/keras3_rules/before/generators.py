"""k3-generator-method: `fit_generator` & co. (before: standalone Keras 2.3.1)."""

import keras
import numpy as np


def batches():
    while True:
        yield np.array([[1.0]]), np.array([[2.0]])


model = keras.models.Sequential(
    [keras.layers.Dense(1, input_shape=(1,), kernel_initializer="zeros", bias_initializer="zeros")]
)
model.compile(optimizer=keras.optimizers.SGD(learning_rate=0.5), loss="mse")
model.fit_generator(batches(), 1, epochs=1, verbose=0)  # one step: w = b = 2
loss = model.evaluate_generator(batches(), steps=1)
predictions = model.predict_generator(generator=batches(), steps=1)
RESULT = [float(loss), float(np.ravel(predictions)[0])]
EXPECTED = [4.0, 4.0]
