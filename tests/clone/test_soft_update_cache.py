"""Soft updates: repeated calls reuse one cached operation, and threads.

* No graph growth in standalone Keras 2, no retrace of the `tf.function` /
  `jax.jit` across calls and values of `tau`; the TensorFlow cache holds its
  variables weakly, and falls back to kernels where XLA refuses.
* Threads soft-updating different targets at once.

The arithmetic and refusals are in tests/clone/test_soft_update.py.
"""

from __future__ import annotations

import gc
import re
import weakref
from typing import Any, Callable, List

import numpy as np
import pytest

from tests.clone.soft_update import EPS, assert_blended, blended, build, weights_np
from tests.support._py import zip_strict

# -- one cached operation ----------------------------------------------------------------


def _graph_op_count(K: Any) -> int:
    return len(K.backend.get_session().graph.get_operations())


def test_repeated_calls_reuse_the_cached_op(K: Any, family: str) -> None:
    import compat_clone

    source, target = build(K, seed=21), build(K, seed=22)
    compat_clone.copy_weights(source, target, tau=0.5)
    if family == "keras2":
        ops = _graph_op_count(K)
        for tau in (0.1, 0.2, 0.3, 0.999, 0.5):
            compat_clone.copy_weights(source, target, tau=tau)
        assert _graph_op_count(K) == ops, "the soft update grew the graph"
        return
    from tests.clone.features import backend_name

    backend = backend_name(K)
    if backend == "tensorflow":
        from compat_clone.placement.tensorflow import _BLENDS as tf_blends

        tf_blend_entries = tf_blends._entries

        entries = len(tf_blends)
        for tau in (0.1, 0.2, 0.3, 0.999, 0.5):
            compat_clone.copy_weights(source, target, tau=tau)
        assert len(tf_blends) == entries, "a new tf.function per call"
        counts = [blend.fn.experimental_get_tracing_count() for _, blend in tf_blend_entries.values()]
        assert counts and all(c == 1 for c in counts), counts
    elif backend == "jax":
        from compat_clone.placement.jax import _JITTED as jax_jitted

        size = jax_jitted[0]._cache_size()
        for tau in (0.1, 0.2, 0.3, 0.999, 0.5):
            compat_clone.copy_weights(source, target, tau=tau)
        assert jax_jitted[0]._cache_size() == size, "the jitted blend retraced"
    else:
        pytest.skip(f"the {backend} soft update traces nothing (eager foreach kernels)")


def _fetched_ops(K: Any, fn: Callable[[], Any]) -> List[str]:
    """The names of the ops `fn` has Keras' TF1 session run (the instance's `run`, wrapped for the call)."""
    session = K.backend.get_session()
    names: List[str] = []
    run = session.run

    def recording(fetches: Any, *args: Any, **kwargs: Any) -> Any:
        names.append(getattr(fetches, "name", repr(fetches)))
        return run(fetches, *args, **kwargs)

    session.run = recording
    try:
        fn()
    finally:
        del session.run
    return names


@pytest.mark.parametrize("tau", [0.01, 0.5, 0.7])
def test_keras2_soft_update_one_pass_on_the_cpu(K: Any, family: str, tau: float) -> None:
    """Standalone Keras 2, variables on the CPU: up to tau=0.5 each float target is blended in one pass.

    One `SparseApplyProximalGradientDescent` kernel per float32 / float64
    target (the target read and written once; its `Resource` twin for
    resource variables); above 0.5 the two in-place
    passes, which cannot overflow where `tau / (1 - tau)` is large. The
    arithmetic is `test_blend_matches_numpy`'s.
    """
    if family != "keras2":
        pytest.skip("standalone Keras 2's TF1 graph op")
    tf = pytest.importorskip("tensorflow")
    lister = getattr(tf.config, "list_physical_devices", None) or tf.config.experimental.list_physical_devices
    if any(d.device_type != "CPU" for d in lister()):
        pytest.skip("an accelerator is visible: the variables are not on the CPU")
    import compat_clone

    source, target = build(K, seed=31, dtypes=("float64", "int32")), build(K, seed=32, dtypes=("float64", "int32"))
    src, tgt = weights_np(source), weights_np(target)
    fetched = _fetched_ops(K, lambda: compat_clone.copy_weights(source, target, tau=tau))
    assert_blended(weights_np(target), blended(src, tgt, tau))
    graph = K.backend.get_session().graph
    (name,) = [n for n in fetched if n.startswith("compat_clone_")]
    assert re.sub(r"_\d+$", "", name) == ("compat_clone_soft_update_one_pass" if tau <= 0.5 else "compat_clone_soft_update")
    # Reference variables (Keras 2.2) or resource variables (Keras 2.3): the same kernels.
    kernels = [op.type.replace("Resource", "", 1) for op in graph.get_operation_by_name(name).control_inputs]
    floats = [w for w in target.weights if w.dtype.base_dtype.is_floating]
    if tau <= 0.5:
        assert kernels.count("SparseApplyProximalGradientDescent") == len(floats), kernels
        assert "ApplyGradientDescent" not in kernels
    else:
        assert kernels.count("ApplyGradientDescent") == len(floats), kernels


