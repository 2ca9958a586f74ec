"""A subclassed model's clone is its source's structure or nothing (issue 45, items 1-3).

Each test sets compat_clone beside the native recipe a user would write
(native `clone_model`, call the clone, `set_weights`): where the recipe
works, ours must work too and agree; where ours returns a model it is right
(class, outputs, sub-layer configs, `trainable`, independent variables);
where ours refuses, `str(exc)` says why. The native outcome is recorded in
the assertion messages, side by side.

* a constructor argument stored under no attribute of its name
  (`Classifier(backbone, num_classes=4)`): read off the source's sub-layers,
  never its default;
* a layer held under another name (`self.inner = layer`), and one replaced
  after construction;
* sub-layers and weights made in `build()` (the Keras guides' style);
* a `get_config` that leaves out an argument: the config round trip differs
  from the source, the structural clone does not;
* a Sequential subclass keeps its class and its own attributes;
* what cannot be right is refused with the reason in the message, the
  native exception type kept.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Dict, Optional, Tuple

import numpy as np
import pytest

import compat_clone
from compat_clone.families._structure import user_attributes
from tests.clone.features import assert_same_predictions, data, family_name, predict, skip_without_subclassed_models
from tests.clone.holdings_registry import public

X_SHAPE = (2, 5)


def _native_recipe(K: Any, model: Any, x: Any) -> Tuple[Optional[Any], str]:
    """(clone, "ok") by the native recipe, or (None, what it raised)."""
    try:
        clone = K.models.clone_model(model)
        predict(clone, x)
        clone.set_weights(model.get_weights())
    except Exception as exc:
        return None, f"{type(exc).__name__}: {str(exc)[:120]}"
    return clone, "ok"


def _side_by_side(K: Any, model: Any, x: Any) -> Tuple[Optional[Any], str]:
    """Ours against the native recipe: (our clone or None where refused, the native outcome)."""
    native, outcome = _native_recipe(K, model, x)
    try:
        clone = compat_clone.clone_model(model, copy_weights=True)
    except Exception as exc:
        assert native is None, f"worse than native: the native recipe works, compat_clone raised {exc!r}"
        assert str(exc).strip(), f"an empty refusal: {exc!r}"
        return None, outcome
    assert type(clone) is type(model), f"class {type(clone).__name__} (native: {outcome})"
    assert_same_predictions(model, clone, x)
    assert len(clone.weights) == len(model.weights)
    assert not {id(v) for v in clone.weights} & {id(v) for v in model.weights}, "the clone shares variables"
    assert clone.trainable == model.trainable
    return clone, outcome


def _classifier(K: Any) -> Any:
    @public
    class Classifier(K.models.Model):  # type: ignore[misc,name-defined]
        def __init__(self, backbone: Any, num_classes: int = 3, dropout: float = 0.1, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.backbone = backbone
            self.drop = K.layers.Dropout(dropout)
            self.head = K.layers.Dense(num_classes)

        def call(self, x: Any, training: Any = None) -> Any:
            return self.head(self.drop(self.backbone(x), training=training))

    return Classifier


def _built(model: Any) -> Any:
    predict(model, data(X_SHAPE))
    return model


def _source(K: Any, make: Callable[[], Any]) -> Any:
    """The source model, made and called; skipped where this Keras release cannot run it at all
    (standalone Keras 2.2: no `build()` on a subclassed model's first call, no `add_weight` in a model's constructor)."""
    try:
        return _built(make())
    except Exception as exc:
        if family_name(K) != "keras2":
            raise
        pytest.skip(f"{K.__name__} {K.__version__} cannot run this source model itself: {type(exc).__name__}: {exc}")


def test_an_argument_stored_under_no_name_of_its_own_is_read_off_the_source(K: Any) -> None:
    skip_without_subclassed_models(K)
    Classifier = _classifier(K)
    backbone = K.models.Sequential([K.layers.Dense(6, activation="relu")])
    model = _built(Classifier(backbone, num_classes=4, dropout=0.7))
    clone, native = _side_by_side(K, model, data(X_SHAPE))
    assert clone is not None, f"refused (native: {native})"
    assert (clone.head.units, clone.drop.rate) == (4, 0.7), f"defaults stood in for the arguments (native: {native})"
    assert type(clone.backbone) is type(backbone) and clone.backbone is not backbone


def test_a_layer_held_under_another_name_and_one_replaced_after_construction(K: Any) -> None:
    skip_without_subclassed_models(K)

    @public
    class Holder(K.models.Model):  # type: ignore[misc,name-defined]
        def __init__(self, layer: Any, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.inner = layer
            self.after = K.layers.Dense(2)

        def call(self, x: Any) -> Any:
            return self.after(self.inner(x))

    model = Holder(K.layers.Dense(3, activation="tanh"))
    model.after = K.layers.Dense(7)  # replaced after construction: the clone holds this one
    clone, native = _side_by_side(K, _built(model), data(X_SHAPE))
    assert clone is not None, f"refused (native: {native})"
    assert (clone.inner.units, clone.inner.get_config()["activation"], clone.after.units) == (3, "tanh", 7)


def test_layers_and_weights_made_in_build(K: Any) -> None:
    skip_without_subclassed_models(K)

    @public
    class Scaled(K.models.Model):  # type: ignore[misc,name-defined]
        def __init__(self, units: int = 4, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.units = units

        def build(self, input_shape: Any) -> None:
            self.dense = K.layers.Dense(self.units)
            self.scale = self.add_weight(name="scale", shape=(self.units,), initializer="ones")
            super().build(input_shape)

        def call(self, x: Any) -> Any:
            return self.dense(x) * self.scale

    model = _source(K, lambda: Scaled(5))
    clone, native = _side_by_side(K, model, data(X_SHAPE))
    if native == "ok":
        assert clone is not None
    if clone is not None:
        assert clone.dense.units == 5 and tuple(clone.scale.shape) == (5,)
        # A clone of the clone: the shapes it was built with went along.
        again = compat_clone.clone_model(clone, copy_weights=True)
        assert_same_predictions(model, again, data(X_SHAPE))


def test_a_call_whose_python_control_flow_reads_tensors(K: Any) -> None:
    """tf.keras / tf_keras build the clone by one call on placeholders with AutoGraph off; a ``call`` that
    branches in Python on a tensor's value raises there, and the clone is then built by a converted trace."""
    skip_without_subclassed_models(K)
    ops = getattr(K, "ops", None)

    @public
    class Branching(K.models.Model):  # type: ignore[misc,name-defined]
        def __init__(self, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.dense = K.layers.Dense(3)

        def call(self, x: Any) -> Any:
            total = ops.sum(x) if ops is not None else K.backend.sum(x)
            if total > 0:  # Python's `if` on a tensor: AutoGraph makes it a cond in a graph
                return self.dense(x)
            return -self.dense(x)

    if family_name(K) == "keras2":
        pytest.skip("standalone Keras 2 runs in TF1 graph mode: a Python `if` on a tensor is no model there")
    model = _source(K, Branching)
    clone, native = _side_by_side(K, model, data(X_SHAPE))
    assert clone is not None, f"refused (native: {native})"
    assert clone.dense.units == 3


def test_a_config_that_leaves_out_an_argument_is_not_trusted(K: Any) -> None:
    skip_without_subclassed_models(K)

    @public
    class Forgetful(K.models.Model):  # type: ignore[misc,name-defined]
        def __init__(self, units: int = 3, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.dense = K.layers.Dense(units)

        def call(self, x: Any) -> Any:
            return self.dense(x)

        def get_config(self) -> Dict[str, Any]:
            return {"name": self.name}  # `units` left out: from_config rebuilds the default

    model = _built(Forgetful(units=6))
    try:
        native = f"{K.models.clone_model(model).dense.units} units"  # the native clone is this same round trip
    except Exception as exc:  # standalone Keras 2 clones no subclassed model
        native = f"{type(exc).__name__}: {exc}"
    clone, outcome = _side_by_side(K, model, data(X_SHAPE))
    assert clone is not None, f"refused (native: {outcome})"
    assert clone.dense.units == 6, f"the config's default stood in (native clone: {native})"


def test_a_sequential_subclass_keeps_its_class(K: Any) -> None:
    @public
    class Stack(K.models.Sequential):  # type: ignore[misc,name-defined]
        def __init__(self, units: int, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.add(K.layers.Dense(units, input_shape=(X_SHAPE[1],)))
            self.tag = f"stack of {units}"

        def describe(self) -> str:
            return self.tag

    model = _built(Stack(4))
    native = K.models.clone_model(model)
    clone = compat_clone.clone_model(model, copy_weights=True)
    assert type(clone) is Stack, f"class {type(clone).__name__} (native: {type(native).__name__})"
    assert clone.describe() == "stack of 4"
    assert_same_predictions(model, clone, data(X_SHAPE))
    assert not {id(v) for v in clone.weights} & {id(v) for v in model.weights}


def test_what_cannot_be_copied_is_refused_with_the_reason_in_the_message(K: Any) -> None:
    skip_without_subclassed_models(K)

    @public
    class Locked(K.models.Model):  # type: ignore[misc,name-defined]
        def __init__(self, layer: Any, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.inner = layer
            self.lock = threading.Lock()  # no copy of a lock is the same lock

        def call(self, x: Any) -> Any:
            return self.inner(x)

    model = _built(Locked(K.layers.Dense(2)))
    try:
        K.models.clone_model(model)
    except Exception as exc:
        native: Optional[BaseException] = exc
    else:
        native = None
    with pytest.raises(Exception) as caught:
        compat_clone.clone_model(model)
    message = str(caught.value)
    assert "attribute `lock`" in message and "cannot be copied" in message, message
    if native is not None and family_name(K) != "keras2":  # standalone Keras 2's refusal is compat_clone's own
        assert type(caught.value) is type(native)


def test_a_layer_whose_config_loses_an_argument_is_refused_by_path(K: Any) -> None:
    skip_without_subclassed_models(K)

    @public
    class Narrow(K.layers.Layer):  # type: ignore[misc,name-defined]
        def __init__(self, units: int = 2, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.units = units

        def build(self, input_shape: Any) -> None:
            self.w = self.add_weight(name="w", shape=(int(input_shape[-1]), self.units), initializer="glorot_uniform")
            super().build(input_shape)

        def call(self, x: Any) -> Any:
            return K.backend.dot(x, self.w) if hasattr(K.backend, "dot") else x @ self.w

        def get_config(self) -> Dict[str, Any]:
            return {"name": self.name}  # `units` left out

    @public
    class Wrapper(K.models.Model):  # type: ignore[misc,name-defined]
        def __init__(self, layer: Any, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.block = layer

        def call(self, x: Any) -> Any:
            return self.block(x)

    model = _built(Wrapper(Narrow(4)))
    with pytest.raises(Exception) as caught:
        compat_clone.clone_model(model, copy_weights=True)
    message = str(caught.value)
    assert "(5, 4)" in message and "(5, 2)" in message, message


def test_a_models_own_variable_starts_as_the_sources_value_and_is_its_own(K: Any) -> None:
    skip_without_subclassed_models(K)

    @public
    class Offset(K.models.Model):  # type: ignore[misc,name-defined]
        def __init__(self, layer: Any, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.inner = layer
            self.offset = self.add_weight(name="offset", shape=(3,), initializer="zeros")

        def call(self, x: Any) -> Any:
            return self.inner(x) + self.offset

    model = _source(K, lambda: Offset(K.layers.Dense(3)))
    _set(K, model.offset, np.array([1.0, 2.0, 3.0], "float32"))
    clone = compat_clone.clone_model(model)  # no copy_weights: the sub-layer is fresh, the offset copied
    np.testing.assert_array_equal(_get(K, clone.offset), [1.0, 2.0, 3.0])
    _set(K, clone.offset, np.zeros(3, "float32"))
    np.testing.assert_array_equal(_get(K, model.offset), [1.0, 2.0, 3.0])


def _set(K: Any, variable: Any, value: np.ndarray) -> None:
    setter = getattr(K.backend, "set_value", None)  # Keras 2 (graph mode: no eager assign); Keras 3 has none
    if setter is not None:
        setter(variable, value)
    else:
        variable.assign(value)


def _get(K: Any, variable: Any) -> np.ndarray:
    getter = getattr(K.backend, "get_value", None)
    return np.asarray(getter(variable) if getter is not None else variable)


def test_keras_runtime_attributes_are_never_the_users(K: Any) -> None:
    """The names Keras sets when a model is compiled, fitted, evaluated and run are all known (`KERAS_RUNTIME*`)."""
    skip_without_subclassed_models(K)

    class Fitted(K.models.Model):  # type: ignore[misc,name-defined]
        def __init__(self, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.dense = K.layers.Dense(2)
            self.temperature = 2.0  # plain data (standalone Keras 2.2 runs no arithmetic on a layer's output)

        def call(self, x: Any) -> Any:
            return self.dense(x)

    model = Fitted()
    x, y = data((4, 3)), data((4, 2), seed=1)
    model.predict(x, verbose=0)
    model.compile(optimizer="sgd", loss="mse", metrics=["mae"])
    if family_name(K) != "keras2":  # standalone Keras 2.2 runs a compiled subclassed model no more (`_uses_learning_phase`)
        model.fit(x, y, epochs=1, batch_size=2, verbose=0)
        model.predict(x, verbose=0)
        model.evaluate(x, y, verbose=0)
    bare: Callable[[], Any] = lambda: K.models.Model()  # noqa: E731
    assert [key for key, _ in user_attributes(model, bare)] == ["temperature", "dense"]
