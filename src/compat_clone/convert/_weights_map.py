"""A Keras 2 weights-only `.h5` (`model.save_weights()`) placed into a model Keras 3 code builds, by structure.

Keras 3's own reader of such files pairs the layers that hold weights by
their order and each layer's variables by their order, and fails on nested
and subclassed models (keras-team/keras #20083, #21676). Here the two models
are walked as trees: at each level the layers holding weights pair by their
place in their container (`model.layers`, a nested model's layers), a nested
model is entered on both sides, and within a layer each variable pairs with
the one of the same role (`kernel`, `bias`, `moving_mean`: the last part of
its name, which Keras keeps across releases; names of layers are not read).
Every variable of both sides is placed exactly once and its shape checked; the
first one that cannot be placed refuses the whole file, naming it, before any
value is assigned.

Importing this module imports no framework; `map_weights` reads the file with
h5py and assigns with the variables' own `assign`.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Dict, List, Tuple

import numpy as np

from compat_clone.errors import SourceModelError

__all__ = ["map_weights", "Placed"]


@dataclasses.dataclass(frozen=True)
class Placed:
    """One variable of the file placed into the model."""

    source: str  # the weight's name in the file (``dense_1/kernel:0``)
    target: str  # the variable's path in the model (``dense/kernel``)
    shape: Tuple[int, ...]

    def __str__(self) -> str:
        return f"{self.source} {self.shape} -> {self.target}"


@dataclasses.dataclass
class _Group:
    """The weights the file holds for one layer (or one nested model): names and values, in the file's order."""

    name: str
    weights: List[Tuple[str, np.ndarray]]


def _text(value: Any) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def _read(path: str) -> List[_Group]:
    import h5py  # type: ignore[import-untyped, import-not-found, unused-ignore]

    with h5py.File(path, "r") as f:
        root = f.get("model_weights", f)
        if "layer_names" not in root.attrs:
            raise SourceModelError(f"{path!r} holds no `layer_names`: it is not a weights file Keras 2 wrote.")
        groups = []
        for name in (_text(n) for n in root.attrs["layer_names"]):
            group = root[name]
            names = [_text(n) for n in group.attrs.get("weight_names", [])]
            if names:
                groups.append(_Group(name, [(n, np.asarray(group[n])) for n in names]))
    return groups


def _role(name: str) -> str:
    """``dense_1/kernel:0`` -> ``kernel``: what the variable is to its layer."""
    return name.rsplit("/", 1)[-1].split(":", 1)[0]


def _owner(name: str) -> str:
    """``inner/dense_1/kernel:0`` -> ``inner/dense_1``: the layer a weight of a nested model's group belongs to."""
    return name.split(":", 1)[0].rsplit("/", 1)[0]


def _is_model(layer: Any) -> bool:
    return isinstance(getattr(layer, "layers", None), list) and callable(getattr(layer, "summary", None))


def _weighted(layers: List[Any]) -> List[Any]:
    seen: set[int] = set()
    found = []
    for layer in layers:
        if id(layer) not in seen and layer.weights:
            seen.add(id(layer))
            found.append(layer)
    return found


def _leaves(layer: Any) -> List[Any]:
    """The layers holding weights under a nested model, in its layers' order, nested models entered."""
    found: List[Any] = []
    for sub in _weighted(list(layer.layers)):
        found.extend(_leaves(sub) if _is_model(sub) else [sub])
    return found


def _split(group: _Group) -> List[_Group]:
    """A nested model's group, one group per layer its weights' names give, in the file's order."""
    owners: Dict[str, _Group] = {}
    for name, value in group.weights:
        owners.setdefault(_owner(name), _Group(_owner(name), [])).weights.append((name, value))
    return list(owners.values())