@pytest.mark.parametrize("tau", [0.01, 0.5, 0.999])
def test_soft_update_of_large_values(K: Any, family: str, tau: float) -> None:
    """Values near 1e37 blend without overflow for every tau (float32 holds up to 3.4e38)."""
    import compat_clone

    source, target = build(K, seed=33, dtypes=()), build(K, seed=34, dtypes=())
    source.set_weights([w * 5e36 for w in source.get_weights()])
    target.set_weights([w * 5e36 for w in target.get_weights()])
    src, tgt = weights_np(source), weights_np(target)
    compat_clone.copy_weights(source, target, tau=tau)
    got = weights_np(target)
    assert all(np.isfinite(g).all() for g in got)
    for g, w in zip_strict(got, blended(src, tgt, tau)):
        # Inputs within [-1e37, 1e37]: a few roundings of float32, relative to 1e37 (as `assert_blended`).
        np.testing.assert_allclose(g.astype(np.float64), w, rtol=4 * EPS["float32"], atol=8 * EPS["float32"] * 1e37)


def test_tf_cache_holds_variables_weakly() -> None:
    tf = pytest.importorskip("tensorflow")
    from compat_clone.placement import tensorflow as ptf
    from compat_clone.placement.tensorflow import _BLENDS

    tf_blend_entries = _BLENDS._entries

    if not tf.executing_eagerly():
        pytest.skip("TensorFlow runs in graph mode here (standalone Keras 2)")
    src = [tf.Variable(np.full((2, 2), 4.0, "float32")), tf.Variable(np.arange(3, dtype="int32"))]
    dst = [tf.Variable(np.zeros((2, 2), "float32")), tf.Variable(np.zeros(3, "int32"))]
    gc.collect()
    before = set(tf_blend_entries)
    ptf.blend_tf(list(zip(src, dst)), 0.25)
    ptf.blend_tf(list(zip(src, dst)), 0.5)
    (key,) = set(tf_blend_entries) - before  # one entry for both calls
    np.testing.assert_allclose(dst[0].numpy(), np.full((2, 2), 4.0 * (1 - 0.75 * 0.5)))
    np.testing.assert_array_equal(dst[1].numpy(), [0, 1, 2])
    alive = weakref.ref(dst[0])
    del src, dst
    gc.collect()
    assert alive() is None, "the cached tf.function kept its variables alive"
    assert key not in tf_blend_entries


def test_tf_falls_back_to_kernels_when_xla_refuses() -> None:
    """An XLA compile failure writes nothing; the graph function of kernels takes over, once."""
    tf = pytest.importorskip("tensorflow")
    from compat_clone.placement.tensorflow import _TfBlend as TfBlend

    if not tf.executing_eagerly():
        pytest.skip("TensorFlow runs in graph mode here (standalone Keras 2)")
    src = tf.Variable(np.full((2, 3), 2.0, "float32"))
    dst = tf.Variable(np.zeros((2, 3), "float32"))
    blend = TfBlend(tf, [(src, dst)])
    if not blend._xla_first:  # TF < 2.5 has no `jit_compile`: the kernels from the start
        blend(tf.constant(0.5, tf.float64))
        np.testing.assert_allclose(dst.numpy(), np.full((2, 3), 1.0))
        return
    calls: List[float] = []

    def refuse(tau: Any) -> None:
        calls.append(float(tau))
        raise tf.errors.InvalidArgumentError(None, None, "XLA cannot compile this")

    blend.fn = refuse
    blend(tf.constant(0.25, tf.float64))
    blend(tf.constant(0.5, tf.float64))
    assert calls == [0.25]  # tried once, then the kernels
    np.testing.assert_allclose(dst.numpy(), np.full((2, 3), 2.0 * (1 - 0.75 * 0.5)))


# -- threads -----------------------------------------------------------------------------


def test_threads_soft_update_different_targets(K: Any) -> None:
    import compat_clone
    from tests.clone.threads import run_in_threads

    threads_n, rounds = 4, 3
    sources = [build(K, seed=100 + i, prefix=f"s{i}_") for i in range(threads_n)]
    targets = [build(K, seed=200 + i, prefix=f"s{i}_") for i in range(threads_n)]
    src = [weights_np(m) for m in sources]
    tgt = [weights_np(m) for m in targets]
    taus = [0.1, 0.3, 0.6, 0.9]

    def work(i: int) -> None:
        for _ in range(rounds):
            compat_clone.copy_weights(sources[i], targets[i], tau=taus[i])

    run_in_threads(K, threads_n, work, name="soft-update")
    for i in range(threads_n):
        keep = (1.0 - taus[i]) ** rounds
        want = [
            s if np.issubdtype(s.dtype, np.integer) else s + keep * (t.astype(np.float64) - s)
            for s, t in zip_strict(src[i], tgt[i])
        ]
        assert_blended(weights_np(targets[i]), want)
