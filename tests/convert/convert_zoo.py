"""Keras 2 models for the conversion tests: one plain builder per case.

Each builder takes the Keras 2 module under test (`tf_keras`, tf.keras's
`keras` 2.x, or standalone `keras` 2.2-2.3) and returns a `Case`: the model
with random weights (batch-norm statistics included), the Keras 3 objects
its conversion needs, and the tolerance its proof uses. Nothing here imports
a framework at import time.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Dict, Optional

import numpy as np


@dataclasses.dataclass
class Case:
    model: Any
    # keras (3) module -> custom_objects for the conversion
    custom_objects: Optional[Callable[[Any], Dict[str, Any]]] = None
    rtol: float = 1e-5
    atol: float = 1e-6


def randomize(model: Any, seed: int = 0) -> Any:
    """Gives every weight a random value (variances stay positive)."""
    rng = np.random.default_rng(seed)
    variables = [w for layer in _leaf_layers(model) for w in layer.weights]
    backend = _backend(model)
    values = backend.batch_get_value(variables)
    new = []
    for variable, value in zip(variables, values):
        fresh = rng.normal(0.0, 0.3, size=np.shape(value)).astype(np.asarray(value).dtype)
        if "variance" in variable.name:
            fresh = np.abs(fresh) + 0.5
        new.append((variable, fresh))
    backend.batch_set_value(new)  # one session run in TF1 graph mode, not two per layer
    return model


def _backend(model: Any) -> Any:
    """The backend module of `model`'s Keras 2 (standalone, tf.keras or tf_keras), by the library's own rule."""
    from compat_clone import family_of
    from compat_clone.convert._source import keras_for

    return keras_for(family_of(model).family).backend


def _leaf_layers(model: Any) -> list[Any]:
    found = []
    for layer in model.layers:
        if hasattr(layer, "layers") and hasattr(layer, "inputs") and isinstance(layer.layers, list):
            found.extend(_leaf_layers(layer))
        else:
            found.append(layer)
    return found


# -- the zoo -----------------------------------------------------------------


def mobilenet_v2(K: Any) -> Case:
    import importlib

    applications = importlib.import_module(K.__name__ + ".applications")
    model = applications.MobileNetV2(input_shape=(32, 32, 3), alpha=0.35, weights=None, classes=5)
    # 50-odd float32 layers, 17 of them BatchNormalization: TF 1.15's kernels and XLA's (JAX on the CPU, its
    # reductions split by thread count) round differently. Measured on 4 random probes: max |Δ| 7e-6 to 2.4e-5,
    # max rel up to 3e-4 across runs (keras-3.15-jax, the h5+optimizer file after one training step).
    return Case(randomize(model), rtol=1e-3, atol=1e-4)


def tagger(K: Any) -> Case:
    """Embedding(mask_zero) -> Bidirectional(LSTM) -> TimeDistributed(Dense)."""
    L = K.layers
    tokens = L.Input((7,), dtype="int32", name="tokens")
    x = L.Embedding(30, 8, mask_zero=True, name="embed")(tokens)
    x = L.Bidirectional(L.LSTM(6, return_sequences=True), name="bilstm")(x)
    x = L.TimeDistributed(L.Dense(4), name="tags")(x)
    return Case(randomize(K.models.Model(tokens, x, name="tagger")))


def gru_both(K: Any) -> Case:
    """GRU with reset_after True and False on one masked sequence."""
    L = K.layers
    tokens = L.Input((6,), dtype="int32")
    x = L.Embedding(12, 5, mask_zero=True)(tokens)
    after = L.GRU(4, reset_after=True, name="gru_after")(x)
    before = L.GRU(4, reset_after=False, return_sequences=True, name="gru_before")(x)
    return Case(randomize(K.models.Model(tokens, [after, before])))


def conv_bn(K: Any) -> Case:
    """Conv1D/2D/3D, each followed by BatchNormalization."""
    L = K.layers
    a = L.Input((10, 3))
    b = L.Input((8, 8, 2))
    c = L.Input((4, 4, 4, 1))
    ya = L.BatchNormalization()(L.Conv1D(4, 3, activation="relu")(a))
    yb = L.BatchNormalization(center=False)(L.Conv2D(4, 3, padding="same")(b))
    yc = L.BatchNormalization(scale=False)(L.Conv3D(2, 2)(c))
    outs = [L.Flatten()(y) for y in (ya, yb, yc)]
    return Case(randomize(K.models.Model([a, b, c], L.Concatenate()(outs))))


def multi_io(K: Any) -> Case:
    L = K.layers
    a = L.Input((5,), name="a")
    b = L.Input((3,), name="b")
    h = L.Dense(8, activation="tanh")(L.Concatenate()([a, b]))
    out1 = L.Dense(2, activation="softmax", name="probs")(h)
    out2 = L.Dense(1, name="value")(L.Dropout(0.5)(h))
    return Case(randomize(K.models.Model([a, b], [out1, out2])))


def nested_shared(K: Any) -> Case:
    """A nested functional model and a nested Sequential, each called twice; a shared Dense."""
    L = K.layers
    inner_in = L.Input((4,))
    inner = K.models.Model(inner_in, L.Dense(3, activation="relu", name="inner_dense")(inner_in), name="inner")
    seq = K.models.Sequential([L.Dense(2, input_shape=(3,), name="seq_dense")], name="seq")
    a = L.Input((4,))
    b = L.Input((4,))
    shared = L.Dense(4, name="shared")
    ya = seq(inner(shared(a)))
    yb = seq(inner(shared(b)))
    return Case(randomize(K.models.Model([a, b], L.Add()([ya, yb]))))


def sequential(K: Any) -> Case:
    L = K.layers
    model = K.models.Sequential(
        [
            L.Dense(6, input_shape=(4,), activation="relu", kernel_regularizer=K.regularizers.l2(0.01)),
            L.Dense(3, kernel_constraint=K.constraints.max_norm(2.0)),
            L.LeakyReLU(0.2),
            L.Dense(2, activation="softmax"),
        ]
    )
    return Case(randomize(model))


def affine(t: Any) -> Any:
    """pure_lambda's function, for a Keras 3 of another Python (its bytecode does not load there)."""
    return t * 2.0 + 1.0


