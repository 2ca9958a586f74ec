"""Soft-update checks across devices, run as a script in a fresh interpreter.

``python tests/clone/soft_update_worker.py tf:MODULE OUT``: TensorFlow split
into two logical CPUs (a source on /CPU:1 into a target on /CPU:0, a
MirroredStrategy over both), for the Keras module MODULE.
``python tests/clone/soft_update_worker.py jax:MODULE OUT``: JAX with two
host devices (the parent sets ``XLA_FLAGS``).
Each writes one JSON record per check to OUT (tests/clone/test_soft_update_devices.py
asserts them). Logical devices must be configured before TensorFlow
initializes, so nothing here imports it before `_worker_tf` has.
"""

from __future__ import annotations

import json
import sys
import traceback
from typing import Any, Callable, Dict, List, Optional

import numpy as np

from tests.clone.soft_update import assert_blended, blended, build, weights_np
from tests.support._py import zip_strict

__all__: List[str] = []


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
    from tests.clone.features import family_name

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
