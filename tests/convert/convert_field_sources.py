"""Writes the files of tests/convert/test_convert_field.py the way users' code wrote them: with the old release itself.

Run with a matrix environment's interpreter (tf.keras-2.4: TensorFlow 2.4 on
Python 3.8, whose ``model.save()`` writes a SavedModel with the Keras metadata
inside ``saved_model.pb`` and no ``keras_metadata.pb``); imports no compat_clone:

    python tests/convert/convert_field_sources.py OUT_DIR FAMILY CASE...
        CASE: plain-savedmodel | dict-savedmodel | dict-h5 | embed-h5 | nan-h5 | custom-h5 | custom-savedmodel
              | lambda-h5 | unfed-h5

Writes ``OUT_DIR/<case>`` (a folder for a SavedModel, else ``<name>.h5``) and
``OUT_DIR/<case>.npz`` with inputs ``x`` and the source's outputs ``y<k>`` on
them (a dict's values in sorted key order). The last stdout line is a JSON report.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any, Dict, List

import numpy as np


def _keras(family: str) -> Any:
    if family != "tf_keras":
        raise SystemExit(f"unexpected family {family!r}")
    try:
        import tf_keras  # TF >= 2.16

        return tf_keras
    except ImportError:
        pass
    try:
        import keras  # TF 2.6-2.15: the `keras` 2.x package

        return keras
    except ImportError:
        import tensorflow as tf  # TF <= 2.5: tf.keras inside TensorFlow

        return tf.keras


def _seeded(model: Any, seed: int) -> Any:
    rng = np.random.default_rng(seed)
    for layer in model.layers:
        values = [rng.normal(0.0, 0.5, size=v.shape).astype(v.dtype) for v in layer.get_weights()]
        if values:
            layer.set_weights(values)
    return model


def plain(K: Any) -> Any:
    """Conv1D -> pooling -> Dense: a Functional model."""
    L = K.layers
    inputs = L.Input((6, 4), name="signal")
    h = L.Conv1D(5, 3, activation="relu", name="conv")(inputs)
    h = L.GlobalAveragePooling1D(name="pool")(h)
    return _seeded(K.models.Model(inputs, L.Dense(3, name="dense_out")(h), name="plain"), 1)


def dict_outputs(K: Any) -> Any:
    """``Model(i, {"score": ..., "probs": ...})``: answers with a dict."""
    L = K.layers
    inputs = L.Input((6,), name="features")
    h = L.Dense(8, activation="relu", name="hidden")(inputs)
    outputs = {"score": L.Dense(1, name="score_head")(h), "probs": L.Dense(3, activation="softmax", name="probs_head")(h)}
    return _seeded(K.models.Model(inputs, outputs, name="scorer"), 2)


def float_embedding(K: Any) -> Any:
    """A float ``Input((40,))`` feeding an Embedding: Keras 2 casts the ids."""
    L = K.layers
    inputs = L.Input((40,), name="ids")  # float32, as many Keras 2 models have it
    h = L.Embedding(50, 4, name="embed")(inputs)
    h = L.GlobalAveragePooling1D(name="pool")(h)
    return _seeded(K.models.Model(inputs, L.Dense(2, name="dense_out")(h), name="embedder"), 3)


def nan_outputs(K: Any) -> Any:
    """A Dense whose kernel holds NaN in one column and whose bias holds inf in another."""
    L = K.layers
    inputs = L.Input((4,), name="x")
    model = _seeded(K.models.Model(inputs, L.Dense(3, name="dense_out")(inputs), name="broken"), 4)
    kernel, bias = model.layers[-1].get_weights()
    kernel[:, 0] = np.nan
    bias[1] = np.inf
    model.layers[-1].set_weights([kernel, bias])
    return model


def custom(K: Any) -> Any:
    """A layer of the project's own layers module (tests/convert/convert_field_layers.py)."""
    from convert_field_layers import Gain  # next to this script

    L = K.layers
    inputs = L.Input((5,), name="x")
    h = Gain(5, name="gain")(L.Dense(5, name="dense")(inputs))
    return _seeded(K.models.Model(inputs, L.Dense(2, name="dense_out")(h), name="gained"), 5)


def lambda_activation(K: Any) -> Any:
    """A Dense whose activation is a lambda: Keras 2 saves it as '<lambda>'."""
    L = K.layers
    inputs = L.Input((4,), name="x")
    return _seeded(K.models.Model(inputs, L.Dense(3, activation=lambda t: t * 0.5, name="halved")(inputs)), 6)


def unfed(K: Any) -> Any:
    """Three values a step reshaped to (7, 2): no length of its open dimension feeds it."""
    L = K.layers
    inputs = L.Input((None, 3), name="frames")
    return _seeded(K.models.Model(inputs, L.Dense(2, name="dense_out")(L.Reshape((7, 2), name="pairs")(inputs))), 7)


# case -> (builder, file name, save_format, input shape)
_CASES = {
    "plain-savedmodel": (plain, "plain_savedmodel", "tf", (5, 6, 4)),
    "dict-savedmodel": (dict_outputs, "dict_savedmodel", "tf", (5, 6)),
    "dict-h5": (dict_outputs, "dict.h5", "h5", (5, 6)),
    "embed-h5": (float_embedding, "embed.h5", "h5", (5, 40)),
    "nan-h5": (nan_outputs, "nan.h5", "h5", (5, 4)),
    "custom-h5": (custom, "custom.h5", "h5", (5, 5)),
    "custom-savedmodel": (custom, "custom_savedmodel", "tf", (5, 5)),
    "lambda-h5": (lambda_activation, "lambda.h5", "h5", (5, 4)),
    "unfed-h5": (unfed, "unfed.h5", "h5", None),
}


def _outputs(out: Any) -> List[np.ndarray]:
    if isinstance(out, dict):
        return [np.asarray(out[k]) for k in sorted(out)]
    return [np.asarray(o) for o in (out if isinstance(out, list) else [out])]


def main(out: str, family: str, cases: List[str]) -> None:
    K = _keras(family)
    os.makedirs(out, exist_ok=True)
    written: Dict[str, str] = {}
    for case in cases:
        build, name, save_format, shape = _CASES[case]
        model = build(K)
        path = os.path.join(out, name)
        model.save(path, save_format=save_format)
        written[case] = path
        if shape is None:  # nothing computes it
            continue
        rng = np.random.default_rng(7)
        x = (rng.integers(0, 50, size=shape) if case == "embed-h5" else rng.normal(size=shape)).astype("float32")
        ys = _outputs(model.predict(x))
        np.savez(os.path.join(out, f"{case}.npz"), x=x, **{f"y{k}": y for k, y in enumerate(ys)})
    print(json.dumps({"keras": K.__version__, "tensorflow": __import__("tensorflow").__version__, "written": written}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3:])
