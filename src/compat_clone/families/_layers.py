"""What a layer holds: nested sub-layers, and the `trainable` flags at every level."""

from __future__ import annotations

import contextlib
from typing import Any, List, Tuple

from compat_clone._walk import walk
from compat_clone.weights import LayerMap

__all__ = ["holds_layer_of", "restore_trainable"]


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
    return any(isinstance(sub, cls) for _, sub in walk(layer, models=True))


def _sublayers(layer: Any) -> List[Any]:
    flatten = getattr(layer, "_flatten_layers", None)
    if flatten is None:
        return [layer]
    return list(flatten(include_self=True))


def restore_trainable(model: Any, new: Any, layer_map: LayerMap, deep: bool = True) -> None:
    """Gives the clone the source's `trainable` flags, at every level.

    Native clones drop `model.trainable = False` of a model (known issue
    `trainable-model`) and may drop the flags of sub-layers made in `build()`
    (MultiHeadAttention, wrappers of nested models) or leave a frozen layer's
    variables trainable (tests/clone/zoo.py shows where). Setting a flag resets everything below
    it, so flags are set top-down: the model, each cloned layer, then the
    sub-layers of each (with `deep`: not where a user `clone_function`
    decided the layer) and their variables.

    Args:
        model: the source model.
        new: its clone.
        layer_map: source layer id -> (source layer, cloned layer).
        deep: whether to restore the sub-layers' and variables' flags too.
    """
    if model.trainable != new.trainable:
        # Setting the model's flag resets every layer below it: the layers'
        # flags as the clone had them (the user's `clone_function` may have
        # chosen them) are put back after.
        before = [(dst, dst.trainable) for _, dst in _layers(layer_map) if dst is not new]
        new.trainable = model.trainable
        for dst, flag in before:
            if dst.trainable != flag:
                dst.trainable = flag
    if not deep:
        return
    for src, dst in _layers(layer_map):
        if dst.trainable != src.trainable:
            dst.trainable = src.trainable
        src_subs, dst_subs = _sublayers(src), _sublayers(dst)
        if len(src_subs) != len(dst_subs) or any(type(a) is not type(b) for a, b in zip(src_subs, dst_subs)):
            continue  # not the same structure: nothing can be paired safely
        for a, b in zip(src_subs, dst_subs):
            if b.trainable != a.trainable:
                b.trainable = a.trainable
        _restore_variable_flags(src, dst)


def _layers(layer_map: LayerMap) -> List[Tuple[Any, Any]]:
    # Keras 3 graphs also hold plain Operations (no `trainable`): left out.
    return [(s, d) for s, d in layer_map.values() if hasattr(s, "trainable") and hasattr(d, "trainable")]


def _restore_variable_flags(src: Any, dst: Any) -> None:
    src_vars = list(getattr(src, "weights", None) or [])
    dst_vars = list(getattr(dst, "weights", None) or [])
    if len(src_vars) != len(dst_vars):
        return
    for a, b in zip(src_vars, dst_vars):
        flag = getattr(a, "trainable", None)
        if isinstance(flag, bool) and getattr(b, "trainable", flag) != flag:
            with contextlib.suppress(AttributeError):  # a read-only flag (tf.Variable): the layer's lists decide
                b.trainable = flag
