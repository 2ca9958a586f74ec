"""Soft updates: `copy_weights(source, target, tau=...)` in every family.

* The arithmetic, against NumPy on random values, for several `tau`
  (`tau=1.0` is the exact copy), float16 / bfloat16 variables where the
  family has them (tolerances by dtype), BatchNormalization statistics
  blended, integer variables copied exactly.
* Bad `tau` values and shape mismatches raise before anything is written:
  the target is unchanged bit for bit.
* Repeated calls reuse one cached operation: no graph growth in standalone
  Keras 2, no retrace of the `tf.function` / `jax.jit` across calls and
  values of `tau`; the TensorFlow cache holds its variables weakly.
* Threads soft-updating different targets at once.
* Across devices (a fresh interpreter, like `tests/test_placement.py`):
  TensorFlow split into two logical CPUs (a source on /CPU:1 into a target
  on /CPU:0, a MirroredStrategy over both), JAX with two host devices.
"""

from __future__ import annotations

import gc
import inspect
import json
import os
import re
import sys
import tempfile
import traceback
import weakref
from typing import Any, Callable, Dict, List, Optional, Sequence

import numpy as np
import pytest
from tests._py import zip_strict
from tests.conftest import xla_flags
from tests.support.fresh_process import run_script

TAUS = [0.01, 0.5, 0.999, 1.0]
EPS = {"float16": 2.0**-10, "bfloat16": 2.0**-7, "float32": 2.0**-23, "float64": 2.0**-52}


# -- builders ---------------------------------------------------------------------------


def typed_layer(K: Any) -> Any:
    """An identity layer holding one extra (3, 4) weight per dtype it is given."""
    from features import family_name

    def zeros(dtype_: str) -> Any:
        if family_name(K) != "keras2":
            return "zeros"
        # Keras 2.2.4's add_weight calls `initializer(shape)` without the dtype.
        return lambda shape, dtype=None: K.backend.constant(0, shape=shape, dtype=dtype_)

    class Typed(K.layers.Layer):  # type: ignore[name-defined,misc]
        def __init__(self, dtypes: Sequence[str] = (), **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.dtypes = list(dtypes)

        def build(self, input_shape: Any) -> None:
            for dtype in self.dtypes:
                floating = "float" in dtype
                extra: Dict[str, Any] = {}
                if (not floating and family_name(K) == "keras3"
                        and "aggregation" in inspect.signature(self.add_weight).parameters):
                    # Keras 3.7's add_weight defaults every variable to
                    # aggregation="mean", which a tf.distribute strategy refuses
                    # for an integer variable (3.8 stopped defaulting ints to it):
                    # say what an integer counter wants, as a user would.
                    extra["aggregation"] = "only_first_replica"
                self.add_weight(name=f"w_{dtype}", shape=(3, 4), dtype=dtype, initializer=zeros(dtype),
                                trainable=floating, **extra)
            super().build(input_shape)

        def call(self, x: Any) -> Any:
            return x

        def compute_output_shape(self, input_shape: Any) -> Any:
            return input_shape

        def get_config(self) -> Dict[str, Any]:
            return dict(super().get_config(), dtypes=self.dtypes)

    return Typed


def build(K: Any, seed: int, units: int = 3, dtypes: Sequence[str] = ("int32",), prefix: str = "") -> Any:
    """Dense, BatchNormalization, a `Typed` layer with extra dtypes, Dense; random values."""
    inputs = K.Input((4,), name=prefix + "x")
    h = K.layers.Dense(8, name=prefix + "dense_a")(inputs)
    h = K.layers.BatchNormalization(name=prefix + "bn")(h)
    h = typed_layer(K)(dtypes, name=prefix + "typed")(h)
    outputs = K.layers.Dense(units, name=prefix + "dense_b")(h)
    model = K.models.Model(inputs, outputs, name=prefix + "soft")
    rng = np.random.default_rng(seed)
    values = []
    for w in model.get_weights():
        w = np.asarray(w)
        if np.issubdtype(w.dtype, np.integer):
            values.append(rng.integers(-1000, 1000, size=w.shape).astype(w.dtype))
        else:  # float16 / bfloat16 (ml_dtypes) / float32: representable values
            values.append(rng.uniform(-2.0, 2.0, size=w.shape).astype(w.dtype))
    model.set_weights(values)
    return model


def weights_np(model: Any) -> List[np.ndarray]:
    return [np.array(w) for w in model.get_weights()]


def blended(source: List[np.ndarray], target: List[np.ndarray], tau: float) -> List[np.ndarray]:
    """What a soft update must give: float64 arithmetic, integers copied."""
    out = []
    for s, t in zip_strict(source, target):
        if np.issubdtype(s.dtype, np.integer):
            out.append(s)
        else:
            out.append(tau * s.astype(np.float64) + (1.0 - tau) * t.astype(np.float64))
    return out


def assert_blended(got: List[np.ndarray], want: List[np.ndarray], names: Sequence[str] = ()) -> None:
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip_strict(got, want)):
        name = names[i] if i < len(names) else str(i)
        if np.issubdtype(g.dtype, np.integer):
            np.testing.assert_array_equal(g, w, err_msg=f"{name}: an integer variable must be copied exactly")
            continue
        eps = EPS.get(str(g.dtype), EPS["float32"])
        # Inputs within [-2, 2]: a few roundings of the dtype, relative to 2.
        np.testing.assert_allclose(g.astype(np.float64), w, rtol=4 * eps, atol=8 * eps, err_msg=name)


