"""Dispatch: the family comes from the model object, nothing is imported on a guess."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from typing import Any

import pytest

import compat_clone
from compat_clone.families import registry
from tests.support._py import zip_strict

FRAMEWORKS = ("tensorflow", "keras", "tf_keras", "jax", "torch", "numpy")


def test_import_loads_no_framework() -> None:
    code = (
        "import sys, json, compat_clone, compat_clone.tools.cli;"
        f"print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in {FRAMEWORKS!r})))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []


def test_import_loads_no_clone_engine() -> None:
    """`import compat_clone` loads the public face and the family registry; the engine waits for a call."""
    code = "import sys, json, compat_clone; print(json.dumps(sorted(m for m in sys.modules if m.startswith('compat_clone'))))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = json.loads(out.stdout.strip().splitlines()[-1])
    assert not [m for m in loaded if m.startswith(("compat_clone.families._", "compat_clone.weights"))], loaded


def test_cli_help_loads_no_framework() -> None:
    code = (
        "import sys, json, contextlib, io\n"
        "from compat_clone.tools.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    main(['--version'])\n"
        f"print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in {FRAMEWORKS!r})))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []


def test_family_of_is_frozen_record(K: Any) -> None:
    x = K.Input((2,))
    info = compat_clone.family_of(K.models.Model(x, K.layers.Dense(1)(x)))
    assert info.family in ("keras3", "tf_keras", "keras2")
    assert info.version == K.__version__
    with pytest.raises(dataclasses.FrozenInstanceError):
        info.family = "other"  # type: ignore[misc]
    if info.family == "keras3":
        assert info.backend == K.backend.backend()


def test_family_cached_per_class(K: Any) -> None:
    x = K.Input((2,))
    model = K.models.Model(x, K.layers.Dense(1)(x))
    compat_clone.family_of(model)
    assert f"{type(model).__module__}.{type(model).__qualname__}" in registry.classes_seen()


def test_two_families_in_one_process() -> None:
    """A tf_keras model and a Keras 3 model each go to their own adapter."""
    keras = pytest.importorskip("keras")
    tf_keras = pytest.importorskip("tf_keras")
    if not keras.__version__.startswith("3"):
        pytest.skip("needs Keras 3 beside tf_keras")
    a = keras.Input((2,))
    k3 = keras.Model(a, keras.layers.Dense(1)(a))
    b = tf_keras.Input((2,))
    k2 = tf_keras.Model(b, tf_keras.layers.Dense(1)(b))
    assert compat_clone.family_of(k3).implementation == "compat_clone.families.keras3"
    assert compat_clone.family_of(k2).implementation == "compat_clone.families.tf_keras"
    c3, c2 = compat_clone.clone_model(k3), compat_clone.clone_model(k2)
    assert type(c3).__module__.startswith("keras.")
    assert type(c2).__module__.startswith("tf_keras.")


@pytest.mark.parametrize("bad", ["model", None, 3, [1, 2]])
def test_not_a_model(bad: Any) -> None:
    with pytest.raises(compat_clone.NotAModelError) as info:
        compat_clone.clone_model(bad)
    assert isinstance(info.value, TypeError)
    assert "Received: model=" in str(info.value)


def test_numpy_array_is_not_a_model() -> None:
    np = pytest.importorskip("numpy")
    with pytest.raises(TypeError, match=r"numpy\.ndarray with shape=\(2, 3\)"):
        compat_clone.clone_model(np.zeros((2, 3)))


def test_layer_is_not_a_model(K: Any) -> None:
    with pytest.raises(compat_clone.NotAModelError, match="Received a layer"):
        compat_clone.clone_model(K.layers.Dense(2))


def test_unknown_keyword_is_named(K: Any) -> None:
    x = K.Input((2,))
    model = K.models.Model(x, K.layers.Dense(1)(x))
    with pytest.raises(compat_clone.InvalidArgumentError, match="copy_weight"):
        compat_clone.clone_model(model, copy_weight=True)


def test_positional_signature_matches_native(K: Any) -> None:
    """model, input_tensors, clone_function positionally, as natively."""
    x = K.Input((2,))
    model = K.models.Model(x, K.layers.Dense(1, name="d")(x))
    seen = []

    def fn(layer: Any) -> Any:
        seen.append(layer.name)
        return layer.__class__.from_config(layer.get_config())

    new_input = K.Input((2,))
    clone = compat_clone.clone_model(model, new_input, fn)
    assert seen == ["d"]
    assert clone.inputs[0] is new_input or clone.inputs[0].name == new_input.name


def test_weights_not_copied_by_default(K: Any) -> None:
    import numpy as np

    x = K.Input((4,))
    model = K.models.Model(x, K.layers.Dense(3, kernel_initializer="ones")(x))
    model.set_weights([w + 0.5 for w in model.get_weights()])
    clone = compat_clone.clone_model(model)
    assert not np.array_equal(clone.get_weights()[0], model.get_weights()[0])


def test_copy_weights_function_returns_target(K: Any) -> None:
    import numpy as np

    x = K.Input((4,))
    model = K.models.Model(x, K.layers.Dense(3)(x))
    clone = compat_clone.clone_model(model)
    assert compat_clone.copy_weights(model, clone) is clone
    expected, got = model.get_weights(), clone.get_weights()
    assert len(got) == len(expected) == 2
    for u, v in zip_strict(expected, got):
        np.testing.assert_array_equal(u, v)


def test_copy_weights_mismatch_names_variable(K: Any) -> None:
    import numpy as np

    x = K.Input((4,))
    source = K.models.Model(x, K.layers.Dense(3, name="head")(x))
    y = K.Input((4,))
    target = K.models.Model(y, K.layers.Dense(5, name="head")(y))
    before = [w.copy() for w in target.get_weights()]
    with pytest.raises(compat_clone.WeightsMismatchError) as info:
        compat_clone.copy_weights(source, target)
    assert isinstance(info.value, ValueError)
    assert "'head'" in str(info.value) and "(4, 3)" in str(info.value) and "(4, 5)" in str(info.value)
    after = target.get_weights()
    assert len(after) == len(before) == 2
    for u, v in zip_strict(before, after):
        np.testing.assert_array_equal(u, v)


def test_copy_weights_matches_by_layer_not_flat_order(K: Any) -> None:
    """A clone_function that swaps a weightless layer keeps weights aligned."""
    import numpy as np

    x = K.Input((3,))
    h = K.layers.Dense(4, name="a")(x)
    h = K.layers.Dropout(0.5, name="drop")(h)
    model = K.models.Model(x, K.layers.Dense(2, name="b")(h))

    def fn(layer: Any) -> Any:
        if layer.name == "drop":
            return K.layers.Activation("linear", name="drop")
        return layer.__class__.from_config(layer.get_config())

    clone = compat_clone.clone_model(model, clone_function=fn, copy_weights=True)
    assert type(clone.get_layer("drop")).__name__ == "Activation"  # the swap happened
    for name in ("a", "b"):
        expected, got = model.get_layer(name).get_weights(), clone.get_layer(name).get_weights()
        assert len(got) == len(expected) == 2, name  # kernel and bias
        for u, v in zip_strict(expected, got):
            np.testing.assert_array_equal(u, v)
