"""Keras 3 and tf.keras / tf_keras 2.13+: a layer whose `get_config` does not round-trip is rebuilt from its constructor's arguments.

These Keras record what each layer's constructor received (`_auto_config`).
Where the config round trip fails, compat_clone rebuilds the layer from those
arguments and checks its weights against the source's before returning; where
they differ (or the arguments hold layers that would be shared) it refuses,
naming the layer and the `clone_function` escape. Native fails on both.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import compat_clone
from tests.clone.features import assert_same_predictions, data, family_name


def _model(K: Any, forgets: str) -> Any:
    class Forgetful(K.layers.Layer):  # type: ignore[misc,name-defined]
        def __init__(self, units: int, scale: float = 2.0, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.units, self.scale = units, scale

        def build(self, input_shape: Any) -> None:
            self.w = self.add_weight(shape=(int(input_shape[-1]), self.units), name="w")

        def call(self, x: Any) -> Any:
            return (x @ self.w) * self.scale

        def get_config(self) -> Any:
            config = {"name": self.name, "units": self.units, "scale": self.scale}
            del config[forgets]  # the bug: an argument the constructor needs is left out
            return config

    x = K.Input((3,))
    return K.models.Model(x, Forgetful(4, scale=3.0, name="forgetful")(x))


@pytest.fixture
def keras3(K: Any) -> Any:
    if family_name(K) == "keras2":
        pytest.skip("standalone Keras 2 records no constructor arguments")
    if getattr(K.layers.Dense(1), "_auto_config", None) is None:
        pytest.skip(f"Keras {K.__version__} does not record constructor arguments")
    return K


def test_rebuilt_from_constructor_arguments(keras3: Any) -> None:
    K = keras3
    model = _model(K, forgets="units")
    with pytest.raises(TypeError):
        K.models.clone_model(model)
    clone = compat_clone.clone_model(model, copy_weights=True)
    layer = clone.layers[-1]
    assert (layer.units, layer.scale, layer.name) == (4, 3.0, "forgetful")
    assert layer is not model.layers[-1]
    assert_same_predictions(model, clone, data((2, 3)))
    assert not np.shares_memory(np.asarray(layer.w.numpy()), np.asarray(model.layers[-1].w.numpy()))
    assert clone.get_weights()[0] is not model.get_weights()[0]


def test_refused_when_arguments_hold_a_layer(keras3: Any) -> None:
    K = keras3

    class Wrapper(K.layers.Layer):  # type: ignore[misc,name-defined]
        def __init__(self, inner: Any, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.inner = inner

        def call(self, x: Any) -> Any:
            return self.inner(x)

        def get_config(self) -> Any:
            return {"name": self.name}  # `inner` is missing

    x = K.Input((3,))
    model = K.models.Model(x, Wrapper(K.layers.Dense(2), name="wrapper")(x))
    # `native-exception-type`: the round trip's TypeError (no `inner`) goes on
    # as native lets it through, compat_clone's advice in a note.
    with pytest.raises(TypeError) as native:
        K.models.clone_model(model)
    with pytest.raises(TypeError) as info:
        compat_clone.clone_model(model)
    assert type(info.value) is type(native.value)
    message = "\n".join([str(info.value), *getattr(info.value, "__notes__", [])])
    assert "'wrapper'" in message and "clone_function" in message
