"""The feature checks: one per cloning feature, registered in `features.FEATURES` by `@feature`.

Each check is `check(K, clone)` (see tests/clone/features.py for what `K`, `clone`,
`NativeLacks` and `NotApplicable` mean). Import `FEATURES` and
`DESCRIPTIONS` from here: importing this module is what registers the checks.
Used by tests/clone/test_features.py and tests/clone/test_native_bugs.py.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List

import numpy as np

from tests.clone.features import (
    DESCRIPTIONS,
    FEATURES,
    NotApplicable,
    assert_same_predictions,
    backend_name,
    data,
    family_name,
    feature,
    predict,
    two_in_two_out_layer,
    weights_snapshot,
)
from tests.clone.holdings_registry import public

__all__ = ["DESCRIPTIONS", "FEATURES"]


@feature("functional model, predictions equal after weight copy")
def functional_basic(K: Any, clone: Callable[..., Any]) -> None:
    x = K.Input((4,))
    h = K.layers.Dense(8, activation="relu")(x)
    m = K.models.Model(x, K.layers.Dense(2)(h))
    c = clone(m, copy_weights=True)
    assert c is not m and c.layers[-1] is not m.layers[-1]
    assert_same_predictions(m, c, data((3, 4)))


@feature("Sequential model")
def sequential_basic(K: Any, clone: Callable[..., Any]) -> None:
    m = K.models.Sequential([K.layers.Dense(5, input_shape=(3,)), K.layers.Dense(2)])
    c = clone(m, copy_weights=True)
    assert type(c).__name__ == "Sequential"
    assert_same_predictions(m, c, data((2, 3)))


@feature("Sequential cloned onto given input_tensors")
def sequential_input_tensors(K: Any, clone: Callable[..., Any]) -> None:
    m = K.models.Sequential([K.layers.Dense(5, input_shape=(3,)), K.layers.Dense(2)])
    given = K.Input((3,), name="given")
    c = clone(m, input_tensors=given, copy_weights=True)
    assert type(c).__name__ == "Sequential"
    assert any(x is given for x in c.inputs) or c.inputs[0].name == given.name, "the clone is not built on the given tensor"
    assert_same_predictions(m, c, data((2, 3)))


@feature("functional model of a Model subclass keeps its class")
def functional_subclass(K: Any, clone: Callable[..., Any]) -> None:
    class Scaler(K.models.Model):  # type: ignore[misc,name-defined]
        def __init__(self, units: int = 3, **kwargs: Any) -> None:
            x = K.Input((4,))
            super().__init__(x, K.layers.Dense(units)(x), **kwargs)
            self.units = units

        def get_config(self) -> Dict[str, Any]:
            return {"units": self.units, "name": self.name}

    m = Scaler(units=5, name="scaler")
    c = clone(m, copy_weights=True)
    assert type(c) is Scaler, f"the clone is a {type(c).__name__}, not a Scaler"
    assert c.units == 5
    assert_same_predictions(m, c, data((2, 4)))


@feature("RNN called with initial_state= (encoder-decoder)")
def rnn_initial_state(K: Any, clone: Callable[..., Any]) -> None:
    enc_in, dec_in = K.Input((5, 3)), K.Input((4, 3))
    _, h, c = K.layers.LSTM(4, return_state=True)(enc_in)
    out = K.layers.LSTM(4)(dec_in, initial_state=[h, c])
    m = K.models.Model([enc_in, dec_in], out)
    cl = clone(m, copy_weights=True)
    assert_same_predictions(m, cl, [data((2, 5, 3), 1), data((2, 4, 3), 2)])


def _call_arguments(model: Any) -> List[Any]:
    """Per layer and node of `model`, the names of the keyword arguments its call was given (where the family records them)."""
    names = []
    for layer in model.layers:
        nodes = getattr(layer, "_inbound_nodes", None)
        if nodes is None:  # standalone Keras 2.0: no underscore yet
            nodes = getattr(layer, "inbound_nodes", [])
        for node in nodes:
            recorded = getattr(node, "arguments", None)  # standalone Keras 2
            if recorded is None:
                recorded = getattr(node, "call_kwargs", None)  # tf_keras
            if isinstance(recorded, dict):
                names.append((layer.name, sorted(recorded)))
    return names


@feature("cloned twice, a masked layer called with a keyword argument (the source's call arguments untouched)")
def clone_twice_call_arguments(K: Any, clone: Callable[..., Any]) -> None:
    class MaskedIdentity(K.layers.Layer):  # type: ignore[misc,name-defined]
        """Takes a mask and a keyword argument (as an RNN does), at the cost of nothing."""

        def __init__(self, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.supports_masking = True

        def call(self, inputs: Any, mask: Any = None, training: Any = None) -> Any:
            return inputs

    tokens = K.Input((5,), dtype="int32")
    embedded = K.layers.Embedding(10, 3, mask_zero=True)(tokens)
    m = K.models.Model(tokens, MaskedIdentity()(embedded, training=False))
    before = _call_arguments(m)
    x = np.array([[1, 2, 3, 0, 0], [4, 5, 0, 0, 0]], dtype="int32")
    first = clone(m, copy_weights=True)
    assert _call_arguments(m) == before, f"the clone changed the source's call arguments: {_call_arguments(m)}, were {before}"
    second = clone(m, copy_weights=True)
    assert_same_predictions(m, first, x)
    assert_same_predictions(m, second, x)


@feature("layer with two outputs and no mask support (keras #12202)")
def multi_output_no_mask(K: Any, clone: Callable[..., Any]) -> None:
    x = K.Input((3,))
    pair = K.layers.Lambda(lambda t: [t + 1, t], output_shape=lambda s: [s, s])(x)
    a, b = two_in_two_out_layer(K)()(pair)
    m = K.models.Model(x, K.layers.Concatenate()([a, b]))
    c = clone(m, copy_weights=True)
    assert_same_predictions(m, c, data((2, 3)))


@feature("Lambda returning [x, x] into Add (keras #12202)")
def lambda_pair_into_add(K: Any, clone: Callable[..., Any]) -> None:
    x = K.Input((3,))
    pair = K.layers.Lambda(lambda t: [t, t], output_shape=lambda s: [s, s])(x)
    m = K.models.Model(x, K.layers.Dense(2)(K.layers.Add()(pair)))
    c = clone(m, copy_weights=True)
    assert_same_predictions(m, c, data((2, 3)))


@feature("Lambda with a Python lambda (Keras 3 safe mode)")
def lambda_python_function(K: Any, clone: Callable[..., Any]) -> None:
    scale = 3.0
    x = K.Input((3,))
    m = K.models.Model(x, K.layers.Lambda(lambda t: t * scale)(x))
    c = clone(m)
    assert_same_predictions(m, c, data((2, 3)))


@feature("masks survive (Embedding mask_zero -> LSTM)")
def mask_embedding_lstm(K: Any, clone: Callable[..., Any]) -> None:
    x = K.Input((5,), dtype="int32")
    e = K.layers.Embedding(10, 4, mask_zero=True)(x)
    m = K.models.Model(x, K.layers.LSTM(3)(e))
    c = clone(m, copy_weights=True)
    ids = np.array([[1, 2, 0, 0, 0], [3, 4, 5, 6, 0]], dtype="int32")
    assert_same_predictions(m, c, ids)
    # the mask matters: padding steps must be ignored by the clone too
    ids2 = np.array([[1, 2, 0, 0, 0], [3, 4, 5, 6, 0]], dtype="int32")
    ids2[0, 3] = 0
    assert_same_predictions(c, m, ids2)


@feature("shared layers stay shared")
def shared_layers(K: Any, clone: Callable[..., Any]) -> None:
    a, b = K.Input((3,)), K.Input((3,))
    dense = K.layers.Dense(4)
    m = K.models.Model([a, b], K.layers.Add()([dense(a), dense(b)]))
    c = clone(m, copy_weights=True)
    denses = [layer for layer in c.layers if type(layer).__name__ == "Dense"]
    assert len(denses) == 1, f"expected one shared Dense, found {len(denses)}"
    assert len(c.weights) == len(m.weights)
    assert_same_predictions(m, c, [data((2, 3), 1), data((2, 3), 2)])


@feature("nested model")
def nested_model(K: Any, clone: Callable[..., Any]) -> None:
    inner_in = K.Input((3,))
    inner = K.models.Model(inner_in, K.layers.Dense(4)(inner_in), name="inner")
    x = K.Input((3,))
    m = K.models.Model(x, K.layers.Dense(1)(inner(x)))
    c = clone(m, copy_weights=True)
    assert_same_predictions(m, c, data((2, 3)))


@feature("nested Sequential keeps its name")
def nested_sequential_name(K: Any, clone: Callable[..., Any]) -> None:
    x = K.Input((3,))
    seq = K.models.Sequential([K.layers.Dense(4, input_shape=(3,))], name="block_seq")
    m = K.models.Model(x, K.layers.Dense(1)(seq(x)))
    c = clone(m, copy_weights=True)
    assert [layer.name for layer in c.layers] == [layer.name for layer in m.layers], [layer.name for layer in c.layers]
    assert_same_predictions(m, c, data((2, 3)))


@feature("an Input made without a name keeps its layer's name (not its tensor's)")
def input_layer_name(K: Any, clone: Callable[..., Any]) -> None:
    x, named = K.Input((3,)), K.Input((2,), name="extra")
    m = K.models.Model([x, named], K.layers.Concatenate()([K.layers.Dense(2)(x), named]))
    c = clone(m, copy_weights=True)
    assert [layer.name for layer in c.layers] == [layer.name for layer in m.layers], [layer.name for layer in c.layers]
    assert_same_predictions(m, c, [data((2, 3), 1), data((2, 2), 2)])


@feature("nested model holding standalone Keras 2.0-2.1 MobileNet's unregistered relu6")
def app_unregistered_objects(K: Any, clone: Callable[..., Any]) -> None:
    import importlib

    try:
        relu6 = importlib.import_module(K.__name__ + ".applications.mobilenet").relu6
    except (ImportError, AttributeError) as exc:
        raise NotApplicable("keras.applications.mobilenet has no relu6 of its own (Keras >= 2.2 has ReLU(6.))") from exc
    x = K.Input((3,))
    inner = K.models.Model(x, K.layers.Activation(relu6)(K.layers.Dense(4)(x)), name="backbone")
    y = K.Input((3,))
    m = K.models.Model(y, K.layers.Dense(1)(inner(y)))
    c = clone(m, copy_weights=True)
    assert c.layers[1].layers[-1].activation is relu6
    assert_same_predictions(m, c, data((2, 3)))


@feature("TimeDistributed over a nested single-output model")
def timedistributed_nested_model(K: Any, clone: Callable[..., Any]) -> None:
    f = K.Input((4,))
    frame = K.models.Model(f, K.layers.Dense(3)(f), name="frame")
    x = K.Input((2, 4))
    try:
        h = K.layers.TimeDistributed(frame)(x)
    except NotImplementedError as exc:  # Keras 3.0-3.3: a Functional has no compute_output_shape
        raise NotApplicable(f"TimeDistributed cannot wrap a model in {K.__name__} {K.__version__}") from exc
    m = K.models.Model(x, K.layers.Dense(1)(K.layers.Flatten()(h)))
    c = clone(m, copy_weights=True)
    assert_same_predictions(m, c, data((2, 2, 4)))


@feature("multi-input, multi-output")
def multi_io(K: Any, clone: Callable[..., Any]) -> None:
    a, b = K.Input((3,), name="a"), K.Input((2,), name="b")
    h = K.layers.Concatenate()([a, b])
    m = K.models.Model([a, b], [K.layers.Dense(1)(h), K.layers.Dense(2)(h)])
    c = clone(m, copy_weights=True)
    assert len(c.outputs) == 2
    assert_same_predictions(m, c, [data((2, 3)), data((2, 2))])


@feature("BatchNormalization moving statistics copied")
def batchnorm_statistics(K: Any, clone: Callable[..., Any]) -> None:
    x = K.Input((3,))
    bn = K.layers.BatchNormalization()
    m = K.models.Model(x, bn(K.layers.Dense(3)(x)))
    # make the moving statistics differ from their initial values
    values = bn.get_weights()
    bn.set_weights([v + np.float32(i + 1) for i, v in enumerate(values)])
    c = clone(m, copy_weights=True)
    for u, v in zip(m.get_weights(), c.get_weights()):
        np.testing.assert_array_equal(u, v)
    assert_same_predictions(m, c, data((2, 3)))


@feature("model.trainable = False survives")
def trainable_false(K: Any, clone: Callable[..., Any]) -> None:
    x = K.Input((3,))
    m = K.models.Model(x, K.layers.Dense(2)(x))
    m.trainable = False
    c = clone(m)
    assert c.trainable is False, "clone.trainable is True"
    assert len(c.trainable_weights) == 0


@feature("single-input Concatenate (keras #17700)")
def single_input_concatenate(K: Any, clone: Callable[..., Any]) -> None:
    if family_name(K) == "keras2":
        # Keras 2.0-2.3's Concatenate refuses a one-element list when the
        # source model is built, before any clone.
        raise NotApplicable("Keras 2.x cannot build Concatenate()([x])")
    x = K.Input((3,))
    m = K.models.Model(x, K.layers.Dense(2)(K.layers.Concatenate()([x])))
    c = clone(m, copy_weights=True)
    assert_same_predictions(m, c, data((2, 3)))


@feature("sparse=True input stays sparse")
def sparse_input(K: Any, clone: Callable[..., Any]) -> None:
    fam, backend = family_name(K), backend_name(K)
    if fam == "keras2" or backend not in ("tensorflow", "jax"):
        raise NotApplicable(f"no sparse inputs on {fam}/{backend}")
    x = K.Input((5,), sparse=True)
    m = K.models.Model(x, K.layers.Dense(2)(x))
    c = clone(m)
    tensor = c.inputs[0]
    sparse = getattr(tensor, "sparse", None)
    if sparse is None:  # tf.keras KerasTensor: a SparseTensorSpec
        sparse = type(getattr(tensor, "type_spec", None)).__name__ == "SparseTensorSpec"
    assert sparse, "the clone's input is dense"


@feature("clone_function applied to every layer")
def clone_function_every_layer(K: Any, clone: Callable[..., Any]) -> None:
    x = K.Input((3,))
    m = K.models.Model(x, K.layers.Dense(2, name="d2")(K.layers.Dense(4, name="d1")(x)))
    seen: List[str] = []

    def fn(layer: Any) -> Any:
        seen.append(layer.name)
        return layer.__class__.from_config(layer.get_config())

    clone(m, clone_function=fn)
    assert sorted(seen) == ["d1", "d2"], seen


@feature("recursive=True applies clone_function inside nested models")
def recursive_nested(K: Any, clone: Callable[..., Any]) -> None:
    i1 = K.Input((3,))
    level1 = K.models.Model(i1, K.layers.Dense(3, name="deep")(i1), name="level1")
    i2 = K.Input((3,))
    level2 = K.models.Model(i2, K.layers.Dense(3, name="mid")(level1(i2)), name="level2")
    x = K.Input((3,))
    m = K.models.Model(x, K.layers.Dense(1, name="top")(level2(x)))
    seen: List[str] = []

    def fn(layer: Any) -> Any:
        seen.append(layer.name)
        return layer.__class__.from_config(layer.get_config())

    clone(m, clone_function=fn, recursive=True)
    assert {"deep", "mid", "top"} <= set(seen), seen
    assert not {"level1", "level2"} & set(seen), f"nested models passed whole: {seen}"
    c = clone(m, recursive=True, copy_weights=True)
    assert_same_predictions(m, c, data((2, 3)))


@feature("call_function wraps each layer call")
def call_function(K: Any, clone: Callable[..., Any]) -> None:
    x = K.Input((3,))
    m = K.models.Model(x, K.layers.Dense(2)(K.layers.Dense(4)(x)))
    calls: List[str] = []

    def fn(layer: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append(type(layer).__name__)
        out = layer(*args, **kwargs)
        if type(layer).__name__ == "Dense":
            return K.layers.Dropout(0.5)(out)
        return out

    c = clone(m, call_function=fn)
    kinds = [type(layer).__name__ for layer in c.layers]
    assert kinds.count("Dropout") == 2, kinds
    assert calls.count("Dense") == 2


@feature("name= renames the clone")
def rename(K: Any, clone: Callable[..., Any]) -> None:
    x = K.Input((3,))
    m = K.models.Model(x, K.layers.Dense(2)(x), name="orig")
    c = clone(m, name="renamed")
    assert c.name == "renamed" and m.name == "orig"


@feature("source untouched, clone independent")
def source_untouched(K: Any, clone: Callable[..., Any]) -> None:
    x = K.Input((3,))
    m = K.models.Model(x, K.layers.Dense(2, name="d")(x), name="src")
    before = weights_snapshot(m)
    names = [layer.name for layer in m.layers]
    c = clone(m, copy_weights=True)
    c.layers[-1].set_weights([w + 1 for w in c.layers[-1].get_weights()])
    for u, v in zip(before, m.get_weights()):
        np.testing.assert_array_equal(u, v)
    assert [layer.name for layer in m.layers] == names and m.name == "src"


@feature("a model compiled with an unregistered loss function clones (compile=False)")
def compiled_custom_loss(K: Any, clone: Callable[..., Any]) -> None:
    mean = K.ops.mean if hasattr(K, "ops") else K.backend.mean

    def unregistered_loss(y_true: Any, y_pred: Any) -> Any:
        return mean((y_true - y_pred) ** 2, axis=-1)

    x = K.Input((3,))
    m = K.models.Model(x, K.layers.Dense(2)(x))
    m.compile(optimizer="sgd", loss=unregistered_loss, metrics=["mae"])
    c = clone(m, copy_weights=True)
    assert_same_predictions(m, c, data((2, 3)))


@feature("compile=True compiles the clone like the source, fresh optimizer")
def compile_like_source(K: Any, clone: Callable[..., Any]) -> None:
    x = K.Input((3,))
    m = K.models.Model(x, K.layers.Dense(2)(x))
    m.compile(optimizer=K.optimizers.SGD(0.05), loss="mse", metrics=["mae"])
    c = clone(m, compile=True)
    assert type(c.optimizer) is type(m.optimizer) and c.optimizer is not m.optimizer
    assert c.optimizer.get_config() == m.optimizer.get_config()


# -- a subclassed model is its source's structure (issue 45) ---------------------------------------


def _subclassing(K: Any) -> None:
    try:
        K.models.Model()
    except TypeError as exc:  # standalone Keras 2.0-2.1
        raise NotApplicable(f"{K.__name__} {K.__version__} has no subclassed models") from exc


@feature("Sequential subclass keeps its class and its attributes")
def sequential_subclass(K: Any, clone: Callable[..., Any]) -> None:
    class Stack(K.models.Sequential):  # type: ignore[misc,name-defined]
        def __init__(self, units: int = 2, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.add(K.layers.Dense(units, input_shape=(3,)))
            self.note = f"{units} units"

    m = public(Stack)(4)
    c = clone(m, copy_weights=True)
    assert type(c) is Stack, f"the clone is a {type(c).__name__}, not a Stack"
    assert c.note == "4 units"
    assert_same_predictions(m, c, data((2, 3)))


@feature("subclassed model: a constructor argument stored under no name of its own (Classifier(backbone, num_classes=4))")
def subclass_unstored_argument(K: Any, clone: Callable[..., Any]) -> None:
    _subclassing(K)

    class Classifier(K.models.Model):  # type: ignore[misc,name-defined]
        def __init__(self, backbone: Any, num_classes: int = 3, dropout: float = 0.1, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.backbone = backbone
            self.drop = K.layers.Dropout(dropout)
            self.head = K.layers.Dense(num_classes)

        def call(self, x: Any, training: Any = None) -> Any:
            return self.head(self.drop(self.backbone(x), training=training))

    m = public(Classifier)(K.models.Sequential([K.layers.Dense(6, input_shape=(3,))]), num_classes=4, dropout=0.7)
    predict(m, data((2, 3)))
    c = clone(m, copy_weights=True)
    assert type(c) is Classifier and (c.head.units, c.drop.rate) == (4, 0.7), (type(c).__name__, c.head.units, c.drop.rate)
    assert_same_predictions(m, c, data((2, 3)))


@feature("subclassed model whose get_config leaves out a constructor argument")
def subclass_config_omits(K: Any, clone: Callable[..., Any]) -> None:
    _subclassing(K)

    class Forgetful(K.models.Model):  # type: ignore[misc,name-defined]
        def __init__(self, units: int = 3, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.dense = K.layers.Dense(units)

        def call(self, x: Any) -> Any:
            return self.dense(x)

        def get_config(self) -> Dict[str, Any]:
            return {"name": self.name}  # `units` left out: from_config makes the default

    m = public(Forgetful)(units=6)
    predict(m, data((2, 3)))
    c = clone(m, copy_weights=True)
    assert c.dense.units == 6, f"the clone's Dense has {c.dense.units} units, the source's 6"
    assert_same_predictions(m, c, data((2, 3)))


@feature("subclassed model whose sub-layers and weights are made in build()")
def subclass_build_layers(K: Any, clone: Callable[..., Any]) -> None:
    _subclassing(K)

    class Scaled(K.models.Model):  # type: ignore[misc,name-defined]
        def __init__(self, units: int = 4, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.units = units

        def build(self, input_shape: Any) -> None:
            self.dense = K.layers.Dense(self.units)
            self.scale = self.add_weight(name="scale", shape=(self.units,), initializer="ones")
            super().build(input_shape)

        def call(self, x: Any) -> Any:
            return self.dense(x) * self.scale

    m = public(Scaled)(5)
    try:
        predict(m, data((2, 3)))
    except Exception as exc:  # standalone Keras 2.2-2.3 never calls a subclassed model's build()
        raise NotApplicable(f"{K.__name__} {K.__version__} cannot run such a model: {exc}") from exc
    c = clone(m, copy_weights=True)
    assert_same_predictions(m, c, data((2, 3)))


@feature("subclassed model with a get_config: the clone holds the source's weights without being called first")
def subclass_config_built(K: Any, clone: Callable[..., Any]) -> None:
    _subclassing(K)

    class Doubled(K.models.Model):  # type: ignore[misc,name-defined]
        def __init__(self, units: int = 3, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.units = units
            self.dense = K.layers.Dense(units)

        def call(self, x: Any) -> Any:
            return self.dense(x) * 2.0

        def get_config(self) -> Dict[str, Any]:
            return {"units": self.units, "name": self.name}

    m = public(Doubled)(units=5)
    try:
        predict(m, data((2, 3)))
    except Exception as exc:  # standalone Keras 2.2-2.3: a subclassed model's output of a raw op cannot be predicted
        raise NotApplicable(f"{K.__name__} {K.__version__} cannot run such a model: {exc}") from exc
    c = clone(m, copy_weights=True)
    assert len(c.weights) == len(m.weights), f"the clone holds {len(c.weights)} weights, the source {len(m.weights)}"
    assert_same_predictions(m, c, data((2, 3)))


@feature("subclassed model: a plain attribute set after construction (model.temperature = 4.0) is kept")
def subclass_plain_attribute(K: Any, clone: Callable[..., Any]) -> None:
    _subclassing(K)

    class Tempered(K.models.Model):  # type: ignore[misc,name-defined]
        def __init__(self, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.dense = K.layers.Dense(3)
            self.temperature = 1.0

        def call(self, x: Any) -> Any:
            return self.dense(x) / self.temperature

    m = public(Tempered)()
    try:
        predict(m, data((2, 3)))
    except Exception as exc:  # standalone Keras 2.2-2.3: a subclassed model's output of a raw op cannot be predicted
        raise NotApplicable(f"{K.__name__} {K.__version__} cannot run such a model: {exc}") from exc
    m.temperature = 4.0
    c = clone(m, copy_weights=True)
    assert getattr(c, "temperature", None) == 4.0, (
        f"the clone's temperature is {getattr(c, 'temperature', None)}, the source's 4.0"
    )
    assert_same_predictions(m, c, data((2, 3)))


def _adapted_layer(K: Any, name: str, data: Any, **kwargs: Any) -> Any:
    """A preprocessing layer of `K` adapted on `data`; NotApplicable where `K` has none (or needs TensorFlow)."""
    cls = getattr(K.layers, name, None)
    if cls is None:
        raise NotApplicable(f"no {name} layer in {K.__name__} {K.__version__}")
    try:
        layer = cls(**kwargs)
        layer.adapt(data)
    except ImportError as exc:  # Keras 3 on JAX / torch without TensorFlow: the lookup layers, tf.data in `adapt`
        raise NotApplicable(f"{name} needs TensorFlow here: {exc}") from exc
    return layer


def _assert_same_outputs(m: Any, c: Any, x: Any) -> None:
    np.testing.assert_allclose(np.asarray(c(x)), np.asarray(m(x)), rtol=1e-6)


@feature("adapted StringLookup: the clone holds the source's vocabulary (no weight copy)")
def lookup_adapted(K: Any, clone: Callable[..., Any]) -> None:
    layer = _adapted_layer(K, "StringLookup", np.array([["a"], ["b"], ["a"]]))
    x = K.Input((1,), dtype="string")
    m = K.models.Model(x, layer(x))
    _assert_same_outputs(m, clone(m), np.array([["a"], ["b"], ["q"]]))


@feature("adapted Normalization: the clone holds the source's mean and variance (no weight copy)")
def normalization_adapted(K: Any, clone: Callable[..., Any]) -> None:
    layer = _adapted_layer(K, "Normalization", data((8, 3)) * 10 + 5)
    x = K.Input((3,))
    m = K.models.Model(x, layer(x))
    _assert_same_outputs(m, clone(m), data((2, 3), seed=1))


@feature("adapted Discretization: the clone holds the source's bin boundaries (no weight copy)")
def discretization_adapted(K: Any, clone: Callable[..., Any]) -> None:
    layer = _adapted_layer(K, "Discretization", np.arange(12, dtype="float32").reshape(12, 1), num_bins=4)
    x = K.Input((1,))
    m = K.models.Model(x, layer(x))
    _assert_same_outputs(m, clone(m), np.array([[0.5], [5.5], [11.0]], dtype="float32"))


@feature("adapted Discretization: the clone can be adapted again, the source keeps its boundaries")
def discretization_readapt(K: Any, clone: Callable[..., Any]) -> None:
    layer = _adapted_layer(K, "Discretization", np.arange(12, dtype="float32").reshape(12, 1), num_bins=4)
    x = K.Input((1,))
    m = K.models.Model(x, layer(x))
    probe = np.array([[0.5], [5.5], [11.0]], dtype="float32")
    before = np.asarray(m(probe))
    c = clone(m)
    c.layers[-1].adapt(np.arange(100, 112, dtype="float32").reshape(12, 1))
    assert not np.array_equal(np.asarray(c(probe)), before), "adapting the clone changed nothing"
    np.testing.assert_array_equal(np.asarray(m(probe)), before)


@feature("an RNN over a Keras cell exported under another name (keras 2.12's GRUCellV1) keeps the cell's class")
def rnn_shadowed_cell(K: Any, clone: Callable[..., Any]) -> None:
    cell_cls = getattr(K.layers, "GRUCellV1", None)
    if cell_cls is None or cell_cls is getattr(K.layers, "GRUCell", None):
        raise NotApplicable(f"{K.__name__}.layers exports no GRUCellV1 besides GRUCell")
    x = K.Input((4, 2))
    m = K.models.Model(x, K.layers.RNN(cell_cls(3))(x))
    c = clone(m, copy_weights=True)
    got = type(c.layers[-1].cell)
    assert got is cell_cls, (
        f"the clone's cell is {got.__module__}.{got.__name__}, the source's {cell_cls.__module__}.{cell_cls.__name__}"
    )
    assert_same_predictions(m, c, data((2, 4, 2)))
