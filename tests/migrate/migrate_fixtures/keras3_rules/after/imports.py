"""k3-import: tf.keras imports and `tf.keras.X` chains (before: tf.keras 2.15 / tf_keras; after: Keras 3)."""

import numpy as np
import keras
from keras.layers import Dense

inputs = keras.Input((3,))
hidden = Dense(2, kernel_initializer="ones", bias_initializer="zeros")(inputs)
# a constant initializer, reached through `keras` and through `tf.keras`
outputs = keras.layers.Dense(1, kernel_initializer=keras.initializers.Constant(0.5))(hidden)
model = keras.Model(inputs, outputs)
RESULT = model.predict(np.array([[1.0, 2.0, 3.0]], dtype="float32"), verbose=0)
EXPECTED = [[6.0]]
