"""Standalone Keras 2.0-2.3 (the `keras2` family), on the real old packages.

Runs in the matrix environments with standalone Keras 2.0.8 / 2.1.6 / 2.2.4 /
2.3.1 on TensorFlow 1.15 / Python 3.7, where their users run them, and 2.2.4 /
2.2.5 / 2.3.1 installed beside TensorFlow 2.15.1 with the `keras2_on_tf2`
fix-up (see `compat_clone_matrix/envfix`); skipped elsewhere. Every model is built with the
real `keras` package; nothing is mocked.
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any, Callable, List

import numpy as np
import pytest
from tests._py import zip_strict

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


def _keras() -> Any:
    import keras

    return keras


def _version() -> tuple:
    keras = _keras()
    return tuple(int(p) for p in keras.__version__.split(".")[:3])


def _nodes(layer: Any) -> List[Any]:
    """The layer's inbound nodes (2.0-2.1.2 spell the attribute `inbound_nodes`)."""
    return layer._inbound_nodes if hasattr(layer, "_inbound_nodes") else layer.inbound_nodes


def _evaluate(tensor: Any) -> np.ndarray:
    """`K.eval(tensor)` in inference mode: the learning phase fed (2.0 gives it no default; Dropout reads it)."""
    K = _keras().backend
    phase = K.learning_phase()
    if isinstance(phase, int):
        return np.asarray(K.eval(tensor))
    return np.asarray(K.function([phase], [tensor])([0])[0])


def _clone(*args: Any, **kwargs: Any) -> Any:
    import compat_clone

    return compat_clone.clone_model(*args, **kwargs)


def _predict_all(model: Any, x: Any) -> List[np.ndarray]:
    out = model.predict(x)
    return out if isinstance(out, list) else [out]


def _assert_same_predictions(a: Any, b: Any, x: Any) -> None:
    expected, got = _predict_all(a, x), _predict_all(b, x)
    assert len(got) == len(expected), f"{len(got)} outputs, expected {len(expected)}"
    for p, q in zip_strict(expected, got):
        np.testing.assert_array_equal(p, q)


def _assert_same_weights(expected: List[np.ndarray], got: List[np.ndarray]) -> None:
    assert len(got) == len(expected), f"{len(got)} weights, expected {len(expected)}"
    for a, b in zip_strict(expected, got):
        np.testing.assert_array_equal(a, b)


# -- builders ----------------------------------------------------------------


def _swap_layer_class() -> type:
    keras = _keras()

    class SwapLayer(keras.layers.Layer):
        """Two inputs, two outputs, no mask support (keras 2.2.5's own test)."""

        def call(self, inputs: Any, **kwargs: Any) -> Any:
            return [inputs[1], inputs[0]]

        def compute_output_shape(self, input_shape: Any) -> Any:
            return [input_shape[1], input_shape[0]]

    return SwapLayer


def build_12202_swap() -> Any:
    """keras #12202: Lambda -> [x + 1, x] into a two-in two-out layer."""
    keras = _keras()
    inp = keras.Input((4,))
    a, b = keras.layers.Lambda(lambda x: [x + 1, x], lambda s: [s, s])(inp)
    a, b = _swap_layer_class()()([a, b])
    a = keras.layers.Dense(3, name="head_a")(a)
    return keras.models.Model(inp, [a, b])


def build_12202_add() -> Any:
    """keras #12202: Lambda -> [x, x] into Add."""
    keras = _keras()
    inp = keras.Input((4,))
    a, b = keras.layers.Lambda(lambda x: [x, x], lambda s: [s, s])(inp)
    out = keras.layers.Add()([a, b])
    out = keras.layers.Dense(2)(out)
    return keras.models.Model(inp, out)


def build_masked_lstm() -> Any:
    keras = _keras()
    inp = keras.Input((6,))
    x = keras.layers.Embedding(10, 4, mask_zero=True)(inp)
    x = keras.layers.LSTM(5)(x)
    return keras.models.Model(inp, keras.layers.Dense(2)(x))


