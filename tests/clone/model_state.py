"""Plain builders and state snapshots shared by the robustness tests.

`rich_model(K)` builds, with the Keras module `K` of any family, a small
functional model with the parts that clones get wrong: a nested model, a
shared layer, BatchNormalization statistics, a frozen layer, non-trivial
weights. `snapshot(model)` records everything a failed or successful clone
must leave alone (weights bit for bit, variable identity, layer names,
trainable flags, built state, graph nodes); `assert_unchanged` compares.
"""

from __future__ import annotations

from typing import Any, Dict, Iterator

import numpy as np

from tests.support._py import zip_strict


def walk_layers(model: Any) -> Iterator[Any]:
    """Every layer of `model`, nested models and their layers included."""
    stack = list(reversed(getattr(model, "layers", []) or []))
    seen = set()
    while stack:
        layer = stack.pop()
        if id(layer) in seen:
            continue
        seen.add(id(layer))
        yield layer
        stack.extend(reversed(getattr(layer, "layers", []) or []))


def fill_weights(model: Any, seed: int = 0) -> Any:
    """Sets every weight to a distinct non-trivial value (positive, so BN variances stay valid)."""
    rng = np.random.default_rng(seed)
    model.set_weights([rng.uniform(0.5, 1.5, size=np.shape(w)).astype(np.asarray(w).dtype) for w in model.get_weights()])
    return model


def rich_model(K: Any, name: str = "rich") -> Any:
    """Nested model, shared layer, BatchNormalization, Dropout, a frozen layer."""
    inner_in = K.Input((8,), name=name + "_inner_x")
    inner = K.models.Model(
        inner_in, K.layers.Dense(8, activation="relu", name=name + "_inner_dense")(inner_in), name=name + "_inner"
    )
    inp = K.Input((6,), name=name + "_x")
    h = K.layers.Dense(8, name=name + "_d1")(inp)
    h = K.layers.BatchNormalization(name=name + "_bn")(h)
    shared = K.layers.Dense(8, name=name + "_shared")
    a = shared(h)
    b = shared(inner(h))
    h = K.layers.Add(name=name + "_add")([a, b])
    h = K.layers.Dropout(0.1, name=name + "_drop")(h)
    out = K.layers.Dense(3, name=name + "_out")(h)
    model = K.models.Model(inp, out, name=name)
    model.get_layer(name + "_d1").trainable = False
    return fill_weights(model)


def rich_input(batch: int = 4, seed: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((batch, 6)).astype("float32")


def snapshot(model: Any) -> Dict[str, Any]:
    """Everything a clone must not change in its source."""
    layers = list(walk_layers(model))
    return {
        "name": model.name,
        "trainable": bool(model.trainable),
        "weights": [np.array(w, copy=True) for w in model.get_weights()],
        "variables": [id(v) for v in model.weights],
        "trainable_variables": [id(v) for v in model.trainable_weights],
        "layers": [
            (
                layer.name,
                type(layer).__name__,
                bool(layer.trainable),
                bool(getattr(layer, "built", True)),
                len(getattr(layer, "_inbound_nodes", None) or getattr(layer, "inbound_nodes", None) or []),
                len(getattr(layer, "_outbound_nodes", None) or []),
            )
            for layer in layers
        ],
    }


def assert_unchanged(before: Dict[str, Any], model: Any) -> None:
    after = snapshot(model)
    for key in ("name", "trainable", "variables", "trainable_variables", "layers"):
        assert after[key] == before[key], f"{key} changed: {before[key]!r} -> {after[key]!r}"
    assert len(after["weights"]) == len(before["weights"])
    for i, (old, new) in enumerate(zip_strict(before["weights"], after["weights"])):
        assert old.dtype == new.dtype and old.shape == new.shape, f"weight {i} changed kind"
        assert old.tobytes() == new.tobytes(), f"weight {i} changed value"


def weights_equal(a: Any, b: Any) -> bool:
    wa, wb = a.get_weights(), b.get_weights()
    return len(wa) == len(wb) and all(np.asarray(x).tobytes() == np.asarray(y).tobytes() for x, y in zip_strict(wa, wb))


def other_family(K: Any) -> Any:
    """A Keras package other than `K`'s installed here, or None.

    Only whether the package imports decides (an install of another Keras may
    fail to import against this TensorFlow); once imported, it must work: an
    error from its `Input` fails the test instead of skipping it.
    """
    import importlib

    own = K.Input.__module__.partition(".")[0]
    for modname in ("keras", "tf_keras"):
        try:
            other = importlib.import_module(modname)
        except Exception:  # not installed, or not importable beside this TensorFlow
            continue
        if other.Input.__module__.partition(".")[0] == own:
            continue
        other.Input((1,))
        return other
    return None


def other_family_input(K: Any, shape: Any) -> Any:
    """An `Input` tensor made by a Keras other than `K` in this process, or None."""
    other = other_family(K)
    return None if other is None else other.Input(shape)


def predict(model: Any, x: Any) -> np.ndarray:
    """Inference output as numpy, cheaply: a direct call where the family runs eagerly."""
    import compat_clone

    family = compat_clone.family_of(model).family
    if family == "keras2":  # graph mode: no eager call
        return np.asarray(model.predict(x, verbose=0) if _has_verbose(model) else model.predict(x))
    out = model(x, training=False)
    if family == "keras3":
        import keras

        return np.asarray(keras.ops.convert_to_numpy(out))
    return np.asarray(out)


def _has_verbose(model: Any) -> bool:
    import inspect

    try:
        return "verbose" in inspect.signature(model.predict).parameters
    except (TypeError, ValueError):
        return False
