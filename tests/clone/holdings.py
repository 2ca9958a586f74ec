"""The models users hold: subclassed, nested, frozen, trained and loaded models, one builder per kind.

Each kind is a plain function `build(K, tmp) -> (model, x)`: `K` is the Keras
module of the family under test, `tmp` a folder the builder may write files
to; it returns a built model (called, trained or loaded, as a user holds it)
and an input that model computes on. `tests/clone/test_holdings.py` clones each one
natively (the native recipe: `clone_model`, one call, `set_weights`) and
through `compat_clone.clone_model(model, copy_weights=True)`, side by side.

A builder raises `NotApplicable` where the kind does not exist in the family
(standalone Keras 2 has no `.keras` files, Keras 3 no tf.keras SavedModel).
The classes are defined inside the builders, as users define them: fresh
per call, so no registration leaks between kinds.

Constructors come in the two styles users write. Seven kinds (the list and
dict of layers, the GAN pair, the model-level variable, the trained
BatchNormalization, the frozen sub-model, the plain attribute) take
``**kwargs`` and pass them to ``Model.__init__``, as Keras documents: Keras
3's native `clone_model` rebuilds those from their config (the plain
attribute's clone then lacks the attribute and computes other outputs), so
the side by side shows compat_clone where native works too. The others take no
``**kwargs`` (``__init__(self)``, tensorflow#47048's style), which Keras 3's
native `clone_model` cannot rebuild (``unexpected keyword argument
'trainable'``).

The kinds are registered in `KINDS` (tests/clone/holdings_registry.py) in order:
the subclassed models (tests/clone/holdings_subclassed.py, imported first), then
the models loaded from files and the library-built models defined here.
"""

from __future__ import annotations

import os
from typing import Any, Dict

import numpy as np

import tests.clone.holdings_subclassed as holdings_subclassed  # noqa: F401 -- registers the subclassed kinds in KINDS first, in order
from tests.clone.features import NotApplicable, family_name
from tests.clone.holdings_registry import DESCRIPTIONS, KINDS, Built, call_model, is_keras3, kind, outputs, public, sample_input

__all__ = ["KINDS", "DESCRIPTIONS", "outputs"]


# -- models loaded from files -----------------------------------------------------------------


def _functional(K: Any) -> Any:
    inputs = K.Input((6,))
    x = K.layers.Dense(5, activation="relu")(inputs)
    x = K.layers.BatchNormalization()(x)
    return K.models.Model(inputs, K.layers.Dense(2)(x))


@kind("a functional model loaded from .h5")
def loaded_h5(K: Any, tmp: str) -> Built:
    if is_keras3(K) and not hasattr(K.saving, "load_model"):
        raise NotApplicable("no load_model")
    try:
        import h5py
    except ImportError as exc:
        raise NotApplicable("h5py is not installed") from exc
    if family_name(K) == "keras2" and int(h5py.__version__.split(".")[0]) >= 3:
        raise NotApplicable("standalone Keras 2 reads .h5 files with h5py < 3 only (str attributes)")
    path = os.path.join(tmp, "model.h5")
    _functional(K).save(path)
    return K.models.load_model(path), sample_input()


@kind("a functional model loaded from .keras")
def loaded_keras(K: Any, tmp: str) -> Built:
    if family_name(K) == "keras2" or not hasattr(K, "saving") or not hasattr(K.saving, "load_model"):
        raise NotApplicable(f"{K.__name__} {K.__version__} writes no .keras files")
    path = os.path.join(tmp, "model.keras")
    try:
        _functional(K).save(path)
    except (ValueError, TypeError) as exc:  # tf.keras before 2.13: no .keras format
        raise NotApplicable(f"no .keras format: {exc}") from exc
    return K.models.load_model(path), sample_input()


