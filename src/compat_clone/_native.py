"""The native `clone_model` of a Keras package, reached where it is defined.

`compat_clone` delegates to the native call of tf.keras / tf_keras and Keras
3. It never reads the public alias (`keras.models.clone_model`): that name
may hold `compat_clone.clone_model` itself, rebound by `compat_clone.patch()`
or by hand, and reading it would make `compat_clone` call itself
(`native-alias-rebound` in `compat_clone.known_issues`). The function is
taken from the module that defines it, which `patch()` never rebinds.

Nothing is imported on a guess: this runs for a model object, whose package
is loaded already; only that package's own cloning module is imported.
"""

from __future__ import annotations

import importlib
import sys
import threading
from typing import Any, Callable, Dict, Tuple

__all__ = ["defining_modules", "clone_model_of", "is_ours"]

# Where each Keras package defines `clone_model`, newest layout first
# (feature detection: the first that imports and defines it wins).
#   keras 3.x, keras 2.13-2.15, tf_keras 2.14+:  <pkg>.src.models.cloning
#   keras 2.6-2.12:                              <pkg>.models.cloning
#   TensorFlow's in-tree Keras (TF <= 2.5):      tensorflow.python.keras.models
_LAYOUTS = ("{}.src.models.cloning", "{}.models.cloning", "{}.python.keras.models")

_CACHE: Dict[str, Callable[..., Any]] = {}
_LOCK = threading.Lock()


def defining_modules(package: str) -> Tuple[str, ...]:
    """The candidate modules that define `package`'s `clone_model`, newest layout first."""
    return tuple(layout.format(package) for layout in _LAYOUTS)


def is_ours(fn: Any) -> bool:
    """True for `compat_clone.clone_model` and the functions `patch()` installs."""
    return bool(getattr(fn, "__compat_clone__", False))


def clone_model_of(package: str) -> Callable[..., Any]:
    """The native `clone_model` of `package` (``"keras"``, ``"tf_keras"``, ``"tensorflow"``).

    Args:
        package: the top-level package that owns the model's class.

    Returns:
        The function object from its defining module, never a rebound alias.

    Raises:
        RuntimeError: no defining module holds a native `clone_model` (a
            Keras layout this version does not know, or the defining module's
            own name rebound by hand to a `compat_clone` function).
    """
    try:
        return _CACHE[package]
    except KeyError:
        pass
    tried = []
    for name in defining_modules(package):
        module = sys.modules.get(name)
        if module is None:
            try:
                module = importlib.import_module(name)
            except ImportError:
                tried.append(f"{name} (absent)")
                continue
        fn = getattr(module, "clone_model", None)
        if callable(fn) and not is_ours(fn) and getattr(fn, "__module__", None) == name:
            with _LOCK:
                _CACHE[package] = fn
            return fn  # type: ignore[no-any-return]
        tried.append(f"{name} (clone_model there: {fn!r})")
    raise RuntimeError(
        f"compat_clone found no native `clone_model` for package {package!r}; looked in: "
        f"{'; '.join(tried)}. If a `compat_clone` function was assigned to the defining "
        "module's `clone_model`, restore the original (or use `compat_clone.patch()`, "
        "which leaves defining modules alone)."
    )
