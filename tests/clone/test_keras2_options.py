"""Standalone Keras 2.0-2.3 (the `keras2` family): clone options, weights, 2.2.5's scenarios, devices.

Runs where tests/clone/test_keras2.py runs (the standalone Keras 2 matrix
environments; skipped elsewhere), on the real old packages; helpers and
builders are in tests/clone/keras2_support.py.
"""

from __future__ import annotations

from typing import Any, List

import numpy as np
import pytest

from tests.clone.keras2_support import (
    assert_same_predictions,
    assert_same_weights,
    build_12202_add,
    build_12202_swap,
    build_nested,
    build_sequential,
    build_shared,
    compat_clone_model,
    evaluate,
    inbound_nodes,
    keras_module,
    keras_version,
    randomize,
)
from tests.support._py import zip_strict

pytestmark = pytest.mark.keras2

# A module global read by a Lambda: Keras 2's `Lambda.from_config` rebuilds
# the function with `keras.layers.core`'s globals, where it does not exist.
SCALE = 3.0


@pytest.fixture(autouse=True)
def _fresh_graph(request: Any) -> Any:
    """Each test builds in a fresh default graph/session (Keras 2 keeps one global)."""
    import keras

    keras.backend.clear_session()
    yield
    keras.backend.clear_session()


# -- options -----------------------------------------------------------------


def test_clone_function_applied_to_every_layer() -> None:
    model = build_shared()
    seen: List[str] = []

    def fn(layer: Any) -> Any:
        seen.append(layer.name)
        return layer.__class__.from_config(layer.get_config())

    compat_clone_model(model, clone_function=fn)
    expected = [layer.name for layer in model.layers if type(layer).__name__ != "InputLayer"]
    assert sorted(seen) == sorted(expected)  # each once, shared layer included


def test_clone_function_errors_name_the_layer() -> None:
    import compat_clone

    model = build_shared()

    def boom(layer: Any) -> Any:
        if type(layer).__name__ == "BatchNormalization":
            raise RuntimeError("no BN here")
        return layer.__class__.from_config(layer.get_config())

    bn_name = [layer.name for layer in model.layers if type(layer).__name__ == "BatchNormalization"][0]
    with pytest.raises(RuntimeError, match="no BN here") as info:  # the user's own exception
        compat_clone_model(model, clone_function=boom)
    assert bn_name in "\n".join(getattr(info.value, "__notes__", []))
    with pytest.raises(compat_clone.CloneFunctionError, match="must return a Keras layer"):
        compat_clone_model(model, clone_function=lambda layer: "not a layer")


def test_call_function_wraps_every_call() -> None:
    model = build_12202_swap()
    called: List[str] = []

    def call(layer: Any, *args: Any, **kwargs: Any) -> Any:
        called.append(layer.name)
        return layer(*args, **kwargs)

    clone = compat_clone_model(model, call_function=call, copy_weights=True)
    assert len(called) == len(model.layers) - 1
    assert_same_predictions(model, clone, np.ones((2, 4)))


def test_lambda_reading_module_globals() -> None:
    keras = keras_module()
    inp = keras.Input((2,))
    model = keras.models.Model(inp, keras.layers.Lambda(lambda t: t * SCALE)(inp))
    clone = compat_clone_model(model)
    np.testing.assert_allclose(clone.predict(np.ones((1, 2))), [[SCALE, SCALE]])


def test_name_and_trainable() -> None:
    model = build_nested()
    model.get_layer("inner").trainable = False
    model.trainable = False
    clone = compat_clone_model(model, name="copy")
    assert clone.name == "copy"
    assert clone.trainable is False
    assert clone.get_layer("inner").trainable is False
    assert clone.get_layer("seq").trainable is True
    assert clone.trainable_weights == []


# -- weights -----------------------------------------------------------------


def test_copy_weights_exact_including_batchnorm_statistics() -> None:
    import compat_clone

    model = build_sequential()
    model.compile("sgd", "mse")
    rng = np.random.RandomState(5)
    model.fit(rng.standard_normal((16, 4)), rng.standard_normal((16, 4)), epochs=2, verbose=0)
    clone = compat_clone_model(model, copy_weights=True)
    assert_same_weights(model.get_weights(), clone.get_weights())

    # One cached op: a second copy does not grow the graph.
    randomize(clone, seed=9)
    graph = keras_module().backend.get_session().graph
    compat_clone.copy_weights(model, clone)
    n_ops = len(graph.get_operations())
    randomize(clone, seed=10)
    compat_clone.copy_weights(model, clone)
    randomize(clone, seed=11)  # set_weights adds its own (cached) assign placeholders
    n_after_set = len(graph.get_operations())
    compat_clone.copy_weights(model, clone)
    assert len(graph.get_operations()) == n_after_set
    assert n_ops <= n_after_set
    assert_same_weights(model.get_weights(), clone.get_weights())


