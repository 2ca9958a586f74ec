"""Helpers and model builders of the standalone Keras 2 tests (tests/clone/test_keras2.py, test_keras2_options.py).

Every model is built with the real `keras` package of the environment
(standalone Keras 2.0-2.3); nothing is mocked.
"""

from __future__ import annotations

from typing import Any, List

import numpy as np

from tests.support._py import zip_strict

__all__ = [
    "keras_module",
    "keras_version",
    "inbound_nodes",
    "evaluate",
    "compat_clone_model",
    "predict_all",
    "assert_same_predictions",
    "assert_same_weights",
    "swap_layer_class",
    "randomize",
    "build_12202_add",
    "build_12202_swap",
    "build_masked_lstm",
    "build_masking_time_distributed",
    "build_nested",
    "build_sequential",
    "build_shared",
]


def keras_module() -> Any:
    import keras

    return keras


def keras_version() -> tuple:
    keras = keras_module()
    return tuple(int(p) for p in keras.__version__.split(".")[:3])


def inbound_nodes(layer: Any) -> List[Any]:
    """The layer's inbound nodes (2.0-2.1.2 spell the attribute `inbound_nodes`)."""
    return layer._inbound_nodes if hasattr(layer, "_inbound_nodes") else layer.inbound_nodes


def evaluate(tensor: Any) -> np.ndarray:
    """`K.eval(tensor)` in inference mode: the learning phase fed (2.0 gives it no default; Dropout reads it)."""
    K = keras_module().backend
    phase = K.learning_phase()
    if isinstance(phase, int):
        return np.asarray(K.eval(tensor))
    return np.asarray(K.function([phase], [tensor])([0])[0])


def compat_clone_model(*args: Any, **kwargs: Any) -> Any:
    import compat_clone

    return compat_clone.clone_model(*args, **kwargs)


def predict_all(model: Any, x: Any) -> List[np.ndarray]:
    out = model.predict(x)
    return out if isinstance(out, list) else [out]


def assert_same_predictions(a: Any, b: Any, x: Any) -> None:
    expected, got = predict_all(a, x), predict_all(b, x)
    assert len(got) == len(expected), f"{len(got)} outputs, expected {len(expected)}"
    for p, q in zip_strict(expected, got):
        np.testing.assert_array_equal(p, q)


def assert_same_weights(expected: List[np.ndarray], got: List[np.ndarray]) -> None:
    assert len(got) == len(expected), f"{len(got)} weights, expected {len(expected)}"
    for a, b in zip_strict(expected, got):
        np.testing.assert_array_equal(a, b)


# -- builders ----------------------------------------------------------------


def swap_layer_class() -> type:
    keras = keras_module()

    class SwapLayer(keras.layers.Layer):
        """Two inputs, two outputs, no mask support (keras 2.2.5's own test)."""

        def call(self, inputs: Any, **kwargs: Any) -> Any:
            return [inputs[1], inputs[0]]

        def compute_output_shape(self, input_shape: Any) -> Any:
            return [input_shape[1], input_shape[0]]

    return SwapLayer


def build_12202_swap() -> Any:
    """keras #12202: Lambda -> [x + 1, x] into a two-in two-out layer."""
    keras = keras_module()
    inp = keras.Input((4,))
    a, b = keras.layers.Lambda(lambda x: [x + 1, x], lambda s: [s, s])(inp)
    a, b = swap_layer_class()()([a, b])
    a = keras.layers.Dense(3, name="head_a")(a)
    return keras.models.Model(inp, [a, b])


def build_12202_add() -> Any:
    """keras #12202: Lambda -> [x, x] into Add."""
    keras = keras_module()
    inp = keras.Input((4,))
    a, b = keras.layers.Lambda(lambda x: [x, x], lambda s: [s, s])(inp)
    out = keras.layers.Add()([a, b])
    out = keras.layers.Dense(2)(out)
    return keras.models.Model(inp, out)


def build_masked_lstm() -> Any:
    keras = keras_module()
    inp = keras.Input((6,))
    x = keras.layers.Embedding(10, 4, mask_zero=True)(inp)
    x = keras.layers.LSTM(5)(x)
    return keras.models.Model(inp, keras.layers.Dense(2)(x))


def build_masking_time_distributed() -> Any:
    keras = keras_module()
    inp = keras.Input((6, 3))
    x = keras.layers.Masking(0.0)(inp)
    x = keras.layers.TimeDistributed(keras.layers.Dense(4))(x)
    x = keras.layers.LSTM(2)(x)
    return keras.models.Model(inp, x)


def build_shared() -> Any:
    """keras 2.2.5's `test_clone_functional_model`: shared Dense, Dropout, BN."""
    keras = keras_module()
    input_a = keras.Input(shape=(4,))
    input_b = keras.Input(shape=(4,))
    dense_1 = keras.layers.Dense(4)
    dense_2 = keras.layers.Dense(4)
    x_a = dense_1(input_a)
    x_a = keras.layers.Dropout(0.5)(x_a)
    x_a = keras.layers.BatchNormalization()(x_a)
    x_b = dense_1(input_b)
    x_a = dense_2(x_a)
    outputs = keras.layers.add([x_a, x_b])
    return keras.models.Model([input_a, input_b], outputs)


def build_sequential() -> Any:
    """keras 2.2.5's `test_clone_sequential_model`."""
    keras = keras_module()
    model = keras.models.Sequential()
    model.add(keras.layers.Dense(4, input_shape=(4,)))
    model.add(keras.layers.BatchNormalization())
    model.add(keras.layers.Dropout(0.5))
    model.add(keras.layers.Dense(4))
    return model


def build_nested() -> Any:
    keras = keras_module()
    inner_in = keras.Input((4,), name="inner_in")
    inner_out = keras.layers.Dense(3, name="inner_dense")(inner_in)
    inner = keras.models.Model(inner_in, inner_out, name="inner")
    seq = keras.models.Sequential([keras.layers.Dense(3, input_shape=(3,), name="seq_dense")], name="seq")
    inp = keras.Input((4,), name="outer_in")
    x = inner(inp)
    x = seq(x)
    return keras.models.Model(inp, keras.layers.Dense(2, name="outer_dense")(x), name="outer")


def randomize(model: Any, seed: int = 0) -> None:
    rng = np.random.RandomState(seed)
    model.set_weights([rng.standard_normal(w.shape).astype(w.dtype) for w in model.get_weights()])
