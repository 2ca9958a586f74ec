"""A clone with weights never runs an initializer whose result the copy overwrites.

`compat_clone.clone_model(model, copy_weights=True)` creates the clone's
variables as zeros (`compat_clone.families._skip_init`) and fills them once
from the source. Checked with a custom layer whose `build()` calls
`add_weight` with an initializer that counts its calls, in every family.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any, List

import numpy as np
import pytest

import compat_clone
from tests.clone.features import data, predict
from tests.support._py import zip_strict


def _counting_model(K: Any, calls: List[int]) -> Any:
    def counting(shape: Any, dtype: Any = None, **kwargs: Any) -> Any:
        calls.append(1)
        return K.initializers.RandomNormal(seed=len(calls))(shape, dtype=dtype)

    class Scaled(K.layers.Layer):  # type: ignore[misc,name-defined]
        def build(self, input_shape: Any) -> None:
            self.scale = self.add_weight(name="scale", shape=(int(input_shape[-1]),), initializer=counting)
            super().build(input_shape)

        def call(self, x: Any) -> Any:
            return x * self.scale

        def compute_output_shape(self, input_shape: Any) -> Any:
            return input_shape

    x = K.Input((6,))
    h = K.layers.BatchNormalization()(K.layers.Dense(5)(x))
    return K.models.Model(x, Scaled()(h))


def test_clone_with_weights_runs_no_initializer(K: Any) -> None:
    calls: List[int] = []
    model = _counting_model(K, calls)
    built = len(calls)
    assert built == 1, f"the source's build ran {built} counting initializers, expected 1"
    clone = compat_clone.clone_model(model, copy_weights=True)
    assert len(calls) == built, "an initializer ran although its values were overwritten by the copy"
    for a, b in zip_strict(model.get_weights(), clone.get_weights()):
        np.testing.assert_array_equal(a, b)  # bit for bit, BatchNorm statistics included
    x = data((3, 6))
    for a, b in zip_strict(predict(model, x), predict(clone, x)):
        np.testing.assert_array_equal(a, b)


def test_clone_without_weights_initializes_as_native(K: Any) -> None:
    calls: List[int] = []
    model = _counting_model(K, calls)
    built = len(calls)
    clone = compat_clone.clone_model(model)
    assert len(calls) == 2 * built, "without copy_weights the clone must be freshly initialized"
    assert not np.array_equal(model.get_weights()[0], clone.get_weights()[0]), "the Dense kernel was not re-drawn"


def test_skipping_is_limited_to_the_clone(K: Any) -> None:
    """Layers built after the clone, or in another thread during it, keep their initializers."""
    calls: List[int] = []
    model = _counting_model(K, calls)
    compat_clone.clone_model(model, copy_weights=True)
    before = len(calls)
    _counting_model(K, calls)
    assert len(calls) == before + 1
    seen: List[Any] = []

    def clone_with(layer: Any) -> Any:
        new = layer.__class__.from_config(layer.get_config())
        if not seen:  # while the clone is being made: another thread builds a layer

            def other() -> None:
                try:
                    dense = K.layers.Dense(4, kernel_initializer="ones")
                    dense.build((None, 3))
                    seen.append(float(np.sum(np.asarray(dense.kernel.numpy()))))
                except Exception as exc:  # reported by the assertion below
                    seen.append(exc)

            worker = threading.Thread(target=other)
            worker.start()
            worker.join()
        return new

    if compat_clone.family_of(model).family == "keras2":
        pytest.skip("standalone Keras 2 builds graph-mode variables under one process-wide lock")
    compat_clone.clone_model(model, clone_function=clone_with, copy_weights=True)
    assert seen == [12.0], f"another thread's layer was built with {seen}, expected its 'ones' kernel"


# -- first values copied from the source (Keras 3 on JAX / torch), exact everywhere -------------


def _own_layer(K: Any) -> Any:
    """Weights with their own initializers and look-alike names: two `w`, a `kernel` that is no Dense's.

    `swap=True` creates the same shapes under each other's names (`p`, `q`
    exchanged): a clone layer whose names differ from its source's.
    """

    class Own(K.layers.Layer):  # type: ignore[name-defined,misc]
        def __init__(self, swap: bool = False, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.swap = swap

        def build(self, input_shape: Any) -> None:
            n = int(input_shape[-1])
            first, second = ("q", "p") if self.swap else ("p", "q")
            self.a = self.add_weight(name="w", shape=(n,), initializer=K.initializers.RandomUniform(seed=1))
            self.b = self.add_weight(name="w", shape=(n,), initializer=K.initializers.RandomUniform(seed=2))
            self.k = self.add_weight(name="kernel", shape=(n, n), initializer="orthogonal")
            self.c = self.add_weight(name=first, shape=(n,), initializer="ones")
            self.d = self.add_weight(name=second, shape=(n,), initializer="ones", trainable=False)
            # Under each other's names, with other shapes: `g` is (n,) here and (n, 1) in the other spelling.
            third, fourth = ("h", "g") if self.swap else ("g", "h")
            self.e = self.add_weight(name=third, shape=(n,), initializer="zeros")
            self.f = self.add_weight(name=fourth, shape=(n, 1), initializer="zeros")
            super().build(input_shape)

        def call(self, x: Any) -> Any:
            ops = getattr(K, "ops", None)  # Keras 3; Keras 2: the backend
            dot = ops.matmul if ops is not None else K.backend.dot
            return dot(x * self.a + self.b, self.k) * self.c - self.d + self.e - dot(x, self.f)

        def compute_output_shape(self, input_shape: Any) -> Any:
            return input_shape

        def get_config(self) -> Any:
            return dict(super().get_config(), swap=self.swap)

    return Own


def _own_model(K: Any) -> Any:
    x = K.Input((5,))
    h = K.layers.Dense(5, name="dense")(x)
    h = K.layers.BatchNormalization(name="bn")(h)
    h = _own_layer(K)(name="own")(h)
    model = K.models.Model(x, K.layers.Dense(2, name="head")(h))
    rng = np.random.default_rng(3)
    model.set_weights([rng.uniform(-2.0, 2.0, size=np.shape(w)).astype("float32") for w in model.get_weights()])
    # Moving statistics away from their initial zeros and ones.
    bn = model.get_layer("bn")
    bn.set_weights([rng.uniform(0.5, 2.0, size=np.shape(w)).astype("float32") for w in bn.get_weights()])
    return model


def _assert_exact(source: Any, clone: Any, outputs_exact: bool = True, clone_scope: Any = None) -> None:
    """Every weight bit for bit; the outputs too, or within float32 rounding where the layout may differ.

    `clone_scope`: a context the clone is called in (its device, where that is not the default one).
    """
    got, want = clone.get_weights(), source.get_weights()
    assert len(got) == len(want)
    for i, (a, b) in enumerate(zip_strict(want, got)):
        np.testing.assert_array_equal(a, b, err_msg=f"weight {i}")
    x = data((4, 5))
    with clone_scope or contextlib.nullcontext():
        from_clone = predict(clone, x)
    for a, b in zip_strict(predict(source, x), from_clone):
        if outputs_exact:
            np.testing.assert_array_equal(a, b)
        else:
            np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)


def test_clone_with_weights_bit_exact_custom_layers(K: Any) -> None:
    model = _own_model(K)
    before = [np.array(w) for w in model.get_weights()]
    clone = compat_clone.clone_model(model, copy_weights=True)
    _assert_exact(model, clone)
    for a, b in zip_strict(before, model.get_weights()):
        np.testing.assert_array_equal(a, b)  # the source untouched


def test_clone_layer_with_other_names_gets_the_right_values(K: Any) -> None:
    """A clone layer whose variables' names differ from its source's: paired by order.

    `p` and `q` have the same shape (a same-named source variable exists, of
    the right shape, but is the other one); `g` and `h` have other shapes
    under each other's names.
    """
    model = _own_model(K)

    def swapped(layer: Any) -> Any:
        config = layer.get_config()
        if layer.name == "own":
            config["swap"] = True
        return layer.__class__.from_config(config)

    clone = compat_clone.clone_model(model, clone_function=swapped, copy_weights=True)

    def names(m: Any) -> List[str]:
        return [v.name.split("/")[-1].split(":")[0] for v in m.get_layer("own").weights]

    assert names(clone) != names(model) and sorted(names(clone)) == sorted(names(model))
    _assert_exact(model, clone)


def test_clone_with_weights_holds_its_own_values(K: Any) -> None:
    """The clone's first values are copies: writing either model leaves the other alone."""
    model = _own_model(K)
    clone = compat_clone.clone_model(model, copy_weights=True)
    source_values = [np.array(w) for w in model.get_weights()]
    clone.set_weights([np.zeros_like(w) for w in clone.get_weights()])
    for a, b in zip_strict(source_values, model.get_weights()):
        np.testing.assert_array_equal(a, b)
    model.set_weights([w + 1 for w in source_values])
    assert all(not np.any(w) for w in clone.get_weights())


