"""Placement checks for Keras 3 on JAX, run as a script in a fresh interpreter.

``python tests/clone/placement_worker_jax.py jax OUT``, with
``XLA_FLAGS=--xla_force_host_platform_device_count=4`` and
``KERAS_BACKEND=jax``: keras.distribution layouts and explicit devices over
four host devices. It writes one JSON record per check to OUT
(tests/clone/test_placement_jax.py asserts them).

The four forced host devices are JAX's CPU devices, taken from
``jax.devices("cpu")``; they are also its default devices only where no
accelerator is present. What a clone gets by default is the default
backend's first device (a GPU if any).
"""

from __future__ import annotations

import sys
from typing import Any, Callable, Dict, List, Optional

import jax
import keras
import numpy as np

import compat_clone
from tests.clone.placement import assert_same_weights, build, outputs
from tests.support._py import zip_strict
from tests.support.fresh_process import Recorder


def same_sharding(a: Any, b: Any, ndim: int) -> bool:
    return bool(a == b or a.is_equivalent_to(b, ndim))


def _assert_same_shardings(pairs: List[Any]) -> None:
    for src, dst in pairs:
        assert same_sharding(src.value.sharding, dst.value.sharding, len(src.shape)), (
            src.path,
            src.value.sharding,
            dst.value.sharding,
        )


def device_put_source(devices: List[Any]) -> None:
    default_device = jax.devices()[0]
    model = build(keras, seed=13)
    for v in model.weights:
        v.assign(jax.device_put(v.value, devices[2]))
    native = keras.models.clone_model(model)
    fresh = compat_clone.clone_model(model)  # placement alone, no copy
    clone = compat_clone.clone_model(model, copy_weights=True)
    for v in fresh.weights + clone.weights:
        assert v.value.sharding.device_set == {devices[2]}, v.value.sharding
    assert native.weights
    assert all(v.value.sharding.device_set == {default_device} for v in native.weights), [
        v.value.sharding for v in native.weights
    ]
    np.testing.assert_array_equal(outputs(model), outputs(clone))


def model_parallel_layout(devices: List[Any]) -> Dict[str, Any]:
    mesh = keras.distribution.DeviceMesh((2, 2), ["batch", "model"], devices=devices)
    layout_map = keras.distribution.LayoutMap(mesh)
    layout_map["dense_a/kernel"] = (None, "model")
    layout_map["dense_a/bias"] = ("model",)
    distribution = keras.distribution.ModelParallel(layout_map=layout_map, batch_dim_name="batch")
    with distribution.scope():
        model = build(keras, seed=14)
    kernel = model.get_layer("dense_a").kernel
    assert len(kernel.value.sharding.device_set) == 4 and not kernel.value.sharding.is_fully_replicated
    native = keras.models.clone_model(model)  # outside the scope
    fresh = compat_clone.clone_model(model)  # placement alone, no copy
    clone = compat_clone.clone_model(model, copy_weights=True)
    _assert_same_shardings(list(zip_strict(model.weights, clone.weights)) + list(zip_strict(model.weights, fresh.weights)))
    assert_same_weights(model, clone)
    np.testing.assert_allclose(outputs(model), outputs(clone), rtol=1e-6)
    native_kernel = native.get_layer("dense_a").kernel.value.sharding
    # device=<a keras.distribution>: the clone is built under it.
    elsewhere = compat_clone.clone_model(build(keras, seed=20), device=distribution)
    kernel = elsewhere.get_layer("dense_a").kernel.value.sharding
    assert same_sharding(kernel, model.get_layer("dense_a").kernel.value.sharding, 2)
    return {
        "native_sharded": len(native_kernel.device_set) > 1,
        "compat_sharded": len(clone.get_layer("dense_a").kernel.value.sharding.device_set) > 1,
    }


def data_parallel_layout(devices: List[Any]) -> None:
    distribution = keras.distribution.DataParallel(devices=devices)
    with distribution.scope():
        model = build(keras, seed=15)
    clone = compat_clone.clone_model(model)
    for src, dst in zip_strict(model.weights, clone.weights):
        assert len(dst.value.sharding.device_set) == 4
        assert same_sharding(src.value.sharding, dst.value.sharding, len(src.shape))


def explicit_device(devices: List[Any]) -> None:
    model = build(keras, seed=16)
    for spelling in ("cpu:3", "/CPU:3", devices[3]):
        clone = compat_clone.clone_model(model, device=spelling, copy_weights=True)
        for v in clone.weights:
            assert v.value.sharding.device_set == {devices[3]}, (spelling, v.value.sharding)
        assert_same_weights(model, clone)


def explicit_sharding(devices: List[Any]) -> None:
    mesh = jax.sharding.Mesh(np.array(devices), ("d",))
    replicated = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec())
    model = build(keras, seed=17)
    clone = compat_clone.clone_model(model, device=replicated, copy_weights=True)
    for v in clone.weights:
        assert len(v.value.sharding.device_set) == 4 and v.value.sharding.is_fully_replicated
    assert_same_weights(model, clone)


def copy_keeps_target_sharding(devices: List[Any]) -> None:
    mesh = keras.distribution.DeviceMesh((4,), ["model"], devices=devices)
    layout_map = keras.distribution.LayoutMap(mesh)
    layout_map["dense_a/kernel"] = (None, "model")
    with keras.distribution.ModelParallel(layout_map=layout_map).scope():
        source = build(keras, seed=18)
    target = compat_clone.clone_model(source, device="cpu:1")
    compat_clone.copy_weights(source, target)
    for src, dst in zip_strict(source.weights, target.weights):
        assert dst.value.sharding.device_set == {devices[1]}
        assert dst.value is not src.value
    assert_same_weights(source, target)


def copy_survives_donation(devices: List[Any]) -> None:
    # Keras's JAX trainer donates the state buffers (donate_argnums=0):
    # had copy_weights shared arrays, fit() would delete the source's.
    model = build(keras, seed=19)
    clone = compat_clone.clone_model(model, copy_weights=True)
    clone.compile(optimizer="sgd", loss="mse")
    x = np.ones((16, 4), "float32")
    clone.fit(x, np.ones((16, 3), "float32"), epochs=1, verbose=0)
    clone.predict(x, verbose=0)
    for v in model.weights:
        assert not v.value.is_deleted()
    outputs(model)


# In the order the records are written; test_placement_jax.JAX_CHECKS names the same.
CHECKS: List[Callable[[List[Any]], Optional[Dict[str, Any]]]] = [
    device_put_source,
    model_parallel_layout,
    data_parallel_layout,
    explicit_device,
    explicit_sharding,
    copy_keeps_target_sharding,
    copy_survives_donation,
]


def worker_jax(out: str) -> None:
    rec = Recorder()
    devices = jax.devices("cpu")
    assert len(devices) == 4, devices
    for check in CHECKS:
        rec.run(f"keras3:{check.__name__}", lambda check=check: check(devices))
    rec.write(out)


if __name__ == "__main__":
    mode, out_path = sys.argv[1], sys.argv[2]
    {"jax": worker_jax}[mode](out_path)
