"""Placement checks for TensorFlow, run as a script in a fresh interpreter.

``python tests/clone/placement_worker_tf.py tf OUT``: TensorFlow split into
two logical CPUs, every check once per TensorFlow-based family.
``python tests/clone/placement_worker_tf.py mwms OUT``: one worker of a
MultiWorkerMirroredStrategy (its cluster comes in ``TF_CONFIG``).
Each writes one JSON record per check to OUT (tests/clone/test_placement_tf.py
asserts them). Logical devices must be configured before TensorFlow
initializes, so nothing here touches it before `main` has.
"""

from __future__ import annotations

import sys
from typing import Any, Callable, Dict, List, Optional

import numpy as np
import tensorflow as tf

import compat_clone
from tests.clone.placement import (
    assert_same_weights,
    build,
    check_sync_on_read_sum_refused,
    keras_for,
    outputs,
    tf_families,
)
from tests.support._py import zip_strict
from tests.support.fresh_process import Recorder

TWO_CPUS = ["/CPU:0", "/CPU:1"]


def _tf_var(v: Any) -> Any:
    if isinstance(v, tf.Variable):
        return v
    inner = getattr(v, "_value", None)
    return inner if inner is not None else v


def _device_of(v: Any) -> str:
    return str(_tf_var(v).device)


def _is_distributed(v: Any) -> bool:
    return isinstance(_tf_var(v), tf.distribute.DistributedValues)


def _all_on_cpu1(model: Any) -> bool:
    return all(_device_of(v).endswith("CPU:1") for v in model.weights)


def device_like_source(K: Any) -> Dict[str, Any]:
    with tf.device("/CPU:1"):
        model = build(K)
    native = K.models.clone_model(model)
    clone = compat_clone.clone_model(model, copy_weights=True)
    assert _all_on_cpu1(clone), [_device_of(v) for v in clone.weights]
    assert_same_weights(model, clone)
    np.testing.assert_array_equal(outputs(model), outputs(clone))
    return {
        "source": _device_of(model.weights[0]),
        "compat": _device_of(clone.weights[0]),
        "native": _device_of(native.weights[0]),
    }


def explicit_device(K: Any) -> None:
    model = build(K)
    for spelling in ("/CPU:1", "cpu:1", "/device:CPU:1", "/job:localhost/replica:0/task:0/device:CPU:1"):
        clone = compat_clone.clone_model(model, device=spelling, copy_weights=True)
        assert _all_on_cpu1(clone), spelling
        assert_same_weights(model, clone)
    clone = compat_clone.clone_model(model, device=tf.config.list_logical_devices("CPU")[1])
    assert _all_on_cpu1(clone)
    strategy = tf.distribute.MirroredStrategy(TWO_CPUS)
    clone = compat_clone.clone_model(model, device=strategy)
    assert all(_is_distributed(v) for v in clone.weights)


def _assert_replicas_equal(source: Any, target: Any) -> None:
    """Each replica of each target variable equals the source's replica at its index."""
    for src, dst in zip_strict(source.weights, target.weights):
        for c_src, c_dst in zip_strict(_tf_var(src).values, _tf_var(dst).values):
            np.testing.assert_array_equal(c_src.numpy(), c_dst.numpy())


def mirrored(K: Any) -> Dict[str, Any]:
    strategy = tf.distribute.MirroredStrategy(TWO_CPUS)
    with strategy.scope():
        model = build(K, seed=7)
    assert all(_is_distributed(v) for v in model.weights)
    native = K.models.clone_model(model)
    clone = compat_clone.clone_model(model, copy_weights=True)  # outside the scope
    for src, dst in zip_strict(model.weights, clone.weights):
        assert _is_distributed(dst), type(_tf_var(dst))
        assert _tf_var(dst)._distribute_strategy is strategy
        assert [c.device for c in _tf_var(dst).values] == [c.device for c in _tf_var(src).values]
    _assert_replicas_equal(model, clone)
    np.testing.assert_array_equal(outputs(model), outputs(clone))  # callable outside the scope
    # copy_weights between two clones of the strategy, replica by replica.
    other = compat_clone.clone_model(model)
    compat_clone.copy_weights(model, other)
    assert all(len(_tf_var(dst).values) == 2 for dst in other.weights)
    _assert_replicas_equal(model, other)
    # A plain model copies into the mirrored clone (every replica written).
    plain = build(K, seed=8)
    compat_clone.copy_weights(plain, other)
    for src, dst in zip_strict(plain.weights, other.weights):
        assert len(_tf_var(dst).values) == 2
        for c_dst in _tf_var(dst).values:
            np.testing.assert_array_equal(np.array(src.numpy()), c_dst.numpy())
    return {
        "native_distributed": all(_is_distributed(v) for v in native.weights),
        "compat_distributed": all(_is_distributed(v) for v in clone.weights),
    }


