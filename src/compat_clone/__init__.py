"""compat_clone: clone any Keras model correctly, whatever Keras owns it.

`compat_clone.clone_model(model)` works on standalone Keras 2.0-2.3,
tf.keras 2.4-2.15, `tf_keras`, and Keras 3 on TensorFlow, JAX and PyTorch.
Importing this package imports no framework: the family is read from the
model object.
"""

from __future__ import annotations

from typing import Any

from compat_clone._patch import Patch, patch, patched
from compat_clone.api import clone_model, copy_weights, family_of
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
from compat_clone.families.registry import FamilyInfo

__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    # `compat_clone.convert`: the Keras 2 -> Keras 3 conversion subpackage,
    # loaded on first use (`compat_clone.convert.convert(model)` converts).
    # Once imported, Python binds the name to it, so both spellings agree.
    if name == "convert":
        import compat_clone.convert as convert_package

        return convert_package
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
    "convert",
    "__version__",
]
