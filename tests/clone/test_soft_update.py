"""Soft updates: `copy_weights(source, target, tau=...)` in every family.

* The arithmetic, against NumPy on random values, for several `tau`
  (`tau=1.0` is the exact copy), float16 / bfloat16 variables where the
  family has them (tolerances by dtype), BatchNormalization statistics
  blended, integer variables copied exactly.
* Bad `tau` values and shape mismatches raise before anything is written:
  the target is unchanged bit for bit.
* A variable on both sides: a shared layer, and a target that is another
  pair's source.

The cached operation and threads are in tests/clone/test_soft_update_cache.py,
devices and strategies in tests/clone/test_soft_update_devices.py; the builders
in tests/clone/soft_update.py.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pytest

from tests.clone.soft_update import TAUS, assert_blended, blended, build, half_dtypes, weights_np
from tests.support._py import zip_strict


@pytest.mark.parametrize("tau", TAUS)
def test_blend_matches_numpy(K: Any, family: str, tau: float) -> None:
    import compat_clone

    source, target = build(K, seed=1), build(K, seed=2)
    src, tgt = weights_np(source), weights_np(target)
    assert compat_clone.copy_weights(source, target, tau=tau) is target
    got = weights_np(target)
    if tau == 1.0:
        for g, s in zip_strict(got, src):
            assert g.dtype == s.dtype and g.tobytes() == s.tobytes()  # exact, bit for bit
    else:
        assert_blended(got, blended(src, tgt, tau))
    assert [w.tobytes() for w in weights_np(source)] == [w.tobytes() for w in src]  # source untouched


@pytest.mark.parametrize("tau", [0.01, 0.5, 0.999])
def test_half_precision_blended_with_dtype_tolerance(K: Any, family: str, tau: float) -> None:
    import compat_clone

    dtypes = half_dtypes(K, family) + ["int32"]
    source, target = build(K, seed=3, dtypes=dtypes), build(K, seed=4, dtypes=dtypes)
    src, tgt = weights_np(source), weights_np(target)
    compat_clone.copy_weights(source, target, tau=tau)
    got = weights_np(target)
    assert [g.dtype for g in got] == [t.dtype for t in tgt]
    typed = [np.array(w) for w in target.get_layer("typed").get_weights()]
    assert [str(w.dtype) for w in typed] == dtypes
    assert_blended(got, blended(src, tgt, tau))


def test_batchnorm_statistics_blended(K: Any, family: str) -> None:
    import compat_clone

    source, target = build(K, seed=5), build(K, seed=6)
    bn_s, bn_t = source.get_layer("bn"), target.get_layer("bn")
    before_s = [np.array(w) for w in bn_s.get_weights()]
    before_t = [np.array(w) for w in bn_t.get_weights()]
    assert len(before_t) == 4  # gamma, beta, moving mean, moving variance
    compat_clone.copy_weights(source, target, tau=0.25)
    after = [np.array(w) for w in bn_t.get_weights()]
    assert_blended(after, blended(before_s, before_t, 0.25), names=["gamma", "beta", "moving_mean", "moving_var"])


def test_integer_variable_copied_exactly(K: Any, family: str) -> None:
    import compat_clone

    source, target = build(K, seed=7), build(K, seed=8)
    (s_int,) = [np.array(w) for w in source.get_layer("typed").get_weights()]
    (t_int,) = [np.array(w) for w in target.get_layer("typed").get_weights()]
    assert s_int.dtype == np.int32 and not np.array_equal(s_int, t_int)
    compat_clone.copy_weights(source, target, tau=0.3)
    (after,) = [np.array(w) for w in target.get_layer("typed").get_weights()]
    assert after.dtype == np.int32
    np.testing.assert_array_equal(after, s_int)


def test_repeated_updates_converge_geometrically(K: Any, family: str) -> None:
    """Five updates at tau=0.5: target = source + 0.5**5 * (target - source)."""
    import compat_clone

    source, target = build(K, seed=9, dtypes=()), build(K, seed=10, dtypes=())
    src, tgt = weights_np(source), weights_np(target)
    for _ in range(5):
        compat_clone.copy_weights(source, target, tau=0.5)
    want = [s + 0.5**5 * (t.astype(np.float64) - s) for s, t in zip_strict(src, tgt)]
    assert_blended(weights_np(target), want)


# -- nothing written on a refusal -------------------------------------------------------


@pytest.mark.parametrize("bad", [0, -0.1, 1.5, float("nan"), float("inf"), "0.5", True, False, None, [0.5]])
def test_bad_tau_refused_nothing_written(K: Any, family: str, bad: Any) -> None:
    import compat_clone

    source, target = build(K, seed=11), build(K, seed=12)
    before = [w.tobytes() for w in weights_np(target)]
    with pytest.raises(compat_clone.InvalidArgumentError, match="tau") as info:
        compat_clone.copy_weights(source, target, tau=bad)
    assert f"tau={bad!r}" in str(info.value)
    assert "Nothing was copied" in str(info.value)
    assert [w.tobytes() for w in weights_np(target)] == before


def test_tau_must_be_a_keyword(K: Any, family: str) -> None:
    import compat_clone

    source, target = build(K, seed=13), build(K, seed=14)
    with pytest.raises(TypeError):
        compat_clone.copy_weights(source, target, 0.5)  # type: ignore[misc]


def test_numpy_scalar_tau_accepted(K: Any, family: str) -> None:
    import compat_clone

    source, target = build(K, seed=15), build(K, seed=16)
    src, tgt = weights_np(source), weights_np(target)
    compat_clone.copy_weights(source, target, tau=np.float32(0.5))
    assert_blended(weights_np(target), blended(src, tgt, float(np.float32(0.5))))


def test_mismatch_leaves_target_bit_for_bit(K: Any, family: str) -> None:
    import compat_clone

    source = build(K, seed=17, units=3)
    target = build(K, seed=18, units=5)  # differs in the *last* layer only
    before = [w.tobytes() for w in weights_np(target)]
    with pytest.raises(compat_clone.WeightsMismatchError):
        compat_clone.copy_weights(source, target, tau=0.5)
    assert [w.tobytes() for w in weights_np(target)] == before


def test_dtype_mismatch_leaves_target_bit_for_bit(K: Any, family: str) -> None:
    import compat_clone

    source = build(K, seed=19, dtypes=("float16",))
    target = build(K, seed=20, dtypes=("float32",))
    before = [w.tobytes() for w in weights_np(target)]
    with pytest.raises(compat_clone.WeightsMismatchError, match="float16"):
        compat_clone.copy_weights(source, target, tau=0.5)
    assert [w.tobytes() for w in weights_np(target)] == before


# -- a variable on both sides -------------------------------------------------------------------


def _dense_values(layers: Sequence[Any], seed: int) -> None:
    rng = np.random.default_rng(seed)
    for layer in layers:
        layer.set_weights([rng.uniform(-2.0, 2.0, size=np.shape(w)).astype("float32") for w in layer.get_weights()])


@pytest.mark.parametrize("tau", [0.3, 1.0])
def test_soft_update_with_a_shared_layer(K: Any, tau: float) -> None:
    """Source and target share a layer: its variables are their own source; the others blend."""
    import compat_clone

    x = K.Input((3,))
    shared = K.layers.Dense(3, name="shared")
    own_src, own_tgt = K.layers.Dense(2, name="head"), K.layers.Dense(2, name="head")
    source = K.models.Model(x, own_src(shared(x)))
    y = K.Input((3,))
    target = K.models.Model(y, own_tgt(shared(y)))
    _dense_values([shared, own_src], 1)
    _dense_values([own_tgt], 2)
    shared_before = [np.array(w) for w in shared.get_weights()]
    want = blended(weights_np(source), weights_np(target), tau)
    for _ in range(3):  # the cached op and plan, reused
        compat_clone.copy_weights(source, target, tau=tau)
        assert_blended(weights_np(target), want)
        want = blended(weights_np(source), want, tau)
    for a, b in zip_strict(shared.get_weights(), shared_before):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("tau", [0.3, 1.0])
def test_soft_update_where_a_target_is_another_pairs_source(K: Any, tau: float) -> None:
    """Paired by order: `b` is the target of `a` and the source of `c`; every pair reads the values before the call.

    `copy-shared-variable`: on every backend, a source that is also a target
    is read before any target is written (exact copy and soft update).
    """
    import compat_clone

    a, b, c = (K.layers.Dense(3, name=n) for n in ("a", "b", "c"))
    x = K.Input((3,))
    source = K.models.Model(x, b(a(x)))
    y = K.Input((3,))
    target = K.models.Model(y, c(b(y)))
    for step in range(3):
        _dense_values([a, b, c], 10 + step)
        va, vb, vc = ([np.asarray(w, np.float64) for w in layer.get_weights()] for layer in (a, b, c))
        compat_clone.copy_weights(source, target, tau=tau)
        assert_blended([np.asarray(w) for w in b.get_weights()], blended(va, vb, tau))
        assert_blended([np.asarray(w) for w in c.get_weights()], blended(vb, vc, tau))
