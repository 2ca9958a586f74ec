"""Keras 3 on torch: `device="cpu"`, the default device, and copies in place.

Skips where Keras 3 on torch is not under test; the matrix runs every env.
"""

from __future__ import annotations

from typing import Optional

import pytest

from tests.clone.placement import assert_same_weights, build
from tests.clone.placement_marks import needs_torch
from tests.support._py import zip_strict


@needs_torch
@pytest.mark.parametrize("device", [None, "cpu", "CPU:0", "/CPU:0"])
def test_torch_cpu(device: Optional[str]) -> None:
    """`device="cpu"` puts the clone on the CPU; `device=None` where the source is.

    The source is built where Keras puts new tensors, read here from a new
    tensor: the first GPU where torch has one, the CPU otherwise.
    """
    import keras
    import torch

    import compat_clone

    default = keras.ops.zeros((1,)).device
    model = build(keras, seed=4)
    assert [v.value.device for v in model.weights] == [default] * len(model.weights)
    expected = default if device is None else torch.device("cpu")
    clone = compat_clone.clone_model(model, device=device, copy_weights=True)
    assert [v.value.device for v in clone.weights] == [expected] * len(clone.weights)
    assert_same_weights(model, clone)
    for src, dst in zip_strict(model.weights, clone.weights):
        assert src.value.data_ptr() != dst.value.data_ptr()


@needs_torch
def test_torch_copy_into_other_model_in_place() -> None:
    """copy_ in place: the target keeps its own Parameter objects and buffers."""
    import keras

    import compat_clone

    source, target = build(keras, seed=5), build(keras, seed=6)
    params = [v.value for v in target.weights]
    ptrs = [p.data_ptr() for p in params]
    compat_clone.copy_weights(source, target)
    assert [v.value for v in target.weights] == params
    assert [v.value.data_ptr() for v in target.weights] == ptrs
    assert_same_weights(source, target)