def build_masking_time_distributed() -> Any:
    keras = _keras()
    inp = keras.Input((6, 3))
    x = keras.layers.Masking(0.0)(inp)
    x = keras.layers.TimeDistributed(keras.layers.Dense(4))(x)
    x = keras.layers.LSTM(2)(x)
    return keras.models.Model(inp, x)


def build_shared() -> Any:
    """keras 2.2.5's `test_clone_functional_model`: shared Dense, Dropout, BN."""
    keras = _keras()
    input_a = keras.Input(shape=(4,))
    input_b = keras.Input(shape=(4,))
    dense_1 = keras.layers.Dense(4)
    dense_2 = keras.layers.Dense(4)
    x_a = dense_1(input_a)
    x_a = keras.layers.Dropout(0.5)(x_a)
    x_a = keras.layers.BatchNormalization()(x_a)
    x_b = dense_1(input_b)
    x_a = dense_2(x_a)
    outputs = keras.layers.add([x_a, x_b])
    return keras.models.Model([input_a, input_b], outputs)


def build_sequential() -> Any:
    """keras 2.2.5's `test_clone_sequential_model`."""
    keras = _keras()
    model = keras.models.Sequential()
    model.add(keras.layers.Dense(4, input_shape=(4,)))
    model.add(keras.layers.BatchNormalization())
    model.add(keras.layers.Dropout(0.5))
    model.add(keras.layers.Dense(4))
    return model


def build_nested() -> Any:
    keras = _keras()
    inner_in = keras.Input((4,), name="inner_in")
    inner_out = keras.layers.Dense(3, name="inner_dense")(inner_in)
    inner = keras.models.Model(inner_in, inner_out, name="inner")
    seq = keras.models.Sequential([keras.layers.Dense(3, input_shape=(3,), name="seq_dense")], name="seq")
    inp = keras.Input((4,), name="outer_in")
    x = inner(inp)
    x = seq(x)
    return keras.models.Model(inp, keras.layers.Dense(2, name="outer_dense")(x), name="outer")


def _randomize(model: Any, seed: int = 0) -> None:
    rng = np.random.RandomState(seed)
    model.set_weights([rng.standard_normal(w.shape).astype(w.dtype) for w in model.get_weights()])


# -- the environment ----------------------------------------------------------


def test_environment_is_standalone_keras2_and_runs() -> None:
    """fit / predict / LSTM with a mask run at all: proves the fix-up works."""
    keras = _keras()
    import compat_clone

    expected = os.environ.get("COMPAT_CLONE_EXPECT_VERSION")
    if expected:
        assert keras.__version__.startswith(expected), keras.__version__
    assert _version() < (2, 4, 0)
    assert keras.backend.backend() == "tensorflow"
    model = build_masked_lstm()
    assert compat_clone.family_of(model).family == "keras2"
    model.compile("sgd", "mse")
    x = np.random.RandomState(0).randint(1, 10, (8, 6))
    x[:, 4:] = 0
    model.fit(x, np.zeros((8, 2)), epochs=1, verbose=0)
    # The mask is honoured: leading and trailing padding give the same output.
    shifted = np.concatenate([x[:, 4:], x[:, :4]], axis=1)
    np.testing.assert_allclose(model.predict(x), model.predict(shifted), rtol=1e-5, atol=1e-6)


def _tf_major() -> int:
    import tensorflow as tf

    return int(tf.__version__.split(".")[0])


