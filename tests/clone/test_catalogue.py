"""Every public layer class of the Keras under test, cloned natively and through compat_clone, in four containers (functional, Sequential, two Model subclasses).

Why: compat_clone must never be worse than the native `clone_model`, for any
layer a user can take from ``K.layers``, not only for the layers the other
tests chose. The classes are read from the module at collection
(tests/clone/catalogue.py, `exported_layers`) and built from its table; one test
per (family, class, container).

The native side is the recipe users are given: `clone_model(model)`, one call
of the clone, `set_weights(model.get_weights())`. Ours is
`compat_clone.clone_model(model, copy_weights=True)`. Each side is judged the
same way: ``pass`` (the source's class, the same outputs, the same
`trainable` flags, the layer under test of the same class with the same
adapted state, weights of its own: assigning to the clone's leaves the
source's as they were), ``wrong`` (made but different: silently wrong) or
``refused`` (an exception). A test fails where compat_clone is wrong, where
native passes and compat_clone does not, and where compat_clone refuses
without a message.

A case the table cannot build is skipped with the reason (pytest's ``-ra``
summary names it); every case's outcome travels in its report, and
conftest.py's terminal summary prints the per-family table ("layer
catalogue") and writes it to ``$COMPAT_CLONE_RESULTS/<env>.catalogue.json``.
`test_table_builds_most_exported_classes` holds the table to 95% of the
exported classes.

Marked `per_claim`: `make test` runs it once per family, backend, module and
TensorFlow major; `make test-wide` everywhere.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np
import pytest

import compat_clone
from tests.clone.catalogue import (
    ABSTRACT_REASON,
    CONTAINERS,
    MISSING,
    NEEDS_GPU,
    PROPERTY,
    Case,
    NotBuilt,
    adapted_state,
    build,
    exported_layers,
    layers_of,
    one_line,
    outputs,
)
from tests.clone.features import NotApplicable, family_name
from tests.support.families import families_under_test, keras_module

pytestmark = pytest.mark.per_claim

MIN_BUILT = 0.95  # of the exported classes, the share the table must build (in one container at least)

_EXPORTED: Dict[int, Dict[str, type]] = {}
_BUILT: Dict[Tuple[str, str, str], str] = {}  # (family, class, container) -> '' (built) or why not


def _exported(K: Any) -> Dict[str, type]:
    if id(K) not in _EXPORTED:
        _EXPORTED[id(K)] = exported_layers(K)
    return _EXPORTED[id(K)]


def _cases() -> List[Any]:
    cases = []
    for family in families_under_test():
        for name in sorted(_exported(keras_module(family))):
            cases += [pytest.param(family, name, container, id=f"{family}-{container}-{name}") for container in CONTAINERS]
    return cases


@pytest.fixture(scope="module")
def catalogue_tmp(tmp_path_factory: Any) -> str:
    """A folder the table's arguments may write to (TFSMLayer's SavedModel), shared by the module's cases."""
    return str(tmp_path_factory.mktemp("catalogue"))


def _flag(layer: Any) -> Optional[bool]:
    """The layer's `trainable` flag; None where it has none (standalone Keras 2.0's legacy Merge)."""
    return bool(layer.trainable) if hasattr(layer, "trainable") else None


def _flags(model: Any) -> List[Tuple[str, Optional[bool]]]:
    return [("<model>", _flag(model))] + [(type(layer).__name__, _flag(layer)) for layer in layers_of(model)]


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    if a.shape != b.shape:
        return False
    if a.dtype == object or b.dtype == object:
        return bool(np.array_equal(a, b))
    return bool(np.allclose(a, b, rtol=1e-5, atol=1e-5, equal_nan=True))


def _deterministic(case: Case, calls: int = 4) -> bool:
    """Whether the case's model computes its `want` again on the same inputs, `calls` times (a random layer can
    repeat a draw by chance: RandomBrightness clips a dark enough draw to the same zeros)."""
    for _ in range(calls):
        again = outputs(case.model, case.x)
        if len(again) != len(case.want) or not all(_same(a, b) for a, b in zip(case.want, again)):
            return False
    return True


