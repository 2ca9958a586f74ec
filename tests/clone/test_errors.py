"""Bad input gets a clear error, in every family.

Each error is one of the package's (`CompatCloneError` plus the built-in a
caller expects), and its message says what was received, what was expected
and how to fix it; never an AttributeError or a bare error from deep inside
Keras.
"""

from __future__ import annotations

import inspect
import threading
from typing import Any

import numpy as np
import pytest

import compat_clone
from compat_clone import (
    CloneFunctionError,
    CompatCloneError,
    DeviceNotFoundError,
    InputTensorsError,
    InvalidArgumentError,
    NotAModelError,
    UnsupportedFeatureError,
    UnsupportedModelError,
    WeightsMismatchError,
    WeightsUnreadableError,
)
from tests.clone.features import NativeLacks, family_name, native_clone, skip_without_subclassed_models
from tests.clone.model_state import other_family, other_family_input


def dense_model(K: Any, units: int = 2, name: str = "d") -> Any:
    inputs = K.Input((4,))
    return K.models.Model(inputs, K.layers.Dense(units, name=name)(inputs))


def two_input_model(K: Any) -> Any:
    a, b = K.Input((4,), name="a"), K.Input((3,), name="b")
    return K.models.Model([a, b], K.layers.Dense(2)(K.layers.Concatenate()([a, b])))


def sequential_model(K: Any) -> Any:
    return K.models.Sequential([K.layers.Dense(2, input_shape=(4,), name="sd")])


# -- not a model ------------------------------------------------------------


@pytest.mark.parametrize(
    "value, shown",
    [("model.h5", "str"), (None, "NoneType"), (3, "int"), ({"a": 1}, "dict"), (np.zeros((2, 3)), "ndarray")],
    ids=["str", "None", "int", "dict", "numpy"],
)
def test_not_a_model(K: Any, value: Any, shown: str) -> None:
    with pytest.raises(NotAModelError) as info:
        compat_clone.clone_model(value)
    assert isinstance(info.value, TypeError)
    message = str(info.value)
    assert shown in message and "Keras model" in message


def test_numpy_array_message_shows_shape(K: Any) -> None:
    with pytest.raises(NotAModelError, match=r"ndarray with shape=\(2, 3\)"):
        compat_clone.clone_model(np.zeros((2, 3)))


def test_a_layer_is_not_a_model(K: Any) -> None:
    layer = K.layers.Dense(2)
    with pytest.raises(NotAModelError, match="Received a layer") as info:
        compat_clone.clone_model(layer)
    assert "Dense" in str(info.value) and "from_config" in str(info.value)


def test_a_model_class_is_not_a_model(K: Any) -> None:
    with pytest.raises(NotAModelError, match="Instantiate it first"):
        compat_clone.clone_model(K.models.Model)


def test_copy_weights_not_a_model(K: Any) -> None:
    model = dense_model(K)
    with pytest.raises(NotAModelError, match="`target`"):
        compat_clone.copy_weights(model, "clone")
    with pytest.raises(NotAModelError):
        compat_clone.copy_weights(None, model)


# -- arguments --------------------------------------------------------------


def test_unknown_keyword(K: Any) -> None:
    with pytest.raises(InvalidArgumentError, match="copy_weight") as info:
        compat_clone.clone_model(dense_model(K), copy_weight=True)
    assert "copy_weights" in str(info.value)  # the valid spelling is listed


@pytest.mark.parametrize(
    "kwargs, argname",
    [
        ({"clone_function": 1}, "clone_function"),
        ({"call_function": "f"}, "call_function"),
        ({"recursive": "yes"}, "recursive"),
        ({"copy_weights": 1}, "copy_weights"),
        ({"name": 3}, "name"),
        ({"name": ""}, "name"),
    ],
)
def test_bad_argument_values(K: Any, kwargs: Any, argname: str) -> None:
    with pytest.raises(InvalidArgumentError, match=argname):
        compat_clone.clone_model(dense_model(K), **kwargs)


def test_unknown_device(K: Any) -> None:
    with pytest.raises(DeviceNotFoundError) as info:
        compat_clone.clone_model(dense_model(K), device="/XPU:97")
    assert "XPU:97" in str(info.value)


