"""compat_clone: clone any Keras model correctly, whatever Keras owns it.

`compat_clone.clone_model(model)` works on standalone Keras 2.0-2.3,
tf.keras 2.4-2.15, `tf_keras`, and Keras 3 on TensorFlow, JAX and PyTorch.
Importing this package imports no framework: the family is read from the
model object.
"""

from __future__ import annotations

from typing import Any

from compat_clone.api import clone_model, copy_weights, family_of
from compat_clone._patch import Patch, patch, patched
from compat_clone._dispatch import FamilyInfo
from compat_clone.errors import (
    CloneFunctionError,
    CompatCloneError,
    CompileError,
    DeviceNotFoundError,
    InputTensorsError,
    InvalidArgumentError,
    NotAModelError,
    UnsupportedFeatureError,
    UnsupportedModelError,
    WeightsMismatchError,
    WeightsUnreadableError,
)

__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    # `compat_clone.nox_sessions`: looked up lazily, so importing compat_clone
    # imports neither nox nor the matrix tooling.
    # `compat_clone.convert`: the Keras 2 -> Keras 3 conversion, loaded on
    # first use. The subpackage is itself callable (`convert(model, ...)`):
    # once imported, Python binds the name to it, so both spellings agree.
    if name == "convert":
        import compat_clone.convert as convert_package

        return convert_package
    if name == "nox_sessions":
        from compat_clone.tools.matrix.sessions import nox_sessions

        return nox_sessions
    raise AttributeError(f"module 'compat_clone' has no attribute {name!r}")


__all__ = [
    "clone_model",
    "copy_weights",
    "family_of",
    "patch",
    "patched",
    "Patch",
    "FamilyInfo",
    "CompatCloneError",
    "NotAModelError",
    "UnsupportedModelError",
    "InvalidArgumentError",
    "InputTensorsError",
    "CloneFunctionError",
    "WeightsMismatchError",
    "DeviceNotFoundError",
    "UnsupportedFeatureError",
    "WeightsUnreadableError",
    "CompileError",
    "nox_sessions",
    "convert",
    "__version__",
]
