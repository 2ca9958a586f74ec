"""k3-save-format: `save_format="h5"` with a `.h5` path (before: tf.keras 2.15; run in a scratch folder)."""

import numpy as np
import keras

model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1, kernel_initializer="ones")])
model.save("k3_fixture_model.h5")
loaded = keras.models.load_model("k3_fixture_model.h5")
RESULT = loaded.predict(np.array([[1.0, 2.0]], dtype="float32"), verbose=0)
EXPECTED = [[3.0]]
