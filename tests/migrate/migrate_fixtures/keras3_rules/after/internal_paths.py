"""k3-import: Keras 2's internal module paths (before: standalone Keras 2.3.1)."""

import numpy as np
from keras.layers import Layer
from keras.layers import Input
from keras.layers import concatenate
from keras.models import Model
from keras.utils import to_categorical


class Double(Layer):
    def call(self, inputs):
        return inputs * 2.0


a = Input((2,))
model = Model(a, concatenate([Double()(a), a]))
RESULT = np.concatenate([np.ravel(model.predict(np.array([[1.0, 2.0]]))), np.ravel(to_categorical([0, 2], 3))])
EXPECTED = [2.0, 4.0, 1.0, 2.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0]