def _savedmodel_subclass(K: Any, tmp: str, with_classes: bool) -> Built:
    if family_name(K) != "tf_keras":
        raise NotApplicable("a Keras model in a SavedModel is tf.keras / tf_keras")

    @public
    class Rescale(K.layers.Layer):
        def __init__(self, factor: float = 2.0, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.factor = factor

        def build(self, input_shape: Any) -> None:
            self.offset = self.add_weight(name="offset", shape=(int(input_shape[-1]),), initializer="ones")

        def call(self, inputs: Any) -> Any:
            return inputs * self.factor + self.offset

        def get_config(self) -> Dict[str, Any]:
            return {**super().get_config(), "factor": self.factor}

    inputs = K.Input((6,))
    outputs = K.layers.Dense(2)(Rescale(3.0)(K.layers.Dense(4)(inputs)))
    path = os.path.join(tmp, "saved")
    K.models.Model(inputs, outputs).save(path, save_format="tf")
    custom = {"Rescale": Rescale} if with_classes else {}
    return K.models.load_model(path, custom_objects=custom), sample_input()


@kind("a SavedModel loaded with its custom classes")
def savedmodel_with_classes(K: Any, tmp: str) -> Built:
    return _savedmodel_subclass(K, tmp, True)


@kind("a SavedModel loaded without its custom classes (revived layers)")
def savedmodel_without_classes(K: Any, tmp: str) -> Built:
    return _savedmodel_subclass(K, tmp, False)


@kind("a Keras 3 TFSMLayer (a SavedModel as a layer)")
def tfsm_layer(K: Any, tmp: str) -> Built:
    if not is_keras3(K) or K.backend.backend() != "tensorflow" or not hasattr(K.layers, "TFSMLayer"):
        raise NotApplicable("TFSMLayer is Keras 3 on TensorFlow")
    path = os.path.join(tmp, "exported")
    _functional(K).export(path, verbose=False) if _export_takes_verbose(K) else _functional(K).export(path)
    inputs = K.Input((6,))
    outputs = K.layers.TFSMLayer(path, call_endpoint="serve")(inputs)
    return K.models.Model(inputs, outputs), sample_input()


def _export_takes_verbose(K: Any) -> bool:
    import inspect

    return "verbose" in inspect.signature(K.Model.export).parameters


# -- library-built models ---------------------------------------------------------------------


@kind("a tfmot-wrapped model (pruning wrappers)")
def tfmot_pruned(K: Any, tmp: str) -> Built:
    if family_name(K) != "tf_keras":
        raise NotApplicable("tensorflow-model-optimization wraps tf.keras / tf_keras models")
    try:
        import tensorflow_model_optimization as tfmot
    except Exception as exc:  # not installed, or not for this TensorFlow
        raise NotApplicable(f"tensorflow_model_optimization: {exc}") from exc
    inputs = K.Input((6,))
    base = K.models.Model(inputs, K.layers.Dense(2)(K.layers.Dense(4)(inputs)))
    model = tfmot.sparsity.keras.prune_low_magnitude(base)
    return call_model(model, sample_input()), sample_input()


@kind("a keras_hub task (tiny config, random weights)")
def keras_hub_task(K: Any, tmp: str) -> Built:
    if not is_keras3(K):
        raise NotApplicable("keras_hub is Keras 3")
    try:
        import keras_hub
    except Exception as exc:
        raise NotApplicable(f"keras_hub: {exc}") from exc
    backbone = keras_hub.models.BertBackbone(
        vocabulary_size=20, num_layers=1, num_heads=2, hidden_dim=8, intermediate_dim=16, max_sequence_length=6
    )
    task = keras_hub.models.BertTextClassifier(backbone=backbone, num_classes=2, preprocessor=None)
    rng = np.random.RandomState(0)
    x = {
        "token_ids": rng.randint(0, 20, (2, 6)).astype("int32"),
        "segment_ids": np.zeros((2, 6), "int32"),
        "padding_mask": np.ones((2, 6), "int32"),
    }
    return call_model(task, x), x