def test_source_untouched() -> None:
    keras = keras_module()
    inp = keras.Input((6,))
    x = keras.layers.Embedding(10, 4, mask_zero=True)(inp)
    x = keras.layers.LSTM(3)(x, training=False)
    model = keras.models.Model(inp, x)
    randomize(model)
    lstm = model.layers[2]
    before_args = dict(inbound_nodes(lstm)[0].arguments)
    before_nodes = {id(layer): len(inbound_nodes(layer)) for layer in model.layers}
    before_weights = model.get_weights()

    clone = compat_clone_model(model, copy_weights=True)
    randomize(clone, seed=1)
    assert inbound_nodes(lstm)[0].arguments == before_args  # native adds 'mask'
    assert {id(layer): len(inbound_nodes(layer)) for layer in model.layers} == before_nodes
    assert_same_weights(before_weights, model.get_weights())

    # Native 2.0-2.3.1 write the *clone's* mask into the source node.
    keras.models.clone_model(model)
    assert "mask" in inbound_nodes(lstm)[0].arguments


# -- keras 2.2.5's own cloning scenarios, through compat_clone -----------------


def _structure(model: Any) -> List[Any]:
    """Layer by layer (input layers left out): name, class, weight shapes, calls, output masks."""
    K = keras_module().backend
    return [
        (
            layer.name,
            type(layer).__name__,
            [K.int_shape(w) for w in layer.weights],
            len(inbound_nodes(layer)),
            [[m is None for m in _as_list(node.output_masks)] for node in inbound_nodes(layer)],
        )
        for layer in model.layers
        if type(layer).__name__ != "InputLayer"
    ]


def _as_list(value: Any) -> List[Any]:
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _positive_weights(model: Any, seed: int = 0) -> List[np.ndarray]:
    """Distinct positive weights (BatchNormalization variances stay valid); returns them."""
    rng = np.random.RandomState(seed)
    model.set_weights([rng.uniform(0.5, 1.5, w.shape).astype(w.dtype) for w in model.get_weights()])
    return model.get_weights()


def _trains(model: Any, x: Any, y: np.ndarray) -> None:
    """One step of training runs through the clone's own graph and moves its weights."""
    before = model.get_weights()
    model.compile("rmsprop", "mse")
    loss = model.train_on_batch(x, y)
    assert np.isfinite(loss), loss
    after = model.get_weights()
    assert len(after) == len(before)
    assert any(not np.array_equal(a, b) for a, b in zip_strict(before, after)), "training changed nothing"


def test_keras225_clone_functional_model_scenarios() -> None:
    """keras 2.2.5's `test_clone_functional_model`, each clone checked for what it computes.

    The source's structure, weights and predictions are recorded, then the
    session is cleared: every clone is built in the new session, gets the
    recorded weights, and must have the source's layers (shared layer called
    twice, no masks) and give its predictions, then train.
    """
    keras = keras_module()
    val_a = np.random.random((10, 4))
    val_b = np.random.random((10, 4))
    val_out = np.random.random((10, 4))
    model = build_shared()
    weights = _positive_weights(model, seed=6)
    expected = model.predict([val_a, val_b])
    structure = _structure(model)
    assert [calls for _, _, _, calls, _ in structure].count(2) == 1  # the shared Dense
    keras.backend.clear_session()  # everything should work in a new session

    new_model = compat_clone_model(model)
    assert _structure(new_model) == structure
    new_model.set_weights(weights)
    np.testing.assert_allclose(new_model.predict([val_a, val_b]), expected, rtol=1e-6)
    _trains(new_model, [val_a, val_b], val_out)

    input_a = keras.Input(shape=(4,), name="a")
    input_b = keras.Input(shape=(4,), name="b")
    new_model = compat_clone_model(model, input_tensors=[input_a, input_b])
    assert new_model.inputs == [input_a, input_b]
    assert _structure(new_model) == structure
    new_model.set_weights(weights)
    np.testing.assert_allclose(new_model.predict([val_a, val_b]), expected, rtol=1e-6)
    _trains(new_model, [val_a, val_b], val_out)

    input_a = keras.backend.variable(val_a)
    input_b = keras.backend.variable(val_b)
    new_model = compat_clone_model(model, input_tensors=[input_a, input_b])
    assert _structure(new_model) == structure
    new_model.set_weights(weights)
    np.testing.assert_allclose(evaluate(new_model.outputs[0]), expected, rtol=1e-6)
    _trains(new_model, None, val_out)