def one_device(K: Any) -> None:
    strategy = tf.distribute.OneDeviceStrategy("/CPU:1")
    with strategy.scope():
        model = build(K, seed=9)
    clone = compat_clone.clone_model(model, copy_weights=True)
    for v in clone.weights:
        assert _tf_var(v)._distribute_strategy is strategy
        assert _device_of(v).endswith("CPU:1")
    np.testing.assert_array_equal(outputs(model), outputs(clone))


def copy_across_devices(K: Any) -> None:
    with tf.device("/CPU:1"):
        model = build(K, seed=10)
    clone = compat_clone.clone_model(model, device="/CPU:0")
    compat_clone.copy_weights(model, clone)
    assert all(_device_of(v).endswith("CPU:0") for v in clone.weights)
    assert_same_weights(model, clone)


def enclosing_strategy_scope(K: Any) -> None:
    # device=None inside the caller's strategy scope: the caller's choice governs.
    model = build(K, seed=11)
    strategy = tf.distribute.MirroredStrategy(TWO_CPUS)
    with strategy.scope():
        clone = compat_clone.clone_model(model, copy_weights=True)
    assert all(_is_distributed(v) for v in clone.weights)
    assert_same_weights(model, clone)


def sync_on_read_sum_refused_first(K: Any) -> None:
    check_sync_on_read_sum_refused(TWO_CPUS)


# In the order the records are written; test_placement_tf.TF_CHECKS names the same.
CHECKS: List[Callable[[Any], Optional[Dict[str, Any]]]] = [
    device_like_source,
    explicit_device,
    mirrored,
    one_device,
    copy_across_devices,
    enclosing_strategy_scope,
    sync_on_read_sum_refused_first,
]


def worker_tf(out: str) -> None:
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration(), tf.config.LogicalDeviceConfiguration()]
    )
    rec = Recorder()
    for family in tf_families():
        K = keras_for(family)
        for check in CHECKS:
            rec.run(f"{family}:{check.__name__}", lambda check=check, K=K: check(K))
    rec.write(out)


def multi_worker(K: Any, strategy: Any) -> Dict[str, Any]:
    with strategy.scope():
        model = build(K, seed=12)
    assert all(_is_distributed(v) for v in model.weights)
    clone = compat_clone.clone_model(model, copy_weights=True)  # outside the scope
    for dst in clone.weights:
        assert _is_distributed(dst), type(_tf_var(dst))
        assert _tf_var(dst)._distribute_strategy is strategy
    assert_same_weights(model, clone)
    np.testing.assert_array_equal(outputs(model), outputs(clone))
    made_by = _tf_var(clone.weights[0])._distribute_strategy
    resolver = made_by.cluster_resolver
    return {
        "is_mwms": isinstance(made_by, tf.distribute.MultiWorkerMirroredStrategy),
        "workers": resolver.cluster_spec().num_tasks("worker"),
        "task_id": resolver.task_id,
    }


def worker_mwms(out: str) -> None:
    rec = Recorder()
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    for family in tf_families():
        K = keras_for(family)
        rec.run(f"{family}:multi_worker", lambda K=K: multi_worker(K, strategy))
    rec.write(out)


if __name__ == "__main__":
    mode, out_path = sys.argv[1], sys.argv[2]
    {"tf": worker_tf, "mwms": worker_mwms}[mode](out_path)
