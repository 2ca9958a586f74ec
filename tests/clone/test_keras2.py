"""Standalone Keras 2.0-2.3 (the `keras2` family), on the real old packages.

Runs in the matrix environments with standalone Keras 2.0.8 / 2.1.6 / 2.2.4 /
2.3.1 on TensorFlow 1.15 / Python 3.7, where their users run them, and 2.2.4 /
2.2.5 / 2.3.1 installed beside TensorFlow 2.15.1 with the `keras2_on_tf2`
fix-up (see `compat_clone_matrix/envfix`); skipped elsewhere. Every model is built with the
real `keras` package; nothing is mocked.
Helpers and builders: tests/clone/keras2_support.py. This module: the environment,
keras-team/keras #12202, masks and structure (nesting, sharing,
`input_tensors`); tests/clone/test_keras2_options.py: clone options, weights,
Keras 2.2.5's own cloning scenarios, devices and subclassed models.
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any, Callable, List

import numpy as np
import pytest

from tests.clone.keras2_support import (
    assert_same_predictions,
    build_12202_add,
    build_12202_swap,
    build_masked_lstm,
    build_masking_time_distributed,
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

pytestmark = pytest.mark.keras2


@pytest.fixture(autouse=True)
def _fresh_graph(request: Any) -> Any:
    """Each test builds in a fresh default graph/session (Keras 2 keeps one global)."""
    import keras

    keras.backend.clear_session()
    yield
    keras.backend.clear_session()


# -- the environment ----------------------------------------------------------


def test_environment_is_standalone_keras2_and_runs() -> None:
    """fit / predict / LSTM with a mask run at all: proves the fix-up works."""
    keras = keras_module()
    import compat_clone

    expected = os.environ.get("COMPAT_CLONE_EXPECT_VERSION")
    if expected:
        assert keras.__version__.startswith(expected), keras.__version__
    assert keras_version() < (2, 4, 0)
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
    code = "import sys; print(any('lazy fix-up' in repr(f) for f in sys.meta_path)); print('tensorflow' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    hooked = "True" if _tf_major() >= 2 else "False"
    assert out.stdout.split() == [hooked, "False"], out.stdout + out.stderr


def test_envfix_install_into(tmp_path: Any) -> None:
    from compat_clone_matrix import envfix as _envfix

    path = _envfix.install_into(tmp_path, "keras2_on_tf2")
    assert os.path.basename(path) == "compat_clone_envfix_keras2_on_tf2.pth"
    with open(path, encoding="utf-8") as f:
        text = f.read()
    assert text.startswith("import ") and "keras2_on_tf2" in text
    with pytest.raises(ValueError, match="Unknown environment fix-up 'nope'"):
        _envfix.install_into(tmp_path, "nope")
    with pytest.raises(FileNotFoundError):
        _envfix.install_into(tmp_path / "missing", "keras2_on_tf2")


# -- keras-team/keras #12202 ---------------------------------------------------


@pytest.mark.parametrize("builder", [build_12202_swap, build_12202_add], ids=["swap", "add"])
def test_12202_native_behaviour_and_compat_clone(builder: Callable[[], Any]) -> None:
    keras = keras_module()
    model = builder()
    if keras_version() < (2, 2, 5):
        # The real buggy release: native clone_model cannot compute the outputs.
        with pytest.raises(AssertionError, match="Could not compute output"):
            keras.models.clone_model(model)
    else:
        native = keras.models.clone_model(model)  # fixed by PR #12205
        assert len(native.outputs) == len(model.outputs)
    clone = compat_clone_model(model, copy_weights=True)
    assert clone is not model
    assert len(clone.outputs) == len(model.outputs)
    assert_same_predictions(model, clone, np.random.RandomState(1).standard_normal((5, 4)))


def test_12202_mask_entry_per_output() -> None:
    """Each output of a multi-output layer gets its own (None) mask entry."""
    model = build_12202_swap()
    clone = compat_clone_model(model)
    lam = [layer for layer in clone.layers if type(layer).__name__ == "Lambda"][0]
    node = inbound_nodes(lam)[-1]
    assert len(node.output_tensors) == 2
    assert list(node.output_masks) == [None, None]


# -- masks -------------------------------------------------------------------


def test_masks_survive_embedding_lstm() -> None:
    model = build_masked_lstm()
    clone = compat_clone_model(model, copy_weights=True)
    lstm = [layer for layer in clone.layers if type(layer).__name__ == "LSTM"][0]
    assert inbound_nodes(lstm)[-1].input_masks[0] is not None
    x = np.random.RandomState(2).randint(1, 10, (4, 6))
    x[:, 3:] = 0
    shifted = np.concatenate([x[:, 3:], x[:, :3]], axis=1)
    assert_same_predictions(model, clone, x)
    np.testing.assert_allclose(clone.predict(x), clone.predict(shifted), rtol=1e-5, atol=1e-6)


def test_masks_survive_masking_time_distributed() -> None:
    model = build_masking_time_distributed()
    clone = compat_clone_model(model, copy_weights=True)
    td = [layer for layer in clone.layers if type(layer).__name__ == "TimeDistributed"][0]
    assert inbound_nodes(td)[-1].input_masks[0] is not None
    assert inbound_nodes(td)[-1].output_masks[0] is not None
    x = np.random.RandomState(3).standard_normal((3, 6, 3)).astype("float32")
    x[:, 4:, :] = 0.0
    assert_same_predictions(model, clone, x)


# -- structure ---------------------------------------------------------------


def test_shared_layers_stay_shared() -> None:
    model = build_shared()
    clone = compat_clone_model(model, copy_weights=True)
    assert len(clone.layers) == len(model.layers)
    assert len(clone.weights) == len(model.weights)
    dense_1 = [layer for layer in model.layers if len(inbound_nodes(layer)) == 2][0]
    cloned_dense_1 = clone.get_layer(dense_1.name)
    assert cloned_dense_1 is not dense_1
    assert len(inbound_nodes(cloned_dense_1)) == 2
    x = [np.ones((2, 4)), np.full((2, 4), 2.0)]
    assert_same_predictions(model, clone, x)


def test_nested_models_default_and_recursive() -> None:
    keras = keras_module()
    model = build_nested()
    clone = compat_clone_model(model, copy_weights=True)
    inner, seq = clone.get_layer("inner"), clone.get_layer("seq")
    assert isinstance(inner, keras.models.Model) and inner is not model.get_layer("inner")
    assert isinstance(seq, keras.models.Sequential)
    assert inner.get_layer("inner_dense") is not model.get_layer("inner").get_layer("inner_dense")
    assert_same_predictions(model, clone, np.ones((2, 4)))

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

    rec = compat_clone_model(model, clone_function=rename, recursive=True)
    assert {"inner_dense", "seq_dense", "outer_dense"} <= set(seen)
    assert "inner" not in seen and "seq" not in seen
    assert rec.get_layer("inner").get_layer("c_inner_dense") is not None
    assert rec.get_layer("seq").layers[0].name == "c_seq_dense"

    seen.clear()
    flat = compat_clone_model(model, clone_function=rename)
    assert "inner" in seen and "seq" in seen and "inner_dense" not in seen
    assert flat.get_layer("c_inner") is not None


def test_nested_model_default_is_one_unit_and_recursive_fixes_unregistered() -> None:
    keras = keras_module()
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
        compat_clone_model(model)
    assert type(info.value) is type(native.value)
    assert not isinstance(info.value, compat_clone.CompatCloneError)
    assert "recursive=True" in "\n".join(getattr(info.value, "__notes__", []))
    clone = compat_clone_model(model, recursive=True)
    np.testing.assert_array_equal(clone.predict(np.ones((1, 4))), 2 * np.ones((1, 4)))


def test_sequential_with_and_without_input_tensors() -> None:
    keras = keras_module()
    K = keras.backend
    model = build_sequential()
    x = np.random.RandomState(4).standard_normal((3, 4))

    clone = compat_clone_model(model, copy_weights=True)
    assert isinstance(clone, keras.models.Sequential)
    assert_same_predictions(model, clone, x)

    new_input = keras.Input((4,))
    clone = compat_clone_model(model, input_tensors=new_input, copy_weights=True)
    assert clone.inputs[0] is new_input
    assert_same_predictions(model, clone, x)

    placeholder = K.placeholder((None, 4))
    clone = compat_clone_model(model, input_tensors=placeholder, copy_weights=True)
    f = K.function([placeholder, K.learning_phase()], [clone.outputs[0]])
    np.testing.assert_array_equal(f([x, 0])[0], model.predict(x))

    variable = K.variable(x)
    clone = compat_clone_model(model, input_tensors=[variable], copy_weights=True)
    np.testing.assert_allclose(evaluate(clone.outputs[0]), model.predict(x), rtol=1e-6)


def test_sequential_with_explicit_input_layer_keeps_its_input() -> None:
    keras = keras_module()
    model = keras.models.Sequential()
    model.add(keras.layers.InputLayer(input_shape=(4,), name="explicit_in"))
    model.add(keras.layers.Dense(2))
    clone = compat_clone_model(model)
    assert clone.built is model.built and clone.inputs  # 2.0-2.1 call no Sequential built before compile
    # 2.0-2.1 list the InputLayer in `model.layers`, 2.2+ do not: as the source, once
    assert [type(x).__name__ for x in clone.layers] == [type(x).__name__ for x in model.layers]
    assert clone.input_shape == (None, 4)


@pytest.mark.parametrize("kind", ["functional", "sequential"])
def test_input_tensors_from_keras_input_native_and_ours(kind: str) -> None:
    """Side by side: every 2.0-2.3 release's native clone_model builds onto `keras.Input(...)`
    tensors, and so does ours (2.0 / 2.1 have no `K.is_tensor`: our check once refused them)."""
    keras = keras_module()
    model = build_shared() if kind == "functional" else build_sequential()
    randomize(model)
    x = [np.random.RandomState(2).standard_normal((3, 4)) for _ in model.inputs]

    def fresh() -> Any:
        made = [keras.Input((4,)) for _ in model.inputs]
        return made if kind == "functional" else made[0]

    native_inputs, our_inputs = fresh(), fresh()
    native = keras.models.clone_model(model, input_tensors=native_inputs)
    ours = compat_clone_model(model, input_tensors=our_inputs, copy_weights=True)
    assert type(ours) is type(native), (type(ours), type(native))
    assert ours.inputs == (our_inputs if kind == "functional" else [our_inputs])
    assert [keras.backend.int_shape(t) for t in ours.outputs] == [keras.backend.int_shape(t) for t in native.outputs]
    native.set_weights(model.get_weights())  # native copies no weights
    assert_same_predictions(native, ours, x if kind == "functional" else x[0])
    assert_same_predictions(model, ours, x if kind == "functional" else x[0])


def test_functional_input_tensors_forms_and_errors() -> None:
    keras = keras_module()
    import compat_clone

    K = keras.backend
    model = build_shared()
    a, b = keras.Input((4,), name="a"), keras.Input((4,), name="b")
    clone = compat_clone_model(model, input_tensors=[a, b])
    assert clone.inputs == [a, b]
    pa, pb = K.placeholder((None, 4)), K.placeholder((None, 4))
    clone = compat_clone_model(model, input_tensors=[pa, pb])
    assert len(clone.inputs) == 2

    with pytest.raises(compat_clone.InputTensorsError, match="2 tensor"):
        compat_clone_model(model, input_tensors=[a])
    assert len(compat_clone_model(model, input_tensors=[[a], b]).inputs) == 2  # flattened
    with pytest.raises(compat_clone.InputTensorsError, match="numpy"):
        compat_clone_model(model, input_tensors=[np.ones((2, 4)), b])
