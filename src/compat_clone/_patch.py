"""`compat_clone.patch()`: the public `clone_model` of every Keras in the process, routed.

A library that calls `keras.models.clone_model` itself (TensorFlow Model
Optimization's pruning, quantization and clustering, among others) cannot be
edited by its user. `patch()` rebinds the name `clone_model` in the modules of
the Keras packages (`keras`, `tf_keras`, `tensorflow`) that re-export it
(`keras.models`, `tf_keras.models`, `tf_keras.src.models`, the
`tf.keras.models` API modules, ...), so such a library clones through
`compat_clone.clone_model`. Keras modules imported later are routed as they
finish loading: a finder at the front of `sys.meta_path` wraps their loader
for that one call and puts the original loader back afterwards.

What is rebound, and what is not:

* in the modules of the Keras packages, the name `clone_model`, only where it
  holds that package's native function: a name rebound by someone else is
  left alone;
* in every other module, a name of any kind that holds a native function
  object itself (identity, `is`): a library's own `from keras.models import
  clone_model as cm` bound before `patch()`, a class attribute, a function
  default (`compat_clone._bound` says exactly where it looks, and what it costs);
  nothing else of those modules is touched. A module imported while the patch
  is on takes the routed name from the routed Keras module, and gets the
  native one back from `unpatch()` too;
* not the module that *defines* `clone_model` (`keras.src.models.cloning`,
  `tf_keras.src.models.cloning`, `keras.models.cloning` of Keras 2.6-2.12):
  the native function calls that global itself for nested models, and
  `compat_clone` reaches the native function there (`compat_clone._native`).
  Standalone Keras 2.0-2.3, where `keras.models` both defines and exports it,
  is the exception: `compat_clone` never calls that native function.

`unpatch()` puts back each original where the name still holds our router,
and leaves alone a name that someone rebound in the meantime. The state is
process-wide and reference-counted: `patch()` twice routes once, and the
names are restored when the last handle is undone.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import types
from typing import Any, Callable, Dict, List, Optional, Tuple

from compat_clone._bound import bind as _bind_names
from compat_clone._bound import restore as _restore_names

__all__ = ["Patch", "patch", "patched"]

_ROOTS = ("keras", "tf_keras", "tensorflow")
# The arguments `compat_clone.clone_model` takes, in the native positional order.
_POSITIONAL = ("model", "input_tensors", "clone_function", "call_function", "recursive")
_KEYWORDS = frozenset(_POSITIONAL) | {"copy_weights", "device", "name", "compile"}

_LOCK = threading.RLock()
_holders = 0
# module name -> (module, the native function it held, our router installed there)
_routed: Dict[str, Tuple[types.ModuleType, Callable[..., Any], Callable[..., Any]]] = {}
# native function -> its router (one router per native function)
_routers: Dict[int, Callable[..., Any]] = {}
_finder: Optional[_Finder] = None


def _root(name: str) -> str:
    return name.partition(".")[0]


def _defines_only_for_keras2(module_name: str) -> bool:
    """Whether a module that defines `clone_model` is standalone Keras 2.0-2.3's `keras.models`.

    Only there do the defining module and the public name coincide
    (`keras/models.py`); Keras 2.6+ define it in `keras.models.cloning` or
    `keras.src.models.cloning`, TensorFlow's in-tree Keras in
    `tensorflow.python.keras.models`. Read from the name, not the version: the
    package's `__version__` is not set yet while `keras/__init__.py` imports it.
    """
    return module_name == "keras.models"


def _native_here(module: types.ModuleType) -> Optional[Callable[..., Any]]:
    """The native `clone_model` this module holds and `patch()` may rebind, else None."""
    from compat_clone._native import is_ours

    try:
        # `vars`, not `getattr`: a lazy module (TensorFlow's loaders) stays unloaded.
        fn = vars(module).get("clone_model")
    except TypeError:  # an object in sys.modules without a __dict__
        return None
    if fn is not None and any(fn is router for router in _routers.values()):
        # A Keras module that imported our router while the patch was on
        # (`from keras.models import clone_model` in standalone Keras 2's
        # `multi_gpu_utils`): recorded, so that `unpatch` gives it the native one.
        return fn.__wrapped__  # type: ignore[no-any-return]
    if fn is None or not callable(fn) or is_ours(fn):
        return None
    defined_in = getattr(fn, "__module__", None)
    if not isinstance(defined_in, str) or _root(defined_in) not in _ROOTS:
        return None  # not a Keras function: someone else's, left alone
    if getattr(fn, "__name__", None) != "clone_model":
        return None
    if defined_in == module.__name__ and not _defines_only_for_keras2(defined_in):
        return None  # the defining module: native code calls this global itself
    return fn  # type: ignore[no-any-return]


def _router_for(native: Callable[..., Any]) -> Callable[..., Any]:
    router = _routers.get(id(native))
    if router is not None:
        return router

    def clone_model(*args: Any, **kwargs: Any) -> Any:
        from compat_clone.api import clone_model as compat_clone_model
        from compat_clone.errors import NotAModelError
        from compat_clone.families.registry import family_of

        if len(args) > len(_POSITIONAL) or not set(kwargs) <= _KEYWORDS:
            # An argument of this Keras that compat_clone does not take
            # (Keras 3's internal `cache=`): the native call, as asked.
            return native(*args, **kwargs)
        bound = dict(zip(_POSITIONAL, args))
        if set(bound) & set(kwargs):
            return native(*args, **kwargs)  # a duplicate argument: native's own TypeError
        bound.update(kwargs)
        try:
            family_of(bound.get("model"))
        except NotAModelError:
            return native(*args, **kwargs)  # not a model: native's own error, its own type
        return compat_clone_model(**bound)

    clone_model.__qualname__ = "clone_model"
    clone_model.__doc__ = (
        "`compat_clone.clone_model`, installed by `compat_clone.patch()` in place of "
        f"{getattr(native, '__module__', '?')}.clone_model (kept as `__wrapped__`)."
    )
    clone_model.__wrapped__ = native  # type: ignore[attr-defined]
    clone_model.__compat_clone__ = True  # type: ignore[attr-defined]
    _routers[id(native)] = clone_model
    return clone_model


def _route(module: types.ModuleType) -> None:
    """Rebinds `module.clone_model` to the router (caller holds `_LOCK`, patch active)."""
    native = _native_here(module)
    if native is None:
        return
    router = _router_for(native)
    setattr(module, "clone_model", router)  # noqa: B010 (ModuleType declares no clone_model for mypy)
    _routed[module.__name__] = (module, native, router)


def _route_loaded() -> None:
    for name, module in list(sys.modules.items()):
        if _root(name) in _ROOTS and isinstance(module, types.ModuleType):
            _route(module)


def _router_for_defined() -> None:
    """A router for the native function of each loaded defining module (`_native.defining_modules`).

    The routed Keras modules give most natives their router; this covers a
    native only its defining module holds (a library that imported
    `keras.src.models.cloning` itself), so `compat_clone._bound` finds the names bound to it.
    """
    from compat_clone._native import defining_modules, is_ours

    for package in _ROOTS:
        for name in defining_modules(package):
            try:
                fn = vars(sys.modules[name]).get("clone_model")
            except (KeyError, TypeError):  # not loaded; an object without a __dict__
                continue
            if callable(fn) and not is_ours(fn) and getattr(fn, "__module__", None) == name:
                _router_for(fn)


def _restore() -> None:
    for module, native, router in list(_routed.values()):
        try:
            current = vars(module).get("clone_model")
        except TypeError:
            current = None
        if current is router:  # a name rebound since by someone else stays theirs
            setattr(module, "clone_model", native)  # noqa: B010 (ModuleType declares no clone_model for mypy)
    _routed.clear()


class _Loader:
    """Runs the original loader, then routes the module; the original is put back."""

    def __init__(self, original: Any) -> None:
        self._original = original

    def __getattr__(self, name: str) -> Any:  # get_data, get_filename, is_package...
        return getattr(self._original, name)

    def create_module(self, spec: Any) -> Any:
        return self._original.create_module(spec)

    def exec_module(self, module: types.ModuleType) -> None:
        try:
            self._original.exec_module(module)
        finally:
            spec = getattr(module, "__spec__", None)
            if spec is not None and spec.loader is self:
                spec.loader = self._original
            if getattr(module, "__loader__", None) is self:
                module.__loader__ = self._original
        with _LOCK:
            if _holders:
                _route(module)


class _Finder:
    """At the front of `sys.meta_path`: Keras modules get the routing loader."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if _root(name) not in _ROOTS:
            return None
        finders = list(sys.meta_path)
        start = finders.index(self) + 1 if self in finders else 0
        for finder in finders[start:]:
            find = getattr(finder, "find_spec", None)
            if find is None:
                continue
            spec = find(name, path, target)
            if spec is None:
                continue
            loader = spec.loader
            if (
                loader is not None
                and hasattr(loader, "exec_module")
                and not isinstance(loader, _Loader)
                and "Namespace" not in type(loader).__name__  # no code of its own to run
            ):
                spec.loader = _Loader(loader)
            return spec
        return None


