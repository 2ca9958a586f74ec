"""Runtime fix-up: standalone Keras 2.2-2.3 on TensorFlow 2.15's `tf.compat.v1`.

Test environments only; not public API. Standalone Keras 2.2.x was written
for TensorFlow 1.x and Python <= 3.7. On Python 3.11 with
`tensorflow-cpu==2.15.1` (the newest TF with wheels for both, and the one
whose `tf.compat.v1` still holds the whole 1.x graph API) it imports and runs
once what moved is put back, *before* `keras` is imported:

1. `collections.Iterable` & co. (aliases of `collections.abc`, removed in
   Python 3.10) -- read by keras 2.2.x `engine/`, `utils/generic_utils.py`.
2. TensorFlow 2.15's `__init__` imports `keras` while it loads itself (its
   Keras lazy loader probes `keras` and eagerly imports
   `keras.src.optimizers`). With standalone Keras installed as `keras`, that
   import would run keras 2.2.x against a half-initialised TensorFlow. So
   `keras` is hidden from `sys.modules` (a `None` entry: "not importable")
   while `tensorflow.compat.v1` is imported, then restored.
3. `tf.compat.v1.disable_v2_behavior()` (graph mode, hashable tensors --
   keras 2.2.x keys dicts by tensors --, ref variables, v1 control flow), and
   `sys.modules["tensorflow"]` becomes `tensorflow.compat.v1`, so keras'
   `import tensorflow as tf` sees the 1.x API (`tf.placeholder`,
   `tf.Session`, ...). Submodule imports (`tensorflow.python...`) still work:
   they are found in `sys.modules` / on the real package's `__path__`.
4. Symbols keras' TensorFlow backend reaches for in TF internals that later
   releases dropped (each patched only when missing -- feature detection):
   `ops._TensorLike` and `ops.is_dense_tensor_like` (removed in TF 2.4 / kept
   as a stub), `control_flow_ops.while_loop` / `cond` / `group` / `tuple`
   (moved to `while_loop.py` / `cond.py` in TF 2.13+). The public
   `tf.compat.v1` objects serve.
5. Keras 2.3.x only: it reads `tf.keras.metrics.MeanIoU` at import (through
   TF's Keras lazy loader, which would import the standalone `keras` again,
   half-initialised): when the `tf_keras` package is installed we set
   `TF_USE_LEGACY_KERAS=1` so `tf.keras` is `tf_keras`. And it picks its
   TensorFlow 2.0 code path from `tf.__version__` (`_is_tf_1()`): that path
   runs initializers in `context.eager_mode()` and builds in TF's own
   `tensorflow.python.keras` FuncGraph, whose TF 2.15 copy returns
   `KerasTensor`s from `placeholder()` -- it fails on TF 2.15 either way. So
   right after `keras.backend.tensorflow_backend` executes, its
   `_is_tf_1` is made to answer True: Keras 2.3.x then runs its TF 1.x graph
   code path on `tf.compat.v1`, like 2.2.x (feature-detected: only a backend
   that has `_is_tf_1` is touched). Its decorators, applied before that,
   still read two `threading.local` flags (`_SYMBOLIC_SCOPE` in the backend,
   `_DISABLE_TRACKING` in `keras.engine.base_layer`) whose `.value` 2.3.x
   sets in the importing thread only, so any layer built in another thread
   fails with AttributeError; both become thread-locals that start at the
   same value in every thread.

`apply()` is idempotent. It is run by the lazy import hook that
`compat_clone_matrix.envfix.install_into(site_packages, "keras2_on_tf2")` installs.
"""

from __future__ import annotations

import collections
import collections.abc
import contextlib
import importlib
import importlib.util
import os
import sys
import threading
from typing import Any, Dict

__all__ = ["apply"]

_APPLIED = False

_COLLECTIONS_ALIASES = (
    "Iterable",
    "Mapping",
    "MutableMapping",
    "Sequence",
    "Callable",
    "MutableSet",
    "Set",
    "Hashable",
    "Sized",
    "Container",
    "OrderedDict",
)


def _collections_aliases() -> None:
    # Python 3.10 removed the deprecated `collections.<ABC>` aliases.
    for name in _COLLECTIONS_ALIASES:
        if not hasattr(collections, name) and hasattr(collections.abc, name):
            setattr(collections, name, getattr(collections.abc, name))


