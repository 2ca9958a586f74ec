"""Writes compiled, trained Keras 2 models for `convert --compile` (test_convert_training.py), in a Keras 2 environment.

Run with that environment's interpreter (standalone Keras 2.x, or tf.keras /
tf_keras); imports no compat_clone:

    python tests/convert/convert_training_sources.py OUT_DIR FAMILY

Each model is compiled and trained a few steps on a fixed batch, so that its
optimizer's slots are not zero, and saved with `model.save(...h5)`:

* ``adam_bilstm.h5``: Embedding -> Bidirectional(LSTM) -> Dense softmax, Adam,
  sparse categorical crossentropy, ``metrics=["acc"]`` (keras-team/keras #19898's case);
* ``sgd_dense.h5``: Dense layers, SGD with Nesterov momentum and ``decay``, mean squared error;
* ``rmsprop_dense.h5``: the same layers, RMSprop (standalone Keras 2's is refused: its epsilon sits elsewhere);
* ``custom_loss.h5``: compiled with a loss function of its own (saved by name, without its code);
* ``dropout.h5``: Dense and Dropout, Adam (a step draws random numbers: not compared).

``OUT/report.json``: the Keras version, and the iteration count of each file's optimizer.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any, Dict

import numpy as np


def _keras() -> Any:
    import keras

    if keras.__version__.startswith("3."):  # TensorFlow 2.16+: Keras 2 is tf_keras
        import tf_keras

        return tf_keras
    return keras


def _optimizers(keras: Any) -> Any:
    """The optimizers module whose classes take `decay` (standalone Keras 2, or tf.keras's legacy ones)."""
    legacy = getattr(keras.optimizers, "legacy", None)
    return legacy if legacy is not None else keras.optimizers


def my_loss(y_true: Any, y_pred: Any) -> Any:
    """A loss of the model's own: Keras 2 saves it by its name only."""
    return (y_pred - y_true) ** 2


def main(out: str) -> None:
    os.makedirs(out, exist_ok=True)
    keras = _keras()
    np.random.seed(0)
    rng = np.random.default_rng(0)
    layers = keras.layers
    written: Dict[str, int] = {}

    def save(model: Any, name: str, x: Any, y: Any) -> None:
        model.fit(x, y, batch_size=8, epochs=3, verbose=0)
        model.save(os.path.join(out, name))
        written[name] = int(keras.backend.get_value(model.optimizer.iterations))

    tokens = rng.integers(1, 20, size=(16, 6))
    labels = rng.integers(0, 3, size=(16,))
    inputs = layers.Input((6,))
    x = layers.Embedding(20, 5)(inputs)
    x = layers.Bidirectional(layers.LSTM(4))(x)
    model = keras.models.Model(inputs, layers.Dense(3, activation="softmax")(x))
    model.compile(keras.optimizers.Adam(learning_rate=0.01), "sparse_categorical_crossentropy", metrics=["acc"])
    save(model, "adam_bilstm.h5", tokens, labels)

    features = rng.normal(size=(16, 5)).astype("float32")
    targets = rng.normal(size=(16, 2)).astype("float32")

    def dense(activation: str = "tanh", dropout: float = 0.0) -> Any:
        inputs = layers.Input((5,))
        h = layers.Dense(4, activation=activation)(inputs)
        if dropout:
            h = layers.Dropout(dropout)(h)
        return keras.models.Model(inputs, layers.Dense(2)(h))

    opt = _optimizers(keras)
    model = dense()
    model.compile(opt.SGD(learning_rate=0.05, momentum=0.9, nesterov=True, decay=0.01), "mse")
    save(model, "sgd_dense.h5", features, targets)
    model = dense()
    model.compile(keras.optimizers.RMSprop(learning_rate=0.01), "mse")
    save(model, "rmsprop_dense.h5", features, targets)
    model = dense()
    model.compile(keras.optimizers.Adam(learning_rate=0.01), my_loss)
    save(model, "custom_loss.h5", features, targets)
    model = dense(dropout=0.5)
    model.compile(keras.optimizers.Adam(learning_rate=0.01), "mse")
    save(model, "dropout.h5", features, targets)
    with open(os.path.join(out, "report.json"), "w", encoding="utf-8") as f:
        json.dump({"keras": keras.__version__, "iterations": written}, f)
    print(json.dumps({"keras": keras.__version__, "iterations": written}))


if __name__ == "__main__":
    main(sys.argv[1])
