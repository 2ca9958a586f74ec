"""The side-by-side harness of the native-guarantee tests: clone natively and through compat_clone, compare.

`side_by_side` clones one source model twice, natively and through
`compat_clone.clone_model`, and asserts what tests/clone/test_native_guarantees.py
describes (an equivalent clone where the native call succeeds, the named
native failure or defect asserted where it does not, the same refusal where
the native API refuses, the source unchanged). Used by
tests/clone/test_native_guarantees.py, test_native_behaviours.py and
test_native_input_tensors.py.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np
import pytest
from packaging.version import Version

import compat_clone
from tests.clone.features import NativeLacks, family_name, native_clone
from tests.clone.features import predict as _features_predict

__all__ = [
    "keras2_before",
    "predict",
    "loss_values",
    "model_weights",
    "assert_equivalent",
    "assert_matches_source",
    "side_by_side",
]


def _version(K: Any) -> Version:
    return Version(K.__version__)


def keras2_before(K: Any, version: str) -> bool:
    return family_name(K) == "keras2" and _version(K) < Version(version)


def _numpy(value: Any) -> np.ndarray:
    if hasattr(value, "numpy"):
        try:
            return np.asarray(value.numpy())
        except Exception:
            pass
    try:
        import keras

        if keras.__version__.startswith("3"):
            return np.asarray(keras.ops.convert_to_numpy(value))
    except ImportError:
        pass
    return np.asarray(value)


def _flat_inputs(x: Any) -> List[Any]:
    """`x` as the flat list a standalone Keras 2 backend function is fed (list inputs only)."""
    if isinstance(x, (list, tuple)):
        return [t for item in x for t in _flat_inputs(item)]
    return [x]


def predict(model: Any, x: Any) -> List[np.ndarray]:
    """Inference outputs as numpy; standalone Keras 2 through a backend function.

    A backend function also feeds an input made with `Input(tensor=...)`,
    which `model.predict` treats as needing no data.
    """
    if compat_clone.family_of(model).family == "keras2" and getattr(model, "inputs", None):
        import keras

        fn = keras.backend.function(model.inputs, model.outputs)
        return [np.asarray(v) for v in fn(_flat_inputs(x))]
    return _features_predict(model, x)


def loss_values(K: Any, model: Any, x: Any) -> List[float]:
    """The values of `model.losses` for input `x`, sorted (their order is not part of the contract)."""
    if family_name(K) == "keras2":
        if not model.losses:
            return []
        fn = K.backend.function(model.inputs, model.losses)
        return sorted(float(np.sum(v)) for v in fn(_flat_inputs(x)))
    model(x, training=False)
    return sorted(float(np.sum(_numpy(v))) for v in model.losses)


def _structure(value: Any) -> Any:
    """The nesting of a model's `input`/`output`: container types and keys, tensors as '*'."""
    if isinstance(value, dict):
        return {k: _structure(v) for k, v in sorted(value.items())}
    if isinstance(value, (list, tuple)):
        return [type(value).__name__] + [_structure(v) for v in value]
    return "*"


def _io_structure(model: Any, attr: str) -> Any:
    try:
        value = getattr(model, attr)
    except (AttributeError, ValueError) as exc:  # e.g. a Sequential built by a call, no Input
        return f"no {attr}: {type(exc).__name__}"
    return _structure(value)


def _layer_configs(model: Any) -> List[Tuple[str, str, Any]]:
    """Class, name and config of each layer; an InputLayer's name left out.

    Keras 3.0's native clone names each new InputLayer after its KerasTensor
    (`keras_tensor_27`) where later versions keep the source's name: which
    name an input layer gets is not part of what a clone guarantees.
    """
    configs = []
    for layer in model.layers:
        config = dict(layer.get_config())
        name = layer.name
        if type(layer).__name__ == "InputLayer":
            config.pop("name", None)
            name = "<input>"
        configs.append((type(layer).__name__, name, config))
    return configs


def _trainable(model: Any) -> Dict[str, Any]:
    return {
        "model": model.trainable,
        "layers": [
            ("<input>" if type(layer).__name__ == "InputLayer" else layer.name, layer.trainable) for layer in model.layers
        ],
        "trainable_weights": [tuple(w.shape) for w in model.trainable_weights],
        "non_trainable_weights": [tuple(w.shape) for w in model.non_trainable_weights],
    }


