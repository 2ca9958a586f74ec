"""No wasted initialization: a clone whose weights are copied is created with zeros.

With `copy_weights=True` every variable the clone creates is overwritten by
the copy, so running its initializer (random draws over the whole weight
matrix: most of a native clone's time on a weight-heavy model) is wasted.
While a clone with weights is built, the family's `Layer.add_weight` gets the
`"zeros"` initializer instead of its own, in this thread only; the checked
copy then fills every variable once. Layers' own `build()` code, custom
layers included, goes through `add_weight`, so their initializers are
skipped too.

Where a family can make a variable's first value a device copy of its source
variable's (Keras 3 on JAX and torch: `prefill`), the zeros are not made at
all: a clone layer's `add_weight(name=...)` whose source layer holds exactly
one variable of that name, shape and dtype starts as that copy, and the
weight copy skips it (`Prefill.done`). Everything else still starts as zeros
and is filled by the copy.

The wrapper is installed on the family's base layer class the first time a
clone with weights is made; outside such a clone (another thread, or after
it) it calls the original method unchanged.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import threading
from typing import Any, Callable, Dict, Iterator, Optional, Tuple

__all__ = ["zeros_initializers", "Prefill"]

_ACTIVE = threading.local()
_INSTALL_LOCK = threading.Lock()
_MARK = "__compat_clone_original__"


class Prefill:
    """First values copied from the source's variables, for one clone with weights.

    Args:
        source_layer: the source layer of a clone layer, or None.
        fresh_copy: a new device buffer holding a source variable's value
            (where it lives, same placement).
    """

    def __init__(self, source_layer: Callable[[Any], Any], fresh_copy: Callable[[Any], Any]) -> None:
        self._source_layer = source_layer
        self._fresh_copy = fresh_copy
        #: id(clone variable) -> (clone variable, the source variable it was copied from)
        self.done: Dict[int, Tuple[Any, Any]] = {}

    def initializer(self, layer: Any, name: Any) -> Optional[_FromSource]:
        source = self._source_layer(layer) if isinstance(name, str) else None
        if source is None:
            return None
        found = [v for v in getattr(source, "weights", None) or [] if getattr(v, "name", None) == name]
        return _FromSource(found[0], self._fresh_copy) if len(found) == 1 else None


class _FromSource:
    """An initializer: a copy of `variable` where shape and dtype agree, else zeros."""

    def __init__(self, variable: Any, fresh_copy: Callable[[Any], Any]) -> None:
        self.variable = variable
        self.fresh_copy = fresh_copy
        self.used = False

    def __call__(self, shape: Any, dtype: Any = None) -> Any:
        src = self.variable
        if tuple(shape) == tuple(src.shape) and (dtype is None or str(dtype) == str(src.dtype)):
            self.used = True
            return self.fresh_copy(src)
        from keras import initializers  # Keras 3: the family whose models are being cloned

        return initializers.get("zeros")(shape, dtype=dtype)


def _wrap(original: Callable[..., Any]) -> Callable[..., Any]:
    # Where `initializer` and `name` sit among the positional arguments after
    # `self` (standalone Keras 2's legacy wrapper refuses most of them
    # positionally, so the call keeps the caller's own spelling).
    names = list(inspect.signature(original).parameters)
    position = names.index("initializer") - 1
    name_at = names.index("name") - 1 if "name" in names else None
    shape_at = names.index("shape") - 1 if "shape" in names else None

    @functools.wraps(original)
    def add_weight(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not getattr(_ACTIVE, "depth", 0):
            return original(self, *args, **kwargs)
        shape = args[shape_at] if shape_at is not None and len(args) > shape_at else kwargs.get("shape")
        if _unknown_dimension(shape):
            # `zeros-unknown-shape`: no zeros of an unknown size (tf.keras'
            # `Discretization` summary, shape (2, None)): its own initializer.
            return original(self, *args, **kwargs)
        prefill: Optional[Prefill] = getattr(_ACTIVE, "prefill", None)
        first: Any = "zeros"
        if prefill is not None:
            name = args[name_at] if name_at is not None and len(args) > name_at else kwargs.get("name")
            first = prefill.initializer(self, name) or "zeros"
        if len(args) > position:
            args = args[:position] + (first,) + args[position + 1 :]
        else:
            kwargs["initializer"] = first
        variable = original(self, *args, **kwargs)
        if prefill is not None and isinstance(first, _FromSource) and first.used:
            prefill.done[id(variable)] = (variable, first.variable)
        return variable

    setattr(add_weight, _MARK, original)
    return add_weight


def _unknown_dimension(shape: Any) -> bool:
    try:
        return any(d is None for d in shape)
    except TypeError:  # no shape given, or a scalar
        return False


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
def zeros_initializers(layer_cls: type, prefill: Optional[Prefill] = None) -> Iterator[None]:
    """Within the block, in this thread, `layer_cls.add_weight` initializes with zeros.

    Args:
        layer_cls: the family's base class that defines `add_weight`.
        prefill: where given, variables it finds a source for start as a
            copy of it instead (recorded in `prefill.done`).

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
    outer = getattr(_ACTIVE, "prefill", None)
    _ACTIVE.depth = getattr(_ACTIVE, "depth", 0) + 1
    _ACTIVE.prefill = prefill
    try:
        yield
    finally:
        _ACTIVE.depth -= 1
        _ACTIVE.prefill = outer
