"""Native `clone_model` guarantees, part 2: `input_tensors` in every structure the family accepts.

Checked natively and through compat_clone, side by side, as
tests/clone/test_native_guarantees.py describes; the harness is tests/clone/native_harness.py.
"""

from __future__ import annotations

from typing import Any, Callable, List, Optional, Tuple

import pytest

from tests.clone.features import data, family_name
from tests.clone.native_harness import side_by_side

# -- input_tensors, in every structure the family accepts ---------------------------


def _two_input_model(K: Any) -> Any:
    a, b = K.Input((3,), name="a"), K.Input((2,), name="b")
    return K.models.Model([a, b], K.layers.Dense(2)(K.layers.Concatenate()([a, b])))


def _dict_input_model(K: Any) -> Any:
    a, b = K.Input((3,), name="a"), K.Input((2,), name="b")
    return K.models.Model({"a": a, "b": b}, K.layers.Dense(2)(K.layers.Concatenate()([a, b])))


def _nested_input_model(K: Any) -> Any:
    a, b, c = K.Input((3,), name="a"), K.Input((2,), name="b"), K.Input((1,), name="c")
    out = K.layers.Dense(2)(K.layers.Concatenate()([a, b, c]))
    return K.models.Model({"a": a, "bc": [b, c]}, out)


def _input_case(K: Any, case: str) -> Tuple[Any, Any, Any]:
    """(source model, input_tensors, data) for one structure of `input_tensors`."""
    fam = family_name(K)
    if case in ("single", "single_in_list"):
        x_in = K.Input((3,))
        source = K.models.Model(x_in, K.layers.Dense(2)(x_in))
        new = K.Input((3,), name="new_x")
        return source, (new if case == "single" else [new]), data((2, 3))
    if case == "sequential_single":
        source = K.models.Sequential([K.layers.Dense(2, input_shape=(3,))])
        return source, K.Input((3,), name="new_x"), data((2, 3))
    if case in ("list", "tuple"):
        new = [K.Input((3,), name="new_a"), K.Input((2,), name="new_b")]
        return _two_input_model(K), (new if case == "list" else tuple(new)), [data((2, 3), 1), data((2, 2), 2)]
    if fam == "keras2":
        pytest.skip(f"standalone Keras {K.__version__} models take no dict or nested inputs")
    if case == "dict":
        new = {"a": K.Input((3,), name="new_a"), "b": K.Input((2,), name="new_b")}
        return _dict_input_model(K), new, {"a": data((2, 3), 1), "b": data((2, 2), 2)}
    if case == "nested":
        try:
            source = _nested_input_model(K)
        except ValueError as exc:
            if "must be KerasTensors" not in str(exc):
                raise
            pytest.skip(f"Keras {K.__version__} functional models take no nested dict inputs: {exc}"[:200])
        new = {"a": K.Input((3,), name="new_a"), "bc": [K.Input((2,), name="new_b"), K.Input((1,), name="new_c")]}
        return source, new, {"a": data((2, 3), 1), "bc": [data((2, 2), 2), data((2, 1), 3)]}
    raise ValueError(case)


def _flatten(value: Any) -> List[Any]:
    if isinstance(value, dict):
        return [t for k in sorted(value) for t in _flatten(value[k])]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _flatten(v)]
    return [value]


INPUT_CASES = ["single", "single_in_list", "sequential_single", "list", "tuple", "dict", "nested"]


def _stray_input_layers(model: Any) -> bool:
    """More InputLayers among `model.layers` than the model has inputs."""
    return sum(type(layer).__name__ == "InputLayer" for layer in model.layers) > len(model.inputs)


STRAY_INPUT_LAYERS = (
    "standalone Keras 2's functional clone on given input_tensors also clones the source's "
    "InputLayers, which stay in clone.layers unconnected",
    _stray_input_layers,
)


def _fails_natively(K: Any, case: str) -> Optional[str]:
    fam = family_name(K)
    if fam == "keras2" and case == "tuple":
        return "standalone Keras 2's to_list() takes a tuple of tensors for one tensor"
    return None


# Keras 3.0's clone_model takes the truth value of `input_tensors`
# (`clone_function or input_tensors`, `if input_tensors:`), which a single
# KerasTensor refuses; later releases test `is not None`. Known by its message,
# so whichever release has it is covered.
KERAS3_TENSOR_TRUTH = ("Keras 3.0's clone_model takes the truth value of a single input tensor", "cannot be used as a boolean")


def _defect_natively(K: Any, case: str) -> Optional[Tuple[str, Callable[[Any], bool]]]:
    if family_name(K) == "keras2" and case in ("single", "single_in_list", "list", "placeholder"):
        return STRAY_INPUT_LAYERS
    return None


def _rejected_natively(K: Any, case: str) -> Optional[str]:
    """Why the family's native clone_model refuses this structure of `input_tensors`, if it does."""
    if family_name(K) == "keras3" and case in ("single_in_list", "tuple"):
        return "Keras 3 requires `input_tensors` to have exactly the structure of model.input"
    return None


@pytest.mark.parametrize("case", INPUT_CASES)
def test_input_tensors(K: Any, case: str) -> None:
    source, given, x = _input_case(K, case)
    rejected = _rejected_natively(K, case)
    bug = KERAS3_TENSOR_TRUTH if family_name(K) == "keras3" and case in ("single", "sequential_single") else None
    native, compat = side_by_side(
        K,
        source,
        x,
        native_rejects=rejected,
        native_fails=_fails_natively(K, case),
        native_bug=bug,
        native_defect=_defect_natively(K, case),
        input_tensors=given,
    )
    if rejected:
        return
    flat = _flatten(given)

    def uses_given(model: Any) -> List[bool]:
        return [any(t is g for g in flat) for t in model.inputs]

    expected = uses_given(native) if native is not None else [True] * len(compat.inputs)
    assert uses_given(compat) == expected, "the clone's inputs are not the given tensors"


def test_input_tensors_backend_placeholder(K: Any) -> None:
    """Standalone Keras 2: a backend tensor (not a Keras tensor) is wrapped in an InputLayer."""
    if family_name(K) != "keras2":
        pytest.skip("graph-mode backend placeholders exist in standalone Keras 2 only")
    x_in = K.Input((3,))
    source = K.models.Model(x_in, K.layers.Dense(2)(x_in))
    placeholder = K.backend.placeholder(shape=(None, 3))
    native, compat = side_by_side(
        K, source, data((2, 3)), native_defect=_defect_natively(K, "placeholder"), input_tensors=placeholder
    )
    assert compat.inputs[0] is placeholder or compat.inputs[0].op is placeholder.op
