"""What every backend's placement shares: the `PlacementBackend` protocol, the `Placement` record, the pair cache, small helpers.

Nothing here imports a framework: a model object exists, so its framework is
in `sys.modules` already.
"""

from __future__ import annotations

import collections
import contextlib
import sys
import threading
import weakref
from typing import Any, Callable, ContextManager, Dict, List, Optional, Sequence, Tuple

from compat_clone._compat import Protocol
from compat_clone.errors import DeviceNotFoundError, InvalidArgumentError

__all__ = [
    "Pairs",
    "PlacementBackend",
    "Placement",
    "PairCache",
    "framework",
    "stored",
    "rebind",
    "most_common",
    "device_not_found",
    "model_variables",
    "pair_variables",
]

Pairs = List[Tuple[Any, Any]]


def framework(name: str) -> Any:
    """A framework already imported by the caller's model (never imported here)."""
    module = sys.modules.get(name)
    if module is None:  # pragma: no cover - a live model implies its framework
        raise InvalidArgumentError(
            f"`{name}` is not imported, but the model needs it. Import "
            f"`{name}` (the model's framework) before calling compat_clone."
        )
    return module


def stored(variable: Any) -> Any:
    """The array a Keras 3 variable stores, read once: no autocast copy, no scope lookups.

    `variable.value` goes through Keras's autocast and stateless-scope checks
    on every read (a few microseconds each, several reads per variable per
    copy); a copy or a blend wants the stored buffer itself.
    """
    value = getattr(variable, "_value", None)
    return variable.value if value is None else value


def rebind(variable: Any, value: Any) -> None:
    """Makes `value` (same shape, dtype and placement) the variable's array, as `assign` would.

    Inside a `StatelessScope` the write goes through `assign`, which records it
    in the scope instead of the variable (Keras 3.0-3.15.1).
    """
    scope = sys.modules.get("keras.src.backend.common.stateless_scope")
    direct = getattr(variable, "_direct_assign", None)
    if direct is None or scope is None or scope.in_stateless_scope():
        variable.assign(value)
    else:
        direct(value)


def most_common(values: Sequence[Any]) -> Any:
    """The most frequent value (first seen wins a tie), or None when empty."""
    if not values:
        return None
    counts = collections.Counter(values)
    best = max(counts.values())
    for value in values:
        if counts[value] == best:
            return value
    return None  # pragma: no cover


def device_not_found(device: Any, backend: str, available: Sequence[str], hint: str = "") -> DeviceNotFoundError:
    return DeviceNotFoundError(
        f"Device {device!r} does not exist for the {backend} backend. Available "
        f"devices: {list(available)}. Pass one of them{hint}, or device=None to "
        "create the clone where the source is."
    )


def model_variables(model: Any) -> List[Any]:
    if not getattr(model, "built", True):  # an unbuilt Sequential has none (tf_keras raises)
        return []
    variables = list(getattr(model, "weights", None) or [])
    if not variables:
        variables = list(getattr(model, "variables", None) or [])
    return variables


def pair_variables(model: Any, clone: Any, layer_map: Optional[Dict[int, Tuple[Any, Any]]]) -> Pairs:
    """(source variable, clone variable) pairs, for placement.

    Layer by layer from the clone's layer map; what that leaves (a subclassed
    model rebuilt from its config has no map) by position over the models'
    variables. Lenient, since this places and does not copy: pairs whose
    shapes differ are skipped; a clone variable is paired once.
    """
    pairs: Pairs = []
    seen = set()

    def add(src_vars: Sequence[Any], dst_vars: Sequence[Any]) -> None:
        for src, dst in zip(src_vars, dst_vars):
            if id(dst) in seen or tuple(src.shape) != tuple(dst.shape):
                continue
            seen.add(id(dst))
            pairs.append((src, dst))

    for src_layer, dst_layer in (layer_map or {}).values():
        add(list(getattr(src_layer, "weights", None) or []), list(getattr(dst_layer, "weights", None) or []))
    src_all, dst_all = model_variables(model), model_variables(clone)
    if len(src_all) == len(dst_all) and any(id(v) not in seen for v in dst_all):
        add(src_all, dst_all)
    return pairs


