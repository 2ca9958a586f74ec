"""A user's model code, as `compat-clone convert WEIGHTS.h5 --model tests/convert/convert_builders.py:build_plain` runs it.

`build_plain()` builds convert_sources.py's plain model (Conv1D, pooling,
BatchNormalization, Dense) with the Keras 2 of the environment it runs in:
standalone Keras 2.x or tf.keras 2.x as `keras`, tf_keras where `keras` is
Keras 3. Its weights are drawn from a fixed seed;
a weights file loaded afterwards replaces them. `build_sequential()` is the same
layers in a Sequential model, `build_nested()` holds the
convolution and pooling in a nested Sequential model, `build_subclassed()` is a
Model subclass holding the same layers as attributes.

The `*_keras3` functions are the same models written for Keras 3 (`import keras`,
3.x): the code a migrated project has, into which `convert --model` places the old
weights by structure.
"""

from __future__ import annotations

import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
from convert_sources import _seeded, plain_model  # noqa: E402


def _keras() -> Any:
    import keras

    if keras.__version__.startswith("3."):  # TensorFlow 2.16+: Keras 2 is tf_keras
        import tf_keras

        return tf_keras
    return keras


def build_plain() -> Any:
    """The plain model, built by this environment's Keras 2."""
    return plain_model(_keras())


def keras_version() -> str:
    """The version of the Keras `build_plain` builds with."""
    return str(_keras().__version__)


def _nested(keras: Any) -> Any:
    inputs = keras.layers.Input((6, 4))
    features = keras.Sequential([keras.layers.Conv1D(5, 3, activation="relu"), keras.layers.GlobalAveragePooling1D()])
    x = keras.layers.BatchNormalization()(features(inputs))
    return keras.models.Model(inputs, keras.layers.Dense(3, activation="softmax")(x))


def _sequential(keras: Any) -> Any:
    return keras.Sequential(
        [
            keras.layers.Conv1D(5, 3, activation="relu", input_shape=(6, 4)),
            keras.layers.GlobalAveragePooling1D(),
            keras.layers.BatchNormalization(),
            keras.layers.Dense(3, activation="softmax"),
        ]
    )


def _subclassed(keras: Any) -> Any:
    class Net(keras.Model):  # type: ignore[misc, name-defined]
        def __init__(self, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.conv = keras.layers.Conv1D(5, 3, activation="relu")
            self.pool = keras.layers.GlobalAveragePooling1D()
            self.norm = keras.layers.BatchNormalization()
            self.head = keras.layers.Dense(3, activation="softmax")

        def call(self, x: Any, training: Any = None) -> Any:
            return self.head(self.norm(self.pool(self.conv(x)), training=training))

    model = Net()
    model.predict(np.zeros((1, 6, 4), "float32"))  # builds it, in every Keras (standalone Keras 2 runs graphs)
    return model


def build_nested() -> Any:
    """The plain model's layers with the convolution and pooling in a nested Sequential model (Keras 2)."""
    model = _nested(_keras())
    _seeded(model, 8)
    return model


def build_sequential() -> Any:
    """The plain model's layers in a Sequential model (Keras 2)."""
    model = _sequential(_keras())
    _seeded(model, 10)
    return model


def build_subclassed() -> Any:
    """The plain model's layers held by a Model subclass (Keras 2), built by one call."""
    model = _subclassed(_keras())
    _seeded(model, 9)
    return model


def build_subclassed_either() -> Any:
    """`build_subclassed`'s model with whichever Keras `import keras` gives: Keras 2 where the weights were written,
    Keras 3 in the target (code that runs under both, as users' `import keras` code often does)."""
    import keras

    return _subclassed(keras)


def build_subclassed_drifted() -> Any:
    """`build_subclassed_either`, whose Keras 3 model computes another head (linear, not softmax): the same
    variables, other outputs."""
    import keras

    model = _subclassed(keras)
    if keras.__version__.startswith("3."):
        model.head.activation = keras.activations.linear
    return model


def _keras3() -> Any:
    import keras

    assert keras.__version__.startswith("3."), keras.__version__
    return keras


def build_plain_keras3() -> Any:
    """The plain model, written for Keras 3."""
    keras = _keras3()
    inputs = keras.Input((6, 4))
    x = keras.layers.Conv1D(5, 3, activation="relu")(inputs)
    x = keras.layers.BatchNormalization()(keras.layers.GlobalAveragePooling1D()(x))
    return keras.Model(inputs, keras.layers.Dense(3, activation="softmax")(x))


def build_nested_keras3() -> Any:
    """`build_nested`'s model, written for Keras 3."""
    return _nested(_keras3())


def build_sequential_keras3() -> Any:
    """`build_sequential`'s model, written for Keras 3 (an `Input` first: `input_shape=` is Keras 2's spelling)."""
    keras = _keras3()
    return keras.Sequential(
        [
            keras.Input((6, 4)),
            keras.layers.Conv1D(5, 3, activation="relu"),
            keras.layers.GlobalAveragePooling1D(),
            keras.layers.BatchNormalization(),
            keras.layers.Dense(3, activation="softmax"),
        ]
    )


def build_subclassed_keras3() -> Any:
    """`build_subclassed`'s model, written for Keras 3."""
    return _subclassed(_keras3())


def build_wider_keras3() -> Any:
    """The plain model with a wider head: the file's weights do not fit it (refused by name)."""
    keras = _keras3()
    inputs = keras.Input((6, 4))
    x = keras.layers.Conv1D(5, 3, activation="relu")(inputs)
    x = keras.layers.BatchNormalization()(keras.layers.GlobalAveragePooling1D()(x))
    return keras.Model(inputs, keras.layers.Dense(4, activation="softmax")(x))
