"""The family registry: which Keras families exist, and everything keyed by one.

A *family* is the concept: `keras3` (Keras 3), `tf_keras` (tf.keras 2.4-2.15
and the `tf_keras` package) and `keras2` (standalone Keras 2.0-2.3). One
`FamilyEntry` per family in `FAMILIES` says what the rest of compat_clone asks
of it: its Keras module in this environment, its backend, its placement
backend, and its part in `convert`. Code outside this package reads those
fields instead of comparing family names. The registry holds data only: the
class that clones a family's models is imported by the driver
(`_driver.FAMILY_CLASSES`), never looked up here by name.

A model's family is read off its class (`family_of`): the first class of its
MRO defined in a Keras-owning package (``keras``, ``tf_keras``,
``tensorflow``) names the package, and that package's ``__version__`` names
the family. Nothing is imported (the model exists: its package is imported
already), nothing depends on what else is installed, and the answer is
cached per class. Importing this module imports no framework. What this
environment has installed of each family is `families/installed.py`.
"""

from __future__ import annotations

import dataclasses
import importlib
import sys
import threading
from types import ModuleType
from typing import Any, Dict, Mapping, NamedTuple, Optional, Tuple

from compat_clone._walk import MODEL_CLASS_NAMES, OWNER_PACKAGES
from compat_clone.errors import InvalidArgumentError, NotAModelError

__all__ = [
    "FAMILIES",
    "KERAS2",
    "KERAS3",
    "MODEL_BACKEND",
    "MODEL_CLASS_NAMES",
    "OWNER_PACKAGES",
    "TF_KERAS",
    "ClassFamily",
    "FamilyEntry",
    "FamilyInfo",
    "classes_seen",
    "entry",
    "family_for",
    "family_of",
    "family_of_class",
    "keras_of",
    "package_version",
    "placement_backend",
]

KERAS3 = "keras3"
TF_KERAS = "tf_keras"
KERAS2 = "keras2"

#: `FamilyEntry.placement` marker: the placement backend is the model's own Keras backend.
MODEL_BACKEND = "<the model's Keras backend>"

_LAYER_CLASS_NAMES = frozenset({"Layer"})


@dataclasses.dataclass(frozen=True)
class FamilyEntry:
    """One family of the registry: what compat_clone needs to know about it.

    Attributes:
        name: the family's name (``"keras3"``).
        title: how people call it (``"Keras"``, ``"tf.keras / tf_keras"``,
            ``"standalone Keras"``).
        implementation: the name of the module that clones its models, as
            `FamilyInfo.implementation` reports it (a name for people: the
            driver imports the module's class itself).
        environment_modules: this environment's Keras for the family, the
            modules tried in order (`keras_module`).
        fixed_backend: the backend every model of the family has
            (``"tensorflow"`` for tf_keras), or None: read from
            ``keras.backend.backend()``.
        placement: the placement backend's name, `MODEL_BACKEND` (the
            model's own Keras backend), or None (the family places its own
            variables).
        conversion_source: `convert` reads the files it writes.
        conversion_target: what `convert` writes.
        graph_mode: TensorFlow 1 graphs: `predict()` rather than a call,
            and its own `.h5` reader (standalone Keras 2).
        keras_ops: `keras.ops` exists (outputs go to NumPy through it).
    """

    name: str
    title: str
    implementation: str
    environment_modules: Tuple[str, ...]
    fixed_backend: Optional[str]
    placement: Optional[str]
    conversion_source: bool
    conversion_target: bool
    graph_mode: bool
    keras_ops: bool


