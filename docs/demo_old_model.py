"""`make demo`: saves a small Keras 2 model (tf_keras, in .venv) as .demo/old.h5 for `compat-clone convert`.

A convolutional classifier with BatchNormalization and Dropout, its weights
trained for two epochs on random data (fixed seeds), so that the conversion's
proof compares outputs that depend on every weight.
"""

from __future__ import annotations

import os

import numpy as np
import tf_keras as keras  # Keras 2, beside Keras 3 in the default .venv


def main(path: str = ".demo/old.h5") -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    ignore = os.path.join(os.path.dirname(path), ".gitignore")
    if not os.path.exists(ignore):
        with open(ignore, "w", encoding="utf-8") as f:
            f.write("*\n")
    keras.utils.set_random_seed(0)
    inputs = keras.Input((28, 28, 1), name="image")
    x = keras.layers.Conv2D(8, 3, activation="relu")(inputs)
    x = keras.layers.MaxPooling2D()(x)
    x = keras.layers.BatchNormalization()(x)
    x = keras.layers.Flatten()(x)
    x = keras.layers.Dropout(0.2)(x)
    outputs = keras.layers.Dense(10, activation="softmax", name="digits")(x)
    model = keras.Model(inputs, outputs, name="tf_keras_classifier")
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    rng = np.random.default_rng(0)
    model.fit(rng.random((64, 28, 28, 1), dtype="float32"), rng.integers(0, 10, 64), epochs=2, verbose=0)
    model.save(path)
    print(f"saved {path}: tf_keras {keras.__version__}, {model.count_params()} parameters")


if __name__ == "__main__":
    main()