class Placement:
    """Where one clone's variables go.

    Attributes:
        description: where, in words (for errors and `repr`).
    """

    def __init__(
        self,
        description: str,
        enter: Optional[Callable[[], ContextManager[Any]]] = None,
        finish: Optional[Callable[[Any, Any], None]] = None,
    ) -> None:
        self.description = description
        self._enter = enter
        self._finish = finish

    def context(self) -> ContextManager[Any]:
        return self._enter() if self._enter is not None else contextlib.nullcontext()

    def finish(self, clone: Any, layer_map: Any = None) -> None:
        """Moves what the creation scope could not place (JAX shardings, torch strays)."""
        if self._finish is not None:
            self._finish(clone, layer_map)

    def __repr__(self) -> str:
        return f"Placement({self.description})"


class PairCache:
    """Something built once per list of (source, target) variable pairs, reused.

    A soft update runs every training step on the same two models: the fused
    operation it needs (a `tf.function`, a grouping of torch tensors) is built
    on the first call and found again by the identity of the variables. The
    cache holds the variables only weakly: an entry goes when one of its
    variables is garbage-collected, so a cached operation never keeps a model
    alive. What is cached must not hold the variables strongly either.
    """

    def __init__(self, limit: int = 256) -> None:
        self._entries: Dict[Tuple[int, ...], Tuple[List[Any], Any]] = {}
        self._lock = threading.RLock()  # a weakref callback may run in the middle of `get`
        self._limit = limit

    def get(self, pairs: Pairs, build: Callable[[], Any]) -> Any:
        """The value cached for exactly these pairs, else `build()` (cached)."""
        flat = [v for pair in pairs for v in pair]
        key = tuple(map(id, flat))
        entry = self._entries.get(key)
        if entry is not None and all(ref() is v for ref, v in zip(entry[0], flat)):
            return entry[1]
        value = build()
        try:
            refs: List[Any] = []
            new = (refs, value)
            drop = self._dropper(key, new)
            refs.extend(weakref.ref(v, drop) for v in flat)
        except TypeError:  # a variable type without weak references: not cached
            return value
        with self._lock:
            if len(self._entries) >= self._limit:
                self._entries.pop(next(iter(self._entries)))
            self._entries[key] = new
        return value

    def _dropper(self, key: Tuple[int, ...], entry: Any) -> Callable[[Any], None]:
        def drop(_: Any) -> None:
            with self._lock:
                if self._entries.get(key) is entry:
                    del self._entries[key]

        return drop

    def __len__(self) -> int:
        return len(self._entries)


class PlacementBackend(Protocol):
    """What placement asks of one Keras backend (TensorFlow, JAX, torch, NumPy).

    One class per backend implements it, in the backend's module of this
    package (`TensorFlowBackend`, `JaxBackend`, `TorchBackend`,
    `NumpyBackend`); `compat_clone.placement` selects one by the backend's
    name. A backend never imports its framework to be selected: its methods
    find the framework in `sys.modules` (`framework`), where the model being
    cloned or copied put it.
    """

    def resolve(self, model: Any, device: Any) -> Placement:
        """Where the clone of `model` is created, checked before anything is built.

        Args:
            model: the source model.
            device: None (the source's placement) or what the user passed as
                `device` (a device string, a framework device object, a
                strategy, sharding or distribution the backend accepts).

        Returns:
            The `Placement`: its context creates the clone's variables there,
            its `finish` moves what that context could not place.

        Raises:
            DeviceNotFoundError: `device` does not exist for this backend.
        """
        ...

    def assign(self, pairs: Pairs) -> None:
        """Copies checked (source, target) Keras 3 variable pairs, without a host round trip where it can.

        Two phases: everything that can fail runs before the first target is
        written, so an error leaves every target untouched.
        """
        ...

    def blend(self, pairs: Pairs, tau: float) -> None:
        """Soft update: every floating-point target becomes `tau * src + (1 - tau) * dst`, others copied exactly.

        Two phases, as `assign`.
        """
        ...

    def fresh_copier(self) -> Optional[Callable[[Any], Any]]:
        """`fn(variable)`: a new buffer holding the variable's value where it lives; None where the backend has none."""
        ...
