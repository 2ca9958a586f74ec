"""A custom layer for tests/convert/test_convert_cli.py, importable in Keras 2 and Keras 3 environments.

`compat-clone convert --custom-objects convert_custom:Scale` imports this
module in both environments: each defines `Scale` on its own Keras (the
worker says which side it is in ``COMPAT_CLONE_CONVERT_SIDE``, for an
environment that has both, like the default .venv). With
``COMPAT_CLONE_TEST_WRONG_PORT=1`` the Keras 3 class multiplies by one more
than its factor: a port that does not compute what the source does, which the
conversion's proof must catch.
"""

from __future__ import annotations

import os
import sys
from typing import Any, Dict

# The Keras 2 side has imported its Keras already (the worker loads it before
# the custom objects): tf_keras where that is the one, else `keras`.
if os.environ.get("COMPAT_CLONE_CONVERT_SIDE") != "target" and "tf_keras" in sys.modules:
    import tf_keras as keras
else:
    import keras

_KERAS3 = int(keras.__version__.split(".")[0]) >= 3
_WRONG = _KERAS3 and os.environ.get("COMPAT_CLONE_TEST_WRONG_PORT") == "1"


class Scale(keras.layers.Layer):  # type: ignore[misc, name-defined]
    """Multiplies its input by a constant `factor`."""

    def __init__(self, factor: float = 1.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.factor = factor

    def call(self, inputs: Any) -> Any:
        return inputs * (self.factor + 1.0 if _WRONG else self.factor)

    def compute_output_shape(self, input_shape: Any) -> Any:
        return input_shape

    def get_config(self) -> Dict[str, Any]:
        config: Dict[str, Any] = super().get_config()
        config["factor"] = self.factor
        return config
