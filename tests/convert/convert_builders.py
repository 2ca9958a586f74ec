"""A user's model code, as `compat-clone convert WEIGHTS.h5 --model tests/convert/convert_builders.py:build_plain` runs it.

`build_plain()` builds convert_sources.py's plain model (Conv1D, pooling,
BatchNormalization, Dense) with the Keras 2 of the environment it runs in:
standalone Keras 2.x or tf.keras 2.x as `keras`, tf_keras where `keras` is
Keras 3. Its weights are drawn from a fixed seed;
a weights file loaded afterwards replaces them.
"""

from __future__ import annotations

import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from convert_sources import plain_model  # noqa: E402


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
