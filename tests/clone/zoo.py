"""The model zoo: real models, random weights, cloned natively and through compat_clone.

Each `Case` builds one real model with the Keras module `K` of the family
under test (tiny configs, small inputs, `weights=None`: nothing is
downloaded) and the inputs to run it on. `run_side` clones it twice with one
`clone(model, **kwargs)` (the native `clone_model` behind compat_clone's
signature, see `features.native_clone`, or `compat_clone.clone_model`), once
without weights and once with `copy_weights=True`, and judges four aspects:

* ``class``: both clones are of the source's own class (`type(c) is type(m)`),
  and so is every layer inside them, at every depth;
* ``outputs``: the weighted clone gives the source's outputs (values and
  dtypes), the unweighted one outputs of the same shapes and dtypes;
* ``trainable``: both clones have the source's trainable set: the model's
  flag, every layer's `trainable`, sub-layers (wrapped, nested, inside
  attention blocks) included, in order, and the trainable and non-trainable
  variables (name and shape, in order);
* ``source``: the source is untouched (weights bit for bit, variables,
  names, trainable flags at every level), and the clones are independent of
  it (no shared variable; writing to the clone leaves the source alone).

`tests/clone/test_zoo.py` runs every case both ways, records each case x aspect
as feature ``zoo_<case>.<aspect>`` for COMPATIBILITY.md, and judges them.
Builders are plain functions; one raising `NotApplicable` means the model
does not exist in that family (or backend).

The zoo is three modules: tests/clone/zoo_registry.py (`Case`, `CASES`, the
family facts), tests/clone/zoo_cases.py (the cases, registered in order on import)
and this one, the judge, which the tests import.
"""

from __future__ import annotations

import contextlib
import traceback
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np

import tests.clone.zoo_cases as zoo_cases  # noqa: F401 -- registers every case in CASES, in order
from tests.clone.features import predict as _predict
from tests.clone.model_state import snapshot
from tests.clone.zoo_registry import ASPECTS, CASES, Case, Outcome

__all__ = ["ASPECTS", "CASES", "Case", "SideResult", "layer_tree", "trainable_signature", "outputs", "run_side", "side_context"]


# -- the judge -----------------------------------------------------------------------


def _children(layer: Any) -> List[Any]:
    """The layers directly inside `layer`: a model's `layers`, else its tracked sub-layers."""
    if hasattr(layer, "layers") and isinstance(getattr(layer, "layers", None), list) and hasattr(layer, "inputs"):
        return list(layer.layers)
    flatten = getattr(layer, "_flatten_layers", None)
    if flatten is not None:
        try:
            return list(flatten(include_self=False, recursive=False))
        except TypeError:
            pass
    # standalone Keras 2.0-2.3 tracks no sub-layers: the wrappers' and RNNs' own attributes
    found = []
    for attr in ("layer", "forward_layer", "backward_layer", "cell"):
        sub = getattr(layer, attr, None)
        if sub is not None and hasattr(sub, "trainable"):
            found.append(sub)
    return found


def layer_tree(model: Any) -> List[Tuple[str, str, bool]]:
    """(position path, class, trainable) of every layer at every depth, in order.

    The path is made of positions ("2/0/3"), not names: a clone may number
    the auto-named sub-layers it creates differently. Input layers are left
    out: they hold no variable, and Keras 3 freezes them with their model.
    """
    rows: List[Tuple[str, str, bool]] = []
    seen: set = set()

    def visit(layer: Any, path: str) -> None:
        for i, child in enumerate(_children(layer)):
            if id(child) in seen:  # a shared layer: listed once, where first met
                continue
            seen.add(id(child))
            if type(child).__name__ == "InputLayer":  # no weights: its flag means nothing
                continue
            where = f"{path}/{i}" if path else str(i)
            rows.append((where, type(child).__name__, bool(child.trainable)))
            visit(child, where)

    visit(model, "")
    return rows


def _short_name(variable: Any) -> str:
    """A variable's own name (`kernel`), without its layer scope or `:0`."""
    name = str(getattr(variable, "name", ""))
    return name.split("/")[-1].split(":")[0]


def trainable_signature(model: Any) -> Dict[str, Any]:
    """The model's flag, each layer's flag (by position, at every depth), its variables in order."""
    return {
        "model": bool(model.trainable),
        "layers": [(path, flag) for path, _, flag in layer_tree(model)],
        "trainable_weights": [(_short_name(v), tuple(int(d) for d in v.shape)) for v in model.trainable_weights],
        "non_trainable_weights": [(_short_name(v), tuple(int(d) for d in v.shape)) for v in model.non_trainable_weights],
    }


def _diff(expected: Dict[str, Any], got: Dict[str, Any], rows: Dict[str, Any]) -> str:
    """The first difference, said with the layer classes (`rows`: path -> (class, flag) in the clone)."""
    for key in expected:
        if expected[key] != got[key]:
            if isinstance(expected[key], list):
                if len(expected[key]) != len(got[key]):
                    return f"{key}: {len(got[key])} vs the source's {len(expected[key])}"
                for a, b in zip(expected[key], got[key]):
                    if a != b:
                        where = f" ({rows[b[0]][0]} at {b[0]})" if key == "layers" and b[0] in rows else ""
                        return f"{key}: {b!r}{where} where the source has {a!r}"
            return f"{key}: {got[key]!r} vs the source's {expected[key]!r}"
    return ""


def outputs(model: Any, x: Any) -> List[np.ndarray]:
    return _predict(model, x)


def _failure(exc: BaseException) -> str:
    return traceback.format_exception_only(type(exc), exc)[-1].strip()


