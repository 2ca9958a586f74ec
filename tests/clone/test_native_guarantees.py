"""What each native `clone_model` guarantees, checked natively and through compat_clone.

Standalone Keras 2.x, tf.keras 2.x and tf_keras ship no tests in their
packages, so these are ours: one test per behaviour their native clone
guarantees, run on every family (Keras 3 too, where the behaviour exists).

Each test builds one source model and clones it twice, natively and through
`compat_clone.clone_model`, side by side (`side_by_side`):

* where the native call succeeds, compat_clone must succeed and give an
  equivalent clone: same class, same layer classes, names and configs, same
  input/output structure, same trainable flags and weight shapes, same losses
  (count and values), same outputs once the source's weights are copied in;
* where the native API lacks an argument (`clone_function` in standalone
  Keras 2, `call_function` / `recursive` before Keras 3), the reference is
  the native clone made without it;
* where the native call fails on a native bug, or returns a clone with a
  known defect, the test names it with the reason and asserts it (so the
  expectation cannot rot), and compat_clone's clone must match the source;
* where the native call refuses the arguments by design, compat_clone must
  refuse them too, with the same exception class;
* the source model is unchanged by either clone (weights, config, names).
The tests live in three modules by concern: behaviours
(tests/clone/test_native_behaviours.py), `input_tensors` in every structure
(tests/clone/test_native_input_tensors.py), and here the exceptions a drop-in lets
through or keeps and `copy_weights` with shared variables. The harness
(`side_by_side`) is tests/clone/native_harness.py.
"""

from __future__ import annotations

import inspect
from typing import Any, List

import numpy as np
import pytest

import compat_clone
from tests.clone.features import skip_without_subclassed_models

# -- a drop-in lets the caller's exceptions through (`wrapped-user-exception`) ----------------


class _LibraryError(Exception):
    """An exception class of a library calling clone_model (tfmot raises RuntimeError)."""


@pytest.mark.parametrize("error_type", [RuntimeError, KeyError, TypeError, _LibraryError])
@pytest.mark.parametrize("kind", ["functional", "sequential"])
def test_user_exceptions_pass_through_unchanged(K: Any, kind: str, error_type: type) -> None:
    """The exception a `clone_function` raises reaches the caller as that object, natively and through us."""
    inputs = K.Input((3,))
    if kind == "functional":
        source = K.models.Model(inputs, K.layers.Dense(2, name="refused")(inputs))
    else:
        source = K.models.Sequential([K.layers.Dense(2, input_shape=(3,), name="refused")])
    raised: List[BaseException] = []

    def refuse(layer: Any) -> Any:
        if layer.name != "refused":
            return layer.__class__.from_config(layer.get_config())
        raised.append(error_type("refused by the library"))
        raise raised[-1]

    if "clone_function" in inspect.signature(K.models.clone_model).parameters:
        with pytest.raises(error_type) as native:
            K.models.clone_model(source, clone_function=refuse)
        assert native.value is raised[-1], "the native clone replaced the exception"
    with pytest.raises(error_type) as ours:
        compat_clone.clone_model(source, clone_function=refuse)
    assert ours.value is raised[-1] and type(ours.value) is error_type
    assert any("'refused'" in note for note in getattr(ours.value, "__notes__", []))


def test_call_function_exceptions_pass_through_unchanged(K: Any) -> None:
    inputs = K.Input((3,))
    source = K.models.Model(inputs, K.layers.Dense(2, name="called")(inputs))
    error = _LibraryError("refused in call_function")

    def refuse(layer: Any, *args: Any, **kwargs: Any) -> Any:
        raise error

    if "call_function" in inspect.signature(K.models.clone_model).parameters:  # Keras 3.3.3+
        with pytest.raises(_LibraryError) as native:
            K.models.clone_model(source, call_function=refuse)
        assert native.value is error
    with pytest.raises(_LibraryError) as ours:
        compat_clone.clone_model(source, call_function=refuse)
    assert ours.value is error


# -- a failed native round trip keeps its exception type (`native-exception-type`)


