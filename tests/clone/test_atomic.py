"""Nothing lost: a failed call leaves its inputs exactly as they were.

After any failed `clone_model` the source keeps its weights (bit for bit,
same variable objects), layer names, trainable flags, built state and graph
nodes; a failed `copy_weights` leaves the target untouched. A successful
clone leaves the source unchanged too, and the clone is independent:
training it does not move the source's weights, and the other way round.
(A failed clone may leave Keras's automatic layer-name counters advanced;
those are not part of any model.)
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List

import numpy as np
import pytest

import compat_clone
from compat_clone import (
    CloneFunctionError,
    CompatCloneError,
    DeviceNotFoundError,
    InputTensorsError,
    WeightsMismatchError,
)
from tests.clone.model_state import assert_unchanged, fill_weights, predict, rich_input, rich_model, snapshot, weights_equal


def _default(layer: Any) -> Any:
    return layer.__class__.from_config(layer.get_config())


def _fail_on(name_part: str, exc: Exception) -> Callable[[Any], Any]:
    """A clone_function that clones normally until it meets a layer named *name_part*."""

    def fn(layer: Any) -> Any:
        if name_part in layer.name:
            raise exc
        return _default(layer)

    return fn


def _unclonable_layer(K: Any) -> Any:
    class NoConfig(K.layers.Layer):
        # `factor` is missing from its config, and its constructor also takes
        # a layer: Keras 3 cannot rebuild it from its recorded constructor
        # arguments either (the rebuilt layer would share `inner`).
        def __init__(self, factor: float, inner: Any = None, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.factor = factor
            self.inner = inner

        def call(self, x: Any) -> Any:
            return x * self.factor

        def compute_output_shape(self, input_shape: Any) -> Any:
            return input_shape

        def get_config(self) -> Any:
            return super().get_config()  # `factor` missing: from_config fails

    return NoConfig


def _model_with_unclonable_last_layer(K: Any) -> Any:
    model = rich_model(K, name="late")
    out = _unclonable_layer(K)(2.0, inner=K.layers.Activation("linear"), name="late_noconfig")(model.output)
    return K.models.Model(model.input, out, name="late_outer")


def _units_changer(layer: Any) -> Any:
    config = layer.get_config()
    if layer.name.endswith("_out"):
        config["units"] = config["units"] + 1  # the clone's last kernel has another shape
    return layer.__class__.from_config(config)


# name -> (builder(K) -> source, call(K, source) that must raise, expected error)
FAILURES: Dict[str, Any] = {
    "clone_function raises mid-graph": (
        rich_model,
        lambda K, m: compat_clone.clone_model(m, clone_function=_fail_on("_shared", RuntimeError("x"))),
        RuntimeError,  # the user's own exception, unchanged (`wrapped-user-exception`)
    ),
    "clone_function returns a non-layer": (
        rich_model,
        lambda K, m: compat_clone.clone_model(
            m, clone_function=lambda layer: None if layer.name.endswith("_add") else _default(layer)
        ),
        CloneFunctionError,
    ),
    "recursive clone fails inside the nested model": (
        rich_model,
        lambda K, m: compat_clone.clone_model(m, recursive=True, clone_function=_fail_on("_inner_dense", ValueError("x"))),
        ValueError,
    ),
    "call_function raises on the last layer": (
        rich_model,
        lambda K, m: compat_clone.clone_model(
            m,
            call_function=lambda layer, *a, **k: (
                (_ for _ in ()).throw(RuntimeError("x")) if layer.name.endswith("_out") else layer(*a, **k)
            ),
        ),
        RuntimeError,
    ),
    "unclonable custom layer after the others": (
        _model_with_unclonable_last_layer,
        lambda K, m: compat_clone.clone_model(m, copy_weights=True),
        TypeError,  # the round trip's own (no `factor`), as native (`native-exception-type`)
    ),
    "wrong number of input_tensors": (
        rich_model,
        lambda K, m: compat_clone.clone_model(m, input_tensors=[K.Input((6,)), K.Input((6,))]),
        InputTensorsError,
    ),
    "copy_weights into a clone of another shape": (
        rich_model,
        lambda K, m: compat_clone.clone_model(m, clone_function=_units_changer, copy_weights=True),
        WeightsMismatchError,
    ),
    "unknown device": (
        rich_model,
        lambda K, m: compat_clone.clone_model(m, device="/XPU:97", copy_weights=True),
        DeviceNotFoundError,
    ),
}


@pytest.mark.parametrize("case", sorted(FAILURES))
def test_failed_clone_leaves_source_unchanged(K: Any, case: str) -> None:
    build, call, expected = FAILURES[case]
    source = build(K)
    x = rich_input()
    before = snapshot(source)
    before_out = predict(source, x)
    # Every option used here exists in every family (call_function is
    # supplied where the native clone lacks it): no case may be skipped.
    with pytest.raises(expected):
        call(K, source)
    assert_unchanged(before, source)
    np.testing.assert_array_equal(predict(source, x), before_out)
    # and the source still clones fine afterwards
    if case != "unclonable custom layer after the others":
        clone = compat_clone.clone_model(source, copy_weights=True)
        np.testing.assert_array_equal(predict(clone, x), before_out)


def test_failed_copy_weights_leaves_target_unchanged(K: Any) -> None:
    source = rich_model(K, name="src")
    # Same architecture except the last layer: every earlier pair would copy
    # fine, so a copy that writes before it checks would be caught here.
    target = compat_clone.clone_model(source, clone_function=_units_changer)
    fill_weights(target, seed=7)
    src_before, tgt_before = snapshot(source), snapshot(target)
    with pytest.raises(WeightsMismatchError):
        compat_clone.copy_weights(source, target)
    assert_unchanged(tgt_before, target)
    assert_unchanged(src_before, source)


def test_failed_copy_weights_by_layer_count_leaves_target_unchanged(K: Any) -> None:
    source = rich_model(K, name="cnt")
    inputs = K.Input((6,))
    target = K.models.Model(inputs, K.layers.Dense(8, name="x1")(inputs))
    before = snapshot(target)
    with pytest.raises(WeightsMismatchError):
        compat_clone.copy_weights(source, target)
    assert_unchanged(before, target)


@pytest.mark.parametrize(
    "kwargs",
    [{}, {"copy_weights": True}, {"recursive": True, "copy_weights": True}, {"name": "renamed"}],
    ids=["plain", "copy_weights", "recursive", "name"],
)
def test_successful_clone_leaves_source_unchanged(K: Any, kwargs: Any) -> None:
    source = rich_model(K)
    before = snapshot(source)
    clone = compat_clone.clone_model(source, **kwargs)
    assert_unchanged(before, source)
    source_vars = {id(v) for v in source.weights}
    assert not source_vars & {id(v) for v in clone.weights}, "the clone shares variables with its source"
    if kwargs.get("copy_weights"):
        assert weights_equal(source, clone)


def _fit_a_little(K: Any, model: Any) -> None:
    model.compile(optimizer=K.optimizers.SGD(0.1), loss="mse")
    rng = np.random.default_rng(3)
    x = rng.standard_normal((16, 6)).astype("float32")
    y = rng.standard_normal((16, 3)).astype("float32")
    model.fit(x, y, batch_size=8, epochs=1, verbose=0)


def test_training_the_clone_does_not_move_the_source(K: Any) -> None:
    source = rich_model(K)
    before = snapshot(source)
    clone = compat_clone.clone_model(source, copy_weights=True)
    _fit_a_little(K, clone)
    assert not weights_equal(source, clone), "training did not change the clone"
    assert_unchanged(before, source)


def test_training_the_source_does_not_move_the_clone(K: Any) -> None:
    source = rich_model(K)
    clone = compat_clone.clone_model(source, copy_weights=True)
    clone_before = snapshot(clone)
    _fit_a_little(K, source)
    assert_unchanged(clone_before, clone)


def test_copy_weights_then_assign_is_independent(K: Any) -> None:
    source = rich_model(K)
    target = compat_clone.clone_model(source)
    compat_clone.copy_weights(source, target)
    before = snapshot(source)
    fill_weights(target, seed=11)  # overwrite every target variable
    assert_unchanged(before, source)


def test_errors_are_raised_before_touching_anything(K: Any) -> None:
    # The package's error hierarchy is what every failure above raised, but
    # for the user's own exceptions and a failed native round trip's, which
    # pass through unchanged (`wrapped-user-exception`, `native-exception-type`).
    for case, (_, _, expected) in FAILURES.items():
        assert issubclass(expected, CompatCloneError) or expected in (RuntimeError, ValueError, TypeError), case


_UNSET = object()


def _init_flags(model: Any) -> List[Any]:
    return [getattr(v, "__dict__", {}).get("_keras_initialized", _UNSET) for v in model.weights]


def _uninitialized(K: Any, model: Any) -> List[str]:
    from keras.backend import tensorflow_backend

    from compat_clone.families._tf1 import tf_module

    tf = tf_module()
    # Keras' own session, not through `get_session` (which would initialize them).
    holder = getattr(tensorflow_backend, "_SESSION", None)  # Keras 2.2
    if holder is None:  # Keras 2.3 keeps it in TensorFlow's Keras backend, thread-local
        holder = getattr(getattr(tensorflow_backend, "tf_keras_backend", None), "_SESSION", None)
    session = getattr(holder, "session", holder)
    assert session is not None and session.graph is model.weights[0].graph
    names = session.run(tf.report_uninitialized_variables(model.weights))
    return sorted(n.decode() if isinstance(n, bytes) else str(n) for n in names)


def _fresh_target(K: Any, units: int = 2) -> Any:
    """A model whose variables no session has initialized yet; kernel ones, bias 3."""
    x = K.Input((3,))
    h = K.layers.Dense(4, kernel_initializer="ones", bias_initializer=K.initializers.Constant(3.0))(x)
    return K.models.Model(x, K.layers.Dense(units, kernel_initializer="ones", bias_initializer=K.initializers.Constant(3.0))(h))


def _source(K: Any, units: int = 2) -> Any:
    x = K.Input((3,))
    model = K.models.Model(x, K.layers.Dense(units)(K.layers.Dense(4)(x)))
    model.set_weights([np.full(np.shape(w), -7.0, "float32") for w in model.get_weights()])
    return model


def _assert_initializer_values(model: Any) -> None:
    for layer in model.layers[1:]:
        kernel, bias = layer.get_weights()
        np.testing.assert_array_equal(kernel, np.ones_like(kernel))
        np.testing.assert_array_equal(bias, np.full_like(bias, 3.0))


@pytest.mark.keras2
def test_keras2_mismatch_into_fresh_target_leaves_it_uninitialized(K: Any) -> None:
    source = _source(K, units=5)  # the last Dense differs: (4, 5) against (4, 2)
    target = _fresh_target(K)
    flags, pending = _init_flags(target), _uninitialized(K, target)
    assert len(pending) == len(target.weights)
    with pytest.raises(WeightsMismatchError):
        compat_clone.copy_weights(source, target)
    assert _init_flags(target) == flags
    assert _uninitialized(K, target) == pending
    _assert_initializer_values(target)  # a later session run initializes them: nothing was written


@pytest.mark.keras2
def test_keras2_failed_run_into_fresh_target_leaves_it_uninitialized(K: Any) -> None:
    """The grouped copy fails while it runs (a source variable holds a value of another shape)."""
    from compat_clone.families._tf1 import tf_module

    tf = tf_module()
    source = _source(K)
    kernel = source.layers[-1].weights[0]  # the last kernel: the earlier pairs' assigns may run first
    bad = np.zeros((6, 6), "float32")
    if not kernel.dtype._is_ref_dtype:
        pytest.skip("resource variables (Keras 2.3): an assign does not check the value's shape when it runs")
    K.backend.get_session().run(tf.assign(kernel, bad, validate_shape=False))
    target = _fresh_target(K)
    flags, pending = _init_flags(target), _uninitialized(K, target)
    with pytest.raises(Exception) as caught:
        compat_clone.copy_weights(source, target)
    assert not isinstance(caught.value, AssertionError)
    assert _init_flags(target) == flags, "the targets' `_keras_initialized` flags were not restored"
    assert set(_uninitialized(K, target)) <= set(pending)
    _assert_initializer_values(target)  # Keras' next session run: the initializers' values, none copied
