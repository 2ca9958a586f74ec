"""Builders and checks shared by the soft-update tests (tests/test_soft_update*.py) and their worker.

`build` makes a small model with random values (Dense, BatchNormalization, a
layer holding extra variables of the dtypes asked for, Dense); `blended` is what
a soft update must give, in float64; `assert_blended` compares with a tolerance
by dtype (integer variables exactly).
"""

from __future__ import annotations

import inspect
from typing import Any, Dict, List, Sequence

import numpy as np

from tests.support._py import zip_strict

__all__ = ["EPS", "TAUS", "assert_blended", "blended", "build", "half_dtypes", "tf_backed", "typed_layer", "weights_np"]

TAUS = [0.01, 0.5, 0.999, 1.0]
EPS = {"float16": 2.0**-10, "bfloat16": 2.0**-7, "float32": 2.0**-23, "float64": 2.0**-52}


def typed_layer(K: Any) -> Any:
    """An identity layer holding one extra (3, 4) weight per dtype it is given."""
    from tests.clone.features import family_name

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
                if not floating and family_name(K) == "keras3" and "aggregation" in inspect.signature(self.add_weight).parameters:
                    # Keras 3.7's add_weight defaults every variable to
                    # aggregation="mean", which a tf.distribute strategy refuses
                    # for an integer variable (3.8 stopped defaulting ints to it):
                    # say what an integer counter wants, as a user would.
                    extra["aggregation"] = "only_first_replica"
                self.add_weight(
                    name=f"w_{dtype}", shape=(3, 4), dtype=dtype, initializer=zeros(dtype), trainable=floating, **extra
                )
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
    from tests.clone.features import backend_name

    return backend_name(K) == "tensorflow"


def half_dtypes(K: Any, family: str) -> List[str]:
    """float16 and bfloat16 where the family can hold variables of them (every family tested here),
    bfloat16 where NumPy knows the name (TensorFlow 1.15 registers no `ml_dtypes`)."""
    try:
        np.dtype("bfloat16")
    except TypeError:
        return ["float16"]
    return ["float16", "bfloat16"]
