"""Pieces every family's clone shares: the request, user `clone_function` calls, `trainable`."""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Optional

from compat_clone.errors import CloneFunctionError, CompatCloneError
from compat_clone.weights import LayerMap

__all__ = ["CloneRequest", "call_clone_function", "holds_layer_of", "restore_trainable"]


@dataclasses.dataclass(frozen=True)
class CloneRequest:
    """What `compat_clone.clone_model` asks of a family's adapter, checked.

    Every adapter module has `clone(model, request) -> (clone, layer_map)`,
    `variable_spec(variable)` and `assign_pairs(pairs)`.
    """

    input_tensors: Any = None
    clone_function: Optional[Callable[[Any], Any]] = None
    call_function: Optional[Callable[..., Any]] = None
    recursive: bool = False
    device: Any = None
    name: Optional[str] = None
    info: Any = None


def call_clone_function(
    fn: Callable[[Any], Any], layer: Any, layer_cls: type, returns: str, instead: str
) -> Any:
    """`fn(layer)`, its failure re-raised naming the layer, its result checked.

    Args:
        fn: the user's `clone_function`.
        layer: the source layer.
        layer_cls: what `fn` must return (the family's layer base class).
        returns: how the message names a valid result ("a Keras layer").
        instead: what the message suggests returning besides a config round trip.

    Returns:
        The new layer.

    Raises:
        CloneFunctionError: `fn` raised, or returned something else.
    """
    try:
        new = fn(layer)
    except CompatCloneError:
        raise
    except Exception as exc:
        raise CloneFunctionError(
            f"`clone_function` raised {type(exc).__name__} on layer "
            f"{layer.name!r} ({type(layer).__name__}): {exc}"
        ) from exc
    if not isinstance(new, layer_cls):
        raise CloneFunctionError(
            f"`clone_function` must return {returns}; for layer "
            f"{layer.name!r} it returned {type(new).__name__}: {new!r}. "
            f"Return `layer.__class__.from_config(layer.get_config())` or {instead}."
        )
    return new


def holds_layer_of(layer: Any, cls: Any) -> bool:
    """Whether any layer nested inside `layer` (not `layer` itself) is a `cls`.

    tf.keras 2.x, tf_keras and Keras 3 list every tracked sublayer, wrapped
    ones included (`_flatten_layers`); standalone Keras 2.0-2.3 has no such
    list, and there the nested models' `layers` are walked (iteratively: the
    nesting depth is the user's).
    """
    flatten = getattr(layer, "_flatten_layers", None)
    if flatten is not None:
        return any(isinstance(sub, cls) for sub in flatten(include_self=False))
    stack = list(getattr(layer, "layers", None) or [])
    while stack:
        sub = stack.pop()
        if isinstance(sub, cls):
            return True
        stack.extend(getattr(sub, "layers", None) or [])
    return False


def restore_trainable(model: Any, new: Any, layer_map: LayerMap) -> None:
    """Gives `new` the source's `trainable`, then each cloned layer its own flag.

    Native clones drop `model.trainable = False` of a model (Keras 3.x after
    3.0.0, tf.keras 2.4-2.15, tf_keras 2.14-2.21); setting it back resets
    every layer, so the layers' own flags are restored after.
    """
    if model.trainable != new.trainable:
        new.trainable = model.trainable
        for src, dst in layer_map.values():
            if dst is not new and dst.trainable != src.trainable:
                dst.trainable = src.trainable
