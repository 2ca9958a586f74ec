"""Each layer's outputs on one probe sample: where a failed proof's outputs first differ.

`record` runs in the source's environment (in `describe`): it evaluates the
output of every call of every layer of the model's graph on the first sample
of the first probe set, in one run of the source's own graph (standalone
Keras 2: a backend function; tf.keras / tf_keras: a model of the same graph
whose outputs are all those tensors), and keeps them in graph order within a
byte budget, as `LayerOutputs` (part of the format, `_format`).
`first_difference` runs in Keras 3 (in `verify`, only once a proof has
failed): it walks the converted model's graph on the same sample and names
the first layer whose output is not within the proof's tolerance.

Only the top model's graph is recorded: a nested model is one layer there
(its own layers are not compared), and a layer of no float or integer
output (strings) is skipped.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from compat_clone._walk import is_model
from compat_clone.convert._format import LayerOutput, LayerOutputs
from compat_clone.convert._lengths import summary

__all__ = ["BUDGET", "record", "empty_output", "first_difference", "run_graph"]

#: bytes of layer outputs a description keeps (the first layers in graph order)
BUDGET = 4 * 2**20


def record(model: Any, inputs: Sequence[np.ndarray], keras2: bool, budget: int = BUDGET) -> LayerOutputs:
    """The outputs of `model`'s layers on the first sample of `inputs` (never raises: a note says why none)."""
    try:
        graph, nodes = _nodes(model)
        names: List[str] = []
        tensors: List[Any] = []
        for node in nodes:
            layer = getattr(node, "outbound_layer", None) or node.layer
            outs = _flat(node.output_tensors)
            names.extend(str(layer.name) for _ in outs)
            tensors.extend(outs)
        sample = [np.asarray(x)[:1] for x in inputs]
        if keras2:
            masks = [m for node in nodes for m in _keras2_masks(node)]
            values, found_masks = _run_keras2(graph, sample, tensors, masks)
        else:
            values, found_masks = _run_tf_keras(graph, sample, tensors)
    except Exception as exc:  # a diagnostic only: the description stays valid without it
        return LayerOutputs(
            [],
            f"not recorded: the source's graph could not be evaluated layer by layer "
            f"({type(exc).__name__}: {str(exc).strip()[:200]})",
        )
    found: List[LayerOutput] = []
    used, note = 0, ""
    for name, value, mask in zip(names, values, found_masks):
        array = np.asarray(value)
        if array.dtype.kind not in "biuf":
            continue  # strings (a lookup's input): nothing to compare numerically
        used += array.nbytes
        if used > budget:
            note = (
                f"recorded up to layer {found[-1].layer if found else '(none)'!r}: the outputs from "
                f"layer {name!r} on are over the budget of {budget:,} bytes"
            )
            break
        found.append(LayerOutput(name, array, None if mask is None else np.asarray(mask).astype(bool)))
    return LayerOutputs(found, note)


def empty_output(model: Any, inputs: Sequence[np.ndarray]) -> str:
    """Why `inputs` would empty a layer's output, read from the layers' output shapes ("" where none would).

    Each layer's `compute_output_shape` is followed along the graph; nothing
    runs. A probe length that empties a layer's output proves nothing of the
    layers after it, and on some CPUs TensorFlow's oneDNN pooling kills the
    process on it (SIGFPE: tensorflow/tensorflow #125509; seen here with TF
    2.15 and 2.21) instead of raising, so such lengths are ruled out before the
    source runs on them. A nested model counts as one layer; where a shape
    cannot be read, the source itself answers ("").

    Args:
        model: the source model (standalone Keras 2, tf.keras or tf_keras).
        inputs: one array per model input.

    Returns:
        Why not, naming the layer and the shape; "" where no layer's output would be empty.
    """
    try:
        graph, nodes = _nodes(model)
        known = {id(t): (len(x),) + tuple(np.shape(x)[1:]) for t, x in zip(graph.inputs, inputs)}
        for node in nodes:
            layer = getattr(node, "outbound_layer", None) or node.layer
            given = getattr(node, "keras_inputs", None)
            ins = [known[id(t)] for t in _flat(node.input_tensors if given is None else given)]
            in_shape: Any = ins[0] if len(ins) == 1 else ins
            try:
                shapes = _shape_list(layer.compute_output_shape(in_shape))
            except Exception as exc:  # tf.keras's convolutions refuse an empty output themselves
                if re.search(r"negative|[<>]= ?0\b", str(exc), re.IGNORECASE):
                    return f"layer {layer.name!r} refuses input shape {in_shape}: {summary(exc)}"
                return ""
            outs = _flat(node.output_tensors)
            if len(shapes) != len(outs):
                return ""
            for tensor, shape in zip(outs, shapes):
                if any(d is not None and d <= 0 for d in shape[1:]):
                    return (
                        f"layer {layer.name!r} would output shape {shape} (read from its output shape, not run): "
                        "the input is too short for the model"
                    )
                known[id(tensor)] = shape
    except Exception:  # shapes it cannot read: the source itself answers
        return ""
    return ""