def pure_lambda(K: Any) -> Case:
    L = K.layers
    x = L.Input((3,))
    y = L.Lambda(lambda t: t * 2.0 + 1.0, name="affine")(x)
    return Case(randomize(K.models.Model(x, L.Dense(2)(y))))


def scale_layer_class(K: Any) -> Any:
    """A custom Keras 2 layer: a learned per-feature scale."""

    class Scale(K.layers.Layer):  # type: ignore[misc,name-defined]
        def __init__(self, units: int, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.units = units

        def build(self, input_shape: Any) -> None:
            self.scale = self.add_weight(name="scale", shape=(self.units,), initializer="ones")
            super().build(input_shape)

        def call(self, inputs: Any) -> Any:
            return inputs * self.scale

        def get_config(self) -> Dict[str, Any]:
            return {**super().get_config(), "units": self.units}

    return Scale


def keras3_scale_class(keras: Any, factor: float = 1.0) -> Any:
    """The custom layer's Keras 3 counterpart (`factor` != 1 makes a wrong one)."""

    class Scale(keras.layers.Layer):  # type: ignore[misc,name-defined]
        def __init__(self, units: int, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.units = units

        def build(self, input_shape: Any) -> None:
            self.scale = self.add_weight(name="scale", shape=(self.units,), initializer="ones")

        def call(self, inputs: Any) -> Any:
            return inputs * self.scale * factor

        def get_config(self) -> Dict[str, Any]:
            return {**super().get_config(), "units": self.units}

    return Scale


def custom_layer(K: Any) -> Case:
    """Dense -> the custom Scale -> Dense: a wrong Keras 3 Scale is the layer a failed proof names,
    neither the one before it nor the output."""
    L = K.layers
    x = L.Input((3,))
    y = L.Dense(2, name="head")(scale_layer_class(K)(3, name="scale")(L.Dense(3, name="body")(x)))
    return Case(
        randomize(K.models.Model(x, y)),
        custom_objects=lambda keras: {"Scale": keras3_scale_class(keras)},
    )


def mixed_precision(K: Any) -> Case:
    """Layers under the mixed_float16 policy, a float32 head."""
    L = K.layers
    policy = K.mixed_precision.Policy("mixed_float16")
    x = L.Input((6,))
    h = L.Dense(8, activation="relu", dtype=policy)(x)
    h = L.BatchNormalization(dtype=policy)(h)
    y = L.Activation("linear", dtype="float32")(L.Dense(2, dtype=policy)(h))
    # float16 arithmetic: the two frameworks may round differently
    return Case(randomize(K.models.Model(x, y)), rtol=1e-2, atol=1e-2)


def tf_ops(K: Any) -> Case:
    """TensorFlow functions called on Keras tensors (`TFOpLambda`, slicing), tf.keras 2.4+ only."""
    import tensorflow as tf

    L = K.layers
    a = L.Input((4, 6), name="a")
    b = L.Input((4, 6), name="b")
    h = L.Dense(6, name="proj")(a)
    x = tf.nn.relu(h) * 2.0 - b
    flat = tf.reshape(x, (-1, 24))
    y = tf.concat([flat, flat[:, :3]], axis=-1)
    y = tf.reduce_mean(tf.expand_dims(y, 1), axis=1) / 3.0 + tf.math.sigmoid(y)
    out = L.Dense(3, name="head")(y)
    pairs = tf.matmul(h, b, transpose_b=True)
    turned = tf.transpose(h, [0, 2, 1]) * tf.transpose(tf.cast(a > 0, "float32"), [0, 2, 1])[:, 0:1, :]
    return Case(randomize(K.models.Model([a, b], [out, pairs, turned])))


def slash_names(K: Any) -> Case:
    """Layer and model names with '/', one of them meeting another name once '/' is '_'."""
    L = K.layers
    x = L.Input((4,), name="in/put")
    h = L.Dense(5, name="block1/dense")(x)
    h = L.BatchNormalization(name="block1/bn")(h)
    twin = L.Dense(5, name="block1_dense")(x)
    inner_in = L.Input((4,))
    inner = K.models.Model(inner_in, L.Dense(5, name="inner/dense")(inner_in), name="sub/model")
    y = L.Add(name="out/sum")([h, twin, inner(x)])
    return Case(randomize(K.models.Model(x, y)))


def conv_variants(K: Any) -> Case:
    """Separable, transposed and depthwise convolutions, and what a Keras 2 version adds of them."""
    L = K.layers
    x = L.Input((6, 6, 3))
    h = L.RandomFlip()(x) if hasattr(L, "RandomFlip") else x  # a no-op at inference
    h = L.SeparableConv2D(4, 3, padding="same", depth_multiplier=2)(h)
    h = L.Conv2DTranspose(3, 3, strides=2, padding="same")(h)
    if hasattr(L, "DepthwiseConv2D"):  # not in standalone Keras 2.0
        h = L.DepthwiseConv2D(3, padding="same")(h)
    h = L.Reshape((144, 3))(h)
    if hasattr(L, "SeparableConv1D"):  # not in standalone Keras 2.0
        h = L.SeparableConv1D(4, 3, padding="same")(h)
    if hasattr(L, "Conv1DTranspose"):
        h = L.Conv1DTranspose(4, 3, padding="same")(h)
    if hasattr(L, "MultiHeadAttention"):
        h = L.MultiHeadAttention(num_heads=2, key_dim=3)(h, h)
    return Case(randomize(K.models.Model(x, L.GlobalAveragePooling1D()(h))), rtol=1e-4, atol=1e-5)


def dict_outputs(K: Any) -> Case:
    """``Model(i, {"score": ..., "probs": ...})``: it answers with a dict (keys are not the layers' names)."""
    L = K.layers
    features = L.Input((6,), name="features")
    h = L.Dense(8, activation="relu", name="hidden")(features)
    outputs = {"score": L.Dense(1, name="score_head")(h), "probs": L.Dense(3, activation="softmax", name="probs_head")(h)}
    return Case(randomize(K.models.Model(features, outputs, name="dict_outputs")))


def cropped_residual(K: Any) -> Case:
    """A residual Conv1D network cropped 5,000 steps on each side: only inputs over 10,004 steps feed it."""
    L = K.layers
    x = L.Input((None, 2), name="signal")
    h = L.Conv1D(8, 3, padding="same", activation="relu", name="conv_a")(x)
    r = L.Conv1D(8, 5, padding="valid", name="conv_valid")(h)
    r = L.Conv1D(8, 3, padding="same", name="conv_b")(r)
    h = L.Add(name="residual")([L.Cropping1D((2, 2), name="align")(h), r])
    y = L.Conv1D(1, 1, name="head")(L.Cropping1D((5000, 5000), name="crop")(h))
    return Case(randomize(K.models.Model(x, y, name="cropped_residual")), rtol=1e-4, atol=1e-5)


def strided_conv2d(K: Any) -> Case:
    """Open image sides through a strided valid Conv2D, pooling and a valid Conv2D: at least 23 pixels."""
    L = K.layers
    x = L.Input((None, None, 3), name="image")
    h = L.Conv2D(4, 5, strides=3, padding="valid", activation="relu", name="conv_s3")(x)
    h = L.MaxPooling2D(3, strides=2, name="pool")(h)
    h = L.Conv2D(4, 3, padding="valid", name="conv_valid")(h)
    y = L.Dense(2, name="head")(L.GlobalAveragePooling2D(name="gap")(h))
    return Case(randomize(K.models.Model(x, y, name="strided_conv2d")), rtol=1e-4, atol=1e-5)


def flatten_dense(K: Any) -> Case:
    """Cropping2D and a strided valid Conv2D into Flatten -> Dense: the sizes fixed by the Dense's kernel."""
    L = K.layers
    x = L.Input((16, 12, 2), name="patch")
    h = L.Cropping2D(((1, 2), (0, 3)), name="crop")(x)
    h = L.Conv2D(3, 3, strides=2, padding="valid", name="conv_s2")(h)
    y = L.Dense(4, name="head")(L.Flatten(name="flat")(h))
    return Case(randomize(K.models.Model(x, y, name="flatten_dense")), rtol=1e-4, atol=1e-5)


ZOO: Dict[str, Callable[[Any], Case]] = {
    "mobilenet_v2": mobilenet_v2,
    "tagger": tagger,
    "gru_both": gru_both,
    "conv_bn": conv_bn,
    "multi_io": multi_io,
    "nested_shared": nested_shared,
    "sequential": sequential,
    "pure_lambda": pure_lambda,
    "custom_layer": custom_layer,
    "mixed_precision": mixed_precision,
    "tf_ops": tf_ops,
    "slash_names": slash_names,
    "conv_variants": conv_variants,
    "dict_outputs": dict_outputs,
    "cropped_residual": cropped_residual,
    "strided_conv2d": strided_conv2d,
    "flatten_dense": flatten_dense,
}


def available(name: str, K: Any) -> bool:
    """Whether zoo case `name` can be built with the Keras 2 module `K`."""
    if name == "mixed_precision":
        return hasattr(K, "mixed_precision") and hasattr(K.mixed_precision, "Policy")
    if name in ("tf_ops", "dict_outputs"):
        # standalone Keras 2 (<= 2.3) has no TFOpLambda (tf.keras 2.4 brought it)
        # and takes outputs as a list only
        return tuple(int(part) for part in K.__version__.split(".")[:2]) >= (2, 4)
    if name == "mobilenet_v2":  # standalone Keras 2.2.0+
        import importlib

        return hasattr(importlib.import_module(K.__name__ + ".applications"), "MobileNetV2")
    if name == "gru_both":  # GRU(reset_after=...): not in standalone Keras 2.0
        import inspect

        return "reset_after" in inspect.signature(K.layers.GRU.__init__).parameters
    return True
