"""No wasted initialization: a clone whose weights are copied is created with zeros.

With `copy_weights=True` every variable the clone creates is overwritten by
the copy, so running its initializer (random draws over the whole weight
matrix: most of a native clone's time on a weight-heavy model) is wasted.
While a clone with weights is built, the family's `Layer.add_weight` gets the
`"zeros"` initializer instead of its own, in this thread only; the checked
copy then fills every variable once. Layers' own `build()` code, custom
layers included, goes through `add_weight`, so their initializers are
skipped too.

The wrapper is installed on the family's base layer class the first time a
clone with weights is made; outside such a clone (another thread, or after
it) it calls the original method unchanged.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import threading
from typing import Any, Callable, Iterator

__all__ = ["zeros_initializers"]

_ACTIVE = threading.local()
_INSTALL_LOCK = threading.Lock()
_MARK = "__compat_clone_original__"


def _wrap(original: Callable[..., Any]) -> Callable[..., Any]:
    # Where `initializer` sits among the positional arguments after `self`
    # (standalone Keras 2's legacy wrapper refuses most of them positionally,
    # so the call keeps the caller's own spelling).
    position = list(inspect.signature(original).parameters).index("initializer") - 1

    @functools.wraps(original)
    def add_weight(self: Any, *args: Any, **kwargs: Any) -> Any:
        if getattr(_ACTIVE, "depth", 0):
            if len(args) > position:
                args = args[:position] + ("zeros",) + args[position + 1 :]
            else:
                kwargs["initializer"] = "zeros"
        return original(self, *args, **kwargs)

    setattr(add_weight, _MARK, original)
    return add_weight


def _install(layer_cls: type) -> bool:
    """Wraps `layer_cls.add_weight` once; False where it takes no `initializer`."""
    current = layer_cls.__dict__.get("add_weight")
    if current is None:
        return False
    if hasattr(current, _MARK):
        return True
    if "initializer" not in inspect.signature(current).parameters:
        return False
    with _INSTALL_LOCK:
        if not hasattr(layer_cls.__dict__["add_weight"], _MARK):
            layer_cls.add_weight = _wrap(current)  # type: ignore[attr-defined]
    return True


@contextlib.contextmanager
def zeros_initializers(layer_cls: type) -> Iterator[None]:
    """Within the block, in this thread, `layer_cls.add_weight` initializes with zeros.

    Args:
        layer_cls: the family's base class that defines `add_weight`.

    Example:

    >>> import keras
    >>> with zeros_initializers(keras.layers.Layer):
    ...     layer = keras.layers.Dense(2)
    ...     layer.build((None, 3))
    >>> float(keras.ops.sum(keras.ops.abs(layer.kernel)))
    0.0
    """
    if not _install(layer_cls):
        yield
        return
    _ACTIVE.depth = getattr(_ACTIVE, "depth", 0) + 1
    try:
        yield
    finally:
        _ACTIVE.depth -= 1