def _shape_list(value: Any) -> List[Tuple[Optional[int], ...]]:
    """One tuple per output, from what `compute_output_shape` returned (a shape or a list of them)."""
    listed = value.as_list() if hasattr(value, "as_list") else value
    if (
        isinstance(listed, (list, tuple))
        and listed
        and all(isinstance(v, (list, tuple)) or hasattr(v, "as_list") for v in listed)
    ):
        return [tuple(v.as_list() if hasattr(v, "as_list") else v) for v in listed]
    return [tuple(listed)]


def _nodes(model: Any) -> Tuple[Any, List[Any]]:
    """The model whose graph runs, and its layer calls in graph order (input layers left out)."""
    graph = model
    by_depth: Any = getattr(graph, "_nodes_by_depth", None) or getattr(graph, "nodes_by_depth", None)
    if by_depth is None:  # standalone Keras 2.0-2.1's Sequential runs its inner model
        graph = model.model
        by_depth = getattr(graph, "_nodes_by_depth", None) or getattr(graph, "nodes_by_depth", None)
    ordered = [node for depth in sorted(by_depth, reverse=True) for node in by_depth[depth]]
    return graph, [n for n in ordered if type(getattr(n, "outbound_layer", None) or n.layer).__name__ != "InputLayer"]


def _flat(value: Any) -> List[Any]:
    if isinstance(value, (list, tuple)):
        return [t for item in value for t in _flat(item)]
    if isinstance(value, dict):
        return [t for key in sorted(value) for t in _flat(value[key])]
    return [value]


def _keras2_masks(node: Any) -> List[Any]:
    """A standalone Keras 2 node's output masks, one per output (None: no mask)."""
    count = len(_flat(node.output_tensors))
    masks = node.output_masks
    return list(masks) if isinstance(masks, (list, tuple)) else [masks] * count


def _run_keras2(graph: Any, sample: List[np.ndarray], tensors: List[Any], masks: List[Any]) -> Tuple[List[Any], List[Any]]:
    """Standalone Keras 2: one backend function over the graph's tensors and masks (a TF1 session run)."""
    import importlib

    backend = importlib.import_module(type(graph).__module__.split(".")[0] + ".backend")
    ins: List[Any] = list(graph.inputs)
    feed: List[Any] = list(sample)
    phase = backend.learning_phase()
    if getattr(graph, "uses_learning_phase", False) and not isinstance(phase, int):
        ins, feed = ins + [phase], feed + [0]  # inference, as `predict` feeds it
    wanted = [m for m in masks if m is not None]
    values = list(backend.function(ins, tensors + wanted)(feed))
    computed = iter(values[len(tensors) :])
    return values[: len(tensors)], [None if m is None else next(computed) for m in masks]


def _run_tf_keras(graph: Any, sample: List[np.ndarray], tensors: List[Any]) -> Tuple[List[Any], List[Any]]:
    """tf.keras / tf_keras: a model of the same graph with every layer's output as its outputs, called once
    eagerly (its answers carry their Keras masks)."""
    import tensorflow as tf

    model_class = next(k for k in type(graph).__mro__ if k.__name__ == "Model")  # its Keras's own Model
    spy = model_class(graph.inputs, tensors)
    given = [tf.convert_to_tensor(x) for x in sample]
    out = _flat(spy(given if len(given) > 1 else given[0], training=False))
    return [np.asarray(v) for v in out], [getattr(v, "_keras_mask", None) for v in out]