def _device_for(K: Any) -> Any:
    from tests.clone.features import backend_name, family_name

    if family_name(K) == "keras2":
        return "/CPU:0"
    return {"jax": "cpu:0", "torch": "cpu"}.get(backend_name(K), "/CPU:0")


def test_clone_with_weights_and_device_is_exact(K: Any) -> None:
    model = _own_model(K)
    device = _device_for(K)
    clone = compat_clone.clone_model(model, copy_weights=True, device=device)
    # Weights bit for bit; torch's CPU matmul may round the last bit differently for a tensor
    # placed by `device=` (another memory layout). On a GPU machine the clone is on the CPU and the
    # source on the GPU: Keras 3 makes a call's NumPy inputs on the default device, so the clone is
    # called under its own device.
    scope = K.device(device) if hasattr(K, "device") and hasattr(K, "ops") else None
    _assert_exact(model, clone, outputs_exact=False, clone_scope=scope)


def test_clone_with_weights_under_a_distribution_is_exact(K: Any) -> None:
    from tests.clone.features import backend_name, family_name

    if family_name(K) != "keras3" or backend_name(K) != "jax":
        pytest.skip("keras.distribution lays out variables on the JAX backend only")
    import jax

    model = _own_model(K)
    distribution = K.distribution.DataParallel(devices=jax.devices())
    with distribution.scope():
        clone = compat_clone.clone_model(model, copy_weights=True)
    _assert_exact(model, clone)