# -- input_tensors -----------------------------------------------------------


def test_input_tensors_from_another_family(K: Any) -> None:
    foreign = other_family_input(K, (4,))
    if foreign is None:
        pytest.skip("no second Keras family importable in this environment")
    with pytest.raises(InputTensorsError) as info:
        compat_clone.clone_model(dense_model(K), input_tensors=foreign)
    assert type(foreign).__module__.partition(".")[0] in str(info.value)
    with pytest.raises(InputTensorsError):
        compat_clone.clone_model(sequential_model(K), input_tensors=foreign)


@pytest.mark.parametrize("value", ["x", np.zeros((2, 4), "float32"), [1.0]], ids=["str", "numpy", "float"])
def test_input_tensors_not_tensors(K: Any, value: Any) -> None:
    with pytest.raises(InputTensorsError, match="symbolic tensors"):
        compat_clone.clone_model(dense_model(K), input_tensors=value)


def test_input_tensors_wrong_count(K: Any) -> None:
    with pytest.raises(InputTensorsError, match="1 tensor") as info:
        compat_clone.clone_model(dense_model(K), input_tensors=[K.Input((4,)), K.Input((4,))])
    assert "Received 2" in str(info.value)
    with pytest.raises(InputTensorsError, match="2 tensor"):
        compat_clone.clone_model(two_input_model(K), input_tensors=[K.Input((4,))])
    with pytest.raises(InputTensorsError, match="exactly one tensor"):
        compat_clone.clone_model(sequential_model(K), input_tensors=[K.Input((4,)), K.Input((4,))])


def test_input_tensors_other_structure_follows_native(K: Any) -> None:
    # Keras 2 families re-pack another structure holding the right number of
    # tensors, natively and here; Keras 3 refuses any structure but
    # `model.input`'s (natively too, in every release), and so do we, with
    # native's wording in our message.
    model = two_input_model(K)
    given = [[K.Input((4,))], K.Input((3,))]
    if family_name(K) != "keras3":
        clone = compat_clone.clone_model(model, input_tensors=given)
        assert len(clone.inputs) == 2
        return
    with pytest.raises(ValueError):  # native wording differs between releases
        K.models.clone_model(model, input_tensors=given)
    with pytest.raises(InputTensorsError, match="must have the same structure as model.input"):
        compat_clone.clone_model(model, input_tensors=given)


# -- clone_function / call_function ------------------------------------------


@pytest.mark.parametrize("returned", ["None", "layer", "class"])
def test_clone_function_returns_non_layer(K: Any, returned: str) -> None:
    value = {"None": None, "layer": "layer", "class": K.layers.Dense}[returned]
    with pytest.raises(CloneFunctionError) as info:
        compat_clone.clone_model(dense_model(K, name="named_d"), clone_function=lambda layer: value)
    message = str(info.value)
    assert "'named_d'" in message and "must return a Keras layer" in message


def _notes(exc: BaseException) -> str:
    return "\n".join(getattr(exc, "__notes__", []))


def test_clone_function_raises(K: Any) -> None:
    """The user's exception reaches the caller as the same object, as natively (`wrapped-user-exception`)."""
    raised = []

    def boom(layer: Any) -> Any:
        raised.append(RuntimeError("boom from user code"))
        raise raised[-1]

    for model, name in ((dense_model(K, name="named_d"), "named_d"), (sequential_model(K), "sd")):
        with pytest.raises(RuntimeError) as info:
            compat_clone.clone_model(model, clone_function=boom)
        assert info.value is raised[-1] and type(info.value) is RuntimeError
        assert str(info.value) == "boom from user code"
        assert f"{name!r}" in _notes(info.value) and "clone_function" in _notes(info.value)
        if "clone_function" in inspect.signature(K.models.clone_model).parameters:  # not Keras 2.0-2.2
            with pytest.raises(RuntimeError) as native:  # the native call lets it through too
                K.models.clone_model(model, clone_function=boom)
            assert native.value is raised[-1]


