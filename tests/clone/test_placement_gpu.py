"""One GPU (Keras 3 on torch or JAX): runs on a machine with one, skips elsewhere.

A CPU source clones onto the CPU, `device=` moves a clone either way, and
copies and soft updates cross devices exactly.
"""

from __future__ import annotations

import pytest

from tests.clone.placement import assert_same_weights, build, platform, platforms, weights_np
from tests.clone.placement_marks import BACKEND, needs_gpu
from tests.support._py import zip_strict


@needs_gpu
def test_gpu_clone_of_a_cpu_source_stays_on_the_cpu() -> None:
    """A source built under `keras.device("cpu")` on a GPU machine: its clone is on the CPU too.

    The native clone, built under no device scope, lands on the default
    device; where that is the GPU the test shows both side by side.
    """
    import keras

    import compat_clone

    with keras.device("cpu:0"):
        source = build(keras, seed=7)
    assert set(platforms(source)) == {"cpu"}
    clone = compat_clone.clone_model(source, copy_weights=True)
    assert set(platforms(clone)) == {"cpu"}, platforms(clone)
    assert_same_weights(source, clone)
    native = keras.models.clone_model(source)
    print(f"native clone_model of a CPU source ({BACKEND}): on {sorted(set(platforms(native)))}")


@needs_gpu
@pytest.mark.parametrize("to", ["gpu:0", "cpu"])
def test_gpu_device_argument_both_ways(to: str) -> None:
    """`device=` moves a clone to the GPU from a CPU source and to the CPU from a GPU source, exactly."""
    import keras

    import compat_clone

    with keras.device("cpu:0" if to == "gpu:0" else "gpu:0"):
        source = build(keras, seed=8)
    clone = compat_clone.clone_model(source, device=to, copy_weights=True)
    assert set(platforms(clone)) == {to.split(":")[0]}, platforms(clone)
    assert set(platforms(source)) != set(platforms(clone))
    assert_same_weights(source, clone)
    with keras.device(to):  # usable where it is, with inputs made there
        out = clone(keras.ops.ones((2, 4)), training=False)
    assert tuple(out.shape) == (2, 3) and platform(out) == to.split(":")[0]


@needs_gpu
def test_gpu_copy_weights_across_devices_and_soft_update() -> None:
    """copy_weights from a GPU source into a CPU target and back, and a soft update on the GPU."""
    import keras
    import numpy as np

    import compat_clone

    with keras.device("gpu:0"):
        on_gpu = build(keras, seed=9)
        gpu_target = build(keras, seed=10)
    with keras.device("cpu:0"):
        on_cpu = build(keras, seed=11)
    before = weights_np(gpu_target)
    compat_clone.copy_weights(on_gpu, on_cpu)
    assert set(platforms(on_cpu)) == {"cpu"}
    assert_same_weights(on_gpu, on_cpu)
    compat_clone.copy_weights(on_gpu, gpu_target, tau=0.005)
    assert set(platforms(gpu_target)) == {"gpu"}
    for (src, old), new in zip_strict(zip_strict(weights_np(on_gpu), before), weights_np(gpu_target)):
        if np.issubdtype(old.dtype, np.floating):
            np.testing.assert_allclose(new, 0.005 * src + 0.995 * old, rtol=1e-5, atol=1e-6)