def test_envfix_hook_is_lazy() -> None:
    """On TF 2 the `.pth` hook registers a finder; TensorFlow is not imported at start-up.
    On TF 1.15, where these releases belong, no fix-up is installed at all."""
    code = (
        "import sys; print(any('lazy fix-up' in repr(f) for f in sys.meta_path)); "
        "print('tensorflow' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    hooked = "True" if _tf_major() >= 2 else "False"
    assert out.stdout.split() == [hooked, "False"], out.stdout + out.stderr


def test_envfix_install_into(tmp_path: Any) -> None:
    from compat_clone_matrix import envfix as _envfix

    path = _envfix.install_into(tmp_path, "keras2_on_tf2")
    assert os.path.basename(path) == "compat_clone_envfix_keras2_on_tf2.pth"
    text = open(path, encoding="utf-8").read()
    assert text.startswith("import ") and "keras2_on_tf2" in text
    with pytest.raises(ValueError, match="Unknown environment fix-up 'nope'"):
        _envfix.install_into(tmp_path, "nope")
    with pytest.raises(FileNotFoundError):
        _envfix.install_into(tmp_path / "missing", "keras2_on_tf2")


# -- keras-team/keras #12202 ---------------------------------------------------


@pytest.mark.parametrize("builder", [build_12202_swap, build_12202_add], ids=["swap", "add"])
def test_12202_native_behaviour_and_compat_clone(builder: Callable[[], Any]) -> None:
    keras = _keras()
    model = builder()
    if _version() < (2, 2, 5):
        # The real buggy release: native clone_model cannot compute the outputs.
        with pytest.raises(AssertionError, match="Could not compute output"):
            keras.models.clone_model(model)
    else:
        native = keras.models.clone_model(model)  # fixed by PR #12205
        assert len(native.outputs) == len(model.outputs)
    clone = _clone(model, copy_weights=True)
    assert clone is not model
    assert len(clone.outputs) == len(model.outputs)
    _assert_same_predictions(model, clone, np.random.RandomState(1).standard_normal((5, 4)))


def test_12202_mask_entry_per_output() -> None:
    """Each output of a multi-output layer gets its own (None) mask entry."""
    model = build_12202_swap()
    clone = _clone(model)
    lam = [layer for layer in clone.layers if type(layer).__name__ == "Lambda"][0]
    node = _nodes(lam)[-1]
    assert len(node.output_tensors) == 2
    assert list(node.output_masks) == [None, None]


# -- masks -------------------------------------------------------------------


def test_masks_survive_embedding_lstm() -> None:
    model = build_masked_lstm()
    clone = _clone(model, copy_weights=True)
    lstm = [layer for layer in clone.layers if type(layer).__name__ == "LSTM"][0]
    assert _nodes(lstm)[-1].input_masks[0] is not None
    x = np.random.RandomState(2).randint(1, 10, (4, 6))
    x[:, 3:] = 0
    shifted = np.concatenate([x[:, 3:], x[:, :3]], axis=1)
    _assert_same_predictions(model, clone, x)
    np.testing.assert_allclose(clone.predict(x), clone.predict(shifted), rtol=1e-5, atol=1e-6)


def test_masks_survive_masking_time_distributed() -> None:
    model = build_masking_time_distributed()
    clone = _clone(model, copy_weights=True)
    td = [layer for layer in clone.layers if type(layer).__name__ == "TimeDistributed"][0]
    assert _nodes(td)[-1].input_masks[0] is not None
    assert _nodes(td)[-1].output_masks[0] is not None
    x = np.random.RandomState(3).standard_normal((3, 6, 3)).astype("float32")
    x[:, 4:, :] = 0.0
    _assert_same_predictions(model, clone, x)


# -- structure ---------------------------------------------------------------


def test_shared_layers_stay_shared() -> None:
    model = build_shared()
    clone = _clone(model, copy_weights=True)
    assert len(clone.layers) == len(model.layers)
    assert len(clone.weights) == len(model.weights)
    dense_1 = [layer for layer in model.layers if len(_nodes(layer)) == 2][0]
    cloned_dense_1 = clone.get_layer(dense_1.name)
    assert cloned_dense_1 is not dense_1
    assert len(_nodes(cloned_dense_1)) == 2
    x = [np.ones((2, 4)), np.full((2, 4), 2.0)]
    _assert_same_predictions(model, clone, x)


def test_nested_models_default_and_recursive() -> None:
    keras = _keras()
    model = build_nested()
    clone = _clone(model, copy_weights=True)
    inner, seq = clone.get_layer("inner"), clone.get_layer("seq")
    assert isinstance(inner, keras.models.Model) and inner is not model.get_layer("inner")
    assert isinstance(seq, keras.models.Sequential)
    assert inner.get_layer("inner_dense") is not model.get_layer("inner").get_layer("inner_dense")
    _assert_same_predictions(model, clone, np.ones((2, 4)))

    seen: List[str] = []

    def rename(layer: Any) -> Any:
        seen.append(layer.name)
        config = layer.get_config()
        if isinstance(config, list):  # 2.0-2.1: a Sequential's config is the list of its layers
            new = layer.__class__.from_config(config)
            new.name = "c_" + layer.name
            return new
        config["name"] = "c_" + config["name"]
        return layer.__class__.from_config(config)

    rec = _clone(model, clone_function=rename, recursive=True)
    assert {"inner_dense", "seq_dense", "outer_dense"} <= set(seen)
    assert "inner" not in seen and "seq" not in seen
    assert rec.get_layer("inner").get_layer("c_inner_dense") is not None
    assert rec.get_layer("seq").layers[0].name == "c_seq_dense"

    seen.clear()
    flat = _clone(model, clone_function=rename)
    assert "inner" in seen and "seq" in seen and "inner_dense" not in seen
    assert flat.get_layer("c_inner") is not None


def test_nested_model_default_is_one_unit_and_recursive_fixes_unregistered() -> None:
    keras = _keras()
    import compat_clone

    class Scale(keras.layers.Layer):
        def call(self, x: Any) -> Any:
            return x * 2.0

    inner_in = keras.Input((4,))
    inner = keras.models.Model(inner_in, Scale()(inner_in), name="inner")
    inp = keras.Input((4,))
    model = keras.models.Model(inp, inner(inp))
    # Default: the nested model is one unit (a config round trip), like native;
    # its unregistered class cannot be found by name: native's ValueError goes
    # on, the advice in a note (`native-exception-type`).
    with pytest.raises(ValueError) as native:
        keras.models.clone_model(model)
    with pytest.raises(ValueError) as info:
        _clone(model)
    assert type(info.value) is type(native.value)
    assert not isinstance(info.value, compat_clone.CompatCloneError)
    assert "recursive=True" in "\n".join(getattr(info.value, "__notes__", []))
    clone = _clone(model, recursive=True)
    np.testing.assert_array_equal(clone.predict(np.ones((1, 4))), 2 * np.ones((1, 4)))


def test_sequential_with_and_without_input_tensors() -> None:
    keras = _keras()
    K = keras.backend
    model = build_sequential()
    x = np.random.RandomState(4).standard_normal((3, 4))

    clone = _clone(model, copy_weights=True)
    assert isinstance(clone, keras.models.Sequential)
    _assert_same_predictions(model, clone, x)

    new_input = keras.Input((4,))
    clone = _clone(model, input_tensors=new_input, copy_weights=True)
    assert clone.inputs[0] is new_input
    _assert_same_predictions(model, clone, x)

    placeholder = K.placeholder((None, 4))
    clone = _clone(model, input_tensors=placeholder, copy_weights=True)
    f = K.function([placeholder, K.learning_phase()], [clone.outputs[0]])
    np.testing.assert_array_equal(f([x, 0])[0], model.predict(x))

    variable = K.variable(x)
    clone = _clone(model, input_tensors=[variable], copy_weights=True)
    np.testing.assert_allclose(_evaluate(clone.outputs[0]), model.predict(x), rtol=1e-6)


def test_sequential_with_explicit_input_layer_keeps_its_input() -> None:
    keras = _keras()
    model = keras.models.Sequential()
    model.add(keras.layers.InputLayer(input_shape=(4,), name="explicit_in"))
    model.add(keras.layers.Dense(2))
    clone = _clone(model)
    assert clone.built is model.built and clone.inputs  # 2.0-2.1 call no Sequential built before compile
    # 2.0-2.1 list the InputLayer in `model.layers`, 2.2+ do not: as the source, once
    assert [type(x).__name__ for x in clone.layers] == [type(x).__name__ for x in model.layers]
    assert clone.input_shape == (None, 4)


@pytest.mark.parametrize("kind", ["functional", "sequential"])
def test_input_tensors_from_keras_input_native_and_ours(kind: str) -> None:
    """Side by side: every 2.0-2.3 release's native clone_model builds onto `keras.Input(...)`
    tensors, and so does ours (2.0 / 2.1 have no `K.is_tensor`: our check once refused them)."""
    keras = _keras()
    model = build_shared() if kind == "functional" else build_sequential()
    _randomize(model)
    x = [np.random.RandomState(2).standard_normal((3, 4)) for _ in model.inputs]

    def fresh() -> Any:
        made = [keras.Input((4,)) for _ in model.inputs]
        return made if kind == "functional" else made[0]

    native_inputs, our_inputs = fresh(), fresh()
    native = keras.models.clone_model(model, input_tensors=native_inputs)
    ours = _clone(model, input_tensors=our_inputs, copy_weights=True)
    assert type(ours) is type(native), (type(ours), type(native))
    assert ours.inputs == (our_inputs if kind == "functional" else [our_inputs])
    assert [keras.backend.int_shape(t) for t in ours.outputs] == [keras.backend.int_shape(t) for t in native.outputs]
    native.set_weights(model.get_weights())  # native copies no weights
    _assert_same_predictions(native, ours, x if kind == "functional" else x[0])
    _assert_same_predictions(model, ours, x if kind == "functional" else x[0])


def test_functional_input_tensors_forms_and_errors() -> None:
    keras = _keras()
    import compat_clone

    K = keras.backend
    model = build_shared()
    a, b = keras.Input((4,), name="a"), keras.Input((4,), name="b")
    clone = _clone(model, input_tensors=[a, b])
    assert clone.inputs == [a, b]
    pa, pb = K.placeholder((None, 4)), K.placeholder((None, 4))
    clone = _clone(model, input_tensors=[pa, pb])
    assert len(clone.inputs) == 2

    with pytest.raises(compat_clone.InputTensorsError, match="2 tensor"):
        _clone(model, input_tensors=[a])
    assert len(_clone(model, input_tensors=[[a], b]).inputs) == 2  # flattened
    with pytest.raises(compat_clone.InputTensorsError, match="numpy"):
        _clone(model, input_tensors=[np.ones((2, 4)), b])


# -- options -----------------------------------------------------------------


def test_clone_function_applied_to_every_layer() -> None:
    model = build_shared()
    seen: List[str] = []

    def fn(layer: Any) -> Any:
        seen.append(layer.name)
        return layer.__class__.from_config(layer.get_config())

    _clone(model, clone_function=fn)
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
        _clone(model, clone_function=boom)
    assert bn_name in "\n".join(getattr(info.value, "__notes__", []))
    with pytest.raises(compat_clone.CloneFunctionError, match="must return a Keras layer"):
        _clone(model, clone_function=lambda layer: "not a layer")


def test_call_function_wraps_every_call() -> None:
    model = build_12202_swap()
    called: List[str] = []

    def call(layer: Any, *args: Any, **kwargs: Any) -> Any:
        called.append(layer.name)
        return layer(*args, **kwargs)

    clone = _clone(model, call_function=call, copy_weights=True)
    assert len(called) == len(model.layers) - 1
    _assert_same_predictions(model, clone, np.ones((2, 4)))


def test_lambda_reading_module_globals() -> None:
    keras = _keras()
    inp = keras.Input((2,))
    model = keras.models.Model(inp, keras.layers.Lambda(lambda t: t * SCALE)(inp))
    clone = _clone(model)
    np.testing.assert_allclose(clone.predict(np.ones((1, 2))), [[SCALE, SCALE]])


def test_name_and_trainable() -> None:
    model = build_nested()
    model.get_layer("inner").trainable = False
    model.trainable = False
    clone = _clone(model, name="copy")
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
    clone = _clone(model, copy_weights=True)
    _assert_same_weights(model.get_weights(), clone.get_weights())

    # One cached op: a second copy does not grow the graph.
    _randomize(clone, seed=9)
    graph = _keras().backend.get_session().graph
    compat_clone.copy_weights(model, clone)
    n_ops = len(graph.get_operations())
    _randomize(clone, seed=10)
    compat_clone.copy_weights(model, clone)
    _randomize(clone, seed=11)  # set_weights adds its own (cached) assign placeholders
    n_after_set = len(graph.get_operations())
    compat_clone.copy_weights(model, clone)
    assert len(graph.get_operations()) == n_after_set
    assert n_ops <= n_after_set
    _assert_same_weights(model.get_weights(), clone.get_weights())


def test_source_untouched() -> None:
    keras = _keras()
    inp = keras.Input((6,))
    x = keras.layers.Embedding(10, 4, mask_zero=True)(inp)
    x = keras.layers.LSTM(3)(x, training=False)
    model = keras.models.Model(inp, x)
    _randomize(model)
    lstm = model.layers[2]
    before_args = dict(_nodes(lstm)[0].arguments)
    before_nodes = {id(layer): len(_nodes(layer)) for layer in model.layers}
    before_weights = model.get_weights()

    clone = _clone(model, copy_weights=True)
    _randomize(clone, seed=1)
    assert _nodes(lstm)[0].arguments == before_args  # native adds 'mask'
    assert {id(layer): len(_nodes(layer)) for layer in model.layers} == before_nodes
    _assert_same_weights(before_weights, model.get_weights())

    # Native 2.0-2.3.1 write the *clone's* mask into the source node.
    keras.models.clone_model(model)
    assert "mask" in _nodes(lstm)[0].arguments


# -- keras 2.2.5's own cloning scenarios, through compat_clone -----------------


def _structure(model: Any) -> List[Any]:
    """Layer by layer (input layers left out): name, class, weight shapes, calls, output masks."""
    K = _keras().backend
    return [
        (
            layer.name,
            type(layer).__name__,
            [K.int_shape(w) for w in layer.weights],
            len(_nodes(layer)),
            [[m is None for m in _as_list(node.output_masks)] for node in _nodes(layer)],
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
    keras = _keras()
    val_a = np.random.random((10, 4))
    val_b = np.random.random((10, 4))
    val_out = np.random.random((10, 4))
    model = build_shared()
    weights = _positive_weights(model, seed=6)
    expected = model.predict([val_a, val_b])
    structure = _structure(model)
    assert [calls for _, _, _, calls, _ in structure].count(2) == 1  # the shared Dense
    keras.backend.clear_session()  # everything should work in a new session

    new_model = _clone(model)
    assert _structure(new_model) == structure
    new_model.set_weights(weights)
    np.testing.assert_allclose(new_model.predict([val_a, val_b]), expected, rtol=1e-6)
    _trains(new_model, [val_a, val_b], val_out)

    input_a = keras.Input(shape=(4,), name="a")
    input_b = keras.Input(shape=(4,), name="b")
    new_model = _clone(model, input_tensors=[input_a, input_b])
    assert new_model.inputs == [input_a, input_b]
    assert _structure(new_model) == structure
    new_model.set_weights(weights)
    np.testing.assert_allclose(new_model.predict([val_a, val_b]), expected, rtol=1e-6)
    _trains(new_model, [val_a, val_b], val_out)

    input_a = keras.backend.variable(val_a)
    input_b = keras.backend.variable(val_b)
    new_model = _clone(model, input_tensors=[input_a, input_b])
    assert _structure(new_model) == structure
    new_model.set_weights(weights)
    np.testing.assert_allclose(_evaluate(new_model.outputs[0]), expected, rtol=1e-6)
    _trains(new_model, None, val_out)


def test_keras225_clone_sequential_model_scenarios() -> None:
    """keras 2.2.5's `test_clone_sequential_model`, checked like the functional one."""
    keras = _keras()
    val_a = np.random.random((10, 4))
    val_out = np.random.random((10, 4))
    model = build_sequential()
    weights = _positive_weights(model, seed=7)
    expected = model.predict(val_a)
    structure = _structure(model)
    keras.backend.clear_session()

    new_model = _clone(model)
    assert isinstance(new_model, keras.models.Sequential)
    assert _structure(new_model) == structure
    new_model.set_weights(weights)
    np.testing.assert_allclose(new_model.predict(val_a), expected, rtol=1e-6)
    _trains(new_model, val_a, val_out)

    input_a = keras.Input(shape=(4,))
    new_model = _clone(model, input_tensors=input_a)
    assert new_model.inputs[0] is input_a
    assert _structure(new_model) == structure
    new_model.set_weights(weights)
    np.testing.assert_allclose(new_model.predict(val_a), expected, rtol=1e-6)
    _trains(new_model, val_a, val_out)

    input_a = keras.backend.variable(val_a)
    new_model = _clone(model, input_tensors=input_a)
    assert _structure(new_model) == structure
    new_model.set_weights(weights)
    np.testing.assert_allclose(_evaluate(new_model.outputs[0]), expected, rtol=1e-6)
    _trains(new_model, None, val_out)


# -- devices -----------------------------------------------------------------


def _var_devices(model: Any) -> List[str]:
    return [w.device for w in model.weights]


def test_device_follows_source_and_device_argument() -> None:
    keras = _keras()
    import compat_clone

    tf = keras.backend.tensorflow_backend.tf
    with tf.device("/CPU:0"):
        model = build_shared()
    assert model.weights and all("CPU:0" in d for d in _var_devices(model))
    clone = _clone(model)
    assert len(clone.weights) == len(model.weights)
    assert all("CPU:0" in d for d in _var_devices(clone)), _var_devices(clone)

    plain = build_12202_add()
    assert plain.weights and not any(_var_devices(plain))
    clone = _clone(plain, device="/CPU:0")
    assert len(clone.weights) == len(plain.weights)
    assert all("CPU:0" in d for d in _var_devices(clone))

    graph = keras.backend.get_session().graph
    n_ops = len(graph.get_operations())
    with pytest.raises(compat_clone.DeviceNotFoundError, match="GPU:7"):
        _clone(plain, device="/GPU:7")
    assert len(graph.get_operations()) == n_ops  # nothing was built


def test_subclassed_model_clones_structurally() -> None:
    """Native refuses every subclassed model (an AttributeError inside); compat_clone makes a new
    instance of its class, built on its inputs' shapes, with the weights copied."""
    keras = _keras()

    if _version() < (2, 2, 0):
        pytest.skip("standalone Keras 2.0-2.1 have no subclassed models (Model() needs inputs and outputs)")

    class Sub(keras.models.Model):
        def __init__(self) -> None:
            super().__init__()
            self.dense = keras.layers.Dense(2)

        def call(self, inputs: Any) -> Any:
            return self.dense(inputs)

    unbuilt = _clone(Sub())  # never called: a clone as unbuilt as its source
    assert type(unbuilt) is Sub and not unbuilt.weights
    source = Sub()
    x = np.random.RandomState(0).rand(3, 4).astype("float32")
    expected = source.predict(x)
    clone = _clone(source, copy_weights=True)
    assert type(clone) is Sub and clone.dense is not source.dense
    np.testing.assert_allclose(clone.predict(x), expected, rtol=1e-6)
