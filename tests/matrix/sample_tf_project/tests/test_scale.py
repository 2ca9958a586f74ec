"""The library's own tests: they run on whatever `tensorflow.keras` the environment gives."""

from __future__ import annotations

import numpy as np
from scaled import Scale, copies, scaled_model
from tensorflow import keras


def test_scale_multiplies_by_gain_and_factor() -> None:
    layer = Scale(3.0)
    x = np.ones((2, 4), dtype="float32")
    np.testing.assert_allclose(np.asarray(layer(x)), 3.0 * x)


def test_config_round_trip() -> None:
    layer = Scale(0.5, name="half")
    again = Scale.from_config(layer.get_config())
    assert again.factor == 0.5 and again.name == "half"


def test_copies_predict_like_the_original_and_own_their_weights() -> None:
    model = scaled_model()
    x = np.random.RandomState(0).rand(3, 4).astype("float32")
    (copy,) = copies(model, 1)
    assert isinstance(copy.layers[1], Scale) and copy.layers[1].factor == 2.0
    np.testing.assert_allclose(model.predict(x, verbose=0), copy.predict(x, verbose=0), rtol=1e-5, atol=1e-6)
    copy.set_weights([w + 1.0 for w in copy.get_weights()])
    assert not np.allclose(model.get_weights()[0], copy.get_weights()[0])


def test_saved_model_file_loads_back(tmp_path) -> None:  # type: ignore[no-untyped-def]
    model = scaled_model()
    path = str(
        tmp_path
        / ("m.keras" if keras.__name__.startswith("keras") and hasattr(keras, "saving") and keras.__version__ >= "3" else "m.h5")
    )
    model.save(path)
    loaded = keras.models.load_model(path)
    x = np.ones((1, 4), dtype="float32")
    np.testing.assert_allclose(model.predict(x, verbose=0), loaded.predict(x, verbose=0), rtol=1e-5)
