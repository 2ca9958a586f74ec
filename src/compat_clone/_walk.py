"""Nested layers: the one "is this a model?" rule and the one walk over a model's layers.

Every family marks a model by a class of its MRO: standalone Keras 2.0-2.3
has Model(Network); tf.keras has Model(Functional) since 2.4 (Network
before); Keras 3 has Model / Functional / Sequential. A model's `layers` are
walked into; anything else is a layer. The walk is iterative (a deep nesting
grows no Python stack) and meets each layer once (a layer shared between
nested models is met at its first path). Importing this module imports no
framework: it reads class names only.
"""

from __future__ import annotations

from typing import Any, Iterator, List, Sequence, Tuple

__all__ = ["MODEL_CLASS_NAMES", "OWNER_PACKAGES", "is_model", "sublayers", "walk"]

#: class names that mark "this object is a model", in every family
MODEL_CLASS_NAMES = frozenset({"Model", "Network", "Functional", "Sequential"})

#: top-level packages whose classes can own a Keras model, in the order they
#: are tried for one class's module; `tensorflow` covers the old in-tree
#: `tensorflow.python.keras` (TF <= 2.5), served by the tf.keras family.
OWNER_PACKAGES = ("keras", "tf_keras", "tensorflow")

# Attributes of a wrapper layer that hold the layer it wraps (TimeDistributed, Bidirectional).
_WRAPPED = "layer"


def is_model(layer: Any) -> bool:
    """Whether `layer` is a model (a class of its MRO is named in `MODEL_CLASS_NAMES`)."""
    return any(klass.__name__ in MODEL_CLASS_NAMES for klass in type(layer).__mro__)


def sublayers(layer: Any) -> Sequence[Any]:
    """The layers of `layer` when it is a model holding a list of them, else none."""
    layers = getattr(layer, "layers", None)
    if isinstance(layers, (list, tuple)) and is_model(layer):
        return layers
    return ()


def walk(model: Any, *, models: bool = False, wrapped: bool = False) -> Iterator[Tuple[str, Any]]:
    """``(path, layer)`` for every layer under `model`, nested models walked into, depth first.

    Args:
        model: the model whose layers are walked (not yielded itself).
        models: also yield each nested model, before its layers (by default
            only the layers that are not models).
        wrapped: also yield the layer a wrapper holds (TimeDistributed's,
            Bidirectional's ``layer``), right after the wrapper; not walked into.

    Yields:
        The layer's path, its name and its enclosing models' ``"/"``-joined
        (``"encoder/dense"``), and the layer.
    """
    stack: List[Tuple[str, Any]] = [("", layer) for layer in reversed(sublayers(model))]
    seen = set()
    while stack:
        prefix, layer = stack.pop()
        if id(layer) in seen:
            continue
        seen.add(id(layer))
        path = prefix + str(getattr(layer, "name", ""))
        children = sublayers(layer)
        if children:
            if models:
                yield path, layer
            stack.extend((path + "/", child) for child in reversed(children))
            continue
        yield path, layer
        inner = getattr(layer, _WRAPPED, None) if wrapped else None
        if inner is not None:
            yield path + "/" + str(getattr(inner, "name", "")), inner