def _pair_variables(group: _Group, layer: Any, where: str) -> List[Tuple[Placed, Any, np.ndarray]]:
    """Each weight of `group` with the variable of `layer` of the same role (the k-th of a role with the k-th)."""
    targets: Dict[str, List[Any]] = {}
    for variable in layer.weights:
        targets.setdefault(_role(str(getattr(variable, "path", variable.name))), []).append(variable)
    used: Dict[str, int] = {}
    pairs = []
    for name, value in group.weights:
        role = _role(name)
        k = used.get(role, 0)
        candidates = targets.get(role, [])
        has = ", ".join(f"{r} x{len(v)}" for r, v in targets.items())
        if k >= len(candidates):
            raise SourceModelError(
                f"The weight {name!r} {tuple(value.shape)} of the file cannot be placed: the layer {layer.name!r} at "
                f"its place in the model ({where}) has no{' more' if k else ''} variable {role!r} (it has {has})."
            )
        variable = candidates[k]
        used[role] = k + 1
        shape = tuple(int(d) for d in variable.shape)
        if shape != tuple(value.shape):
            raise SourceModelError(
                f"The weight {name!r} of the file has shape {tuple(value.shape)}; the variable it goes to, "
                f"{getattr(variable, 'path', variable.name)!r} of layer {layer.name!r} ({where}), has shape {shape}."
            )
        pairs.append((Placed(name, str(getattr(variable, "path", variable.name)), shape), variable, value))
    left = [str(getattr(v, "path", v.name)) for role, vs in targets.items() for v in vs[used.get(role, 0) :]]
    if left:
        raise SourceModelError(
            f"The variable {left[0]!r} of layer {layer.name!r} ({where}) gets no weight from the file: its group "
            f"{group.name!r} holds {', '.join(n for n, _ in group.weights)}."
        )
    return pairs


def _pair_layers(groups: List[_Group], layers: List[Any], where: str) -> List[Tuple[Placed, Any, np.ndarray]]:
    pairs: List[Tuple[Placed, Any, np.ndarray]] = []
    for k in range(max(len(groups), len(layers))):
        if k >= len(layers):
            raise SourceModelError(
                f"The weights of {groups[k].name!r} in the file ({groups[k].weights[0][0]!r} first) cannot be placed: "
                f"{where} has {len(layers)} layer(s) holding weights, the file {len(groups)}."
            )
        if k >= len(groups):
            raise SourceModelError(
                f"The layer {layers[k].name!r} of {where} gets no weights: the file holds {len(groups)} layer(s) with "
                f"weights there, the model {len(layers)}."
            )
        layer, group = layers[k], groups[k]
        place = f"layer {k + 1} with weights of {where}"
        if _is_model(layer):
            pairs.extend(_pair_layers(_split(group), _leaves(layer), f"the nested model {layer.name!r}"))
        else:
            pairs.extend(_pair_variables(group, layer, place))
    return pairs


def map_weights(model: Any, path: str) -> List[Placed]:
    """Places the weights of the Keras 2 weights-only `.h5` at `path` into `model`, by structure.

    Args:
        model: a built Keras 3 model (its variables exist).
        path: the file `save_weights()` wrote.

    Returns:
        What went where, one `Placed` per variable, in the file's order.

    Raises:
        SourceModelError: the file does not fit the model exactly: the message
            names the first weight or variable that cannot be placed; no
            variable was assigned.

    Example:

    >>> placed = map_weights(model, "old_weights.h5")  # doctest: +SKIP
    >>> print(placed[0])  # doctest: +SKIP
    dense_1/kernel:0 (4, 3) -> dense/kernel
    """
    if not model.weights:
        raise SourceModelError(
            f"The model holds no variables yet: build it (call it once, or give it an Input) before its weights are "
            f"placed. Received: {type(model).__name__} {model.name!r}."
        )
    pairs = _pair_layers(_read(path), _weighted(list(model.layers)), f"the model {model.name!r}")
    for _, variable, value in pairs:  # checked whole first: assigned only once all fit
        variable.assign(value.astype(np.dtype(str(getattr(variable, "dtype", value.dtype))), copy=False))
    return [placed for placed, _, _ in pairs]
