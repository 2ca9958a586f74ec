"""compat_clone: clone any Keras model correctly, whatever Keras owns it.

`compat_clone.clone_model(model)` works on standalone Keras 2.0-2.3,
tf.keras 2.4-2.15, `tf_keras`, and Keras 3 on TensorFlow, JAX and PyTorch.
Importing this package imports no framework: the family is read from the
model object. Nor does it load the clone engine: each public name is imported
from its module on first use (PEP 562 `__getattr__`), so `import compat_clone`
costs almost nothing until a function is called.
"""

from __future__ import annotations

# `typing.TYPE_CHECKING` without importing `typing` (a third of the cost of the import): type checkers
# read any `TYPE_CHECKING` as true. The imports below say what each public name is, for type checkers
# and readers; at run time `__getattr__` loads them.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, List

    from compat_clone import convert
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

_API = frozenset({"clone_model", "copy_weights", "family_of"})
_PATCH = frozenset({"patch", "patched", "Patch"})
_ERRORS = frozenset(
    {
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
    }
)


def __getattr__(name: str) -> Any:
    """A public name, imported from its module on first use and then bound here (PEP 562).

    Once bound, Python finds the name in this module without calling this
    function again, so every spelling (`compat_clone.clone_model`, `from
    compat_clone import clone_model`) gets the same object.
    """
    if name in _API:
        import compat_clone.api as api

        value = getattr(api, name)
    elif name in _ERRORS:
        import compat_clone.errors as errors

        value = getattr(errors, name)
    elif name in _PATCH:
        import compat_clone._patch as door

        value = getattr(door, name)
    elif name == "FamilyInfo":
        import compat_clone.families.registry as registry

        value = registry.FamilyInfo
    elif name == "convert":
        # The Keras 2 -> Keras 3 conversion subpackage (`compat_clone.convert.convert(model)` converts):
        # importing it binds the name here, so both spellings agree.
        import compat_clone.convert as convert_package

        return convert_package
    else:
        raise AttributeError(f"module 'compat_clone' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> List[str]:
    return sorted(set(globals()) | set(__all__))


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
