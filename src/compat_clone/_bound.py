"""The native `clone_model` bound to a name of another module: found, rebound, put back.

`compat_clone.patch()` routes the Keras modules themselves (`_patch`). A
library that ran `from keras.models import clone_model` (or `... as cm`, a
class attribute `clone = staticmethod(clone_model)`, a default
`def f(clone=clone_model)`) before `patch()` holds the native function object
under a name of its own; this module finds those names and gives them the
router while the patch is on, and the native function back afterwards.

What is looked at (identity only: a slot counts when it `is` a native
function or one of its routers; nothing else of a module is touched):

* the globals of every module in `sys.modules` outside the Keras packages
  (`keras`, `tf_keras`, `tensorflow`, routed by `_patch`) and `compat_clone`;
* the `__dict__` of the classes those modules define at their top level,
  a `staticmethod` / `classmethod` there unwrapped;
* `__defaults__` and `__kwdefaults__` of the functions those modules define
  at their top level, and of those classes' methods.

Not reached: a function kept in a container (a dict, a list), a closure's
cell, a nested class, an object's instance attribute, `functools.partial`.

Cost: each `patch()` call runs one scan, the last `unpatch()` another. A scan reads
the `__dict__` of every loaded module outside those packages, of their
classes, and the defaults of their functions: with TensorFlow 2.21 and Keras
3.15 loaded (2,850 modules, 720 scanned, 60,000 values) 20-40 ms on a shared
2-core machine. No import hook for other packages (`_patch`'s finder serves
the Keras packages only): a module imported while the patch is on takes the
routed name from the routed Keras module (`from keras.models import
clone_model`), and `unpatch()`'s scan gives it the native one back; so does a
global of any module (a script's `fn = keras.models.clone_model`) that took
the routed name while the patch was on. One that
takes the native from its defining module (`keras.src.models.cloning`) while
the patch is on is rebound by the next `patch()` call only. The caller
(`_patch`) holds its lock while a scan runs.
"""

from __future__ import annotations

import contextlib
import sys
import types
from typing import Any, Callable, Dict, List, Mapping, Tuple

__all__ = ["bind", "bound_names", "restore"]

# Packages never scanned here: the Keras packages (`_patch` routes their
# modules, and must not touch the module that defines `clone_model`), and our own.
_SKIPPED_ROOTS = frozenset({"keras", "tf_keras", "tensorflow", "compat_clone"})


class _Slot:
    """One place that holds a native `clone_model` or its router: read and written through its owner."""

    __slots__ = ("where", "get", "put", "native", "router")

    def __init__(self, where: str, get: Callable[[], Any], put: Callable[[Any], None]) -> None:
        self.where = where
        self.get = get
        self.put = put
        self.native: Any = None
        self.router: Any = None


# (kind, id(owner), key) -> the slot; the slot's closures keep the owner alive until `restore`.
_slots: Dict[Tuple[str, int, Any], _Slot] = {}


def _attribute(owner: Any, key: str, where: str, wrap: Any = None) -> _Slot:
    """`owner.key` (a module or a class); `wrap` is staticmethod / classmethod when the class stores one."""

    def get() -> Any:
        value = vars(owner).get(key)
        if wrap is not None:
            return value.__func__ if type(value) is wrap else None
        return value

    def put(value: Any) -> None:
        setattr(owner, key, value if wrap is None else wrap(value))

    return _Slot(where, get, put)


def _default(fn: types.FunctionType, index: int, where: str) -> _Slot:
    def get() -> Any:
        defaults = fn.__defaults__ or ()
        return defaults[index] if index < len(defaults) else None

    def put(value: Any) -> None:
        defaults = list(fn.__defaults__ or ())
        defaults[index] = value
        fn.__defaults__ = tuple(defaults)

    return _Slot(where, get, put)


def _kwdefault(fn: types.FunctionType, key: str, where: str) -> _Slot:
    def get() -> Any:
        return (fn.__kwdefaults__ or {}).get(key)

    def put(value: Any) -> None:
        fn.__kwdefaults__ = {**(fn.__kwdefaults__ or {}), key: value}

    return _Slot(where, get, put)


_Found = List[Tuple[Tuple[str, int, Any], _Slot]]
_FUNCTION = types.FunctionType
_WRAPPERS = (staticmethod, classmethod)

# The loops below are written out (no generators, no helper per value): a scan
# reads some 60,000 values with TensorFlow loaded, and each call there counts.