def test_clone_function_error_of_the_package_passes_through(K: Any) -> None:
    def inner_error(layer: Any) -> Any:
        raise WeightsMismatchError("raised by the user's own copy")

    with pytest.raises(WeightsMismatchError, match="user's own copy"):
        compat_clone.clone_model(dense_model(K), clone_function=inner_error)


def _call_function_error(K: Any, model: Any, fn: Any) -> CompatCloneError:
    """The package error a failing `call_function` gives.

    `call_function` exists in every family (compat_clone supplies it where the
    native clone has none), so an `UnsupportedFeatureError` here is a failure.
    """
    with pytest.raises(CompatCloneError) as info:
        compat_clone.clone_model(model, call_function=fn)
    assert not isinstance(info.value, UnsupportedFeatureError), repr(info.value)
    return info.value


def test_call_function_raises(K: Any) -> None:
    error = KeyError("from call_function")

    def boom(layer: Any, *args: Any, **kwargs: Any) -> Any:
        raise error

    with pytest.raises(KeyError) as info:
        compat_clone.clone_model(dense_model(K, name="called_d"), call_function=boom)
    assert info.value is error
    assert "'called_d'" in _notes(error) and "call_function" in _notes(error)


def test_call_function_returns_non_tensor(K: Any) -> None:
    error = _call_function_error(K, dense_model(K, name="called_d"), lambda layer, *a, **k: None)
    assert isinstance(error, CloneFunctionError)
    assert "'called_d'" in str(error)


# -- models that cannot be rebuilt -------------------------------------------


def _refused_as_natively(K: Any, source: Any) -> str:
    """compat_clone's refusal of `source`, its message and notes.

    `native-exception-type`: where the native clone fails on the same
    round trip, compat_clone's exception is of the native one's type (the
    original object, explained in a note); where the failure is in
    compat_clone's own extra work, its `UnsupportedModelError` is still an
    instance of the type the native call raises.
    """
    with pytest.raises(Exception) as ours:
        compat_clone.clone_model(source)
    try:
        native_clone(K)(source)
    except NativeLacks:
        pass
    except Exception as native:
        if isinstance(ours.value, CompatCloneError) and family_name(K) == "keras2":
            # Standalone Keras 2's native clone has no subclassed-model support
            # and crashes inside (AttributeError / NotImplementedError):
            # compat_clone's own refusal says why instead.
            assert isinstance(native, (AttributeError, NotImplementedError, ValueError)), native
        else:
            assert isinstance(ours.value, type(native)), (type(ours.value), type(native), native)
        if not isinstance(ours.value, CompatCloneError):
            assert type(ours.value) is type(native)
    else:
        pytest.fail("the native clone rebuilt the model: the refusal is worse than native")
    assert isinstance(ours.value, (CompatCloneError, TypeError, ValueError, NotImplementedError, KeyError))
    return "\n".join([str(ours.value), _notes(ours.value)])


