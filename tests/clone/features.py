"""The feature suite: one check per cloning feature, run natively and through compat_clone.

Each feature is a plain function `check(K, clone)`: `K` is the Keras module
of the family under test, `clone(model, **kwargs)` either the native
`clone_model` (see `native_clone`) or `compat_clone.clone_model`. A check
raises on failure. `NativeLacks` means the native API has no way to express
the feature (an argument that does not exist); `NotApplicable` means the
feature does not exist in that family / backend at all.

The checks themselves are in `tests/clone/feature_checks.py`, which registers them
here (in `FEATURES`) when it is imported; this module holds the registry and
the helpers the checks and other test modules share.

`tests/clone/test_features.py` runs every feature both ways, requires the
compat_clone side to pass, and records both results for COMPATIBILITY.md.
"""

from __future__ import annotations

import inspect
import traceback
from typing import Any, Callable, Dict, List, Tuple

import numpy as np

__all__ = [
    "DESCRIPTIONS",
    "FEATURES",
    "NativeLacks",
    "NotApplicable",
    "assert_same_predictions",
    "backend_name",
    "data",
    "family_name",
    "family_name_of_model",
    "feature",
    "native_clone",
    "predict",
    "run_check",
    "skip_without_subclassed_models",
    "two_in_two_out_layer",
    "weights_snapshot",
]


class NativeLacks(Exception):
    """The native clone_model has no argument for this feature."""


class NotApplicable(Exception):
    """The feature does not exist in this family or backend."""


# Filled by tests/clone/feature_checks.py when it is imported.
FEATURES: Dict[str, Callable[[Any, Callable[..., Any]], None]] = {}
DESCRIPTIONS: Dict[str, str] = {}


def feature(description: str) -> Callable[[Callable[..., None]], Callable[..., None]]:
    def register(fn: Callable[..., None]) -> Callable[..., None]:
        FEATURES[fn.__name__] = fn
        DESCRIPTIONS[fn.__name__] = description
        return fn

    return register


# -- helpers ---------------------------------------------------------------


def skip_without_subclassed_models(K: Any) -> None:
    """Skips where `K` cannot subclass Model: standalone Keras 2.0-2.1, whose
    Model always takes `inputs` and `outputs` (2.2.0 brought subclassed models)."""
    import pytest

    try:
        K.models.Model()
    except TypeError:
        pytest.skip(f"{K.__name__} {K.__version__} has no subclassed models (Model() needs inputs and outputs)")


def native_clone(K: Any) -> Callable[..., Any]:
    """The native `clone_model` behind the compat_clone signature."""
    params = inspect.signature(K.models.clone_model).parameters

    def clone(
        model: Any,
        input_tensors: Any = None,
        clone_function: Any = None,
        *,
        copy_weights: bool = False,
        name: Any = None,
        **kwargs: Any,
    ) -> Any:
        if name is not None:
            raise NativeLacks("no `name` argument")
        args: Dict[str, Any] = {}
        if input_tensors is not None:
            args["input_tensors"] = input_tensors
        if clone_function is not None:
            if "clone_function" not in params:
                raise NativeLacks("no `clone_function` argument")
            args["clone_function"] = clone_function
        for key, value in kwargs.items():
            if key not in params:
                raise NativeLacks(f"no `{key}` argument")
            args[key] = value
        new = K.models.clone_model(model, **args)
        if copy_weights:
            new.set_weights(model.get_weights())
        return new

    return clone


def run_check(check: Callable[[Any, Callable[..., Any]], None], K: Any, clone: Callable[..., Any]) -> Tuple[str, str]:
    """Runs one feature check; returns (outcome, detail).

    The outcome is ``"pass"``, ``"fail"`` (with the exception's last line),
    ``"missing"`` (the native API has no way to ask for it) or ``"n/a"`` (the
    feature does not exist in this family or backend).
    """
    try:
        check(K, clone)
    except NotApplicable as exc:
        return "n/a", str(exc)
    except NativeLacks as exc:
        return "missing", str(exc)
    except Exception as exc:  # recorded, then judged by the caller
        return "fail", traceback.format_exception_only(type(exc), exc)[-1].strip()
    return "pass", ""


def family_name(K: Any) -> str:
    """The family of Keras module `K` (`compat_clone.families.registry.family_for`: the one rule)."""
    from compat_clone.families.registry import family_for

    return family_for(K.__name__.split(".")[0], K.__version__)


def backend_name(K: Any) -> str:
    if family_name(K) == "keras3":
        return str(K.backend.backend())
    return "tensorflow"


def data(shape: Any, seed: int = 0, dtype: str = "float32") -> np.ndarray:
    return np.random.RandomState(seed).rand(*shape).astype(dtype)


def predict(model: Any, x: Any) -> List[np.ndarray]:
    """Inference outputs as numpy: a direct (eager) call where the family has one.

    `model.predict` traces a function per model, which costs seconds for an
    LSTM; graph-mode Keras 2 has only `predict`.
    """
    family = family_name_of_model(model)
    if family == "keras2":
        out = model.predict(x)
    else:
        out = model(x, training=False)
        if family == "keras3":
            import keras

            out = (
                keras.ops.convert_to_numpy(out)
                if not isinstance(out, (list, tuple, dict))
                else (
                    {k: keras.ops.convert_to_numpy(v) for k, v in out.items()}
                    if isinstance(out, dict)
                    else [keras.ops.convert_to_numpy(o) for o in out]
                )
            )
    if isinstance(out, (list, tuple)):
        return [np.asarray(o) for o in out]
    if isinstance(out, dict):
        return [np.asarray(out[k]) for k in sorted(out)]
    return [np.asarray(out)]


def family_name_of_model(model: Any) -> str:
    import compat_clone

    return compat_clone.family_of(model).family


def assert_same_predictions(source: Any, clone: Any, x: Any) -> None:
    a, b = predict(source, x), predict(clone, x)
    assert len(a) == len(b), f"{len(a)} outputs vs {len(b)}"
    for i, (u, v) in enumerate(zip(a, b)):
        np.testing.assert_allclose(u, v, rtol=1e-5, atol=1e-6, err_msg=f"output {i}")


def weights_snapshot(model: Any) -> List[np.ndarray]:
    return [np.array(w, copy=True) for w in model.get_weights()]


def two_in_two_out_layer(K: Any) -> Any:
    """A custom layer with two inputs, two outputs and no mask support (#12202)."""

    class TwoInTwoOut(K.layers.Layer):
        def call(self, inputs: Any) -> Any:
            a, b = inputs
            return [a + b, a - b]

        def compute_output_shape(self, input_shape: Any) -> Any:
            return [input_shape[0], input_shape[0]]

    return TwoInTwoOut
