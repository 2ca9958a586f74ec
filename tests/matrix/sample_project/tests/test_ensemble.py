"""The user project's own tests: they run on whatever Keras the environment has."""

from __future__ import annotations

import os

import numpy as np
import pytest
from ensemble import ensemble


def _keras():
    try:
        import keras
    except ImportError:  # pragma: no cover - a tf.keras-only environment
        from tensorflow import keras
    return keras


def _model():
    keras = _keras()
    inputs = keras.Input((4,))
    outputs = keras.layers.Dense(3)(keras.layers.Dense(5, activation="relu")(inputs))
    return keras.Model(inputs, outputs, name="base")


def test_copies_share_starting_weights_but_not_variables() -> None:
    model = _model()
    copies = ensemble(model, 2)
    assert [c.name for c in copies] == ["base_0", "base_1"]
    for copy in copies:
        for a, b in zip(model.get_weights(), copy.get_weights()):
            np.testing.assert_array_equal(a, b)
    copies[0].set_weights([w + 1.0 for w in copies[0].get_weights()])
    np.testing.assert_array_equal(model.get_weights()[0], copies[1].get_weights()[0])


def test_copies_predict_like_the_original() -> None:
    model = _model()
    x = np.random.RandomState(0).rand(2, 4).astype("float32")
    (copy,) = ensemble(model, 1)
    np.testing.assert_allclose(model.predict(x, verbose=0), copy.predict(x, verbose=0), rtol=1e-5, atol=1e-6)


def test_rejects_zero_copies() -> None:
    with pytest.raises(ValueError, match="n >= 1"):
        ensemble(_model(), 0)


def test_runs_where_the_matrix_says() -> None:
    # The matrix runner tells every environment its name. That the environment
    # loaded the Keras it claims needs no test here: compat_clone's pytest
    # plugin checks it before the session starts.
    assert os.environ.get("COMPAT_CLONE_ENV"), "run me with `compat-clone matrix -- pytest`"
