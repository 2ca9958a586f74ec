"""Standalone Keras 2's pieces the family reads its models with.

Its package, attribute names that changed between 2.0 and 2.3, a node's call
arguments mapped to the clone's tensors (without the source's masks: known
issue `keras2-mutates-source`), an `InputLayer`'s arguments, the check that an
input tensor is this Keras' own, and the Keras objects a layer holds that Keras
cannot resolve by name. `keras2.py` holds the family itself.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional

from compat_clone.errors import InputTensorsError

__all__ = [
    "attr_of",
    "check_own_keras",
    "input_spec",
    "layer_device",
    "map_arguments",
    "safe_name",
    "standalone_keras",
    "to_list",
    "unregistered_objects",
]


def standalone_keras() -> Any:
    import keras

    return keras


def attr_of(obj: Any, *names: str) -> Any:
    # 2.0-2.1.2 spell these without the underscore (`input_layers`,
    # `nodes_by_depth`); 2.1.3+ with it.
    for name in names:
        if hasattr(obj, name):
            return getattr(obj, name)
    raise AttributeError(f"{type(obj).__name__} has none of {names}")


def to_list(x: Any) -> List[Any]:
    return list(x) if isinstance(x, (list, tuple)) else [x]


def unregistered_objects(layer: Any) -> Dict[str, Any]:
    """Keras' own classes and activation functions inside `layer` whose names Keras does not resolve
    (a user's unregistered objects stay the user's to register)."""
    keras = standalone_keras()
    known = keras.utils.get_custom_objects()
    found: Dict[str, Any] = {}
    stack, seen = [layer], set()
    while stack:
        item = stack.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        name = type(item).__name__
        if (
            _own(type(item))
            and getattr(keras.layers, name, None) is None
            and name not in known
            and not hasattr(keras.models, name)
        ):
            found[name] = type(item)
        activation = getattr(item, "activation", None)
        fn_name = getattr(activation, "__name__", None)
        if (
            callable(activation)
            and _own(activation)
            and fn_name
            and fn_name not in known
            and getattr(keras.activations, fn_name, None) is None
        ):
            found[fn_name] = activation
        stack.extend(getattr(item, "layers", None) or ())
        inner = getattr(item, "layer", None)  # wrappers
        if inner is not None:
            stack.append(inner)
    return found


def _own(obj: Any) -> bool:
    return str(getattr(obj, "__module__", "")).startswith("keras.")


def input_spec(layer: Any) -> Dict[str, Any]:
    """An `InputLayer`'s arguments: batch shape, dtype, sparse, name."""
    return {
        "batch_shape": layer.batch_input_shape,
        "dtype": layer.dtype,
        "sparse": getattr(layer, "sparse", False),
        "name": layer.name,
    }


def layer_device(layer: Any) -> Optional[str]:
    """The device of a layer's variables, when they all agree and it is set."""
    devices = {getattr(w, "device", "") or "" for w in getattr(layer, "weights", []) or []}
    return (devices.pop() or None) if len(devices) == 1 else None


def safe_name(x: Any) -> str:
    # `Input(tensor=x, name='input_wrapper_for_' + x.name)` would put the
    # tensor's ':0' into a layer name.
    return re.sub(r"[^A-Za-z0-9_.\-/]", "_", str(getattr(x, "name", "tensor")))


def check_own_keras(x: Any, layer_cls: type) -> None:
    """A Keras tensor must come from this standalone Keras, not tf.keras/tf_keras."""
    history = getattr(x, "_keras_history", None)
    if history is None or isinstance(history[0], layer_cls):
        return
    origin = history[0]
    owner = type(origin).__module__.partition(".")[0]
    raise InputTensorsError(
        "Expected `input_tensors` from the same standalone Keras as the model "
        f"(keras {standalone_keras().__version__}). Received "
        f"{type(x).__module__}.{type(x).__qualname__} {x!r}, made by layer "
        f"{getattr(origin, 'name', '?')!r} of package {owner!r}. Create it "
        "with this Keras' `keras.Input(...)`, or pass a placeholder or variable."
    )


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(x is y for x, y in zip(a, b))
    return a is b


def map_arguments(node: Any, tensor_map: Dict[int, Any]) -> Dict[str, Any]:
    """The node's call arguments, copied, with source tensors mapped to clones.

    `keras2-mutates-source`: native clones write `mask=` into the *source*
    node's arguments. We never mutate them; a `mask` argument that is the
    mask the source node received from its inputs is dropped, and
    `Layer.__call__` collects the clone's masks from the clone's inputs (one
    per output: `keras2-12202-masks`). Tensors given as keyword arguments
    (`initial_state=`, `constants=`) are mapped to their clones.
    """
    arguments = dict(getattr(node, "arguments", None) or {})
    if "mask" in arguments:
        source_masks = getattr(node, "input_masks", None)
        if source_masks is not None and _same(to_list(arguments["mask"]), to_list(source_masks)):
            del arguments["mask"]
    for key, value in list(arguments.items()):
        if isinstance(value, (list, tuple)):
            arguments[key] = type(value)(tensor_map.get(id(v), v) for v in value)
        else:
            arguments[key] = tensor_map.get(id(value), value)
    return arguments