def _refusing_source(K: Any, kind: str, error_type: type) -> Any:
    """A model holding a layer (or, `subclassed`, a model) whose `from_config` raises `error_type`."""

    class Refuses(K.layers.Layer):  # type: ignore[misc,name-defined]
        # `inner` holds a layer: Keras 3 cannot rebuild it from its recorded
        # constructor arguments either, so both sides meet the round trip's error.
        def __init__(self, inner: Any = None, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.inner = inner

        def call(self, x: Any) -> Any:
            return x * 2.0

        def compute_output_shape(self, input_shape: Any) -> Any:
            return input_shape

        def get_config(self) -> Any:
            return {"name": self.name, "trainable": self.trainable}

        @classmethod
        def from_config(cls, config: Any) -> Any:
            raise error_type("this layer cannot be rebuilt from its config")

    class RefusingModel(K.models.Model):  # type: ignore[misc,name-defined]
        def __init__(self, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.dense = K.layers.Dense(2)

        def call(self, x: Any) -> Any:
            return self.dense(x)

        def compute_output_shape(self, input_shape: Any) -> Any:  # Keras 2: symbolic call
            return tuple(input_shape)[:-1] + (2,)

        def get_config(self) -> Any:
            return {"name": self.name}

        @classmethod
        def from_config(cls, config: Any) -> Any:
            raise error_type("this model cannot be rebuilt from its config")

    if kind == "subclassed":
        skip_without_subclassed_models(K)
        model = RefusingModel(name="refusing_model")
        model(K.Input((3,)))
        return model
    layer = Refuses(inner=K.layers.Activation("linear"), name="refusing")
    if kind == "sequential":
        return K.models.Sequential([K.layers.Dense(3, input_shape=(3,)), layer])
    inputs = K.Input((3,))
    model = K.models.Model(inputs, layer(K.layers.Dense(3)(inputs)), name="holder")
    if kind == "functional":
        return model
    outer = K.Input((3,))  # "nested": the holder is one layer of another model
    return K.models.Model(outer, K.layers.Dense(2)(model(outer)))


@pytest.mark.parametrize("error_type", [TypeError, _LibraryError])
@pytest.mark.parametrize("kind", ["functional", "sequential", "nested", "subclassed"])
def test_failed_round_trip_keeps_native_exception_type(K: Any, kind: str, error_type: type) -> None:
    """Where native's `from_config(get_config())` fails, ours fails with the same type, explained in a note.

    A subclassed model is the exception: native fails on it, and compat_clone
    makes it structurally (a new instance from its own constructor, which needs
    no config), so it is cloned right where native fails.
    """
    source = _refusing_source(K, kind, error_type)
    with pytest.raises(Exception) as native:
        K.models.clone_model(source)
    if kind == "subclassed":
        clone = compat_clone.clone_model(source, copy_weights=True)
        assert type(clone) is type(source) and clone.dense is not source.dense
        # (built symbolically, standalone Keras 2.3 cannot `predict` with it: the weights are compared)
        assert [w.shape for w in clone.get_weights()] == [w.shape for w in source.get_weights()] != []
        for a, b in zip(clone.get_weights(), source.get_weights()):
            np.testing.assert_array_equal(a, b)
        return
    with pytest.raises(Exception) as ours:
        compat_clone.clone_model(source)
    if isinstance(ours.value, compat_clone.UnsupportedModelError):
        # compat_clone's own work: the native clone never makes this call (it
        # refuses the subclassed model: standalone Keras 2, tf.keras before 2.7)
        assert kind == "subclassed" and not isinstance(native.value, error_type), native.value
        assert "RefusingModel" in str(ours.value)
        return
    # The type native lets through: `error_type` itself, or what Keras makes of
    # it around a nested model (Keras 3 re-wraps a TypeError; Keras 2 finds no
    # unregistered class by name: ValueError).
    if "Could not locate class 'Refuses'" in str(native.value):
        # Keras 3.0 clones this functional model by whole-model deserialization
        # and stops at the unregistered local class (a TypeError): it never
        # calls `Refuses.from_config`. compat_clone walks the layers and makes
        # that call, as later Keras 3 releases do: its own exception goes on.
        # (Nested, the inner model's round trip is native's: the same TypeError.)
        assert type(native.value) is TypeError, native.value
        assert type(ours.value) in (TypeError, error_type), ours.value
    else:
        assert type(ours.value) is type(native.value), (native.value, ours.value)
    assert not isinstance(ours.value, compat_clone.CompatCloneError)
    notes = "\n".join(getattr(ours.value, "__notes__", []))
    assert "compat_clone" in notes and "clone_function" in notes
    assert ("'refusing'" if kind != "nested" else "'holder'") in notes or "RefusingModel" in notes


# -- copy_weights reads every source value first, as set_weights(get_weights()) (`copy-shared-variable`)


@pytest.mark.parametrize("tau", [1.0, 0.25])
def test_copy_weights_with_shared_variables_matches_set_weights(K: Any, tau: float) -> None:
    """Paired by order, `b` is the target of `a` and the source of `c`: as the native idiom, values read first."""
    a, b, c = (K.layers.Dense(3, name=n) for n in ("a", "b", "c"))
    x = K.Input((3,))
    source = K.models.Model(x, b(a(x)))
    y = K.Input((3,))
    target = K.models.Model(y, c(b(y)))
    rng = np.random.default_rng(3)
    values = {layer.name: [rng.uniform(-1, 1, np.shape(w)).astype("float32") for w in layer.get_weights()] for layer in (a, b, c)}

    def reset() -> None:
        for layer in (a, b, c):
            layer.set_weights(values[layer.name])

    reset()
    src_values, tgt_values = source.get_weights(), target.get_weights()
    # The native idiom: every source value read (get_weights), then written.
    target.set_weights([tau * s + (1 - tau) * t for s, t in zip(src_values, tgt_values)])
    native = [np.array(w) for w in target.get_weights()]
    reset()
    compat_clone.copy_weights(source, target, tau=tau)
    for got, want in zip(target.get_weights(), native):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