def _judge(case: Case, clone: Any) -> str:
    """'' where `clone` is a right clone of the case's model, else what differs."""
    model, x, want = case.model, case.x, case.want
    if type(clone) is not type(model):
        return f"class {type(clone).__name__}, expected {type(model).__name__}"
    got = outputs(clone, x)
    if len(want) != len(got) or not all(_same(a, b) for a, b in zip(want, got)):
        return f"outputs differ: {[a.shape for a in got]} vs {[a.shape for a in want]}" + (
            f", max |Δ| {max(float(np.max(np.abs(a - b))) for a, b in zip(want, got))}"
            if len(want) == len(got) and all(a.shape == b.shape and a.dtype != object for a, b in zip(want, got))
            else ""
        )
    if _flags(clone) != _flags(model):
        return f"trainable flags {_flags(clone)}, expected {_flags(model)}"
    source = [layer for layer in layers_of(model) if type(layer) is case.cls]
    cloned = [layer for layer in layers_of(clone) if type(layer) is case.cls]
    if len(cloned) != len(source):
        return f"{len(cloned)} {case.cls.__name__} layers, expected {len(source)}"
    for a, b in zip(source, cloned):
        if adapted_state(b) != adapted_state(a):
            return f"adapted state {adapted_state(b)}, expected {adapted_state(a)}"
    ids = {id(v) for v in model.weights}
    if any(id(v) in ids for v in clone.weights):
        return "shares variables with the source"
    before = [np.array(w, copy=True) for w in model.get_weights()]
    clone.set_weights([_changed(w) for w in clone.get_weights()])
    if not all(np.array_equal(a, b) for a, b in zip(before, model.get_weights())):
        return "assigning to the clone's weights changed the source's"
    return ""


def _changed(weight: Any) -> np.ndarray:
    """A different value of a weight's kind: +1 for numbers, a suffix for a vocabulary's strings (tf_keras lists
    a lookup layer's vocabulary among its weights)."""
    array = np.asarray(weight)
    if array.dtype.kind in "biuf":
        return (array + 1).astype(array.dtype)
    return np.array([item + (b"~" if isinstance(item, bytes) else "~") for item in array.ravel()], dtype=object).reshape(
        array.shape
    )


def _native(K: Any) -> Callable[[Case], Any]:
    def recipe(case: Case) -> Any:
        clone = K.models.clone_model(case.model)
        outputs(clone, case.x)
        clone.set_weights(case.model.get_weights())
        return clone

    return recipe


def _ours(case: Case) -> Any:
    return compat_clone.clone_model(case.model, copy_weights=True)


def _side(case: Case, clone: Callable[[Case], Any]) -> Tuple[str, str]:
    """(outcome, detail) of one side: ``pass``, ``wrong`` or ``refused``; the source is left as it was."""
    weights = [np.array(w, copy=True) for w in case.model.get_weights()]
    try:
        new = clone(case)
    except Exception as exc:  # judged by the caller
        return "refused", one_line(exc)
    try:
        wrong = _judge(case, new)
    except Exception as exc:  # a clone that cannot compute what its source does
        wrong = "the clone fails: " + one_line(exc)
    finally:
        case.model.set_weights(weights)  # a clone sharing the source's variables changed them
    return ("wrong", wrong) if wrong else ("pass", "")


