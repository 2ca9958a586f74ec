"""A user library of Keras layers, written against `tensorflow.keras`.

`from tensorflow import keras` gives tf_keras (Keras 2) where
``TF_USE_LEGACY_KERAS=1`` is set and TensorFlow >= 2.16, Keras 3 otherwise:
the library's matrix table names that module (``expect.module``) so that every
environment is checked for the Keras the library really gets.
"""

from __future__ import annotations

from typing import Any, Dict, List

from tensorflow import keras

import compat_clone


@keras.utils.register_keras_serializable(package="scaled")
class Scale(keras.layers.Layer):
    """Multiplies its input by a learned per-feature gain times a fixed `factor`."""

    def __init__(self, factor: float = 2.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.factor = float(factor)

    def build(self, input_shape: Any) -> None:
        self.gain = self.add_weight(name="gain", shape=(int(input_shape[-1]),), initializer="ones")
        super().build(input_shape)

    def call(self, inputs: Any) -> Any:
        return inputs * self.gain * self.factor

    def get_config(self) -> Dict[str, Any]:
        return {**super().get_config(), "factor": self.factor}


def scaled_model(features: int = 4, factor: float = 2.0) -> Any:
    """A small functional model with a `Scale` layer."""
    inputs = keras.Input((features,))
    return keras.Model(inputs, keras.layers.Dense(2)(Scale(factor)(inputs)), name="scaled")


def copies(model: Any, n: int) -> List[Any]:
    """`n` independent copies of `model` with its weights, whatever Keras it comes from."""
    return [compat_clone.clone_model(model, copy_weights=True, name=f"{model.name}_{i}") for i in range(n)]
