"""The models users hold (tests/clone/holdings.py), cloned natively and through compat_clone, side by side.

The native side is the recipe users are given: `clone_model(model)`, one call
of the clone, `set_weights(model.get_weights())`. Ours is
`compat_clone.clone_model(model, copy_weights=True)`. Each side's outcome is
judged the same way, and both are recorded for COMPATIBILITY.md:

* ``pass``: the clone has the source's class, computes the same outputs,
  holds weights of its own (changing them leaves the source as it was) and
  the same `trainable` flags at every level;
* ``wrong``: it was made but differs (recorded as a failure, "silently wrong");
* ``refused``: an exception, recorded with its type and message.

compat_clone is never wrong; it passes every kind the native recipe passes,
and the kinds native cannot clone that `BETTER` names; the kinds in
`REFUSED` it refuses, with the reason.
"""

from __future__ import annotations

import traceback
from typing import Any, Callable, List, Tuple

import numpy as np
import pytest

import compat_clone
from tests.clone.feature_records import write_records
from tests.clone.features import NotApplicable, family_name
from tests.clone.holdings import DESCRIPTIONS, KINDS, outputs

# Kinds no clone can get right, refused with the reason (`tf-keras-revived-layer`): a layer revived
# from a SavedModel without its class has a config that cannot rebuild its computation.
REFUSED = {"savedmodel_without_classes": "revived from a SavedModel loaded without its class"}
# Kinds the native recipe cannot clone (their config cannot hold a layer) that the structural clone
# does, in the families that track what their constructors receive.
BETTER = {"layers_in_constructor": ("keras3", "tf_keras")}


def _outputs(model: Any, x: Any) -> List[np.ndarray]:
    y = outputs(model, x)
    if isinstance(y, dict):
        y = [y[key] for key in sorted(y)]
    return [np.asarray(v) for v in (y if isinstance(y, (list, tuple)) else [y])]


def _flags(model: Any) -> List[Tuple[str, bool]]:
    flatten = getattr(model, "_flatten_layers", None)
    layers = list(flatten(include_self=False)) if callable(flatten) else []
    if not layers:  # standalone Keras 2: its nested models' layers
        from compat_clone._walk import walk

        layers = [layer for _, layer in walk(model, models=True)]
    return [("<model>", bool(model.trainable))] + [(type(x).__name__, bool(x.trainable)) for x in layers]


def _judge(model: Any, clone: Any, x: Any) -> str:
    """'' where `clone` is a right clone of `model`, else what differs."""
    if type(clone) is not type(model):
        return f"class {type(clone).__name__}, expected {type(model).__name__}"
    before = _outputs(model, x)
    got = _outputs(clone, x)
    if len(got) != len(before) or not all(np.allclose(a, b, rtol=1e-5, atol=1e-5) for a, b in zip(before, got)):
        worst = max(float(np.max(np.abs(a - b))) for a, b in zip(before, got)) if len(got) == len(before) else "?"
        return f"outputs differ (max |Δ| {worst})"
    if _flags(clone) != _flags(model):
        return f"trainable flags {_flags(clone)}, expected {_flags(model)}"
    source_ids = {id(v) for v in model.weights}
    if any(id(v) in source_ids for v in clone.weights):
        return "shares variables with the source"
    clone.set_weights([np.asarray(w) + 1.0 for w in clone.get_weights()])
    if not all(np.array_equal(a, b) for a, b in zip(before, _outputs(model, x))):
        return "changing the clone's weights changed the source"
    return ""


def _native_recipe(K: Any) -> Callable[[Any, Any], Any]:
    def recipe(model: Any, x: Any) -> Any:
        clone = K.models.clone_model(model)
        outputs(clone, x)
        clone.set_weights(model.get_weights())
        return clone

    return recipe


def _ours(model: Any, x: Any) -> Any:
    return compat_clone.clone_model(model, copy_weights=True)


def _side(name: str, K: Any, folder: Any, clone: Callable[[Any, Any], Any]) -> Tuple[str, str, Any]:
    """(outcome, detail, exception) of one side on a model of kind `name` built in `folder`."""
    folder.mkdir()
    model, x = KINDS[name](K, str(folder))
    try:
        new = clone(model, x)
    except Exception as exc:  # judged by the caller
        return "refused", traceback.format_exception_only(type(exc), exc)[-1].strip(), exc
    try:
        wrong = _judge(model, new, x)
    except Exception as exc:  # a clone that cannot compute what its source does
        wrong = "the clone fails: " + traceback.format_exception_only(type(exc), exc)[-1].strip()
    return ("wrong", wrong, None) if wrong else ("pass", "", None)


def _record(name: str, K: Any, side: str, outcome: str, detail: str) -> None:
    recorded = {"pass": "pass", "n/a": "n/a"}.get(outcome, "fail")
    detail = f"silently wrong: {detail}" if outcome == "wrong" else detail
    write_records(
        K,
        [
            {
                "feature": f"holding_{name}",
                "description": f"holds: {DESCRIPTIONS[name]}",
                "side": side,
                "outcome": recorded,
                "detail": detail,
            }
        ],
    )


@pytest.mark.parametrize("name", sorted(KINDS))
def test_holding(name: str, K: Any, tmp_path: Any) -> None:
    try:
        native, native_detail, native_exc = _side(name, K, tmp_path / "native", _native_recipe(K))
    except (NotApplicable, pytest.skip.Exception) as exc:
        _record(name, K, "native", "n/a", str(exc))
        _record(name, K, "compat_clone", "n/a", str(exc))
        pytest.skip(str(exc))
    _record(name, K, "native", native, native_detail)
    ours, detail, exc = _side(name, K, tmp_path / "ours", _ours)
    _record(name, K, "compat_clone", ours, detail)
    if name in REFUSED:
        assert ours == "refused" and REFUSED[name] in str(exc) + "".join(getattr(exc, "__notes__", [])), (ours, detail)
        if native_exc is not None:  # `native-exception-type`: the type native lets through
            assert isinstance(exc, type(native_exc)), (type(exc), type(native_exc))
        return
    said = f"compat_clone on {name} ({family_name(K)}): {ours}: {detail} (native: {native} {native_detail})"
    assert ours != "wrong", said
    if native == "pass" or family_name(K) in BETTER.get(name, ()):
        assert ours == "pass", said


@pytest.mark.parametrize("name", ["model_variable", "frozen_submodel", "dict_of_layers"])
def test_copy_weights_between_two_subclassed_models(name: str, K: Any, tmp_path: Any) -> None:
    """`copy_weights(source, target)` between two models built alike pairs them by tracked structure:
    layer names differ (`dense_4` / `dense_9`), a model's own variable has no layer."""
    try:
        source, x = KINDS[name](K, str(tmp_path))
        target, _ = KINDS[name](K, str(tmp_path))
    except (NotApplicable, pytest.skip.Exception) as exc:
        pytest.skip(str(exc))
    assert not all(np.allclose(a, b) for a, b in zip(_outputs(source, x), _outputs(target, x)))
    if name == "dict_of_layers" and family_name(K) == "keras2":  # not tracked: not in `model.weights`
        with pytest.raises(compat_clone.WeightsMismatchError, match="does not track"):
            compat_clone.copy_weights(source, target)
        return
    compat_clone.copy_weights(source, target)
    assert all(np.allclose(a, b, rtol=1e-5, atol=1e-5) for a, b in zip(_outputs(source, x), _outputs(target, x)))