class Patch:
    """A handle on `compat_clone.patch()`: `unpatch()` undoes it; a context manager.

    Attributes:
        modules: the names of the modules routed while this handle is active
            (read at the time of the call; modules imported later join).
    """

    def __init__(self) -> None:
        self._active = True

    @property
    def active(self) -> bool:
        """Whether this handle still holds the routing (False after `unpatch()`)."""
        return self._active

    @property
    def modules(self) -> Tuple[str, ...]:
        return tuple(routed_modules())

    def unpatch(self) -> None:
        """Undoes this handle's `patch()`; the last handle restores every name.

        Calling it again does nothing. A name someone rebound after `patch()`
        is left as they set it.
        """
        global _holders, _finder
        with _LOCK:
            if not self._active:
                return
            self._active = False
            _holders -= 1
            if _holders:
                return
            if _finder is not None:
                with contextlib.suppress(ValueError):  # removed by someone else
                    sys.meta_path.remove(_finder)
                _finder = None
            _restore()
            _restore_names(_routers)

    def __enter__(self) -> Patch:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.unpatch()

    def __repr__(self) -> str:
        state = "active" if self._active else "undone"
        return f"<compat_clone.Patch {state}: {len(self.modules)} module(s) routed>"


def patch() -> Patch:
    """Routes the public `clone_model` of every Keras in the process through `compat_clone`.

    A library that calls `keras.models.clone_model`, `tf.keras.models.clone_model`
    or `tf_keras.models.clone_model` itself then clones with
    `compat_clone.clone_model`: same arguments, the clone `compat_clone` makes.
    Keras packages imported after the call are routed as they load. A
    library that bound the native function to a name of its own (`from
    keras.models import clone_model as cm`, a class attribute, a function
    default), before or after the call, gets the routed one too, and the
    native one back from `unpatch()`: only slots that hold the native
    function object itself are rebound. Each call scans the loaded modules
    once (tens of milliseconds with TensorFlow loaded), and so does the last
    `unpatch()`. Idempotent and thread-safe; imports no framework. `compat_clone.patched`
    is this same function, an alias kept for existing code.

    Returns:
        A `Patch` handle: `handle.unpatch()` (or leaving its `with` block)
        restores exactly what was there, once every handle is undone.

    Example:

    >>> import keras
    >>> import compat_clone
    >>> handle = compat_clone.patch()
    >>> keras.models.clone_model.__wrapped__.__module__
    'keras.src.models.cloning'
    >>> handle.unpatch()
    >>> keras.models.clone_model.__module__
    'keras.src.models.cloning'
    >>> with compat_clone.patch() as handle:
    ...     "keras.models" in handle.modules
    True
    """
    global _holders, _finder
    # Loaded before the lock: `_native` and `api` import nothing else later.
    import compat_clone._native  # noqa: F401
    import compat_clone.api  # noqa: F401

    with _LOCK:
        _holders += 1
        if _holders == 1:
            _finder = _Finder()
            sys.meta_path.insert(0, _finder)
        # Every time, not only the first: a module loaded while no finder ran
        # (a race with an import already under way) is caught by the next call.
        _route_loaded()
        _router_for_defined()
        _bind_names(_routers)
    return Patch()


#: The same function as `patch` (`patched is patch`): an alias kept for code
#: written as `with compat_clone.patched(): ...`.
patched = patch


def routed_modules() -> List[str]:
    """The names of the modules whose `clone_model` is routed now, sorted.

    Empty while no `Patch` handle is active. Not public API (not in
    `__all__`): `Patch.modules` reads it, and the test suite checks with it
    that no test left `patch()` active, without a handle of its own.
    """
    with _LOCK:
        return sorted(_routed)