def _built(model: Any) -> bool:
    return bool(getattr(model, "built", True))


def model_weights(model: Any) -> List[Any]:
    """`model.weights`; none for an unbuilt model (tf.keras raises there)."""
    return list(model.weights) if _built(model) else []


def _source_state(model: Any) -> Dict[str, Any]:
    built = _built(model)
    return {
        "name": model.name,
        "built": built,
        "layers": [(type(layer).__name__, layer.name) for layer in model.layers],
        "config": model.get_config() if built else None,
        "weights": [np.array(w, copy=True) for w in model.get_weights()] if built else [],
        "trainable": _trainable(model) if built else model.trainable,
    }


def _assert_source_unchanged(before: Dict[str, Any], model: Any, who: str) -> None:
    after = _source_state(model)
    assert after["name"] == before["name"], f"{who} renamed the source"
    assert after["built"] == before["built"], f"{who} built the source"
    assert after["layers"] == before["layers"], f"{who} changed the source's layers"
    assert after["config"] == before["config"], f"{who} changed the source's config"
    assert after["trainable"] == before["trainable"], f"{who} changed the source's trainable flags"
    assert len(after["weights"]) == len(before["weights"]), f"{who} changed the source's weights"
    for u, v in zip(before["weights"], after["weights"]):
        np.testing.assert_array_equal(u, v, err_msg=f"{who} changed a source weight")


def _copy_source_weights(source: Any, clone: Any) -> None:
    """The source's values into `clone` (a no-op on values for layers the clone shares)."""
    clone.set_weights(source.get_weights())


def assert_equivalent(K: Any, native: Any, compat: Any, source: Any, x: Any) -> None:
    """`compat` is the clone `native` is: class, layers, structure, flags, losses, outputs."""
    assert type(compat) is type(native), f"class {type(compat).__name__} vs native {type(native).__name__}"
    assert len(compat.losses) == len(native.losses), (
        f"{len(compat.losses)} losses through compat_clone, {len(native.losses)} natively"
    )
    kinds = [type(layer).__name__ for layer in compat.layers]
    native_kinds = [type(layer).__name__ for layer in native.layers]
    assert kinds == native_kinds, f"layers {kinds} through compat_clone, natively {native_kinds}"
    assert _layer_configs(compat) == _layer_configs(native), "layer configs differ from the native clone's"
    assert compat.name == native.name
    built = getattr(native, "built", True)
    assert getattr(compat, "built", True) == built, f"built: native {built}, compat_clone {not built}"
    for attr in ("input", "output"):
        expected = _io_structure(native, attr)
        if expected != _io_structure(source, attr) and _built(source) and not isinstance(source.input, dict):
            # the native clone changed the structure (Keras 3.0 returns a single
            # output as a one-element list): compat_clone keeps the source's
            expected = _io_structure(source, attr)
        assert _io_structure(compat, attr) == expected, f"{attr} structure differs"
    assert _trainable(compat) == _trainable(native), "trainable flags or weight shapes differ"
    for clone in (native, compat):
        _copy_source_weights(source, clone)
    expected = predict(source, x)
    for who, clone in (("native", native), ("compat_clone", compat)):
        got = predict(clone, x)
        assert len(got) == len(expected), f"{who}: {len(got)} outputs vs {len(expected)}"
        for i, (u, v) in enumerate(zip(expected, got)):
            np.testing.assert_allclose(v, u, rtol=1e-5, atol=1e-5, err_msg=f"{who} clone, output {i}")
    native_losses, compat_losses = loss_values(K, native, x), loss_values(K, compat, x)
    np.testing.assert_allclose(
        compat_losses, native_losses, rtol=1e-5, atol=1e-6, err_msg="loss values differ from the native clone's"
    )


