"""A clone with weights never runs an initializer whose result the copy overwrites.

`compat_clone.clone_model(model, copy_weights=True)` creates the clone's
variables as zeros (`compat_clone.families._skip_init`) and fills them once
from the source. Checked with a custom layer whose `build()` calls
`add_weight` with an initializer that counts its calls, in every family.
"""

from __future__ import annotations

import threading
from typing import Any, List

import numpy as np
import pytest

import compat_clone
from features import data, predict


def _counting_model(K: Any, calls: List[int]) -> Any:
    def counting(shape: Any, dtype: Any = None, **kwargs: Any) -> Any:
        calls.append(1)
        return K.initializers.RandomNormal(seed=len(calls))(shape, dtype=dtype)

    class Scaled(K.layers.Layer):  # type: ignore[misc,name-defined]
        def build(self, input_shape: Any) -> None:
            self.scale = self.add_weight(name="scale", shape=(int(input_shape[-1]),), initializer=counting)
            super().build(input_shape)

        def call(self, x: Any) -> Any:
            return x * self.scale

        def compute_output_shape(self, input_shape: Any) -> Any:
            return input_shape

    x = K.Input((6,))
    h = K.layers.BatchNormalization()(K.layers.Dense(5)(x))
    return K.models.Model(x, Scaled()(h))


def test_clone_with_weights_runs_no_initializer(K: Any) -> None:
    calls: List[int] = []
    model = _counting_model(K, calls)
    built = len(calls)
    assert built == 1, f"the source's build ran {built} counting initializers, expected 1"
    clone = compat_clone.clone_model(model, copy_weights=True)
    assert len(calls) == built, "an initializer ran although its values were overwritten by the copy"
    for a, b in zip(model.get_weights(), clone.get_weights(), strict=True):
        np.testing.assert_array_equal(a, b)  # bit for bit, BatchNorm statistics included
    x = data((3, 6))
    for a, b in zip(predict(model, x), predict(clone, x), strict=True):
        np.testing.assert_array_equal(a, b)


def test_clone_without_weights_initializes_as_native(K: Any) -> None:
    calls: List[int] = []
    model = _counting_model(K, calls)
    built = len(calls)
    clone = compat_clone.clone_model(model)
    assert len(calls) == 2 * built, "without copy_weights the clone must be freshly initialized"
    assert not np.array_equal(model.get_weights()[0], clone.get_weights()[0]), "the Dense kernel was not re-drawn"


def test_skipping_is_limited_to_the_clone(K: Any) -> None:
    """Layers built after the clone, or in another thread during it, keep their initializers."""
    calls: List[int] = []
    model = _counting_model(K, calls)
    compat_clone.clone_model(model, copy_weights=True)
    before = len(calls)
    _counting_model(K, calls)
    assert len(calls) == before + 1
    seen: List[Any] = []

    def clone_with(layer: Any) -> Any:
        new = layer.__class__.from_config(layer.get_config())
        if not seen:  # while the clone is being made: another thread builds a layer
            def other() -> None:
                try:
                    dense = K.layers.Dense(4, kernel_initializer="ones")
                    dense.build((None, 3))
                    seen.append(float(np.sum(np.asarray(dense.kernel.numpy()))))
                except Exception as exc:  # reported by the assertion below
                    seen.append(exc)

            worker = threading.Thread(target=other)
            worker.start()
            worker.join()
        return new

    if compat_clone.family_of(model).family == "keras2":
        pytest.skip("standalone Keras 2 builds graph-mode variables under one process-wide lock")
    compat_clone.clone_model(model, clone_function=clone_with, copy_weights=True)
    assert seen == [12.0], f"another thread's layer was built with {seen}, expected its 'ones' kernel"
