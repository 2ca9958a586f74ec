"""Placement in this process, every backend: bad devices, exact copies, the default device.

A bad device raises `DeviceNotFoundError` before anything is built; copies
are exact, not shared, and atomic (a mismatch leaves the target bit for bit
unchanged); `device=None` places a clone where its source is. Across devices
and strategies: tests/clone/test_placement_tf.py and test_placement_jax.py (fresh
interpreters), test_placement_torch.py, test_placement_gpu.py.
"""

from __future__ import annotations

from typing import Any, List

import pytest

from tests.clone.placement import assert_same_weights, build, check_sync_on_read_sum_refused, weights_np
from tests.clone.placement_marks import needs_tf
from tests.support._py import zip_strict

BAD_DEVICES = ["cuda:7", "/GPU:9", "tpu:3", "no-such-device"]


@pytest.mark.parametrize("bad", BAD_DEVICES)
def test_bad_device_raises_before_building(K: Any, family: str, bad: str) -> None:
    import compat_clone

    if family == "keras2":
        pytest.skip("standalone Keras 2 placement is tested with its adapter")
    model = build(K)
    built: List[str] = []

    def spy(layer: Any) -> Any:
        built.append(layer.name)
        return layer.__class__.from_config(layer.get_config())

    with pytest.raises(compat_clone.DeviceNotFoundError) as info:
        compat_clone.clone_model(model, clone_function=spy, device=bad)
    assert not built, f"layers were built before the device was checked: {built}"
    message = str(info.value)
    assert repr(bad) in message
    assert "Available devices" in message
    assert isinstance(info.value, ValueError)


def test_bad_device_type_raises(K: Any, family: str) -> None:
    import compat_clone

    if family == "keras2":
        pytest.skip("standalone Keras 2 placement is tested with its adapter")
    with pytest.raises(compat_clone.DeviceNotFoundError, match="42"):
        compat_clone.clone_model(build(K), device=42)


def test_copy_is_exact_and_not_shared(K: Any, family: str) -> None:
    import numpy as np

    import compat_clone

    model = build(K, seed=1)
    clone = compat_clone.clone_model(model, copy_weights=True)
    assert_same_weights(model, clone)
    for src, dst in zip_strict(model.weights, clone.weights):
        assert src is not dst
        sv, dv = getattr(src, "value", src), getattr(dst, "value", dst)
        assert sv is not dv
    # Writing the clone leaves the source alone (no aliasing that leaks).
    # (set_weights: a variable's `assign` only builds an op in standalone
    # Keras 2's graph mode, and nothing would be written.)
    before = weights_np(model)
    written = clone.get_weights()
    written[0] = np.full_like(written[0], 7)
    clone.set_weights(written)
    assert (weights_np(clone)[0] == 7).all()  # the write happened
    after = weights_np(model)
    for x, y in zip_strict(before, after):
        assert (x == y).all()


def test_copy_mismatch_leaves_target_bit_for_bit(K: Any, family: str) -> None:
    import compat_clone

    source = build(K, units=3, seed=2)
    target = build(K, units=5, seed=3)  # differs in the *last* layer only
    before = [w.tobytes() for w in weights_np(target)]
    with pytest.raises(compat_clone.WeightsMismatchError):
        compat_clone.copy_weights(source, target)
    assert [w.tobytes() for w in weights_np(target)] == before


def test_copy_weights_device_none_default_places_with_source(K: Any, family: str) -> None:
    """device=None on one default device: the clone's variables share it."""
    import compat_clone

    if family == "keras2":
        pytest.skip("standalone Keras 2 placement is tested with its adapter")
    model = build(K)
    clone = compat_clone.clone_model(model)
    source_places = [_where(v) for v in model.weights]
    assert "?" not in source_places, source_places  # a placement was read for every variable
    assert [_where(v) for v in clone.weights] == source_places


def _where(variable: Any) -> str:
    value = getattr(variable, "_value", None)
    for obj in (value, variable):
        if obj is None:
            continue
        sharding = getattr(obj, "sharding", None)
        if sharding is not None:
            return str(sorted(d.id for d in sharding.device_set))
        device = getattr(obj, "device", None)
        if device is not None and not callable(device):
            return str(device)
    return "?"


@needs_tf
def test_tf_sync_on_read_sum_target_refused_before_any_write() -> None:
    """The TF assignment phase plans every pair first: a refusal writes nothing."""
    check_sync_on_read_sum_refused(["/CPU:0"])
