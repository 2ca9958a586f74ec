"""Writes the model of tests/convert/test_convert_with.py with the old release itself: tf.keras 2.15.

Run with the matrix environment tf.keras-2.15's interpreter; imports no compat_clone:

    python tests/convert/convert_with_sources.py OUT_DIR FAMILY gain-h5

Writes ``OUT_DIR/gain.h5``, a Functional model holding the custom layer ``Gain``
of tests/convert/convert_with_layers.py (the package ``ccgain``'s layers), and
``OUT_DIR/gain-h5.npz`` with inputs ``x`` and the model's outputs ``y0`` on them.
The last stdout line is a JSON report.
"""

from __future__ import annotations

import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import convert_with_layers  # noqa: E402  (the package's layers: Keras 2.15 here)
import keras  # noqa: E402


def main(out: str, family: str, case: str) -> None:
    if family != "tf_keras" or case != "gain-h5":
        raise SystemExit(f"unexpected arguments {family!r} {case!r}")
    L = keras.layers
    inputs = L.Input((5,), name="features")
    h = L.Dense(4, activation="tanh", name="dense_in")(inputs)
    h = convert_with_layers.Gain(4, name="gain")(h)
    model = keras.models.Model(inputs, L.Dense(2, name="dense_out")(h), name="gained")
    rng = np.random.default_rng(7)
    for layer in model.layers:
        values = [rng.normal(0.0, 0.5, size=v.shape).astype(v.dtype) for v in layer.get_weights()]
        if values:
            layer.set_weights(values)
    path = os.path.join(out, "gain.h5")
    model.save(path, save_format="h5")
    x = rng.normal(size=(6, 5)).astype("float32")
    np.savez(os.path.join(out, "gain-h5.npz"), x=x, y0=model.predict(x, verbose=0))
    print(json.dumps({"keras": keras.__version__, "written": [path]}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3])
