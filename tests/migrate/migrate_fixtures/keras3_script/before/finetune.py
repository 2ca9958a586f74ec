#!/usr/bin/env python
"""Fine-tune a copy of a trained classifier without touching the original.

Usage: python finetune.py
"""
import numpy as np
import keras
from keras import layers


def build_classifier(num_classes=3):
    inputs = keras.Input((8,), name="features")
    x = layers.Dense(16, activation="relu")(inputs)
    x = layers.BatchNormalization()(x)
    outputs = layers.Dense(num_classes, activation="softmax", name="head")(x)
    return keras.Model(inputs, outputs, name="classifier")


def freeze_all_but_head(layer):
    # re-create each layer from its config; only the head stays trainable
    new = layer.__class__.from_config(layer.get_config())
    new.trainable = layer.name == "head"
    return new


rng = np.random.RandomState(0)
x_train = rng.rand(32, 8).astype("float32")
y_train = np.eye(3)[rng.randint(0, 3, 32)].astype("float32")

base = build_classifier()
base.compile(optimizer="adam", loss="categorical_crossentropy")
base.fit(x_train, y_train, epochs=1, verbose=0)

# A copy to fine-tune: same architecture, same weights.
student = keras.models.clone_model(
    base,
    clone_function=freeze_all_but_head,  # keep BN statistics frozen
)
student.set_weights(base.get_weights())  # start from the trained weights

# A fresh copy, randomly initialised, for a from-scratch baseline.
baseline = keras.models.clone_model(base)

if __name__ == "__main__":
    print(student.predict(x_train[:2], verbose=0))