def _import_tf_v1_without_keras() -> Any:
    """Imports `tensorflow.compat.v1` with `keras` hidden from `sys.modules`."""
    if importlib.util.find_spec("tf_keras") is not None:
        # Keras 2.3.x touches `tf.keras` at import; route it to tf_keras
        # (TF >= 2.15 honours TF_USE_LEGACY_KERAS) instead of the standalone
        # `keras` package, which would otherwise be imported recursively.
        os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
    hidden: Dict[str, Any] = {name: mod for name, mod in sys.modules.items() if name == "keras" or name.startswith("keras.")}
    for name in hidden:
        del sys.modules[name]
    sys.modules["keras"] = None  # type: ignore[assignment]  # "import keras" -> ImportError
    try:
        tf_root = importlib.import_module("tensorflow")
        tf1 = importlib.import_module("tensorflow.compat.v1")
    finally:
        if sys.modules.get("keras", 0) is None:
            del sys.modules["keras"]
        sys.modules.update(hidden)
    # TF's __init__ put `keras/_tf_keras` (looked up with `keras` hidden:
    # None) on its __path__; drop the non-strings.
    path = getattr(tf_root, "__path__", None)
    if isinstance(path, list):
        path[:] = [p for p in path if isinstance(p, str)]
    return tf1


def _patch_internals(tf1: Any) -> None:
    from tensorflow.python.framework import ops
    from tensorflow.python.ops import control_flow_ops

    tensor_types = (tf1.Tensor, tf1.Variable)
    if not hasattr(ops, "_TensorLike"):
        # Removed in TF 2.4; keras 2.2.x `K.is_tensor` does isinstance() on it.
        ops._TensorLike = tensor_types
    if not hasattr(ops, "is_dense_tensor_like"):
        ops.is_dense_tensor_like = lambda t: isinstance(t, tensor_types)
    for name in ("while_loop", "cond", "group", "tuple"):
        # while_loop / cond moved out of control_flow_ops in TF 2.13.
        if not hasattr(control_flow_ops, name):
            setattr(control_flow_ops, name, getattr(tf1, name))


_BACKEND_MODULE = "keras.backend.tensorflow_backend"
_BASE_LAYER_MODULE = "keras.engine.base_layer"


class _PerThread(threading.local):
    """A `threading.local` whose `value` starts at `default` in every thread."""

    def __init__(self, default: Any) -> None:
        self.value = default


def _patch_backend(module: Any) -> None:
    if hasattr(module, "_is_tf_1"):  # Keras 2.3.x
        module._is_tf_1 = lambda: True
    scope = getattr(module, "_SYMBOLIC_SCOPE", None)
    if isinstance(scope, threading.local) and not isinstance(scope, _PerThread):
        # Keras 2.3.x sets `.value` in the importing thread only: a layer
        # built in any other thread fails with AttributeError.
        module._SYMBOLIC_SCOPE = _PerThread(getattr(scope, "value", True))


def _patch_base_layer(module: Any) -> None:
    tracking = getattr(module, "_DISABLE_TRACKING", None)
    if isinstance(tracking, threading.local) and not isinstance(tracking, _PerThread):
        module._DISABLE_TRACKING = _PerThread(False)  # same thread-local bug, 2.3.x


_PATCHES = {_BACKEND_MODULE: _patch_backend, _BASE_LAYER_MODULE: _patch_base_layer}


class _KerasPatchFinder:
    """Patches Keras 2.x modules (`_PATCHES`) right after each one executes."""

    def __init__(self) -> None:
        self.pending = {name: fn for name, fn in _PATCHES.items() if name not in sys.modules}

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        patch = self.pending.get(fullname)
        if patch is None:
            return None
        import importlib.machinery

        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return spec
        original_exec = spec.loader.exec_module

        def exec_module(module: Any) -> None:
            original_exec(module)
            patch(module)
            self.pending.pop(fullname, None)
            if not self.pending:
                with contextlib.suppress(ValueError):
                    sys.meta_path.remove(self)

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def apply() -> None:
    """Makes standalone Keras 2.2-2.3 importable and runnable on TF 2.x.

    Idempotent. Must run before `keras` is imported; importing TensorFlow is
    its cost (seconds), which is why the `.pth` hook calls it lazily.
    """
    global _APPLIED
    if _APPLIED:
        return
    _APPLIED = True
    _collections_aliases()
    tf1 = _import_tf_v1_without_keras()
    tf1.disable_v2_behavior()
    sys.modules["tensorflow"] = tf1
    _patch_internals(tf1)
    finder = _KerasPatchFinder()
    if finder.pending:
        sys.meta_path.insert(0, finder)
