"""Keras 2 formulas Keras 3 changed, as Keras 3 functions a converted model names.

A converted model that computes one of them (standalone Keras 2's LSTM and GRU
default to ``recurrent_activation="hard_sigmoid"``, ``clip(0.2 * x + 0.5, 0, 1)``;
Keras 3's ``hard_sigmoid`` is ``clip(x / 6 + 0.5, 0, 1)``) holds a function
registered with Keras as ``compat_clone>keras2_<name>``. Its `.keras` file names
it so: Keras 3 loads the file in a process where `custom_objects()` was called
(or with ``custom_objects=compat_clone.convert.custom_objects()``). Importing
this module imports no framework; the functions import `keras` when called.
"""

from __future__ import annotations

from typing import Any, Callable, Dict

__all__ = ["custom_objects", "keras2_function", "PACKAGE"]

#: the package name of the registered functions (``compat_clone>keras2_hard_sigmoid``)
PACKAGE = "compat_clone"


def _keras2_hard_sigmoid(x: Any) -> Any:
    """Keras 2's hard sigmoid, ``clip(0.2 * x + 0.5, 0, 1)`` (Keras 3 uses ``x / 6 + 0.5``)."""
    from keras import ops

    return ops.clip(ops.add(ops.multiply(x, 0.2), 0.5), 0.0, 1.0)


_FORMULAS: Dict[str, Callable[[Any], Any]] = {"hard_sigmoid": _keras2_hard_sigmoid}
_registered: Dict[str, Callable[[Any], Any]] = {}


def keras2_function(name: str) -> Callable[[Any], Any]:
    """The Keras 3 function computing Keras 2's `name`, registered with Keras 3 (once).

    Args:
        name: a Keras 2 activation name whose formula Keras 3 changed
            (``"hard_sigmoid"``).

    Returns:
        The registered function.

    Raises:
        KeyError: `name` is not one of them.
    """
    if name not in _registered:
        import keras

        register = keras.saving.register_keras_serializable(package=PACKAGE, name=f"keras2_{name}")
        _registered[name] = register(_FORMULAS[name])
    return _registered[name]


def custom_objects() -> Dict[str, Any]:
    """What Keras 3 needs to load a converted model's `.keras` file, and registers it.

    Returns:
        ``{"compat_clone>keras2_hard_sigmoid": fn, "keras2_hard_sigmoid": fn,
        "compat_clone>TensorFlowOp": cls, ...}`` (the Keras 2 formulas, and
        the layer computing TensorFlow functions a Keras 2 graph called)
        for ``keras.models.load_model(path, custom_objects=...)``; after the
        call, a plain ``load_model(path)`` in this process works too.

    Example:

    >>> import keras
    >>> import compat_clone.convert
    >>> model = keras.models.load_model(               # doctest: +SKIP
    ...     "new.keras", custom_objects=compat_clone.convert.custom_objects())
    """
    found: Dict[str, Any] = {}
    for name in _FORMULAS:
        fn = keras2_function(name)
        found[f"{PACKAGE}>keras2_{name}"] = fn
        found[f"keras2_{name}"] = fn
    from compat_clone.convert._tf_ops import LAYER_NAME, op_layer_class

    found[f"{PACKAGE}>{LAYER_NAME}"] = found[LAYER_NAME] = op_layer_class()
    return found
