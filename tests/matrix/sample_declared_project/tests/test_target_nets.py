"""The library's own tests: they run on whatever `keras` the environment gives."""

from __future__ import annotations

import keras
import numpy as np
from target_nets import follow, target_of


def _model() -> keras.Model:
    inputs = keras.Input((3,))
    return keras.Model(inputs, keras.layers.Dense(2)(inputs))


def test_the_target_starts_equal_and_follows() -> None:
    model = _model()
    target = target_of(model)
    x = np.ones((1, 3), dtype="float32")
    np.testing.assert_allclose(model.predict(x, verbose=0), target.predict(x, verbose=0), rtol=1e-6)
    model.set_weights([w + 1.0 for w in model.get_weights()])
    follow(target, model, 0.5)
    np.testing.assert_allclose(target.get_weights()[1], model.get_weights()[1] - 0.5)


def test_a_frozen_model_has_a_frozen_target() -> None:
    model = _model()
    model.trainable = False
    assert target_of(model).trainable is False