# The registry, in the order families are listed (newest first).
FAMILIES: Mapping[str, FamilyEntry] = {
    KERAS3: FamilyEntry(
        name=KERAS3,
        title="Keras",
        implementation="compat_clone.families.keras3",
        environment_modules=("keras",),
        fixed_backend=None,
        placement=MODEL_BACKEND,
        conversion_source=False,
        conversion_target=True,
        graph_mode=False,
        keras_ops=True,
    ),
    TF_KERAS: FamilyEntry(
        # TF 2.12-2.15: tf.keras is the `keras` 2.x package (its lazy
        # `tensorflow.keras` front has no `__version__`); TF <= 2.5 has no
        # `keras` package: its tf.keras is `tensorflow.keras`.
        name=TF_KERAS,
        title="tf.keras / tf_keras",
        implementation="compat_clone.families.tf_keras",
        environment_modules=("tf_keras", "keras", "tensorflow.keras"),
        fixed_backend="tensorflow",
        placement="tensorflow",
        conversion_source=True,
        conversion_target=False,
        graph_mode=False,
        keras_ops=False,
    ),
    KERAS2: FamilyEntry(
        # Standalone Keras 2 places its own variables (compat_clone.families.keras2).
        name=KERAS2,
        title="standalone Keras",
        implementation="compat_clone.families.keras2",
        environment_modules=("keras",),
        fixed_backend=None,
        placement=None,
        conversion_source=True,
        conversion_target=False,
        graph_mode=True,
        keras_ops=False,
    ),
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


class ClassFamily(NamedTuple):
    """What the per-class cache holds for one model class (a tuple: it is written to JSON as a list)."""

    family: str
    package: str
    version: str


_CACHE: Dict[type, ClassFamily] = {}
_CACHE_LOCK = threading.Lock()


def entry(family: str) -> FamilyEntry:
    """The registry's entry for `family`.

    Args:
        family: a family name (``"keras3"``, ``"tf_keras"``, ``"keras2"``).

    Returns:
        Its `FamilyEntry`.

    Raises:
        InvalidArgumentError: `family` is not in `FAMILIES`.

    Example:

    >>> entry("keras3").conversion_target
    True
    """
    try:
        return FAMILIES[family]
    except KeyError:
        raise InvalidArgumentError(
            f"Expected a Keras family, one of {', '.join(FAMILIES)}. Received: family={family!r}."
        ) from None


def _root(module_name: str) -> str:
    return module_name.partition(".")[0]


def package_version(module: ModuleType) -> str:
    """`module`'s version string (``"0"`` when it names none); imports nothing."""
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


def _classify(cls: type) -> Optional[ClassFamily]:
    """Returns (family, package, version) for a model class, or None."""
    owner: Optional[str] = None
    is_model = False
    for klass in cls.__mro__:
        root = _root(getattr(klass, "__module__", "") or "")
        if root not in OWNER_PACKAGES:
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
    version = package_version(module)
    return ClassFamily(family_for(owner, version), owner, version)


def family_of_class(cls: type) -> Optional[ClassFamily]:
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


def classes_seen() -> Dict[str, ClassFamily]:
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
        if _root(getattr(klass, "__module__", "") or "") in OWNER_PACKAGES and (klass.__name__ in _LAYER_CLASS_NAMES):
            return True
    return False


def _backend(family: str, package: str) -> Optional[str]:
    fixed = FAMILIES[family].fixed_backend
    if fixed is not None:
        return fixed
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
        implementation=FAMILIES[family].implementation,
    )


def keras_of(info: FamilyInfo) -> ModuleType:
    """The model's own Keras module: the package that defines its class (imported already).

    Args:
        info: the model's `FamilyInfo`.

    Returns:
        `keras`, `tf_keras`, or TensorFlow's in-tree `tf.keras` (TF <= 2.5).
    """
    if info.package == "tensorflow":  # the in-tree tf.python.keras (TF <= 2.5)
        return importlib.import_module("tensorflow").keras  # type: ignore[no-any-return]
    return importlib.import_module(info.package)


def placement_backend(info: FamilyInfo) -> Optional[str]:
    """The name of the placement backend for `info`'s models, or None where the family places its own.

    Args:
        info: the model's `FamilyInfo`.

    Returns:
        ``"tensorflow"``, ``"jax"``, ``"torch"``, ``"numpy"`` (a Keras 3
        backend's name), or None.
    """
    placement = entry(info.family).placement
    if placement == MODEL_BACKEND:
        return info.backend or "tensorflow"
    return placement
