"""Which implementation serves a model: decided from the model's class.

The family is read off the classes in the model's MRO: the first class whose
defining module belongs to a Keras-owning package (``keras``, ``tf_keras`` or
``tensorflow``) names the package, and that package's ``__version__`` (the
package is imported already: the model object exists) names the family.
Nothing is imported on a guess, and nothing depends on what else happens to be
installed: in one process a ``tf_keras`` model and a Keras 3 model each go to
their own adapter. The answer is cached per class.
"""

from __future__ import annotations

import dataclasses
import sys
import threading
from types import ModuleType
from typing import Any, Dict, Optional, Tuple

from compat_clone._walk import MODEL_CLASS_NAMES  # the one set of model class names
from compat_clone.errors import NotAModelError

__all__ = ["FamilyInfo", "family_of", "family_for", "adapter_for", "family_of_class", "classes_seen"]

KERAS3 = "keras3"
TF_KERAS = "tf_keras"
KERAS2 = "keras2"

# Packages whose classes can own a Keras model, in the order they are tried
# for one class's module. `tensorflow` covers the old in-tree
# `tensorflow.python.keras` (TF <= 2.5) and is served by the tf.keras adapter.
_OWNER_PACKAGES = ("keras", "tf_keras", "tensorflow")

_LAYER_CLASS_NAMES = frozenset({"Layer"})

# Implementation module per family (imported lazily: each imports its
# framework inside its functions only).
_ADAPTERS = {
    KERAS3: "compat_clone.families.keras3",
    TF_KERAS: "compat_clone.families.tf_keras",
    KERAS2: "compat_clone.families.keras2",
}


@dataclasses.dataclass(frozen=True)
class FamilyInfo:
    """Which implementation serves a model, and the versions behind it.

    Attributes:
        family: ``"keras3"``, ``"tf_keras"`` (tf.keras 2.4-2.15 and the
            ``tf_keras`` package) or ``"keras2"`` (standalone Keras 2.0-2.3).
        package: the top-level package that defines the model's class
            (``"keras"``, ``"tf_keras"`` or ``"tensorflow"``).
        version: that package's ``__version__``.
        backend: for Keras 3 the backend name (``"tensorflow"``, ``"jax"``,
            ``"torch"``, ``"numpy"``); for standalone Keras 2 its backend
            (``"tensorflow"``, ``"theano"``, ``"cntk"``); ``"tensorflow"`` for
            the tf.keras family.
        implementation: the `compat_clone` module that clones it.
    """

    family: str
    package: str
    version: str
    backend: Optional[str]
    implementation: str


_CACHE: Dict[type, Tuple[str, str, str]] = {}
_CACHE_LOCK = threading.Lock()


def _root(module_name: str) -> str:
    return module_name.partition(".")[0]


def _package_version(module: ModuleType) -> str:
    version = getattr(module, "__version__", None)
    if isinstance(version, str):
        return version
    # tf_keras < 2.16 kept its version in a submodule only.
    sub = getattr(module, "version", None)
    return str(getattr(sub, "__version__", "0"))


def family_for(package: str, version: str) -> str:
    """The family that serves models of `package` at `version`: the one such rule.

    Dispatch, `doctor`, the tests and the benchmarks all ask this function.

    Args:
        package: the top-level package that owns the model's class
            (``"keras"``, ``"tf_keras"`` or ``"tensorflow"``).
        version: that package's version string.

    Returns:
        ``"keras3"``, ``"tf_keras"`` or ``"keras2"``.

    Example:

    >>> family_for("keras", "2.2.4"), family_for("keras", "2.15.0"), family_for("keras", "3.6.0")
    ('keras2', 'tf_keras', 'keras3')
    """
    if package == "tf_keras" or package == "tensorflow":
        return TF_KERAS
    # Imported here, not at module level: compiling its version regex is the
    # largest single cost of `import compat_clone` (bench: `import_case`), and
    # it is needed once per model class.
    from packaging.version import InvalidVersion, Version

    try:
        parsed = Version(version)
    except InvalidVersion:  # e.g. a development tree: fall back to major digit
        parsed = Version(version.split(".")[0] + ".0" if version[:1].isdigit() else "3.0")
    if parsed >= Version("3.0.0.dev0"):
        return KERAS3
    # keras 2.4 is the release that became a thin front to tf.keras, and
    # 2.6-2.15 are the package tf.keras itself: all served by the tf.keras
    # adapter. 2.0-2.3 are the standalone, multi-backend package.
    if parsed >= Version("2.4.0.dev0"):
        return TF_KERAS
    return KERAS2


