"""Reference models for `compat-clone doctor`: built with any family's Keras module.

Each builder takes the Keras module `K` of a family and returns
`(model, inputs, check)`: `check(source, clone)` raises `AssertionError`
when the clone is not faithful (predictions after a weight copy, and the
property the model is about). Builders use only API common to Keras 2.2,
tf.keras, tf_keras and Keras 3.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Tuple

__all__ = ["REFERENCE_MODELS", "same_predictions"]

Built = Tuple[Any, Any, Callable[[Any, Any], None]]


def _np() -> Any:
    import numpy

    return numpy


def _predict(model: Any, x: Any) -> List[Any]:
    """Outputs as numpy: an eager call where the family has one (no tracing)."""
    from compat_clone import family_of
    from compat_clone.families.registry import entry

    np = _np()
    family = entry(family_of(model).family)
    out = model.predict(x) if family.graph_mode else model(x, training=False)  # graph mode: `predict` is the way in
    if isinstance(out, dict):
        out = [out[k] for k in sorted(out)]
    if not isinstance(out, (list, tuple)):
        out = [out]
    if family.keras_ops:
        import keras

        return [np.asarray(keras.ops.convert_to_numpy(o)) for o in out]
    return [np.asarray(o) for o in out]


def same_predictions(source: Any, clone: Any, x: Any) -> None:
    np = _np()
    a, b = _predict(source, x), _predict(clone, x)
    assert len(a) == len(b), f"{len(a)} outputs vs {len(b)}"
    for u, v in zip(a, b):
        if not np.allclose(u, v, rtol=1e-5, atol=1e-6):
            raise AssertionError(f"predictions differ (max abs diff {float(np.max(np.abs(u - v))):.3g})")


def _data(*shape: int) -> Any:
    return _np().random.RandomState(0).rand(*shape).astype("float32")


def two_output_no_mask(K: Any) -> Built:
    """keras #12202: Lambda -> [x + 1, x] -> custom 2-in 2-out layer, no masks."""

    class TwoInTwoOut(K.layers.Layer):  # type: ignore[misc]
        def call(self, inputs: Any) -> Any:
            a, b = inputs
            return [a + b, a - b]

        def compute_output_shape(self, input_shape: Any) -> Any:
            return [input_shape[0], input_shape[0]]

    x = K.Input((3,))
    pair = K.layers.Lambda(lambda t: [t + 1, t], output_shape=lambda s: [s, s])(x)
    a, b = TwoInTwoOut()(pair)
    model = K.models.Model(x, K.layers.Concatenate()([a, b]))
    return model, _data(2, 3), lambda s, c: same_predictions(s, c, _data(2, 3))


def lambda_pair_add(K: Any) -> Built:
    """keras #12202: Lambda -> [x, x] -> Add."""
    x = K.Input((3,))
    pair = K.layers.Lambda(lambda t: [t, t], output_shape=lambda s: [s, s])(x)
    model = K.models.Model(x, K.layers.Dense(2)(K.layers.Add()(pair)))
    return model, _data(2, 3), lambda s, c: same_predictions(s, c, _data(2, 3))


def masking(K: Any) -> Built:
    """Embedding(mask_zero=True) -> LSTM: the mask must reach the LSTM."""
    np = _np()
    x = K.Input((5,), dtype="int32")
    model = K.models.Model(x, K.layers.LSTM(3)(K.layers.Embedding(10, 4, mask_zero=True)(x)))
    ids = np.array([[1, 2, 0, 0, 0], [3, 4, 5, 6, 0]], dtype="int32")
    return model, ids, lambda s, c: same_predictions(s, c, ids)


def shared_layers(K: Any) -> Built:
    """One Dense applied to two inputs: the clone must share it too."""
    a, b = K.Input((3,)), K.Input((3,))
    dense = K.layers.Dense(4)
    model = K.models.Model([a, b], K.layers.Add()([dense(a), dense(b)]))
    xs = [_data(2, 3), _data(2, 3) + 1]

    def check(s: Any, c: Any) -> None:
        n = sum(type(layer).__name__ == "Dense" for layer in c.layers)
        assert n == 1, f"{n} Dense layers in the clone, expected 1 shared"
        same_predictions(s, c, xs)

    return model, xs, check


def nested_model(K: Any) -> Built:
    """A functional model used as a layer."""
    i = K.Input((3,))
    inner = K.models.Model(i, K.layers.Dense(4)(i), name="inner")
    x = K.Input((3,))
    model = K.models.Model(x, K.layers.Dense(1)(inner(x)))
    return model, _data(2, 3), lambda s, c: same_predictions(s, c, _data(2, 3))


def lambda_function(K: Any) -> Built:
    """A Lambda holding a Python lambda with a closure."""
    scale = 3.0
    x = K.Input((3,))
    model = K.models.Model(x, K.layers.Lambda(lambda t: t * scale)(x))
    return model, _data(2, 3), lambda s, c: same_predictions(s, c, _data(2, 3))


def single_input_concatenate(K: Any) -> Built:
    """keras #17700: Concatenate called on a one-element list."""
    x = K.Input((3,))
    model = K.models.Model(x, K.layers.Dense(2)(K.layers.Concatenate()([x])))
    return model, _data(2, 3), lambda s, c: same_predictions(s, c, _data(2, 3))


def frozen_model(K: Any) -> Built:
    """model.trainable = False must survive."""
    x = K.Input((3,))
    model = K.models.Model(x, K.layers.Dense(2)(x))
    model.trainable = False

    def check(s: Any, c: Any) -> None:
        assert c.trainable is False, "clone.trainable is True"
        same_predictions(s, c, _data(2, 3))

    return model, _data(2, 3), check


REFERENCE_MODELS: Dict[str, Callable[[Any], Built]] = {
    "two-output, no mask (#12202)": two_output_no_mask,
    "Lambda [x, x] -> Add (#12202)": lambda_pair_add,
    "masking: Embedding -> LSTM": masking,
    "shared layers": shared_layers,
    "nested model": nested_model,
    "Lambda with a Python lambda": lambda_function,
    "single-input Concatenate (#17700)": single_input_concatenate,
    "trainable=False model": frozen_model,
}
