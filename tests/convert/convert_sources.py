"""Builds the source models of tests/convert/test_convert_cli.py in a Keras 2 environment.

Run with that environment's interpreter (standalone Keras 2.x, or tf.keras /
tf_keras); imports no compat_clone:

    python tests/convert/convert_sources.py OUT_DIR FAMILY FORMAT...
        FAMILY: keras2 | tf_keras     FORMAT: h5 | keras | savedmodel | custom-h5 | lambda-keras | tfops-h5 | tflambda-h5 | tflambda-seq-h5 | tfcumsum-h5

Writes ``OUT_DIR/model.<ext>`` (``model_savedmodel/`` for a SavedModel,
``custom.h5`` for the model with the custom `Scale` layer of
tests/convert/convert_custom.py, ``lambda.keras`` for one with a Lambda layer,
``tfops.h5`` for one calling TensorFlow functions on Keras tensors), and ``OUT_DIR/<name>.npz`` with the probe inputs
``x`` and the source's predictions ``y`` for each. Weights are drawn from a
fixed seed, BatchNormalization statistics included, so the outputs are not trivial.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any, List

import numpy as np


def _keras(family: str) -> Any:
    if family == "tf_keras":
        try:
            import tf_keras  # TF >= 2.16: Keras 2 is tf_keras

            return tf_keras
        except ImportError:
            pass  # tf.keras 2.12-2.15 is the `keras` package
    # Standalone Keras 2.3.1's environment also holds tf_keras (for its import
    # of tf.keras.metrics): import it only for the tf_keras family.
    import keras

    return keras


def _seeded(model: Any, seed: int) -> None:
    rng = np.random.default_rng(seed)
    for layer in model.layers:
        values = []
        for w, current in zip(layer.weights, layer.get_weights()):
            v = rng.normal(0.0, 0.5, size=current.shape)
            if "variance" in w.name:  # BatchNormalization's moving variance must be positive
                v = np.abs(v) + 0.5
            values.append(v.astype(current.dtype))
        if values:
            layer.set_weights(values)


def plain_model(keras: Any) -> Any:
    inputs = keras.layers.Input((6, 4))
    x = keras.layers.Conv1D(5, 3, activation="relu")(inputs)
    x = keras.layers.GlobalAveragePooling1D()(x)
    x = keras.layers.BatchNormalization()(x)
    outputs = keras.layers.Dense(3, activation="softmax")(x)
    model = keras.models.Model(inputs, outputs)
    _seeded(model, 1)
    return model


def custom_model(keras: Any) -> Any:
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from convert_custom import Scale

    inputs = keras.layers.Input((4,))
    outputs = keras.layers.Dense(2)(Scale(factor=3.0)(inputs))
    model = keras.models.Model(inputs, outputs)
    _seeded(model, 2)
    return model


def lambda_model(keras: Any) -> Any:
    inputs = keras.layers.Input((4,))
    scaled = keras.layers.Lambda(lambda t: t * 2.0 - 1.0, name="affine")(inputs)
    model = keras.models.Model(inputs, keras.layers.Dense(2)(scaled))
    _seeded(model, 3)
    return model


def tf_ops_model(keras: Any) -> Any:
    """A hard swish written with TensorFlow functions on Keras tensors (tf.keras 2.4+: TFOpLambda layers)."""
    import tensorflow as tf

    inputs = keras.layers.Input((4,))
    h = keras.layers.Dense(3)(inputs)
    swish = h * tf.nn.relu6(h + 3.0) / 6.0
    model = keras.models.Model(inputs, keras.layers.Dense(2)(swish))
    _seeded(model, 4)
    return model


# The Lambda bodies below read TensorFlow as a module global, as old code does (`import tensorflow as tf` at the top
# of a file): the module is imported when a model is built, so that writing the other formats needs no TensorFlow.
tf: Any = None


def _import_tensorflow() -> None:
    global tf
    import tensorflow

    tf = tensorflow


def tf_lambda_model(keras: Any) -> Any:
    """Lambda bodies calling TensorFlow, one of them on two tensors."""
    _import_tensorflow()
    inputs = keras.layers.Input((4,))
    h = keras.layers.Dense(3)(inputs)
    pooled = keras.layers.Lambda(lambda t: tf.reduce_sum(tf.nn.relu(t), axis=1, keepdims=True) * 0.5, name="relu_sum")(h)
    joined = keras.layers.Lambda(lambda ts: tf.concat([ts[0], tf.square(ts[1])], axis=-1), name="joined")([h, pooled])
    model = keras.models.Model(inputs, keras.layers.Dense(2)(joined))
    _seeded(model, 5)
    return model


def tf_lambda_sequential(keras: Any) -> Any:
    """The same in a Sequential model, the way most old code wrote it."""
    _import_tensorflow()
    model = keras.Sequential(
        [
            keras.layers.Dense(3, input_shape=(4,)),
            keras.layers.Lambda(lambda t: tf.math.reduce_mean(t, axis=-1, keepdims=True) + tf.abs(t), name="centred"),
            keras.layers.Dense(2),
        ]
    )
    _seeded(model, 6)
    return model


def tf_cumsum_model(keras: Any) -> Any:
    """A Lambda calling a TensorFlow function with no `keras.ops` form in the conversion's table: kept on TensorFlow."""
    _import_tensorflow()
    inputs = keras.layers.Input((4,))
    summed = keras.layers.Lambda(lambda t: tf.math.cumsum(t, axis=1), name="running")(inputs)
    model = keras.models.Model(inputs, keras.layers.Dense(2)(summed))
    _seeded(model, 7)
    return model


_SMALL = {
    "custom-h5": ("custom.h5", custom_model),
    "lambda-keras": ("lambda.keras", lambda_model),
    "tfops-h5": ("tfops.h5", tf_ops_model),
    "tflambda-h5": ("tflambda.h5", tf_lambda_model),
    "tflambda-seq-h5": ("tflambda_seq.h5", tf_lambda_sequential),
    "tfcumsum-h5": ("tfcumsum.h5", tf_cumsum_model),
}


def main(out: str, family: str, formats: List[str]) -> None:
    keras = _keras(family)
    os.makedirs(out, exist_ok=True)
    x = np.random.default_rng(0).normal(size=(5, 6, 4)).astype("float32")
    written = {}
    for fmt in formats:
        if fmt in _SMALL:  # models on a (4,) input
            name, build = _SMALL[fmt]
            model = build(keras)
            sx = np.random.default_rng(0).normal(size=(5, 4)).astype("float32")
            path = os.path.join(out, name)
            model.save(path)
            np.savez(os.path.join(out, name.split(".")[0] + ".npz"), x=sx, y=model.predict(sx))
            written[fmt] = path
            continue
        model = plain_model(keras)
        if fmt == "h5":
            path = os.path.join(out, "model.h5")
            model.save(path)
        elif fmt == "keras":
            path = os.path.join(out, "model.keras")
            # tf.keras 2.12 writes HDF5 to a .keras name unless told the new format.
            model.save(path, save_format="keras_v3") if keras.__version__.startswith("2.12") else model.save(path)
        elif fmt == "savedmodel":
            path = os.path.join(out, "model_savedmodel")
            model.save(path, save_format="tf")
        else:
            raise SystemExit(f"unknown format {fmt!r}")
        np.savez(os.path.join(out, f"{fmt}.npz"), x=x, y=model.predict(x))
        written[fmt] = path
    print(json.dumps({"keras": keras.__version__, "written": written}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3:])