def test_keras225_clone_sequential_model_scenarios() -> None:
    """keras 2.2.5's `test_clone_sequential_model`, checked like the functional one."""
    keras = keras_module()
    val_a = np.random.random((10, 4))
    val_out = np.random.random((10, 4))
    model = build_sequential()
    weights = _positive_weights(model, seed=7)
    expected = model.predict(val_a)
    structure = _structure(model)
    keras.backend.clear_session()

    new_model = compat_clone_model(model)
    assert isinstance(new_model, keras.models.Sequential)
    assert _structure(new_model) == structure
    new_model.set_weights(weights)
    np.testing.assert_allclose(new_model.predict(val_a), expected, rtol=1e-6)
    _trains(new_model, val_a, val_out)

    input_a = keras.Input(shape=(4,))
    new_model = compat_clone_model(model, input_tensors=input_a)
    assert new_model.inputs[0] is input_a
    assert _structure(new_model) == structure
    new_model.set_weights(weights)
    np.testing.assert_allclose(new_model.predict(val_a), expected, rtol=1e-6)
    _trains(new_model, val_a, val_out)

    input_a = keras.backend.variable(val_a)
    new_model = compat_clone_model(model, input_tensors=input_a)
    assert _structure(new_model) == structure
    new_model.set_weights(weights)
    np.testing.assert_allclose(evaluate(new_model.outputs[0]), expected, rtol=1e-6)
    _trains(new_model, None, val_out)


# -- devices -----------------------------------------------------------------


def _var_devices(model: Any) -> List[str]:
    return [w.device for w in model.weights]


def test_device_follows_source_and_device_argument() -> None:
    keras = keras_module()
    import compat_clone

    tf = keras.backend.tensorflow_backend.tf
    with tf.device("/CPU:0"):
        model = build_shared()
    assert model.weights and all("CPU:0" in d for d in _var_devices(model))
    clone = compat_clone_model(model)
    assert len(clone.weights) == len(model.weights)
    assert all("CPU:0" in d for d in _var_devices(clone)), _var_devices(clone)

    plain = build_12202_add()
    assert plain.weights and not any(_var_devices(plain))
    clone = compat_clone_model(plain, device="/CPU:0")
    assert len(clone.weights) == len(plain.weights)
    assert all("CPU:0" in d for d in _var_devices(clone))

    graph = keras.backend.get_session().graph
    n_ops = len(graph.get_operations())
    with pytest.raises(compat_clone.DeviceNotFoundError, match="GPU:7"):
        compat_clone_model(plain, device="/GPU:7")
    assert len(graph.get_operations()) == n_ops  # nothing was built


def test_subclassed_model_clones_structurally() -> None:
    """Native refuses every subclassed model (an AttributeError inside); compat_clone makes a new
    instance of its class, built on its inputs' shapes, with the weights copied."""
    keras = keras_module()

    if keras_version() < (2, 2, 0):
        pytest.skip("standalone Keras 2.0-2.1 have no subclassed models (Model() needs inputs and outputs)")

    class Sub(keras.models.Model):
        def __init__(self) -> None:
            super().__init__()
            self.dense = keras.layers.Dense(2)

        def call(self, inputs: Any) -> Any:
            return self.dense(inputs)

    unbuilt = compat_clone_model(Sub())  # never called: a clone as unbuilt as its source
    assert type(unbuilt) is Sub and not unbuilt.weights
    source = Sub()
    x = np.random.RandomState(0).rand(3, 4).astype("float32")
    expected = source.predict(x)
    clone = compat_clone_model(source, copy_weights=True)
    assert type(clone) is Sub and clone.dense is not source.dense
    np.testing.assert_allclose(clone.predict(x), expected, rtol=1e-6)
