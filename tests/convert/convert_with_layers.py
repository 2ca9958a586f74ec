"""The layers module of ``ccgain``, the package of tests/convert/test_convert_with.py.

That test builds a wheel of a package ``ccgain`` holding this file as
``ccgain/layers.py``, as a project ships its custom layers, and installs it with
`compat-clone convert --with` where an old release reads the model;
tests/convert/convert_with_sources.py saves the model with it in tf.keras 2.15
(`import keras` is Keras 2.15 there). The same module is the Keras 3
counterpart where the model is rebuilt (`import keras` is Keras 3 there).
"""

from __future__ import annotations

from typing import Any, Dict

import keras


class Gain(keras.layers.Layer):  # type: ignore[misc,name-defined]
    """A learned per-feature gain and offset."""

    def __init__(self, units: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.units = units

    def build(self, input_shape: Any) -> None:
        self.gain = self.add_weight(name="gain", shape=(self.units,), initializer="ones")
        self.offset = self.add_weight(name="offset", shape=(self.units,), initializer="zeros")
        super().build(input_shape)

    def call(self, inputs: Any) -> Any:
        return inputs * self.gain + self.offset

    def get_config(self) -> Dict[str, Any]:
        return {**super().get_config(), "units": self.units}