# -- JAX: commitment kept, no retrace -----------------------------------------------------------


def _committed(array: Any) -> bool:
    flag = getattr(array, "committed", None)
    if flag is None:
        flag = array._committed
    return bool(flag)


def _jax_only(K: Any) -> Any:
    from tests.clone.features import backend_name, family_name

    if family_name(K) != "keras3" or backend_name(K) != "jax":
        pytest.skip("array commitment and jit caches are JAX's")
    import jax

    return jax


def _commit(jax: Any, model: Any) -> None:
    for v in model.weights:
        v.assign(jax.device_put(v.value, jax.devices()[0]))
    assert all(_committed(v.value) for v in model.weights)


@pytest.mark.parametrize("source_committed", [False, True], ids=["uncommitted", "committed"])
def test_jax_clone_keeps_the_sources_commitment(K: Any, source_committed: bool) -> None:
    jax = _jax_only(K)
    model = _own_model(K)
    if source_committed:
        _commit(jax, model)
    assert all(_committed(v.value) == source_committed for v in model.weights)
    clone = compat_clone.clone_model(model, copy_weights=True)
    assert [_committed(v.value) for v in clone.weights] == [source_committed] * len(clone.weights)
    _assert_exact(model, clone)


@pytest.mark.parametrize("tau", [1.0, 0.25])
@pytest.mark.parametrize("target_committed", [False, True], ids=["uncommitted", "committed"])
def test_jax_copy_keeps_the_targets_commitment(K: Any, target_committed: bool, tau: float) -> None:
    jax = _jax_only(K)
    source, target = _own_model(K), _own_model(K)
    if target_committed:
        _commit(jax, target)
    compat_clone.copy_weights(source, target, tau=tau)
    assert [_committed(v.value) for v in target.weights] == [target_committed] * len(target.weights)


def test_jax_first_call_after_copy_does_not_retrace(K: Any) -> None:
    jax = _jax_only(K)
    source, target = _own_model(K), _own_model(K)
    x = data((4, 5))

    @jax.jit
    def forward(trainable: Any, non_trainable: Any, x: Any) -> Any:
        return target.stateless_call(trainable, non_trainable, x, training=False)[0]

    def run() -> Any:
        return forward([v.value for v in target.trainable_variables], [v.value for v in target.non_trainable_variables], x)

    if not hasattr(forward, "_cache_size"):
        pytest.skip("this JAX's jitted functions do not report their cache size")
    run()
    assert forward._cache_size() == 1
    compat_clone.copy_weights(source, target)
    out = run()
    assert forward._cache_size() == 1, "copy_weights changed the arrays' commitment or sharding: the forward retraced"
    np.testing.assert_allclose(np.asarray(out), predict(source, x)[0], rtol=1e-6, atol=1e-6)
    compat_clone.copy_weights(source, target, tau=0.5)
    run()
    assert forward._cache_size() == 1, "a soft update made the forward retrace"
    clone = compat_clone.clone_model(source, copy_weights=True)
    compat_clone.copy_weights(clone, target)
    run()
    assert forward._cache_size() == 1, "a clone's values made the forward retrace"