def _in_function(fn: Any, where: str, wanted: Mapping[int, Any], found: _Found) -> None:
    defaults = fn.__defaults__
    if defaults:
        for index, value in enumerate(defaults):
            if id(value) in wanted and wanted[id(value)] is value:
                found.append((("default", id(fn), index), _default(fn, index, f"{where}.__defaults__[{index}]")))
    kwdefaults = fn.__kwdefaults__
    if kwdefaults:
        for key, value in kwdefaults.items():
            if id(value) in wanted and wanted[id(value)] is value:
                found.append((("kwdefault", id(fn), key), _kwdefault(fn, key, f"{where}.__kwdefaults__[{key!r}]")))


def _in_class(cls: type, where: str, wanted: Mapping[int, Any], found: _Found) -> None:
    for key, value in list(vars(cls).items()):
        kind = type(value)
        if id(value) in wanted:
            if wanted[id(value)] is value and isinstance(key, str):
                found.append((("attr", id(cls), key), _attribute(cls, key, f"{where}.{key}")))
        elif kind is _FUNCTION:
            if value.__defaults__ or value.__kwdefaults__:
                _in_function(value, f"{where}.{key}", wanted, found)
        elif kind in _WRAPPERS:
            inner = value.__func__
            if id(inner) in wanted and wanted[id(inner)] is inner and isinstance(key, str):
                found.append((("attr", id(cls), key), _attribute(cls, key, f"{where}.{key}", wrap=kind)))
            elif type(inner) is _FUNCTION and (inner.__defaults__ or inner.__kwdefaults__):
                _in_function(inner, f"{where}.{key}", wanted, found)


def _in_module(module: types.ModuleType, wanted: Mapping[int, Any], found: _Found) -> None:
    try:
        namespace = vars(module)
    except TypeError:  # an object in sys.modules without a __dict__
        return
    name = namespace.get("__name__")
    if not isinstance(name, str):
        return
    for key, value in list(namespace.items()):
        kind = type(value)
        if id(value) in wanted:
            if wanted[id(value)] is value and isinstance(key, str):
                found.append((("attr", id(module), key), _attribute(module, key, f"{name}.{key}")))
        elif kind is _FUNCTION:
            # defined here (`__module__`), not imported: each function is read in its own module
            if (value.__defaults__ or value.__kwdefaults__) and value.__module__ == name:
                _in_function(value, f"{name}.{key}", wanted, found)
        elif issubclass(kind, type) and vars(value).get("__module__") == name:
            # a class defined here; `type()`, never the object's own `__class__`
            _in_class(value, f"{name}.{key}", wanted, found)


def _scan(routers: Mapping[int, Callable[..., Any]], rebind: bool) -> None:
    wanted: Dict[int, Any] = {}
    native_of: Dict[int, Any] = {}
    for router in routers.values():
        native = router.__wrapped__  # type: ignore[attr-defined]
        for fn in (native, router):
            wanted[id(fn)] = fn
            native_of[id(fn)] = native
    for module_name, module in list(sys.modules.items()):
        if module_name.partition(".")[0] in _SKIPPED_ROOTS or not issubclass(type(module), types.ModuleType):
            continue
        found: _Found = []
        _in_module(module, wanted, found)
        for key, slot in found:
            current = slot.get()
            native = native_of.get(id(current))
            if native is None:
                continue
            router = routers[id(native)]
            if current is native:
                if not rebind:
                    continue
                try:
                    slot.put(router)
                except (AttributeError, TypeError):  # a class that refuses setattr: left alone
                    continue
            if key not in _slots:
                slot.native, slot.router = native, router
                _slots[key] = slot


def bind(routers: Mapping[int, Callable[..., Any]]) -> None:
    """Gives every slot that holds a native function its router, and records it.

    Args:
        routers: id(native) -> the router `_patch` made for it (its
            `__wrapped__` is the native). A slot that holds a router already
            (a module imported while the patch was on, which bound the routed
            name itself) is recorded too, so that `restore` gives it the native.
    """
    _scan(routers, rebind=True)


def restore(routers: Mapping[int, Callable[..., Any]]) -> None:
    """Gives each recorded slot its native function back, where it still holds the router.

    A scan that rebinds nothing runs first: a module imported while the
    patch was on that took the routed name (`from keras.models import
    clone_model`) is recorded by it and gets the native function too. A slot
    rebound since by someone else stays theirs.
    """
    _scan(routers, rebind=False)
    for slot in list(_slots.values()):
        if slot.get() is slot.router:
            with contextlib.suppress(AttributeError, TypeError):
                slot.put(slot.native)
    _slots.clear()


def bound_names() -> List[str]:
    """Where a native function was found and routed (or a router recorded), sorted; for tests."""
    return sorted(slot.where for slot in _slots.values())
