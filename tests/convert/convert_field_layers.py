"""A package's own layers module, as projects ship it next to their saved models.

The custom layer of tests/convert/test_convert_field.py's files: TensorFlow 2.4 builds
and saves them with it (tests/convert/convert_field_sources.py), and `compat-clone
convert --custom-objects` is given this file, or a package holding it, which
each environment imports with its own Keras: tf.keras in TensorFlow 2.4 (no
`keras` package there), Keras 3 where the model is rebuilt.
"""

from __future__ import annotations

from typing import Any, Dict

try:
    import keras
except ImportError:  # TensorFlow <= 2.5: tf.keras only
    from tensorflow import keras


class Gain(keras.layers.Layer):  # type: ignore[misc,name-defined]
    """A learned per-feature gain."""

    def __init__(self, units: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.units = units

    def build(self, input_shape: Any) -> None:
        self.gain = self.add_weight(name="gain", shape=(self.units,), initializer="ones")
        super().build(input_shape)

    def call(self, inputs: Any) -> Any:
        return inputs * self.gain

    def get_config(self) -> Dict[str, Any]:
        return {**super().get_config(), "units": self.units}


def halve(t: Any) -> Any:
    """What the '<lambda>' activation of the field's lambda file computed."""
    return t * 0.5
