"""Weight copy shared by every family: pair variables by layer, check, copy.

Variables are matched layer by layer (a clone's layer map when the clone was
just made, else by unique layer names, else by position among the layers that
hold weights), never by the flat order of `model.weights`, so a
`clone_function` or `call_function` that changes or adds layers does not
misalign them. Every pair is checked (shape and dtype) before the first
assignment: a mismatch raises and leaves the target exactly as it was.
The assignment itself is the adapter's (`assign_pairs`): variable to variable,
on the device, never through host memory.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any, Callable, Dict, Iterator, List, Optional, Set, Tuple

from compat_clone._walk import sublayers as sublayers_of
from compat_clone._walk import walk
from compat_clone.errors import WeightsMismatchError

__all__ = [
    "LayerMap",
    "plan_copy",
    "plan_copy_cached",
    "iter_layers",
    "own_variables",
    "refresh_derived_state",
    "tracked_pairs",
    "tracked_paths",
    "untracked_weights",
]

# id(source layer) -> (source layer, cloned layer)
LayerMap = Dict[int, Tuple[Any, Any]]
Spec = Callable[[Any], Tuple[Tuple[Optional[int], ...], str]]


def iter_layers(model: Any) -> Iterator[Any]:
    """All leaf layers of `model`, nested models expanded, depth first (iterative: `_walk.walk`)."""
    return (layer for _, layer in walk(model))


def _own_weights(layer: Any) -> List[Any]:
    return list(getattr(layer, "weights", []) or [])


def _layer_pairs(source: Any, target: Any, layer_map: Optional[LayerMap]) -> List[Tuple[Any, Any]]:
    src_layers = [layer for layer in iter_layers(source) if _own_weights(layer)]
    if layer_map:
        pairs = []
        for layer in src_layers:
            entry = layer_map.get(id(layer))
            if entry is None:
                break
            pairs.append((layer, entry[1]))
        else:
            return pairs
    tgt_layers = [layer for layer in iter_layers(target) if _own_weights(layer)]
    src_names = [layer.name for layer in src_layers]
    tgt_by_name = {layer.name: layer for layer in tgt_layers}
    if (
        len(set(src_names)) == len(src_names)
        and len(tgt_by_name) == len(tgt_layers)
        and all(name in tgt_by_name for name in src_names)
    ):
        return [(layer, tgt_by_name[layer.name]) for layer in src_layers]
    if len(src_layers) != len(tgt_layers):
        raise WeightsMismatchError(
            f"Cannot pair the layers of `source` ({len(src_layers)} layers with "
            f"weights) with those of `target` ({len(tgt_layers)} layers with "
            "weights): their names differ and their counts differ. Expected a "
            "target built from the same architecture (e.g. a clone of the source)."
        )
    return list(zip(src_layers, tgt_layers))


def plan_copy(
    source: Any,
    target: Any,
    spec: Spec,
    layer_map: Optional[LayerMap] = None,
) -> List[Tuple[Any, Any]]:
    """Returns checked (source variable, target variable) pairs.

    The layers are paired as the module says; where that pairing fails or
    leaves a variable of the source out (a variable of the model itself, a
    subclassed model's nested state), both models are paired by their
    tracked structure instead (`tracked_pairs`). Every variable of the
    source is paired, or the copy is refused.

    Raises:
        WeightsMismatchError: naming the first variable whose count, shape or
            dtype differs; nothing has been assigned at that point.
    """
    try:
        variables = _variable_pairs(source, target, layer_map)
    except WeightsMismatchError as first:
        try:
            variables = tracked_pairs(source, target)[1]
        except WeightsMismatchError:
            raise first from None
    if _uncovered(source, variables):
        variables = tracked_pairs(source, target)[1]
        missing = _uncovered(source, variables)
        if missing:
            name = getattr(missing[0], "path", None) or getattr(missing[0], "name", "?")
            raise WeightsMismatchError(
                f"Variable {name!r} of the source belongs to no layer that can be paired with one of "
                "the target, so it cannot be copied. Expected a target of the same class and structure "
                "(e.g. a clone of the source)."
            )
    if not callable(getattr(source, "_flatten_layers", None)):  # standalone Keras 2: lists are not tracked
        hidden = untracked_weights(source, [layer for layer, _ in tracked_pairs(source, source)[0]])
        if hidden:
            raise WeightsMismatchError(
                f"Cannot copy the weights of {getattr(source, 'name', '?')!r}: layers holding weights sit in "
                f"{', '.join(hidden)}, which this Keras does not track, so they are not among "
                "`model.weights` and no copy can carry them. Assign each such layer to an attribute of its own."
            )
    return _checked(variables, spec, target)


def _variable_pairs(source: Any, target: Any, layer_map: Optional[LayerMap]) -> List[Tuple[Any, Any]]:
    pairs: List[Tuple[Any, Any]] = []
    for src_layer, tgt_layer in _layer_pairs(source, target, layer_map):
        src_vars = _own_weights(src_layer)
        tgt_vars = _own_weights(tgt_layer)
        if len(src_vars) != len(tgt_vars):
            raise WeightsMismatchError(
                f"Layer {src_layer.name!r} of the source holds {len(src_vars)} "
                f"variables but its counterpart {tgt_layer.name!r} in the target "
                f"holds {len(tgt_vars)}. Expected the same layer structure; build "
                "the target from the same architecture (or a `clone_function` "
                "that keeps each layer's weights)."
            )
        pairs.extend(zip(src_vars, tgt_vars))
    return pairs


def _uncovered(source: Any, pairs: List[Tuple[Any, Any]]) -> List[Any]:
    paired = {id(s) for s, _ in pairs}
    return [v for v in _own_weights(source) if id(v) not in paired]


def _checked(variables: List[Tuple[Any, Any]], spec: Spec, target: Any) -> List[Tuple[Any, Any]]:
    pairs: List[Tuple[Any, Any]] = []
    for src_var, tgt_var in variables:
        src_shape, src_dtype = spec(src_var)
        tgt_shape, tgt_dtype = spec(tgt_var)
        if src_shape != tgt_shape or src_dtype != tgt_dtype:
            name = getattr(tgt_var, "path", None) or getattr(tgt_var, "name", "?")
            owner = next(
                (layer.name for layer in iter_layers(target) if any(v is tgt_var for v in _own_weights(layer))),
                getattr(target, "name", "?"),
            )
            raise WeightsMismatchError(
                f"Variable {name!r} of layer {owner!r}: the source "
                f"has shape={src_shape} dtype={src_dtype}, the target expects "
                f"shape={tgt_shape} dtype={tgt_dtype}. Nothing was copied. "
                "Make the target's layer match the source's (units, kernel "
                "size, dtype policy)."
            )
        pairs.append((src_var, tgt_var))
    return pairs


def own_variables(layer: Any) -> List[Any]:
    """The variables `layer` created itself, not its sub-layers' (Keras 3's lists, else Keras 2's)."""
    for names in (("_trainable_variables", "_non_trainable_variables"), ("_trainable_weights", "_non_trainable_weights")):
        lists = [getattr(layer, name, None) for name in names]
        if isinstance(lists[0], list) and isinstance(lists[1], list):
            return lists[0] + lists[1]
    return []


def _children(layer: Any, held: Set[int]) -> List[Any]:
    """The layers `layer` tracks directly (attributes, lists, dicts, nested models), in tracking order.

    A metric kept as an attribute (`self.tracker = Mean()`) is a child too
    where its variables are among the model's weights (tf.keras lists them
    there; Keras 3 does not); `held` is the ids of those weights.
    """
    flatten = getattr(layer, "_flatten_layers", None)
    if callable(flatten):
        kids = list(flatten(include_self=False, recursive=False))
    else:
        kids = list(getattr(layer, "_layers", None) or sublayers_of(layer))
    known = {id(kid) for kid in kids}
    metrics = vars(layer).get("_metrics") or []
    kids.extend(m for m in metrics if id(m) not in known and any(id(v) in held for v in own_variables(m)))
    return kids


def tracked_pairs(source: Any, target: Any) -> Tuple[List[Tuple[Any, Any]], List[Tuple[Any, Any]]]:
    """(layer pairs, variable pairs) of two models paired by their tracked structure (`tracked_paths`).

    Raises:
        WeightsMismatchError: naming the path where the structures differ.
    """
    layers, variables = tracked_paths(source, target)
    return [(src, tgt) for _, src, tgt in layers], variables


def tracked_paths(source: Any, target: Any) -> Tuple[List[Tuple[str, Any, Any]], List[Tuple[Any, Any]]]:
    """(path, source layer, target layer) and variable pairs of two models paired by their tracked structure.

    Walks both models together from the top: at each level the two objects
    must be of the same class, hold as many variables of their own (a
    model's `add_weight`, a layer's kernel) and track as many sub-layers, in
    the same order (attribute, list, dict, nested model). A layer met twice
    (shared) must meet the same counterpart twice. A path is the source's
    layer names from the top, ``"/"``-joined.

    Raises:
        WeightsMismatchError: naming the path where the structures differ.
    """
    layers: List[Tuple[str, Any, Any]] = []
    variables: List[Tuple[Any, Any]] = []
    met: Dict[int, Any] = {}
    held_src = {id(v) for v in _own_weights(source)}
    held_tgt = {id(v) for v in _own_weights(target)}
    stack: List[Tuple[str, Any, Any]] = [(str(getattr(source, "name", "")), source, target)]
    while stack:
        path, src, tgt = stack.pop()
        if id(src) in met:
            if met[id(src)] is not tgt:
                raise _differ(path, "a layer shared in the source is not shared alike in the target")
            continue
        met[id(src)] = tgt
        if _class_name(src) != _class_name(tgt):  # a class defined again (a module reloaded) pairs
            raise _differ(path, f"the source holds a {type(src).__name__}, the target a {type(tgt).__name__}")
        own_src, own_tgt = own_variables(src), own_variables(tgt)
        kids_src, kids_tgt = _children(src, held_src), _children(tgt, held_tgt)
        if len(own_src) != len(own_tgt) or len(kids_src) != len(kids_tgt):
            raise _differ(
                path,
                f"the source holds {len(own_src)} variables and {len(kids_src)} layers of its own, the target "
                f"{len(own_tgt)} and {len(kids_tgt)} (is the target built?)",
            )
        layers.append((path, src, tgt))
        variables.extend(zip(own_src, own_tgt))
        stack.extend((f"{path}/{getattr(a, 'name', '?')}", a, b) for a, b in reversed(list(zip(kids_src, kids_tgt))))
    return layers, variables


def _class_name(obj: Any) -> str:
    return f"{type(obj).__module__}.{type(obj).__qualname__}"


def untracked_weights(model: Any, tracked: List[Any]) -> List[str]:
    """Where layers holding weights sit in attributes their Keras does not track, as "owner.attribute".

    Standalone Keras 2.2-2.3 tracks a layer assigned to a model's attribute,
    but not one in a list, tuple or dict, nor a layer's own sub-layers: their
    weights are missing from `model.weights` (and from its `get_weights`), so
    no copy can carry them. `tracked` is every layer the model's structure
    reaches; a layer found in an attribute of one of them is reported where it
    holds a variable that `model.weights` lacks (an RNN's cell, a wrapper's
    layer are in it; a metric's state is not weights and is left out).
    """
    held = {id(v) for v in _own_weights(model)}
    found: List[str] = []
    for owner in tracked:
        for key, value in list(vars(owner).items()):
            items = list(value.values()) if isinstance(value, dict) else value if isinstance(value, (list, tuple)) else [value]
            if any(_is_layer(item) and any(id(v) not in held for v in _own_weights(item)) for item in items):
                found.append(f"{getattr(owner, 'name', '?')}.{key}")
    return found


def _is_layer(value: Any) -> bool:
    """A layer (not a metric: its state is not among a model's weights by design)."""
    return (
        callable(getattr(value, "add_weight", None))
        and hasattr(value, "trainable")
        and not any(klass.__name__ == "Metric" for klass in type(value).__mro__)
    )


def _differ(path: str, what: str) -> WeightsMismatchError:
    return WeightsMismatchError(
        f"Cannot pair the source with the target at {path!r}: {what}. Expected a target of the same class "
        "and structure (e.g. a clone of the source, built)."
    )


# (id(source), id(target)) -> (weak refs to source.weights, to target.weights, pairs as indices
# into them). Nothing is held strongly: a dead variable fails the check and the plan is remade.
_PLANS: Dict[Tuple[int, int], Tuple[List[Any], List[Any], List[Tuple[int, int]]]] = {}
_PLANS_LOCK = threading.Lock()
_PLANS_LIMIT = 64


def _same(refs: List[Any], variables: List[Any]) -> bool:
    return len(refs) == len(variables) and all(ref() is v for ref, v in zip(refs, variables))


def plan_copy_cached(source: Any, target: Any, spec: Spec) -> List[Tuple[Any, Any]]:
    """`plan_copy(source, target, spec)`, remembered for the next call on the same two models.

    A soft update runs every training step on the same two models; pairing
    their layers and checking every shape and dtype each time costs more than
    the copy on a small network. The plan is reused only while both models
    hold exactly the same variable objects in the same order (`model.weights`,
    compared by identity through weak references): a layer added, rebuilt or
    replaced makes a new plan. A variable keeps its shape and dtype for life.
    """
    src_vars = list(getattr(source, "weights", None) or [])
    tgt_vars = list(getattr(target, "weights", None) or [])
    key = (id(source), id(target))
    entry = _PLANS.get(key)
    if entry is not None and _same(entry[0], src_vars) and _same(entry[1], tgt_vars):
        return [(src_vars[i], tgt_vars[j]) for i, j in entry[2]]
    pairs = plan_copy(source, target, spec)
    src_at = {id(v): i for i, v in enumerate(src_vars)}
    tgt_at = {id(v): j for j, v in enumerate(tgt_vars)}
    if all(id(s) in src_at and id(d) in tgt_at for s, d in pairs):  # else: not cached
        try:
            refs = ([weakref.ref(v) for v in src_vars], [weakref.ref(v) for v in tgt_vars])
        except TypeError:  # variables without weak references: not cached
            return pairs
        with _PLANS_LOCK:
            if key not in _PLANS and len(_PLANS) >= _PLANS_LIMIT:
                _PLANS.pop(next(iter(_PLANS)))
            _PLANS[key] = (refs[0], refs[1], [(src_at[id(s)], tgt_at[id(d)]) for s, d in pairs])
    return pairs


def refresh_derived_state(model: Any) -> None:
    """Recomputes what layers derive from their variables, after those were written.

    Stateful preprocessing layers (`Normalization`, `Discretization`, ...)
    keep tensors computed from their variables (`finalize_state()`, Keras 3
    and tf.keras / tf_keras); the native `set_weights` path refreshes them
    through `load_own_variables`, and so must a variable-to-variable copy.
    """
    for layer in iter_layers(model):
        finalize = getattr(layer, "finalize_state", None)
        if callable(finalize) and getattr(layer, "built", False) and _own_weights(layer):
            finalize()