def first_difference(
    model: Any,
    recorded: LayerOutputs,
    inputs: Sequence[np.ndarray],
    rtol: float,
    atol: float,
    names: Optional[Mapping[str, str]] = None,
) -> Tuple[str, str]:
    """``(layer, sentence)``: the first layer of Keras 3 `model` whose output on the first sample of
    `inputs` is not within tolerance of the recorded one, and what was found ("" and why when none).

    `names` maps a source layer name to its Keras 3 one where they differ
    (`_names.top_names`); the layer is named as the source names it.
    """
    if not recorded.records:
        return "", f"The layers' outputs were {recorded.note}."
    source_name = {new: old for old, new in (names or {}).items()}
    try:
        calls = _keras3_outputs(model, [np.asarray(x)[:1] for x in inputs])
    except Exception as exc:  # the walk itself failed: nothing to name
        return "", (f"The layers' outputs could not be compared (the Keras 3 graph walk failed: {type(exc).__name__}).")
    theirs: Dict[str, List[LayerOutput]] = {}
    for rec in recorded.records:
        theirs.setdefault(rec.layer, []).append(rec)
    seen: Dict[str, int] = {}
    agreed: List[str] = []
    for new_name, kind, value in calls:
        name = source_name.get(new_name, new_name)
        k = seen[name] = seen.get(name, -1) + 1
        if k >= len(theirs.get(name, ())):
            continue  # a layer the source has not recorded (over budget, or none of that name)
        gap = _gap(value, theirs[name][k], rtol, atol)
        if gap:
            renamed = f", {new_name!r} in Keras 3" if new_name != name else ""
            nested = ", a nested model: its own layers were not compared" if kind == "nested" else ""
            return name, (
                f"The outputs first differ at layer {name!r} ({'Model' if kind == 'nested' else kind}"
                f"{renamed}{nested}): {gap} on the first probe sample{_agree(agreed)}."
            )
        agreed.append(name)
    partial = f" ({recorded.note})" if recorded.note else ""
    if not agreed:
        return "", (f"No layer is named: no recorded layer of the source is a layer of the Keras 3 graph{partial}.")
    where = "in a layer after them, or only on other samples" if partial else "only on other samples"
    return "", (
        f"No layer is named: the {len(set(agreed))} layers compared agree within tolerance on the first "
        f"probe sample{partial}; the difference shows {where}."
    )


def _agree(names: List[str]) -> str:
    count = len(set(names))
    if not count:
        return ""
    return "; the layer before it agrees" if count == 1 else f"; the {count} layers before it agree"


def _keras3_outputs(model: Any, sample: List[np.ndarray]) -> List[Tuple[str, str, np.ndarray]]:
    """(layer name, class name, output) of every call of the converted model's graph walk, in order."""
    import keras

    calls: List[Tuple[str, str, np.ndarray]] = []

    def spy(operation: Any) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            out = operation(*args, **kwargs)
            kind = "nested" if is_model(operation) else type(operation).__name__
            for value in keras.tree.flatten(out):
                calls.append((str(operation.name), kind, np.asarray(keras.ops.convert_to_numpy(value))))
            return out

        return call

    run_graph(model, sample, spy)
    return calls


def run_graph(model: Any, inputs: Sequence[np.ndarray], operation_fn: Callable[[Any], Any]) -> None:
    """Runs a Keras 3 model's graph on `inputs` in inference mode through its own walk
    (`Functional._run_through_graph`), each layer called as ``operation_fn(layer)(*args, **kwargs)``.

    Raises:
        AttributeError: the model has no graph to walk (not a Functional or Sequential model).
    """
    import keras

    graph = getattr(model, "_functional", None) or model  # a Keras 3 Sequential runs its inner Functional

    def inference(operation: Any) -> Any:
        wrapped = operation_fn(operation)
        # as `Functional.call(training=False)` passes it: `_call_context_args` since Keras 3.10
        takes = "training" in getattr(operation, "_call_context_args", ()) or getattr(operation, "_call_has_training_arg", False)

        def call(*args: Any, **kwargs: Any) -> Any:
            return wrapped(*args, **dict(kwargs, training=False) if takes else kwargs)

        return call

    tensors = [keras.ops.convert_to_tensor(x) for x in inputs]
    given: Any = tensors if len(tensors) > 1 else tensors[0]
    standardize = getattr(graph, "_standardize_inputs", None)
    graph._run_through_graph(standardize(given) if standardize is not None else given, operation_fn=inference)


def _gap(mine: np.ndarray, rec: LayerOutput, rtol: float, atol: float) -> str:
    """How `mine` differs from the recorded output beyond tolerance ("" when it does not)."""
    theirs = rec.value
    if mine.shape != theirs.shape:
        return f"shape {mine.shape}, the source's {theirs.shape}"
    a, b = mine.astype(np.float64), theirs.astype(np.float64)
    if rec.mask is not None and rec.mask.ndim <= a.ndim and a.shape[: rec.mask.ndim] == rec.mask.shape:
        a, b = a[rec.mask], b[rec.mask]  # masked positions mean nothing to Keras (as in the proof)
    same_special = (np.isnan(a) & np.isnan(b)) | (np.isinf(a) & (a == b))
    finite = np.isfinite(a) & np.isfinite(b)
    delta = np.abs(a[finite] - b[finite])
    off = int(np.count_nonzero(~finite & ~same_special))
    above = int(np.count_nonzero(delta > atol + rtol * np.abs(b[finite])))
    if not off and not above:
        return ""
    worst = float(delta.max()) if delta.size else 0.0
    special = f", NaN/inf differ at {off}" if off else ""
    return f"max |Δ| {worst:.1e}, {above} of {a.size} values above tolerance{special}"
