"""What the placement tests and their workers share: environment probes and model builders.

Nothing here runs at import: a worker imports these before it configures
TensorFlow's devices, and nothing may touch TensorFlow before that. The
markers that probe at import are in `placement_marks` (test modules only).
"""

from __future__ import annotations

from typing import Any, List, Optional

import pytest

from tests.support._py import zip_strict

__all__ = [
    "assert_same_weights",
    "build",
    "check_sync_on_read_sum_refused",
    "keras3_backend",
    "keras_for",
    "outputs",
    "platform",
    "platforms",
    "tf_families",
    "weights_np",
]


# -- what this environment has ------------------------------------------------


def keras3_backend() -> Optional[str]:
    """The backend of an importable Keras 3, or None."""
    try:
        import keras
    except Exception:
        return None
    if not keras.__version__.startswith("3."):
        return None
    return str(keras.backend.backend())


def tf_families() -> List[str]:
    """Families under test here whose models live in TensorFlow."""
    from tests.support.families import families_under_test

    found = []
    for fam in families_under_test():
        if fam == "keras3" and keras3_backend() == "tensorflow" or fam == "tf_keras":
            found.append(fam)
    return found


def keras_for(family: str) -> Any:
    """The Keras module that serves `family` here."""
    from tests.support.families import keras_module

    return keras_module(family)


def platform(tensor: Any) -> str:
    """`gpu` or `cpu`: where a torch tensor or a JAX array lives."""
    if hasattr(tensor, "devices"):  # a JAX array
        return ",".join(sorted({d.platform for d in tensor.devices()}))
    return "gpu" if tensor.device.type == "cuda" else str(tensor.device.type)


def platforms(model: Any) -> List[str]:
    return [platform(v.value) for v in model.weights]


# -- builders (plain functions; shared by the tests and the workers) -----------


def build(K: Any, units: int = 3, seed: int = 0) -> Any:
    """A small functional model with trainable and non-trainable variables."""
    inputs = K.Input((4,), name="x")
    h = K.layers.Dense(8, name="dense_a")(inputs)
    h = K.layers.BatchNormalization(name="bn")(h)
    out = K.layers.Dense(units, name="dense_b")(h)
    model = K.models.Model(inputs, out, name="placed")
    _fill(model, seed)
    return model


def _fill(model: Any, seed: int) -> None:
    import numpy as np

    rng = np.random.default_rng(seed)
    # get_weights() order (standalone Keras 2 lists `model.weights` differently).
    model.set_weights([rng.standard_normal(w.shape).astype("float32") for w in model.get_weights()])


def weights_np(model: Any) -> List[Any]:
    import numpy as np

    return [np.array(w.numpy() if hasattr(w, "numpy") else w) for w in model.get_weights()]


def assert_same_weights(a: Any, b: Any) -> None:
    import numpy as np

    wa, wb = weights_np(a), weights_np(b)
    assert len(wa) == len(wb)
    for x, y in zip_strict(wa, wb):
        assert x.dtype == y.dtype and x.shape == y.shape
        assert np.array_equal(x, y)


def outputs(model: Any) -> Any:
    """The model's outputs, as NumPy, on a fixed batch of 8."""
    import numpy as np

    x = np.linspace(-1, 1, 8 * 4).reshape(8, 4).astype("float32")
    y = model(x, training=False)
    return np.array(y)


def check_sync_on_read_sum_refused(devices: List[str]) -> None:
    """A copy into a SUM-aggregated, sync-on-read variable (a MirroredStrategy over `devices`) is
    refused before anything is written: the other pair's target keeps its zeros."""
    import numpy as np
    import tensorflow as tf

    from compat_clone import InvalidArgumentError
    from compat_clone import placement as _placement

    strategy = tf.distribute.MirroredStrategy(devices)
    a = tf.Variable(np.ones(3, "float32"))
    b = tf.Variable(np.zeros(3, "float32"))
    with strategy.scope():
        c = tf.Variable(
            np.zeros(3, "float32"),
            synchronization=tf.VariableSynchronization.ON_READ,
            aggregation=tf.VariableAggregation.SUM,
        )
    with pytest.raises(InvalidArgumentError, match="Nothing was copied"):
        _placement.assign_tf([(a, b), (a, c)])
    assert b.numpy().tolist() == [0, 0, 0]