def tf_backed(K: Any) -> bool:
    from features import backend_name

    return backend_name(K) == "tensorflow"


def half_dtypes(K: Any, family: str) -> List[str]:
    """float16 and bfloat16 where the family can hold variables of them (every family tested here),
    bfloat16 where NumPy knows the name (TensorFlow 1.15 registers no `ml_dtypes`)."""
    try:
        np.dtype("bfloat16")
    except TypeError:
        return ["float16"]
    return ["float16", "bfloat16"]


# -- arithmetic ----------------------------------------------------------------------------


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
    from features import backend_name

    backend = backend_name(K)
    if backend == "tensorflow":
        from tests.support.internals import tf_blend_entries, tf_blends

        entries = len(tf_blends)
        for tau in (0.1, 0.2, 0.3, 0.999, 0.5):
            compat_clone.copy_weights(source, target, tau=tau)
        assert len(tf_blends) == entries, "a new tf.function per call"
        counts = [blend.fn.experimental_get_tracing_count() for _, blend in tf_blend_entries.values()]
        assert counts and all(c == 1 for c in counts), counts
    elif backend == "jax":
        from tests.support.internals import jax_jitted

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
    from tests.support.internals import tf_blend_entries

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
    from tests.support.internals import TfBlend

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
    from threads import run_in_threads

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
        want = [s if np.issubdtype(s.dtype, np.integer) else s + keep * (t.astype(np.float64) - s)
                for s, t in zip_strict(src[i], tgt[i])]
        assert_blended(weights_np(targets[i]), want)


# -- across devices: fresh interpreters ---------------------------------------------------


def _run_worker(mode: str, env: Dict[str, str]) -> Dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "out.json")
        proc = run_script(__file__, [mode, out], env)
        if not os.path.exists(out):
            pytest.fail(f"worker {mode!r} wrote no results (rc={proc.returncode}):\n{proc.stderr[-6000:]}")
        with open(out, encoding="utf-8") as fh:
            return dict(json.load(fh))


def _check(records: Dict[str, Any], key: str) -> None:
    assert key in records, f"no record {key!r}; the worker recorded {sorted(records)}"
    assert records[key] == "ok", f"{key} failed in the worker:\n{records[key]}"


TF_CHECKS = ["across_devices", "mirrored_to_mirrored", "plain_to_mirrored"]


@pytest.mark.per_claim  # worker interpreters with virtual devices: 35-81 s per environment under load
@pytest.mark.parametrize("check", TF_CHECKS)
def test_tf_across_devices_and_strategies(K: Any, family: str, check: str) -> None:
    if family == "keras2" or not tf_backed(K):
        pytest.skip("TensorFlow 2 (eager) families only")
    _check(_tf_records(K.__name__, family), f"{family}:{check}")


_TF_RECORDS: Dict[str, Dict[str, Any]] = {}


def _tf_records(module: str, family: str) -> Dict[str, Any]:
    if family not in _TF_RECORDS:
        _TF_RECORDS[family] = _run_worker(f"tf:{module}", {})
    return _TF_RECORDS[family]


def test_jax_across_devices(K: Any, family: str) -> None:
    from features import backend_name

    if family != "keras3" or backend_name(K) != "jax":
        pytest.skip("Keras 3 on JAX only")
    records = _run_worker("jax:keras", {"XLA_FLAGS": xla_flags("--xla_force_host_platform_device_count=2")})
    _check(records, "keras3:across_devices")