def _describe(obj: Any) -> str:
    cls = type(obj)
    shape = getattr(obj, "shape", None)
    extra = f" with shape={tuple(shape)!r}" if shape is not None and not callable(shape) else ""
    return f"{cls.__module__}.{cls.__qualname__}{extra}"


def _classify(cls: type) -> Optional[Tuple[str, str, str]]:
    """Returns (family, package, version) for a model class, or None."""
    owner: Optional[str] = None
    is_model = False
    for klass in cls.__mro__:
        root = _root(getattr(klass, "__module__", "") or "")
        if root not in _OWNER_PACKAGES:
            continue
        if owner is None:
            owner = root
        if root == owner and klass.__name__ in MODEL_CLASS_NAMES:
            is_model = True
            break
    if owner is None or not is_model:
        return None
    module = sys.modules.get(owner)
    if module is None:  # cannot happen for a live object; be explicit anyway
        return None
    version = _package_version(module)
    return family_for(owner, version), owner, version


def family_of_class(cls: type) -> Optional[Tuple[str, str, str]]:
    """Cached classification of a class; None when it is not a Keras model."""
    try:
        return _CACHE[cls]
    except KeyError:
        pass
    result = _classify(cls)
    if result is not None:
        with _CACHE_LOCK:
            _CACHE[cls] = result
    return result


def classes_seen() -> Dict[str, Tuple[str, str, str]]:
    """Every model class this process classified so far: ``"module.QualName" -> (family, package, version)``.

    The per-class cache, read as a record of the Keras models compat_clone was
    handed (the matrix's pytest plugin reports which families a test session
    really used). Imports nothing.
    """
    with _CACHE_LOCK:
        items = list(_CACHE.items())
    return {f"{cls.__module__}.{cls.__qualname__}": found for cls, found in items}


def _is_keras_layer(obj: Any) -> bool:
    for klass in type(obj).__mro__:
        if _root(getattr(klass, "__module__", "") or "") in _OWNER_PACKAGES and (
            klass.__name__ in _LAYER_CLASS_NAMES
        ):
            return True
    return False


def _backend(family: str, package: str) -> Optional[str]:
    if family == TF_KERAS:
        return "tensorflow"
    # Keras 3 and standalone Keras 2 both name theirs in `keras.backend.backend()`.
    fn = getattr(getattr(sys.modules.get(package), "backend", None), "backend", None)
    return str(fn()) if callable(fn) else None


def family_of(model: Any) -> FamilyInfo:
    """Tells which implementation serves `model`, and the versions behind it.

    The answer is read from the model's class (its defining module and that
    package's version), never from what is installed, and is cached per class.
    Nothing is imported.

    Args:
        model: a Keras model of any supported family.

    Returns:
        A frozen `FamilyInfo` record.

    Raises:
        NotAModelError: (a `TypeError`) when `model` is not a Keras model.

    Example:

    >>> import keras
    >>> import compat_clone
    >>> model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    >>> compat_clone.family_of(model).family
    'keras3'
    """
    if isinstance(model, type):
        raise NotAModelError(
            "Expected `model` to be a Keras model instance, received the class "
            f"{model.__module__}.{model.__qualname__}. Instantiate it first."
        )
    found = family_of_class(type(model))
    if found is None:
        if _is_keras_layer(model):
            raise NotAModelError(
                "Expected `model` to be a Keras model (Functional, Sequential or "
                f"a Model subclass). Received a layer: {_describe(model)}. "
                "To clone a single layer use `layer.__class__.from_config("
                "layer.get_config())`, or wrap it in a model."
            )
        raise NotAModelError(
            "Expected `model` to be a Keras model (keras, tf.keras or tf_keras "
            f"`Model`). Received: model={_describe(model)}. Pass the model "
            "object itself, e.g. `compat_clone.clone_model(model)`."
        )
    family, package, version = found
    return FamilyInfo(
        family=family,
        package=package,
        version=version,
        backend=_backend(family, package),
        implementation=_ADAPTERS[family],
    )


def adapter_for(info: FamilyInfo) -> Any:
    """The `Family` that clones models of `info`'s family (its module imported once)."""
    import importlib

    return importlib.import_module(info.implementation).FAMILY(info)