@pytest.mark.parametrize("K,name,container", _cases(), indirect=["K"])
def test_layer(K: Any, name: str, container: str, catalogue_tmp: str, record_property: Any) -> None:
    family = family_name(K)
    row: Dict[str, Any] = {"family": family, "keras": f"{K.__name__} {K.__version__}", "layer": name, "container": container}
    try:
        case = build(K, name, _exported(K)[name], container, catalogue_tmp)
    except NotApplicable as exc:
        _BUILT[(family, name, container)] = str(exc)
        record_property(PROPERTY, {**row, "built": "n/a", "reason": str(exc)})
        pytest.skip(f"{container} cannot hold {name}: {exc}")
    except NotBuilt as exc:
        _BUILT[(family, name, container)] = str(exc)
        record_property(PROPERTY, {**row, "built": "no", "reason": str(exc)})
        pytest.skip(f"the table cannot build {name} ({family}, {container}): {exc}")
    _BUILT[(family, name, container)] = ""
    native, native_detail = _side(case, _native(K))
    ours, detail = _side(case, _ours)
    if "outputs differ" in detail + native_detail and not _deterministic(case):
        # Keras 3.0-3.x: a subclass whose `call` takes no `training` does not pass `training=False` on, so a
        # random layer held there draws at inference; no clone can match a source that differs from itself.
        record_property(PROPERTY, {**row, "built": "n/a", "reason": "the source is random at inference"})
        pytest.skip(f"{name} in {container}: the source's own outputs differ between two calls (training=False)")
    record_property(
        PROPERTY,
        {
            **row,
            "built": "yes",
            "masked": case.masked,
            "native": native,
            "native_detail": native_detail,
            "ours": ours,
            "detail": detail,
        },
    )
    said = f"compat_clone on {name} in {container} ({family}): {ours}: {detail} (native: {native} {native_detail})"
    assert ours != "wrong", said
    if native == "pass":
        assert ours == "pass", said
    if ours == "refused":
        assert detail.split(":", 1)[-1].strip(), f"compat_clone refused {name} in {container} without a message"


def _why_not_built(K: Any, family: str, name: str, cls: type, tmp: str) -> str:
    """'' where some container holds class `name` built from the table, else why none does."""
    reasons = []
    for container in CONTAINERS:
        if (family, name, container) not in _BUILT:  # not run in this process (xdist, -k): built here
            try:
                build(K, name, cls, container, tmp)
                _BUILT[(family, name, container)] = ""
            except (NotBuilt, NotApplicable) as exc:
                _BUILT[(family, name, container)] = str(exc)
            except pytest.skip.Exception:  # no such container here (standalone Keras 2.0-2.1: no subclassed models)
                continue
        if not _BUILT[(family, name, container)]:
            return ""
        reasons.append((container, _BUILT[(family, name, container)]))
    if len({why for _, why in reasons}) == 1:
        return reasons[0][1]
    return "; ".join(f"{container}: {why}" for container, why in reasons)


#: Abstract bases the table tries to build, as every Keras exports them: tf_keras's `Layer` and `Wrapper`
#: run (an identity, a wrapper's call), Keras 3's and standalone Keras 2's do not (a template `call`), and
#: their reasons are the error that template raises. The table's own abstract rows say so in their reason.
ABSTRACT = frozenset({"Layer", "Wrapper"})


def _unavailable_here(name: str, why: str) -> bool:
    """Whether class `name` cannot run in this environment at all (not a gap of the table)."""
    if name in ABSTRACT or why.startswith((ABSTRACT_REASON, NEEDS_GPU)):
        return True
    return "ImportError" in why or "ModuleNotFoundError" in why  # a package this environment lacks (TensorFlow, flax)


def test_table_builds_most_exported_classes(K: Any, catalogue_tmp: str, record_property: Any) -> None:
    """The table builds at least 95% of the classes the module exports (each in one container at least); the rest are named."""
    family = family_name(K)
    exported = _exported(K)
    missing = {
        name: why for name, cls in exported.items() for why in [_why_not_built(K, family, name, cls, catalogue_tmp)] if why
    }
    record_property(MISSING, {"family": family, "exported": len(exported), "not_built": missing})
    built = len(exported) - len(missing)
    known = {name for name, why in missing.items() if _unavailable_here(name, why)}
    if built < MIN_BUILT * len(exported) and known == set(missing):
        # A known gap, shown as one (the assertion below holds instead once the table builds enough): every class
        # not built is an abstract base, a GPU-only layer on a machine without a GPU, or needs a package this
        # environment lacks (Keras 3 on JAX / torch without TensorFlow: the lookup and hashing layers), so 95% of
        # the exports cannot run here.
        pytest.xfail(
            f"{K.__name__} {K.__version__}: the table builds {built} of {len(exported)} classes; "
            f"the rest cannot run in this environment: {sorted(missing)}"
        )
    assert built >= MIN_BUILT * len(exported), (
        f"the table builds {built} of {len(exported)} layer classes of {K.__name__} {K.__version__}, "
        f"under {MIN_BUILT:.0%}; not built: {missing}"
    )
