"""The models users hold: subclassed, nested, frozen, trained and loaded models, one builder per kind.

Each kind is a plain function `build(K, tmp) -> (model, x)`: `K` is the Keras
module of the family under test, `tmp` a folder the builder may write files
to; it returns a built model (called, trained or loaded, as a user holds it)
and an input that model computes on. `tests/test_holdings.py` clones each one
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
"""

from __future__ import annotations

import os
from typing import Any, Callable, Dict, Tuple

import numpy as np

from features import NotApplicable, family_name, skip_without_subclassed_models

Built = Tuple[Any, Any]
KINDS: Dict[str, Callable[[Any, str], Built]] = {}
DESCRIPTIONS: Dict[str, str] = {}


def kind(description: str) -> Callable[[Callable[[Any, str], Built]], Callable[[Any, str], Built]]:
    def register(fn: Callable[[Any, str], Built]) -> Callable[[Any, str], Built]:
        KINDS[fn.__name__] = fn
        DESCRIPTIONS[fn.__name__] = description
        return fn

    return register


def _x(shape: Tuple[int, ...] = (4, 6), seed: int = 0) -> np.ndarray:
    return np.random.RandomState(seed).rand(*shape).astype("float32")


def _subclassing(K: Any) -> None:
    skip_without_subclassed_models(K)


def _keras3(K: Any) -> bool:
    return family_name(K) == "keras3"


def public(cls: Any) -> Any:
    """Makes a class defined in a builder findable as users' classes are: `holdings.<Name>`.

    Keras 3 deserializes a custom class by its module and name; a class
    local to a function is not found there (native and config round trip
    fail alike, the structural clone does not need it). Users define their
    classes at module level: so do the kinds.
    """
    cls.__qualname__ = cls.__name__
    globals()[cls.__name__] = cls
    return cls


def _no_keras2_arithmetic(K: Any) -> None:
    """Standalone Keras 2.2-2.3 cannot call a subclassed model whose `call` returns backend arithmetic
    on a layer's output (`_set_inputs` reads `_uses_learning_phase` off the result)."""
    if family_name(K) == "keras2":
        raise NotApplicable("standalone Keras 2's subclassed call must return a layer's output")


def outputs(model: Any, x: Any) -> Any:
    """`model.predict(x)`; a direct call where predict cannot feed `x` (keras_hub's dict inputs
    without TensorFlow or grain on JAX and torch), as NumPy."""
    try:
        return model.predict(x, verbose=0)
    except ImportError:
        import keras

        return keras.tree.map_structure(keras.ops.convert_to_numpy, model(x))


def _call(model: Any, x: Any) -> Any:
    outputs(model, x)
    return model


# -- subclassed models --------------------------------------------------------------------------


@kind("subclassed model without get_config (tensorflow#47048)")
def subclass_no_config(K: Any, tmp: str) -> Built:
    _subclassing(K)

    @public
    class TwoDense(K.models.Model):
        def __init__(self) -> None:
            super().__init__()
            self.hidden = K.layers.Dense(8, activation="relu")
            self.out = K.layers.Dense(3)

        def call(self, inputs: Any) -> Any:
            return self.out(self.hidden(inputs))

    x = _x()
    return _call(TwoDense(), x), x


