"""Repeated weight updates write into the target's own buffers, not new ones.

* JAX: the soft update donates each target array that only its variable
  holds: the blend is written into that buffer (no new allocation per step),
  exact against NumPy. A repeated `copy_weights` between the same two models
  does the same (the first copy makes new buffers: no compile for a one-off).
  An array the caller (or a source variable) still holds is never donated:
  it stays readable and unchanged. Training after in-place updates works
  (Keras's own `fit` donates the state too).
* torch: a tensor of 16 MiB or more is copied on its own (`copy_`, a
  memcpy-class copy), smaller ones in one `_foreach_copy_`; both in place,
  bit for bit.

Buffer identity is read with `unsafe_buffer_pointer()` (JAX) and
`data_ptr()` (torch).
"""

from __future__ import annotations

from typing import Any, List

import numpy as np
import pytest

import compat_clone
from tests.clone.features import backend_name, family_name
from tests.support._py import zip_strict


def _needs(K: Any, backend: str) -> None:
    if family_name(K) != "keras3" or backend_name(K) != backend:
        pytest.skip(f"Keras 3 on {backend} only")


def _model(K: Any, seed: int, width: int = 16, depth: int = 3) -> Any:
    inputs = K.Input((width,))
    h = inputs
    for _ in range(depth):
        h = K.layers.Dense(width)(h)
    model = K.models.Model(inputs, h)
    rng = np.random.default_rng(seed)
    model.set_weights([rng.standard_normal(np.shape(w)).astype("float32") for w in model.get_weights()])
    return model


def _jax_pointers(model: Any) -> List[int]:
    return [v._value.unsafe_buffer_pointer() for v in model.weights]


def _blend_exact(got: np.ndarray, src: np.ndarray, tgt: np.ndarray, tau: float) -> bool:
    """Each element is NumPy's `t + tau * (s - t)` in float32, evaluated plainly or with a fused multiply-add."""
    t32 = np.float32(tau)
    plain = tgt + t32 * (src - tgt)
    fused = (tgt.astype(np.float64) + np.float64(t32) * (src - tgt).astype(np.float64)).astype(np.float32)
    return bool(np.all((got == plain) | (got == fused)))


@pytest.mark.parametrize("tau", [0.005, 0.3, 0.999])
def test_jax_soft_update_in_place_and_exact(K: Any, tau: float) -> None:
    _needs(K, "jax")
    source, target = _model(K, 1), _model(K, 2)
    compat_clone.copy_weights(source, target, tau=0.5)  # arrays set from NumPy may alias host memory: not donated
    before = _jax_pointers(target)
    src = source.get_weights()
    for _ in range(3):
        tgt = target.get_weights()
        compat_clone.copy_weights(source, target, tau=tau)
        for got, (s, t) in zip_strict(target.get_weights(), list(zip_strict(src, tgt))):
            assert got.dtype == np.float32 and _blend_exact(got, s, t, tau)
        assert _jax_pointers(target) == before, "the soft update made new buffers"
    assert all(not v._value.is_deleted() for v in source.weights)
    for got, s in zip_strict(source.get_weights(), src):
        assert got.tobytes() == s.tobytes()


def test_jax_repeated_copy_in_place_and_bit_exact(K: Any) -> None:
    _needs(K, "jax")
    source, target = _model(K, 3), _model(K, 4)
    committed = [v._value.committed for v in target.weights]
    compat_clone.copy_weights(source, target)  # the first copy: new buffers
    first = _jax_pointers(target)
    source.set_weights([w * 2 for w in source.get_weights()])
    compat_clone.copy_weights(source, target)  # repeated: in place
    assert _jax_pointers(target) == first, "the repeated copy made new buffers"
    for got, want in zip_strict(target.get_weights(), source.get_weights()):
        assert got.tobytes() == want.tobytes()
    assert [v._value.committed for v in target.weights] == committed  # jit caches key on commitment
    assert set(_jax_pointers(target)).isdisjoint(_jax_pointers(source)), "the target shares the source's buffers"


def test_jax_held_array_is_not_donated(K: Any) -> None:
    _needs(K, "jax")
    source, target = _model(K, 5), _model(K, 6)
    compat_clone.copy_weights(source, target, tau=0.5)
    held = target.weights[0].value
    kept = np.array(held)
    compat_clone.copy_weights(source, target, tau=0.1)
    compat_clone.copy_weights(source, target)
    compat_clone.copy_weights(source, target)
    assert not held.is_deleted()
    np.testing.assert_array_equal(np.array(held), kept)
    np.testing.assert_array_equal(target.get_weights()[0], source.get_weights()[0])


def test_jax_target_sharing_the_source_array(K: Any) -> None:
    """A target variable holding the source's very array: blended and copied, the source intact."""
    _needs(K, "jax")
    source, target = _model(K, 7), _model(K, 8)
    target.weights[0]._direct_assign(source.weights[0].value)
    want = source.get_weights()
    for _ in range(2):
        compat_clone.copy_weights(source, target, tau=0.25)
        compat_clone.copy_weights(source, target)
    for got, s in zip_strict(source.get_weights(), want):
        assert got.tobytes() == s.tobytes()
    for got, s in zip_strict(target.get_weights(), want):
        assert got.tobytes() == s.tobytes()


def test_jax_training_after_in_place_updates(K: Any) -> None:
    """`fit` (which donates its state) and in-place updates, in turns: no deleted array, the copy exact."""
    _needs(K, "jax")
    source, target = _model(K, 9), _model(K, 10)
    for model in (source, target):
        model.set_weights([0.1 * w for w in model.get_weights()])
        model.compile(optimizer=K.optimizers.SGD(0.01), loss="mse")
    x = np.random.default_rng(0).standard_normal((8, 16)).astype("float32")
    for _ in range(3):
        source.fit(x, x, epochs=1, verbose=0)
        compat_clone.copy_weights(source, target, tau=0.1)
        target.fit(x, x, epochs=1, verbose=0)
        compat_clone.copy_weights(source, target)
    np.testing.assert_array_equal(target.predict(x, verbose=0), source.predict(x, verbose=0))
    assert np.isfinite(source.predict(x, verbose=0)).all()


def test_torch_copy_in_place_large_and_small(K: Any) -> None:
    """Kernels of 16 MiB (copied one by one with `copy_`) and small biases (one `_foreach_copy_`): bit for bit."""
    _needs(K, "torch")
    source, target = _model(K, 11, width=2048, depth=1), _model(K, 12, width=2048, depth=1)
    kernel = target.weights[0].value
    assert kernel.numel() * kernel.element_size() >= 1 << 24
    before = [v.value.data_ptr() for v in target.weights]
    compat_clone.copy_weights(source, target)
    assert [v.value.data_ptr() for v in target.weights] == before
    for got, want in zip_strict(target.get_weights(), source.get_weights()):
        assert got.tobytes() == want.tobytes()