def test_subclassed_model_without_usable_get_config(K: Any) -> None:
    """Neither its config nor a structural clone can carry it: besides the layer its constructor
    received (kept under another name, which the structural clone copies), it holds a lock, which
    no copy can be. The reason is in the message itself (tests/clone/test_structural_clone.py has the
    models that clone structurally)."""
    skip_without_subclassed_models(K)

    class Holder(K.models.Model):
        def __init__(self, inner: Any, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.wrapped = inner
            self.guard = threading.Lock()

        def call(self, x: Any) -> Any:
            return self.wrapped(x)

        def compute_output_shape(self, input_shape: Any) -> Any:  # Keras 2: symbolic call
            return tuple(input_shape)[:-1] + (3,)

    model = Holder(K.layers.Dense(3))
    model(K.Input((4,)))  # built symbolically: works in graph mode (Keras 2) too
    message = _refused_as_natively(K, model)
    assert "Holder" in message and "get_config" in message and "clone_function" in message
    assert "no structural clone either: it cannot be copied as its structure: attribute `guard`" in message


def _scale_layer(K: Any, with_config: bool) -> type:
    class Scale(K.layers.Layer):
        def __init__(self, factor: float, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.factor = factor

        def call(self, x: Any) -> Any:
            return x * self.factor

        def compute_output_shape(self, input_shape: Any) -> Any:
            return input_shape

        def get_config(self) -> Any:
            config = super().get_config()
            if with_config:
                config["factor"] = self.factor
            return config  # without: the required `factor` is missing

    return Scale


def test_custom_layer_whose_config_misses_an_argument(K: Any) -> None:
    scale = _scale_layer(K, with_config=False)
    inputs = K.Input((4,))
    model = K.models.Model(inputs, K.layers.Dense(2)(scale(2.0, name="my_scale")(inputs)))
    sequential = K.models.Sequential([K.layers.Dense(4, input_shape=(4,)), scale(2.0, name="my_scale")])
    if getattr(model.layers[1], "_auto_config", None) is not None:
        # Keras 3 recorded the constructor's arguments: the layer is rebuilt
        # from them (tests/clone/test_constructor_arguments.py), never refused.
        for source in (model, sequential):
            clone = compat_clone.clone_model(source, copy_weights=True)
            assert [layer.factor for layer in clone.layers if hasattr(layer, "factor")] == [2.0]
        return
    for source in (model, sequential):
        message = _refused_as_natively(K, source)
        assert "'my_scale'" in message and "Scale" in message and "factor" in message
        assert "get_config" in message and "register_keras_serializable" in message
        assert "clone_function" in message


def test_unregistered_custom_layer_in_a_wrapper(K: Any) -> None:
    scale = _scale_layer(K, with_config=True)  # a fine layer, but not registered
    inputs = K.Input((3, 4))
    outputs = K.layers.TimeDistributed(scale(2.0), name="wrapper")(inputs)
    model = K.models.Model(inputs, outputs)
    message = _refused_as_natively(K, model)
    assert "'wrapper'" in message and "Scale" in message
    assert "register_keras_serializable" in message


def test_unregistered_custom_layer_in_a_nested_model(K: Any) -> None:
    scale = _scale_layer(K, with_config=True)
    inner_in = K.Input((4,))
    inner = K.models.Model(inner_in, scale(2.0)(inner_in), name="inner")
    inputs = K.Input((4,))
    model = K.models.Model(inputs, inner(inputs))
    message = _refused_as_natively(K, model)
    assert "'inner'" in message and "Scale" in message
    assert "recursive=True" in message
    # and the advice works: layer by layer, the custom class is used directly
    clone = compat_clone.clone_model(model, recursive=True)
    x = np.ones((2, 4), "float32")
    np.testing.assert_array_equal(np.asarray(clone.predict(x, verbose=0)), 2 * x)


# -- copy_weights ---------------------------------------------------------------


def test_copy_weights_shape_mismatch(K: Any) -> None:
    with pytest.raises(WeightsMismatchError) as info:
        compat_clone.copy_weights(dense_model(K, 2), dense_model(K, 3))
    message = str(info.value)
    assert "(4, 2)" in message and "(4, 3)" in message and "Nothing was copied" in message


def test_copy_weights_other_family(K: Any) -> None:
    other = other_family(K)
    if other is None:
        pytest.skip("no second Keras family importable in this environment")
    foreign = other.Input((4,))
    target = other.models.Model(foreign, other.layers.Dense(2)(foreign))
    with pytest.raises(InvalidArgumentError, match="same Keras"):
        compat_clone.copy_weights(dense_model(K), target)


def test_every_error_is_the_packages(K: Any) -> None:
    # The hierarchy: one base, plus the built-in a native caller catches.
    assert issubclass(NotAModelError, TypeError)
    for cls in (
        InvalidArgumentError,
        InputTensorsError,
        CloneFunctionError,
        UnsupportedModelError,
        WeightsMismatchError,
        DeviceNotFoundError,
    ):
        assert issubclass(cls, CompatCloneError) and issubclass(cls, ValueError)
    assert issubclass(UnsupportedFeatureError, CompatCloneError) and issubclass(UnsupportedFeatureError, NotImplementedError)
    assert issubclass(WeightsUnreadableError, CompatCloneError) and issubclass(WeightsUnreadableError, RuntimeError)