@kind("subclassed model with get_config and constructor arguments")
def subclass_with_config(K: Any, tmp: str) -> Built:
    _subclassing(K)

    @public
    class Mlp(K.models.Model):
        def __init__(self, units: int = 8, outputs: int = 2, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.units, self.outputs_ = units, outputs
            self.hidden = K.layers.Dense(units, activation="tanh")
            self.out = K.layers.Dense(outputs)

        def call(self, inputs: Any) -> Any:
            return self.out(self.hidden(inputs))

        def get_config(self) -> Dict[str, Any]:
            return {"units": self.units, "outputs": self.outputs_, "name": self.name}

    x = _x()
    return _call(Mlp(units=5, outputs=3), x), x


@kind("subclassed model built by build(shape), never called")
def subclass_built(K: Any, tmp: str) -> Built:
    _subclassing(K)
    _no_keras2_arithmetic(K)

    @public
    class Built(K.models.Model):
        def __init__(self) -> None:
            super().__init__()
            self.inner = K.layers.Dense(4)

        def build(self, input_shape: Any) -> None:  # as Keras 3 asks: its layers built here
            self.inner.build(input_shape)
            super().build(input_shape)

        def call(self, inputs: Any) -> Any:
            return self.inner(inputs) * 2.0

    model = Built()
    model.build((None, 6))
    return model, _x()


@kind("layers passed to the constructor (Holder(encoder, head))")
def layers_in_constructor(K: Any, tmp: str) -> Built:
    _subclassing(K)
    _no_keras2_arithmetic(K)

    @public
    class Holder(K.models.Model):
        def __init__(self, encoder: Any, head: Any, scale: float = 1.0) -> None:
            super().__init__()
            self.encoder, self.head, self.scale = encoder, head, scale

        def call(self, inputs: Any) -> Any:
            return self.head(self.encoder(inputs)) * self.scale

    inputs = K.Input((6,))
    encoder = K.models.Model(inputs, K.layers.Dense(5, activation="relu")(inputs), name="encoder")
    x = _x()
    return _call(Holder(encoder, K.layers.Dense(2), scale=3.0), x), x


@kind("a list of layers")
def list_of_layers(K: Any, tmp: str) -> Built:
    _subclassing(K)

    @public
    class Stack(K.models.Model):
        def __init__(self, depth: int = 3, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.blocks = [K.layers.Dense(6, activation="relu") for _ in range(depth)]
            self.out = K.layers.Dense(2)

        def call(self, inputs: Any) -> Any:
            for block in self.blocks:
                inputs = block(inputs)
            return self.out(inputs)

    x = _x()
    return _call(Stack(), x), x


@kind("a dict of layers")
def dict_of_layers(K: Any, tmp: str) -> Built:
    _subclassing(K)

    @public
    class Heads(K.models.Model):
        def __init__(self, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.heads = {"a": K.layers.Dense(2), "b": K.layers.Dense(3)}

        def call(self, inputs: Any) -> Any:
            return K.layers.concatenate([self.heads["a"](inputs), self.heads["b"](inputs)])

    x = _x()
    return _call(Heads(), x), x


@kind("a tuple of layers")
def tuple_of_layers(K: Any, tmp: str) -> Built:
    _subclassing(K)

    @public
    class Pair(K.models.Model):
        def __init__(self) -> None:
            super().__init__()
            self.pair = (K.layers.Dense(4, activation="relu"), K.layers.Dense(2))

        def call(self, inputs: Any) -> Any:
            return self.pair[1](self.pair[0](inputs))

    x = _x()
    return _call(Pair(), x), x


@kind("nested sub-models: a GAN pair (generator, discriminator)")
def gan_pair(K: Any, tmp: str) -> Built:
    _subclassing(K)

    @public
    class Gan(K.models.Model):
        def __init__(self, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.generator = K.models.Sequential(
                [K.layers.Dense(8, activation="relu", input_shape=(6,)), K.layers.Dense(6)], name="generator"
            )
            self.discriminator = K.models.Sequential(
                [K.layers.Dense(4, activation="relu", input_shape=(6,)), K.layers.Dense(1)], name="discriminator"
            )

        def call(self, inputs: Any) -> Any:
            return self.discriminator(self.generator(inputs))

    x = _x()
    return _call(Gan(), x), x


@kind("nested subclassed sub-models: encoder and decoder")
def encoder_decoder(K: Any, tmp: str) -> Built:
    _subclassing(K)
    if family_name(K) == "keras2":  # its symbolic call asks the inner model's compute_output_shape
        raise NotApplicable("standalone Keras 2 cannot call a subclassed model inside another")

    @public
    class Encoder(K.models.Model):
        def __init__(self) -> None:
            super().__init__()
            self.dense = K.layers.Dense(3, activation="relu")

        def call(self, inputs: Any) -> Any:
            return self.dense(inputs)

    @public
    class Decoder(K.models.Model):
        def __init__(self) -> None:
            super().__init__()
            self.dense = K.layers.Dense(6)

        def call(self, inputs: Any) -> Any:
            return self.dense(inputs)

    @public
    class AutoEncoder(K.models.Model):
        def __init__(self) -> None:
            super().__init__()
            self.encoder, self.decoder = Encoder(), Decoder()

        def call(self, inputs: Any) -> Any:
            return self.decoder(self.encoder(inputs))

    x = _x()
    return _call(AutoEncoder(), x), x


@kind("a variable of the model itself (add_weight in the Model)")
def model_variable(K: Any, tmp: str) -> Built:
    _subclassing(K)
    if family_name(K) == "keras2":
        raise NotApplicable("standalone Keras 2's Model has no add_weight of its own before it is built")

    @public
    class Scaled(K.models.Model):
        def __init__(self, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.dense = K.layers.Dense(3)
            self.scale = self.add_weight(name="scale", shape=(3,), initializer="ones")

        def call(self, inputs: Any) -> Any:
            return self.dense(inputs) * self.scale

    x = _x()
    model = _call(Scaled(), x)
    model.scale.assign(np.array([0.5, 2.0, -1.0], dtype="float32"))
    return model, x


@kind("trained BatchNormalization (moving statistics moved by fit)")
def trained_batchnorm(K: Any, tmp: str) -> Built:
    _subclassing(K)

    @public
    class Normed(K.models.Model):
        def __init__(self, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.dense = K.layers.Dense(5)
            self.norm = K.layers.BatchNormalization()
            self.out = K.layers.Dense(1)

        def call(self, inputs: Any, training: Any = None) -> Any:
            return self.out(self.norm(self.dense(inputs), training=training))

    x = _x((16, 6))
    model = Normed()
    model.compile(optimizer="sgd", loss="mse")
    model.fit(x, np.ones((16, 1), "float32"), epochs=2, batch_size=8, verbose=0)
    return model, x


@kind("a frozen sub-model (trainable=False) inside a subclassed model")
def frozen_submodel(K: Any, tmp: str) -> Built:
    _subclassing(K)

    @public
    class Tuned(K.models.Model):
        def __init__(self, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            inputs = K.Input((6,))
            self.base = K.models.Model(inputs, K.layers.Dense(4, activation="relu")(inputs), name="base")
            self.base.trainable = False
            self.head = K.layers.Dense(2)

        def call(self, inputs: Any) -> Any:
            return self.head(self.base(inputs))

    x = _x()
    return _call(Tuned(), x), x


@kind("a custom train_step with a loss tracker, compiled and trained")
def custom_train_step(K: Any, tmp: str) -> Built:
    _subclassing(K)
    if family_name(K) == "keras2":
        raise NotApplicable("standalone Keras 2 has no train_step")
    if _keras3(K) and K.backend.backend() != "tensorflow":
        # train_step is backend code (tf.GradientTape here); the JAX and torch
        # spellings differ: the kind is the TF spelling, the class the point.
        raise NotApplicable(f"this train_step is TensorFlow code; backend {K.backend.backend()}")
    import tensorflow as tf

    metrics_class = K.metrics.Mean

    @public
    class Stepped(K.models.Model):
        def __init__(self) -> None:
            super().__init__()
            self.dense = K.layers.Dense(2)
            self.tracker = metrics_class(name="loss")

        def call(self, inputs: Any) -> Any:
            return self.dense(inputs)

        def train_step(self, data: Any) -> Dict[str, Any]:
            x, y = data
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(self(x, training=True) - y))
            grads = tape.gradient(loss, self.trainable_weights)
            self.optimizer.apply_gradients(zip(grads, self.trainable_weights))
            self.tracker.update_state(loss)
            return {"loss": self.tracker.result()}

    x = _x((8, 6))
    model = Stepped()
    model.compile(optimizer="sgd")
    model.fit(x, np.zeros((8, 2), "float32"), epochs=1, verbose=0)
    return model, x


@kind("mixed precision layers (dtype mixed_float16)")
def mixed_precision(K: Any, tmp: str) -> Built:
    _subclassing(K)
    if family_name(K) == "keras2":
        raise NotApplicable("standalone Keras 2 has no dtype policies")

    @public
    class Mixed(K.models.Model):
        def __init__(self) -> None:
            super().__init__()
            self.hidden = K.layers.Dense(8, activation="relu", dtype="mixed_float16")
            self.out = K.layers.Dense(2, dtype="float32")

        def call(self, inputs: Any) -> Any:
            return self.out(self.hidden(inputs))

    x = _x()
    return _call(Mixed(), x), x


@kind("a custom layer holding sub-layers, inside a subclassed model")
def custom_layer_inside(K: Any, tmp: str) -> Built:
    _subclassing(K)

    @public
    class Block(K.layers.Layer):
        def __init__(self, units: int = 4, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.units = units
            self.inner = K.layers.Dense(units, activation="relu")
            self.skip = K.layers.Dense(units)

        def call(self, inputs: Any) -> Any:
            return self.inner(inputs) + self.skip(inputs)

        def compute_output_shape(self, input_shape: Any) -> Any:
            return tuple(input_shape)[:-1] + (self.units,)

        def get_config(self) -> Dict[str, Any]:
            return {**super().get_config(), "units": self.units}

    @public
    class WithBlock(K.models.Model):
        def __init__(self) -> None:
            super().__init__()
            self.block = Block(5)
            self.out = K.layers.Dense(2)

        def call(self, inputs: Any) -> Any:
            return self.out(self.block(inputs))

    x = _x()
    return _call(WithBlock(), x), x


@kind("a plain Python attribute set after construction")
def python_attribute(K: Any, tmp: str) -> Built:
    _subclassing(K)
    _no_keras2_arithmetic(K)

    @public
    class Tempered(K.models.Model):
        def __init__(self, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.dense = K.layers.Dense(3)
            self.temperature = 1.0

        def call(self, inputs: Any) -> Any:
            return self.dense(inputs) / self.temperature

    x = _x()
    model = Tempered()
    model.temperature = 4.0  # set by the user after construction, read by call
    return _call(model, x), x


# -- models loaded from files -----------------------------------------------------------------


def _functional(K: Any) -> Any:
    inputs = K.Input((6,))
    x = K.layers.Dense(5, activation="relu")(inputs)
    x = K.layers.BatchNormalization()(x)
    return K.models.Model(inputs, K.layers.Dense(2)(x))


@kind("a functional model loaded from .h5")
def loaded_h5(K: Any, tmp: str) -> Built:
    if _keras3(K) and not hasattr(K.saving, "load_model"):
        raise NotApplicable("no load_model")
    try:
        import h5py
    except ImportError:
        raise NotApplicable("h5py is not installed")
    if family_name(K) == "keras2" and int(h5py.__version__.split(".")[0]) >= 3:
        raise NotApplicable("standalone Keras 2 reads .h5 files with h5py < 3 only (str attributes)")
    path = os.path.join(tmp, "model.h5")
    _functional(K).save(path)
    return K.models.load_model(path), _x()


@kind("a functional model loaded from .keras")
def loaded_keras(K: Any, tmp: str) -> Built:
    if family_name(K) == "keras2" or not hasattr(K, "saving") or not hasattr(K.saving, "load_model"):
        raise NotApplicable(f"{K.__name__} {K.__version__} writes no .keras files")
    path = os.path.join(tmp, "model.keras")
    try:
        _functional(K).save(path)
    except (ValueError, TypeError) as exc:  # tf.keras before 2.13: no .keras format
        raise NotApplicable(f"no .keras format: {exc}")
    return K.models.load_model(path), _x()


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
    return K.models.load_model(path, custom_objects=custom), _x()


@kind("a SavedModel loaded with its custom classes")
def savedmodel_with_classes(K: Any, tmp: str) -> Built:
    return _savedmodel_subclass(K, tmp, True)


@kind("a SavedModel loaded without its custom classes (revived layers)")
def savedmodel_without_classes(K: Any, tmp: str) -> Built:
    return _savedmodel_subclass(K, tmp, False)


@kind("a Keras 3 TFSMLayer (a SavedModel as a layer)")
def tfsm_layer(K: Any, tmp: str) -> Built:
    if not _keras3(K) or K.backend.backend() != "tensorflow" or not hasattr(K.layers, "TFSMLayer"):
        raise NotApplicable("TFSMLayer is Keras 3 on TensorFlow")
    path = os.path.join(tmp, "exported")
    _functional(K).export(path, verbose=False) if _export_takes_verbose(K) else _functional(K).export(path)
    inputs = K.Input((6,))
    outputs = K.layers.TFSMLayer(path, call_endpoint="serve")(inputs)
    return K.models.Model(inputs, outputs), _x()


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
        raise NotApplicable(f"tensorflow_model_optimization: {exc}")
    inputs = K.Input((6,))
    base = K.models.Model(inputs, K.layers.Dense(2)(K.layers.Dense(4)(inputs)))
    model = tfmot.sparsity.keras.prune_low_magnitude(base)
    return _call(model, _x()), _x()


@kind("a keras_hub task (tiny config, random weights)")
def keras_hub_task(K: Any, tmp: str) -> Built:
    if not _keras3(K):
        raise NotApplicable("keras_hub is Keras 3")
    try:
        import keras_hub
    except Exception as exc:
        raise NotApplicable(f"keras_hub: {exc}")
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
    return _call(task, x), x
