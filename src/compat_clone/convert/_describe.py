"""The Keras 2 half of a conversion: a model as neutral data.

`describe(model)` runs in the model's own environment (standalone Keras
2.0-2.3 in TF1 graph mode, tf.keras 2.x, `tf_keras`) and returns a
`Description`: plain JSON-able data and NumPy arrays, nothing of the source
framework. `compat_clone.convert._rebuild.rebuild` turns it into a Keras 3
model in another process (or the same one), and `_proof.verify` checks the
result against the source's outputs recorded here.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

import numpy as np

from compat_clone._dispatch import KERAS2, TF_KERAS, family_of
from compat_clone.errors import InvalidArgumentError, UnsupportedModelError

__all__ = ["Description", "ProbeSet", "WeightRecord", "describe", "FORMAT"]

#: the version of the description's layout; `_io.load` refuses any other
FORMAT = "compat_clone.convert/1"

# A sequence dimension the model leaves open (`None`) is probed at this length.
_OPEN_DIM = 5
# Integer inputs that feed no Embedding are drawn from [0, _INT_HIGH).
_INT_HIGH = 10


@dataclasses.dataclass
class WeightRecord:
    """One weight of one layer, as the source names it.

    Attributes:
        layer: the layer's path from the top model, ``"/"``-joined names
            (``"encoder/dense"`` for a layer of the nested model ``encoder``).
        index: its position in the layer's ``weights`` list.
        name: the source's variable name (``"dense/kernel:0"``).
        value: the value, a NumPy array.
    """

    layer: str
    index: int
    name: str
    value: np.ndarray


@dataclasses.dataclass
class ProbeSet:
    """Inputs given to the source model, and what it answered.

    Attributes:
        origin: ``"random"`` (drawn by `describe`) or ``"user"``.
        inputs: one array per model input, in the model's input order.
        outputs: one array per model output, in the model's output order.
        masks: per output, the Keras mask the source computed for it (a
            boolean array over its leading dimensions, e.g. batch x steps),
            or None where the output carries no mask (empty: no output
            carries one). Values at masked
            positions mean nothing to Keras, and the families disagree on
            them (an RNN's masked steps hold zeros or the previous step's
            output), so `verify` compares only the unmasked positions.
    """

    origin: str
    inputs: List[np.ndarray]
    outputs: List[np.ndarray]
    masks: List[Optional[np.ndarray]] = dataclasses.field(default_factory=list)

    def mask_of(self, k: int) -> Optional[np.ndarray]:
        """The mask of output `k`, or None."""
        return self.masks[k] if k < len(self.masks) else None


@dataclasses.dataclass
class Description:
    """A Keras 2 model as neutral data: architecture, weights, probes, notes.

    Attributes:
        source: ``family``, ``package``, ``version``, ``backend`` of the
            model (`compat_clone.family_of`), and ``python``.
        architecture: ``{"class_name": ..., "config": ...}``, the model's
            config as its Keras writes it to JSON (per-layer class names,
            configs and inbound nodes, nested models inside).
        weights: every weight of every layer (`WeightRecord`), nested models'
            layers under their path.
        probes: inputs and the source's outputs on them (`ProbeSet`).
        notes: what could not be described as data, one dict per finding:
            ``{"kind": ..., "layer": ..., "detail": ...}`` (e.g. a `Lambda`
            whose function uses TensorFlow).
        format: the layout version, `FORMAT`.
    """

    source: Dict[str, str]
    architecture: Dict[str, Any]
    weights: List[WeightRecord]
    probes: List[ProbeSet]
    notes: List[Dict[str, Any]]
    format: str = FORMAT

    def weights_of(self, layer: str) -> List[WeightRecord]:
        """The weights of the layer at path `layer`, in their source order."""
        return sorted((w for w in self.weights if w.layer == layer), key=lambda w: w.index)

    def notes_for(self, layer: str) -> List[Dict[str, Any]]:
        """The notes about the layer at path `layer`."""
        return [n for n in self.notes if n.get("layer") == layer]


def describe(
    model: Any,
    *,
    probe_inputs: Any = None,
    samples: int = 4,
    seed: int = 0,
) -> Description:
    """Describes a Keras 2 model as neutral data for `rebuild`.

    Works with standalone Keras 2.0-2.3 (TF1 graph mode included), tf.keras
    2.x and `tf_keras`. The model is only read: nothing of it changes.

    Args:
        model: a Functional or Sequential model of a Keras 2 family.
        probe_inputs: optional inputs of your own (an array, or a list of
            arrays in the model's input order): the source's outputs on them
            are recorded INSTEAD of random probes (for inputs whose valid
            values random probes cannot know, e.g. ids a lookup maps).
        samples: how many random probe samples to draw (at least 1; unused
            with `probe_inputs`).
        seed: seed of the random probes.

    Returns:
        A `Description`.

    Raises:
        NotAModelError: `model` is not a Keras model.
        InvalidArgumentError: `model` is a Keras 3 model, `samples` is not a
            positive integer, or `probe_inputs` does not fit the inputs.
        UnsupportedModelError: a subclassed model (no graph to describe).

    Example:

    >>> import tf_keras
    >>> from compat_clone.convert import describe
    >>> inputs = tf_keras.Input((3,))
    >>> model = tf_keras.Model(inputs, tf_keras.layers.Dense(2)(inputs))
    >>> d = describe(model)
    >>> d.source["family"], len(d.weights), d.probes[0].outputs[0].shape
    ('tf_keras', 2, (4, 2))
    """
    info = family_of(model)
    if info.family not in (KERAS2, TF_KERAS):
        raise InvalidArgumentError(
            f"Expected a Keras 2 model (standalone keras 2.x, tf.keras or tf_keras) to "
            f"describe. Received a model of {info.package} {info.version} "
            f"(family {info.family!r}), which needs no conversion: use "
            "`compat_clone.clone_model` to copy it."
        )
    if not isinstance(samples, int) or isinstance(samples, bool) or samples < 1:
        raise InvalidArgumentError(
            f"Expected `samples` to be a positive integer. Received: samples={samples!r}."
        )
    architecture = _architecture(model)
    weights: List[WeightRecord] = []
    notes: List[Dict[str, Any]] = []
    _walk(model, "", weights, notes, set())
    if probe_inputs is not None:  # the user's inputs replace the random ones
        probes = [ProbeSet("user", _user_inputs(model, probe_inputs), [])]
    else:
        probes = [ProbeSet("random", _random_inputs(model, samples, seed), [])]
    for probe in probes:
        probe.outputs = _predict(model, probe.inputs)
        masks = _output_masks(model, probe.inputs, info.family)
        probe.masks = masks if any(m is not None for m in masks) else []
    import sys

    return Description(
        source={
            "family": info.family,
            "package": info.package,
            "version": info.version,
            "backend": str(info.backend),
            "python": "%d.%d" % sys.version_info[:2],
        },
        architecture=architecture,
        weights=weights,
        probes=probes,
        notes=notes,
    )


def _architecture(model: Any) -> Dict[str, Any]:
    if not _is_graph(model):
        raise UnsupportedModelError(
            f"Cannot describe the subclassed model {model.name!r} of type "
            f"{type(model).__name__}: it has no layer graph to convert. Build it "
            "with the functional API or `Sequential`, or convert it by hand."
        )
    # The model's own JSON writer: it knows how its Keras encodes tuples,
    # NumPy scalars, dtype policies and marshalled Lambda functions.
    try:
        text = model.to_json()
    except (TypeError, ValueError) as exc:
        raise UnsupportedModelError(
            f"Cannot describe model {model.name!r}: its Keras could not write its config "
            f"({type(exc).__name__}: {exc}). A `Lambda` whose function closes over a module "
            "or another object is the usual cause: make the function read only its inputs "
            "and constants."
        ) from exc
    data = json.loads(text)
    return _named_sequentials({"class_name": data["class_name"], "config": data["config"]}, model.name)


def _named_sequentials(entry: Dict[str, Any], name: Optional[str]) -> Dict[str, Any]:
    """Standalone Keras 2.0-2.1 write a Sequential's config as the bare list of its layers:
    each becomes ``{"name": ..., "layers": [...]}``, the form of every later Keras (in place)."""
    config = entry.get("config")
    if entry.get("class_name") == "Sequential" and isinstance(config, list):
        config = entry["config"] = {"name": name, "layers": config}
    if isinstance(config, dict):
        for layer in config.get("layers") or ():
            if isinstance(layer, dict):
                _named_sequentials(layer, layer.get("name"))
    return entry


def _is_graph(model: Any) -> bool:
    flag = getattr(model, "_is_graph_network", None)
    if flag is None:  # standalone Keras 2.0-2.1.2: every Model (a Container) is a graph of layers
        flag = hasattr(model, "input_layers") and hasattr(model, "layers")
    return bool(flag) or type(model).__name__ in (
        "Sequential",
        "Functional",
    )


def _walk(
    layer: Any,
    prefix: str,
    weights: List[WeightRecord],
    notes: List[Dict[str, Any]],
    seen: Set[int],
) -> None:
    """Records the weights of every layer under `layer` (a model), by path."""
    for sub in layer.layers:
        if id(sub) in seen:  # a layer shared between nested models: once
            continue
        seen.add(id(sub))
        path = prefix + sub.name
        if hasattr(sub, "layers") and _is_graph(sub):
            _walk(sub, path + "/", weights, notes, seen)
            continue
        values = sub.get_weights()
        for index, (variable, value) in enumerate(zip(sub.weights, values)):
            weights.append(WeightRecord(path, index, str(variable.name), np.asarray(value)))
        if type(sub).__name__ == "Lambda":
            notes.extend(_lambda_notes(sub, path))
        module = type(sub).__module__
        if ".applications." in module:
            # a layer class of a `keras.applications` model (ConvNeXt's
            # LayerScale): Keras 3's applications may have its counterpart
            notes.append({"kind": "application_class", "layer": path,
                          "class": type(sub).__name__, "module": module})


def _code_names(code: Any) -> List[str]:
    """Global names a code object reads, its nested functions' included."""
    names = list(code.co_names)
    for const in code.co_consts:
        if hasattr(const, "co_names"):
            names.extend(_code_names(const))
    return names


def _lambda_notes(layer: Any, path: str) -> List[Dict[str, Any]]:
    """What a Lambda's function uses from outside itself."""
    fn = layer.function
    code = getattr(fn, "__code__", None)
    if code is None:
        return [{"kind": "lambda_opaque", "layer": path,
                 "detail": f"function {fn!r} has no Python code to carry over"}]
    scope = getattr(fn, "__globals__", {})
    found: List[Dict[str, Any]] = []
    import builtins

    # Names read from the function's module, then those its closure holds
    # (the closure's values are what Keras 2 writes into the config).
    bound: List[Tuple[str, Any, bool]] = [
        (name, scope[name], False) for name in sorted(set(_code_names(code))) if name in scope
    ]
    cells = getattr(fn, "__closure__", None) or ()
    bound.extend((name, cell.cell_contents, True) for name, cell in zip(code.co_freevars, cells))
    for name, value, in_closure in bound:
        module = getattr(value, "__name__", "") if _is_module(value) else getattr(
            value, "__module__", None
        )
        root = (module or "").partition(".")[0]
        if root in ("tensorflow", "keras", "tf_keras"):
            found.append({"kind": "lambda_framework", "layer": path, "name": name,
                          "module": module, "function": getattr(fn, "__qualname__", "?")})
        elif _is_module(value):
            found.append({"kind": "lambda_module", "layer": path, "name": name,
                          "module": module})
        elif in_closure and _is_module(value):
            found.append({"kind": "lambda_global", "layer": path, "name": name,
                          "detail": f"the module {module!r}, held by the function's closure"})
        elif isinstance(value, (int, float, str, bool)) or value is None:
            if not in_closure:  # closure constants travel in the config itself
                found.append({"kind": "lambda_constant", "layer": path, "name": name,
                              "value": value})
        elif in_closure or not hasattr(builtins, name):
            found.append({"kind": "lambda_global", "layer": path, "name": name,
                          "detail": f"{type(value).__name__} from module {module!r}"})
    return found


def _is_module(value: Any) -> bool:
    import types

    return isinstance(value, types.ModuleType)


def _input_specs(model: Any) -> List[Tuple[Tuple[Optional[int], ...], str, str]]:
    """(shape, dtype, name) of each model input."""
    specs = []
    layers = getattr(model, "_input_layers", None) or getattr(model, "input_layers", None)
    if layers is None:  # a Sequential of standalone Keras 2.0: its inner model holds them
        layers = [tensor._keras_history[0] for tensor in model.inputs]
    for tensor, layer in zip(model.inputs, layers):
        shape = tensor.shape
        dims = tuple(None if d is None else int(d) for d in (
            shape.as_list() if hasattr(shape, "as_list") else shape))
        dtype = getattr(tensor.dtype, "name", str(tensor.dtype))
        specs.append((dims, dtype, layer.name))
    return specs


# Layers whose input is an index (or a category): probes drawn in [low, high),
# with `high` read from the layer's config. Keras 2 models often feed an
# Embedding from a float `Input((40,))`: its probes must still be valid ids.
_INDEX_LAYERS = {"Embedding": "input_dim", "CategoryEncoding": "num_tokens"}


@dataclasses.dataclass(frozen=True)
class _Role:
    """What an input's values mean to the layers it feeds (None fields: unconstrained)."""

    high: Optional[int] = None      # ids in [low, high)
    low: int = 0
    padded: bool = False            # trailing zeros in every other sample (mask_zero, Masking)
    choices: Optional[Tuple[Any, ...]] = None  # a lookup's vocabulary
    mask_value: Optional[float] = None         # Masking's value, set at padded steps


def _input_role(model: Any, input_name: str) -> _Role:
    """The role of model input `input_name`, from the layers that read it directly.

    Embedding / CategoryEncoding: ids below ``input_dim`` / ``num_tokens``
    (the smallest over the readers; from 1 with padding for ``mask_zero``);
    IntegerLookup / StringLookup with a vocabulary: drawn from it; Masking:
    padded steps carry its ``mask_value``.
    """
    readers = [layer for layer in _all_layers(model) if any(
        getattr(source, "name", None) == input_name
        # standalone Keras 2.0-2.1.2 spell it `inbound_nodes`
        for node in getattr(layer, "_inbound_nodes", None) or getattr(layer, "inbound_nodes", None) or []
        for source in _node_input_layers(node))]
    if not readers and len(model.inputs) == 1:
        # A Sequential's first layer reads its (implicit) input.
        readers = [lay for lay in model.layers if type(lay).__name__ != "InputLayer"][:1]
    role = _Role()
    for layer in readers:
        kind = type(layer).__name__
        if kind not in _INDEX_LAYERS and kind not in ("IntegerLookup", "StringLookup", "Masking"):
            continue  # (a custom layer's get_config may raise: asked of these only)
        config = layer.get_config()
        if kind in _INDEX_LAYERS and isinstance(config.get(_INDEX_LAYERS[kind]), int):
            high = int(config[_INDEX_LAYERS[kind]])
            padded = bool(config.get("mask_zero"))
            role = dataclasses.replace(role, high=high if role.high is None else min(role.high, high),
                                       low=1 if padded else role.low, padded=padded or role.padded)
        elif kind in ("IntegerLookup", "StringLookup"):
            vocabulary = config.get("vocabulary")
            if isinstance(vocabulary, (list, tuple)) and vocabulary:
                role = dataclasses.replace(role, choices=tuple(vocabulary))
        elif kind == "Masking":
            role = dataclasses.replace(role, padded=True, mask_value=float(config.get("mask_value", 0.0)))
    return role


def _node_input_layers(node: Any) -> List[Any]:
    layers = getattr(node, "inbound_layers", None)
    if layers is None:
        return []
    if not isinstance(layers, (list, tuple)):
        return [layers]
    return list(layers)


def _all_layers(model: Any) -> List[Any]:
    found: List[Any] = []
    for layer in model.layers:
        found.append(layer)
        if hasattr(layer, "layers") and _is_graph(layer):
            found.extend(_all_layers(layer))
    return found


def _random_inputs(model: Any, samples: int, seed: int) -> List[np.ndarray]:
    rng = np.random.default_rng(seed)
    arrays = []
    for dims, dtype, name in _input_specs(model):
        shape = (samples,) + tuple(_OPEN_DIM if d is None else d for d in dims[1:])
        role = _input_role(model, name)
        padded = role.padded or dtype.startswith(("int", "uint"))
        if role.choices is not None:
            values: np.ndarray = np.asarray(role.choices)[rng.integers(0, len(role.choices), size=shape)]
            padded = False
        elif role.high is not None or dtype.startswith(("int", "uint")):
            high = role.high if role.high is not None else _INT_HIGH
            low = min(role.low if role.high is not None else 1, max(high - 1, 0))
            values = rng.integers(low, max(high, low + 1), size=shape)
        elif dtype == "bool":
            values, padded = rng.integers(0, 2, size=shape).astype(bool), False
        else:
            values = rng.standard_normal(shape)
        if padded and len(shape) > 1 and shape[1] > 2:
            # Trailing padding in every other sample: masks get exercised.
            values[::2, -2:] = 0 if role.mask_value is None else role.mask_value
        arrays.append(values if role.choices is not None and dtype == "string" else values.astype(dtype))
    return arrays


def _user_inputs(model: Any, probe_inputs: Any) -> List[np.ndarray]:
    given: Sequence[Any] = probe_inputs if isinstance(probe_inputs, (list, tuple)) else [probe_inputs]
    specs = _input_specs(model)
    if len(given) != len(specs):
        raise InvalidArgumentError(
            f"Expected `probe_inputs` to hold one array per model input ({len(specs)}: "
            f"{[s[2] for s in specs]}). Received {len(given)} arrays. Pass a list in the "
            "model's input order."
        )
    arrays = []
    for value, (dims, dtype, name) in zip(given, specs):
        array = np.asarray(value)
        if array.ndim != len(dims) or any(
            d is not None and d != a for d, a in zip(dims[1:], array.shape[1:])
        ):
            raise InvalidArgumentError(
                f"Expected the probe input for {name!r} to have shape {dims} (batch first). "
                f"Received shape {array.shape}."
            )
        arrays.append(array.astype(dtype))
    return arrays


def _predict(model: Any, inputs: List[np.ndarray]) -> List[np.ndarray]:
    x: Any = inputs if len(inputs) > 1 else inputs[0]
    out = model.predict(x, batch_size=len(inputs[0]), verbose=0)
    return [np.asarray(o) for o in _output_list(model, out)]


def _output_list(model: Any, out: Any) -> List[Any]:
    """A model's answer as one value per output, in the order of ``model.outputs``.

    A model built with a dict of outputs (``Model(i, {"score": ..., "probs": ...})``)
    answers with a dict: its values are put in ``model.output_names``' order (the
    flattened outputs', which the rebuilt model keeps), never stored as one object.
    """
    if isinstance(out, dict):
        names = [str(n) for n in getattr(model, "output_names", None) or []]
        keys = names if sorted(names) == sorted(str(k) for k in out) else sorted(out)
        out = [out[k] for k in keys]
    return list(out) if isinstance(out, (list, tuple)) else [out]


def _output_masks(model: Any, inputs: List[np.ndarray], family: str) -> List[Optional[np.ndarray]]:
    """The mask the source computes for each output on `inputs` (None: no mask).

    Standalone Keras 2 runs a TF1 graph: the model's symbolic output masks
    (`compute_mask` on its own inputs returns the ones built with it) are
    evaluated with a backend function. tf.keras / tf_keras run eagerly: a
    call of the model returns tensors that carry their `_keras_mask`.
    """
    count = len(model.outputs)
    if family == KERAS2:
        symbolic = model.compute_mask(model.inputs, [None] * len(model.inputs))
        symbolic = list(symbolic) if isinstance(symbolic, (list, tuple)) else [symbolic]
        wanted = [k for k, m in enumerate(symbolic) if m is not None]
        if not wanted:
            return [None] * count
        import importlib

        backend = importlib.import_module(type(model).__module__.split(".")[0] + ".backend")
        values = backend.function(list(model.inputs), [symbolic[k] for k in wanted])(list(inputs))
        found: List[Optional[np.ndarray]] = [None] * count
        for k, value in zip(wanted, values):
            found[k] = np.asarray(value).astype(bool)
        return found
    if all(getattr(t, "_keras_mask", None) is None for t in model.outputs):
        return [None] * count  # no output of the graph carries a mask
    import tensorflow as tf

    out = model([tf.convert_to_tensor(x) for x in inputs] if len(inputs) > 1
                else tf.convert_to_tensor(inputs[0]), training=False)
    tensors = _output_list(model, out)
    masks: List[Optional[np.ndarray]] = []
    for tensor in tensors:
        mask = getattr(tensor, "_keras_mask", None)
        masks.append(None if mask is None else np.asarray(mask).astype(bool))
    return masks