@dataclass
class SideResult:
    """One side's verdict per aspect, and what its first clone call raised (if anything)."""

    aspects: Dict[str, Outcome]
    clone_error: Optional[BaseException] = None


def _check_class(model: Any, clones: List[Any]) -> None:
    inner = [(path, cls) for path, cls, _ in layer_tree(model)]
    for label, c in zip(("clone", "clone(copy_weights=True)"), clones):
        assert type(c) is type(model), (
            f"{label} is a {type(c).__module__}.{type(c).__name__}, the source a {type(model).__module__}.{type(model).__name__}"
        )
        got = [(path, cls) for path, cls, _ in layer_tree(c)]
        assert len(got) == len(inner), f"{label} has {len(got)} layers at every depth, the source {len(inner)}"
        for a, b in zip(inner, got):
            assert a == b, f"{label}: a {b[1]} at {b[0]} where the source has a {a[1]}"


def _check_trainable(model: Any, clones: List[Any]) -> None:
    expected = trainable_signature(model)
    for label, c in zip(("clone", "clone(copy_weights=True)"), clones):
        rows = {path: (cls, flag) for path, cls, flag in layer_tree(c)}
        problem = _diff(expected, trainable_signature(c), rows)
        assert not problem, f"{label}: {problem}"


def _check_outputs(case: Case, model: Any, clones: List[Any], x: Any) -> None:
    expected = outputs(model, x)
    bare, weighted = (outputs(c, x) for c in clones)
    for label, got in (("clone", bare), ("clone(copy_weights=True)", weighted)):
        assert len(got) == len(expected), f"{label}: {len(got)} outputs, the source {len(expected)}"
        for i, (u, v) in enumerate(zip(expected, got)):
            assert v.shape == u.shape and v.dtype == u.dtype, (
                f"{label}, output {i}: {v.dtype}{list(v.shape)}, the source {u.dtype}{list(u.shape)}"
            )
    for i, (u, v) in enumerate(zip(expected, weighted)):
        np.testing.assert_allclose(
            v.astype("float64"),
            u.astype("float64"),
            rtol=case.rtol,
            atol=case.atol,
            err_msg=f"clone(copy_weights=True), output {i}",
        )


def _check_source(model: Any, clones: List[Any], before: Dict[str, Any], tree: List[Any]) -> None:
    own = {id(v) for v in model.weights}
    for label, c in zip(("clone", "clone(copy_weights=True)"), clones):
        shared = [v.name for v in c.weights if id(v) in own]
        assert not shared, f"{label} shares {len(shared)} variables with the source ({shared[:3]})"
    weighted = clones[1]
    weighted.set_weights([np.asarray(w) + np.asarray(1, dtype=np.asarray(w).dtype) for w in weighted.get_weights()])
    after = snapshot(model)
    for key in ("name", "trainable", "variables", "trainable_variables", "layers"):
        assert after[key] == before[key], f"the source's {key} changed"
    assert len(after["weights"]) == len(before["weights"]), "the source's weights changed"
    for i, (old, new) in enumerate(zip(before["weights"], after["weights"])):
        assert old.tobytes() == new.tobytes(), f"source weight {i} changed"
    assert layer_tree(model) == tree, "the source's sub-layer trainable flags changed"


def run_side(
    case: Case, K: Any, clone: Callable[..., Any], source: Optional[Tuple[Any, Any]] = None, *, weights_by_set: bool = False
) -> Tuple[SideResult, Tuple[Any, Any]]:
    """Clones the case's model with `clone` (without and with weights) and judges every aspect.

    `source` is a ``(model, inputs)`` pair to reuse (built by the other side
    and left untouched by it); None builds a fresh one. `weights_by_set`: the
    clone with weights is the clone without, given the source's weights by
    `set_weights` (what `features.native_clone` does for `copy_weights=True`:
    one clone less, and Keras 2 clones an application in seconds). Returns
    the verdicts and the ``(model, inputs)`` pair used. Must run inside
    `case.context`.
    """
    model, x = source if source is not None else case.build(K)
    before, tree = snapshot(model), layer_tree(model)
    try:
        clones = [clone(model)]
    except Exception as exc:  # judged per aspect, and by the refusal check
        detail = f"clone raised {_failure(exc)}"
        return SideResult({a: ("fail", detail) for a in ASPECTS}, exc), (model, x)
    try:
        if weights_by_set:
            clones[0].set_weights(model.get_weights())
            clones.append(clones[0])
        else:
            clones.append(clone(model, copy_weights=True))
    except Exception as exc:
        detail = f"clone(copy_weights=True) raised {_failure(exc)}"
        return SideResult({a: ("fail", detail) for a in ASPECTS}, exc), (model, x)
    checks: Dict[str, Callable[[], None]] = {
        "class": lambda: _check_class(model, clones),
        "trainable": lambda: _check_trainable(model, clones),
        "outputs": lambda: _check_outputs(case, model, clones, x),
        "source": lambda: _check_source(model, clones, before, tree),  # last: it writes to a clone
    }
    verdicts: Dict[str, Outcome] = {}
    for aspect in ("class", "trainable", "outputs", "source"):
        try:
            checks[aspect]()
        except Exception as exc:
            verdicts[aspect] = ("fail", _failure(exc))
        else:
            verdicts[aspect] = ("pass", "")
    return SideResult(verdicts), (model, x)


def side_context(case: Case, K: Any) -> Any:
    """The case's context (mixed precision) around the build and both sides' clones."""
    return case.context(K) if case.context is not None else contextlib.nullcontext()