def assert_matches_source(K: Any, compat: Any, source: Any, x: Any) -> None:
    """Where the native clone fails: compat_clone's clone against the source itself."""
    assert type(compat) is type(source)
    assert [type(layer).__name__ for layer in compat.layers] == [type(layer).__name__ for layer in source.layers]
    assert [t for _, t in _trainable(compat)["layers"]] == [t for _, t in _trainable(source)["layers"]]
    assert _trainable(compat)["trainable_weights"] == _trainable(source)["trainable_weights"]
    _copy_source_weights(source, compat)
    for i, (u, v) in enumerate(zip(predict(source, x), predict(compat, x))):
        np.testing.assert_allclose(v, u, rtol=1e-5, atol=1e-5, err_msg=f"compat_clone clone, output {i}")
    np.testing.assert_allclose(loss_values(K, compat, x), loss_values(K, source, x), rtol=1e-5, atol=1e-6)


def side_by_side(
    K: Any,
    source: Any,
    x: Any,
    *,
    native_fails: Optional[str] = None,
    native_rejects: Optional[str] = None,
    native_bug: Optional[Tuple[str, str]] = None,
    native_defect: Optional[Tuple[str, Callable[[Any], bool]]] = None,
    build: Optional[Callable[[Any], None]] = None,
    **kwargs: Any,
) -> Tuple[Any, Any]:
    """Clones `source` natively, then through compat_clone, and compares them.

    Where the native `clone_model` has no such argument (`clone_function`
    in standalone Keras 2, `call_function` / `recursive` before Keras 3.x),
    the reference is the native clone made without it.

    `native_fails`: the reason the native call is known to fail here; that
    failure is asserted, and compat_clone's clone is checked against the
    source. `native_rejects`: the reason the native call
    refuses these arguments by design; compat_clone must refuse them too, with
    an exception of the same class (a drop-in changes nothing), and both
    clones are None. `native_bug`: (reason, message) of a native failure
    some releases have: a native error with that message counts as
    `native_fails=reason`, any other native error fails the test, and a native
    success is compared as usual. `native_defect`: (reason, predicate) for a native clone
    that is built but wrong; the predicate must hold for the native clone and
    not for compat_clone's, which is checked against the source. `build(model)` is called on
    both clones and the source before the comparison (for unbuilt models).
    Returns (native clone or None, compat_clone's clone).
    """
    before = _source_state(source)
    native: Any = None
    native_error: Optional[BaseException] = None
    try:
        native = native_clone(K)(source, **kwargs)
    except NativeLacks:
        # The native API has no such argument: the reference is the native
        # clone without it (an argument the native lacks changes nothing else).
        accepted = inspect.signature(K.models.clone_model).parameters
        native = native_clone(K)(source, **{k: v for k, v in kwargs.items() if k in accepted})
    except Exception as exc:  # judged below against `native_fails`
        native_error = exc
    if native_bug is not None and native_error is not None and native_bug[1] in str(native_error):
        native_fails = native_bug[0]
    if native_rejects is not None:
        assert native_error is not None, (
            f"the native clone accepted what it is recorded to reject ({native_rejects}): the expectation is stale"
        )
        try:
            compat_clone.clone_model(source, **kwargs)
        except type(native_error):
            pass
        else:
            pytest.fail(
                f"compat_clone accepted what the native clone rejects ({native_rejects}); native raised "
                f"{type(native_error).__name__}: {str(native_error).splitlines()[0]}"
            )
        _assert_source_unchanged(before, source, "compat_clone")
        return None, None
    if native_fails is None:
        assert native_error is None, f"the native clone failed: {native_error!r}"
        _assert_source_unchanged(before, source, "the native clone")
        if native_defect is not None:
            reason, defective = native_defect
            assert defective(native), f"the native clone no longer shows its recorded defect ({reason}): stale"
    else:
        assert native_error is not None, (
            f"the native clone succeeded where it is recorded to fail ({native_fails}): the expectation is stale"
        )
    compat = compat_clone.clone_model(source, **kwargs)
    _assert_source_unchanged(before, source, "compat_clone")
    if build is not None:
        for model in (source, native, compat):
            if model is not None:
                build(model)
    if native_defect is not None:
        assert not native_defect[1](compat), f"compat_clone's clone has the native defect: {native_defect[0]}"
        assert_matches_source(K, compat, source, x)
    elif native is not None:
        assert_equivalent(K, native, compat, source, x)
    else:
        assert_matches_source(K, compat, source, x)
    return native, compat
