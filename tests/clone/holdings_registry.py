"""The registry of the models users hold (tests/clone/holdings.py): `KINDS`, `@kind`, and the helpers builders share.

tests/clone/holdings.py says what a kind is; the builders are in
tests/clone/holdings_subclassed.py (subclassed models) and tests/clone/holdings.py
(models loaded from files, library-built models).
"""

from __future__ import annotations

import sys
from typing import Any, Callable, Dict, Tuple

import numpy as np

from tests.clone.features import NotApplicable, family_name, skip_without_subclassed_models

__all__ = [
    "Built",
    "KINDS",
    "DESCRIPTIONS",
    "kind",
    "sample_input",
    "require_subclassing",
    "is_keras3",
    "public",
    "no_keras2_arithmetic",
    "outputs",
    "call_model",
]

Built = Tuple[Any, Any]
KINDS: Dict[str, Callable[[Any, str], Built]] = {}
DESCRIPTIONS: Dict[str, str] = {}


def kind(description: str) -> Callable[[Callable[[Any, str], Built]], Callable[[Any, str], Built]]:
    def register(fn: Callable[[Any, str], Built]) -> Callable[[Any, str], Built]:
        KINDS[fn.__name__] = fn
        DESCRIPTIONS[fn.__name__] = description
        return fn

    return register


def sample_input(shape: Tuple[int, ...] = (4, 6), seed: int = 0) -> np.ndarray:
    return np.random.RandomState(seed).rand(*shape).astype("float32")


def require_subclassing(K: Any) -> None:
    skip_without_subclassed_models(K)


def is_keras3(K: Any) -> bool:
    return family_name(K) == "keras3"


def public(cls: Any) -> Any:
    """Makes a class defined in a builder findable as users' classes are: `<its module>.<Name>`.

    Keras 3 deserializes a custom class by its module and name; a class
    local to a function is not found there (native and config round trip
    fail alike, the structural clone does not need it). Users define their
    classes at module level: so do the kinds (in the module whose builder
    defines the class: holdings_subclassed.py or holdings.py).
    """
    cls.__qualname__ = cls.__name__
    setattr(sys.modules[cls.__module__], cls.__name__, cls)
    return cls


def no_keras2_arithmetic(K: Any) -> None:
    """Standalone Keras 2.2-2.3 cannot call a subclassed model whose `call` returns backend arithmetic
    on a layer's output (`_set_inputs` reads `_uses_learning_phase` off the result)."""
    if family_name(K) == "keras2":
        raise NotApplicable("standalone Keras 2's subclassed call must return a layer's output")


def outputs(model: Any, x: Any) -> Any:
    """`model.predict(x)`; a direct call where predict cannot feed `x` (keras_hub's dict inputs
    without TensorFlow or grain on JAX and torch), as NumPy."""
    try:
        return model.predict(x, verbose=0)
    except ImportError:
        import keras

        return keras.tree.map_structure(keras.ops.convert_to_numpy, model(x))


def call_model(model: Any, x: Any) -> Any:
    outputs(model, x)
    return model