def _unwrap(tf: Any, v: Any) -> Any:
    inner = getattr(v, "_value", None)
    return inner if isinstance(inner, tf.Variable) else v


def _worker_tf(module: str, out: str) -> None:
    import tensorflow as tf

    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration(), tf.config.LogicalDeviceConfiguration()]
    )
    import importlib

    import compat_clone
    from features import family_name

    K = importlib.import_module(module)
    family = family_name(K)

    def across_devices() -> None:
        with tf.device("/CPU:1"):
            source = build(K, seed=1)
        with tf.device("/CPU:0"):
            target = build(K, seed=2)
        src, tgt = weights_np(source), weights_np(target)
        compat_clone.copy_weights(source, target, tau=0.2)
        assert all(_unwrap(tf, v).device.endswith("CPU:0") for v in target.weights)
        assert_blended(weights_np(target), blended(src, tgt, 0.2))

    def mirrored_to_mirrored() -> None:
        strategy = tf.distribute.MirroredStrategy(["/CPU:0", "/CPU:1"])
        with strategy.scope():
            source, target = build(K, seed=3), build(K, seed=4)
        src, tgt = weights_np(source), weights_np(target)
        compat_clone.copy_weights(source, target, tau=0.7)
        want = blended(src, tgt, 0.7)
        for v, w in zip_strict(target.weights, _reorder(target, want)):
            replicas = list(_unwrap(tf, v).values)
            assert len(replicas) == 2
            assert_blended([np.array(r.numpy()) for r in replicas], [w, w])

    def plain_to_mirrored() -> None:
        strategy = tf.distribute.MirroredStrategy(["/CPU:0", "/CPU:1"])
        source = build(K, seed=5)
        with strategy.scope():
            target = build(K, seed=6)
        src, tgt = weights_np(source), weights_np(target)
        compat_clone.copy_weights(source, target, tau=0.4)
        want = blended(src, tgt, 0.4)
        for v, w in zip_strict(target.weights, _reorder(target, want)):
            assert_blended([np.array(r.numpy()) for r in _unwrap(tf, v).values], [w, w])

    _record(out, {f"{family}:{fn.__name__}": fn for fn in (across_devices, mirrored_to_mirrored, plain_to_mirrored)})


def _reorder(model: Any, values: List[np.ndarray]) -> List[np.ndarray]:
    """`get_weights()` order -> `model.weights` order (the same in every TF 2 family; checked)."""
    assert [tuple(v.shape) for v in model.weights] == [w.shape for w in values]
    return values


def _worker_jax(module: str, out: str) -> None:
    import importlib

    import jax

    import compat_clone

    K = importlib.import_module(module)

    def across_devices() -> None:
        cpus = jax.devices("cpu")
        assert len(cpus) == 2, cpus
        with jax.default_device(cpus[1]):
            source = build(K, seed=1)
        target = compat_clone.clone_model(source, device="cpu:0")
        # Keras's assign makes a NumPy value an array on the default device (a GPU where there is one):
        # the target's values are set on its own device, so that the blend is what moves nothing.
        with jax.default_device(cpus[0]):
            target.set_weights(weights_np(build(K, seed=2)))
        assert all(v.value.sharding.device_set == {cpus[0]} for v in target.weights)
        src, tgt = weights_np(source), weights_np(target)
        compat_clone.copy_weights(source, target, tau=0.3)
        assert_blended(weights_np(target), blended(src, tgt, 0.3))
        for v in target.weights:
            assert v.value.sharding.device_set == {cpus[0]}, (v.path, v.value.sharding)
        for v in source.weights:
            assert v.value.sharding.device_set == {cpus[1]}, (v.path, v.value.sharding)

    _record(out, {"keras3:across_devices": across_devices})


def _record(out: str, checks: Dict[str, Callable[[], None]]) -> None:
    records: Dict[str, Optional[str]] = {}
    for key, fn in checks.items():
        try:
            fn()
            records[key] = "ok"
        except BaseException:  # recorded for the test in the parent process
            records[key] = traceback.format_exc()
    with open(out, "w", encoding="utf-8") as fh:
        json.dump(records, fh)


if __name__ == "__main__":
    _mode, _out = sys.argv[1], sys.argv[2]
    _backend, _, _module = _mode.partition(":")
    {"tf": _worker_tf, "jax": _worker_jax}[_backend](_module, _out)


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
