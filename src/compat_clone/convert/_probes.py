"""Probe inputs for a Keras 2 model, and what it answers on them.

`describe` records the source's outputs (and output masks) on probe inputs:
random ones drawn for each input's shape, dtype and role (ids below an
Embedding's ``input_dim``, a lookup's vocabulary, padded steps for a mask),
or the user's own. `verify` runs the converted model on the same inputs.
"""

from __future__ import annotations

import dataclasses
from typing import Any, List, Optional, Sequence, Tuple

import numpy as np

from compat_clone._walk import walk
from compat_clone.convert._layer_outputs import empty_output
from compat_clone.convert._lengths import OPEN_DIM, Attempt, find_length, open_dims, summary
from compat_clone.errors import InvalidArgumentError, ProbeInputError
from compat_clone.families.registry import entry

__all__ = ["input_specs", "random_inputs", "random_probe", "user_inputs", "predict", "output_list", "output_masks"]

# Integer inputs that feed no Embedding are drawn from [0, _INT_HIGH).
_INT_HIGH = 10


def input_specs(model: Any) -> List[Tuple[Tuple[Optional[int], ...], str, str]]:
    """(shape, dtype, name) of each model input."""
    specs = []
    layers = getattr(model, "_input_layers", None) or getattr(model, "input_layers", None)
    if layers is None:  # a Sequential of standalone Keras 2.0: its inner model holds them
        layers = [tensor._keras_history[0] for tensor in model.inputs]
    for tensor, layer in zip(model.inputs, layers):
        shape = tensor.shape
        dims = tuple(None if d is None else int(d) for d in (shape.as_list() if hasattr(shape, "as_list") else shape))
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

    high: Optional[int] = None  # ids in [low, high)
    low: int = 0
    padded: bool = False  # trailing zeros in every other sample (mask_zero, Masking)
    choices: Optional[Tuple[Any, ...]] = None  # a lookup's vocabulary
    mask_value: Optional[float] = None  # Masking's value, set at padded steps


def _input_role(model: Any, input_name: str) -> _Role:
    """The role of model input `input_name`, from the layers that read it directly.

    Embedding / CategoryEncoding: ids below ``input_dim`` / ``num_tokens``
    (the smallest over the readers; from 1 with padding for ``mask_zero``);
    IntegerLookup / StringLookup with a vocabulary: drawn from it; Masking:
    padded steps carry its ``mask_value``.
    """
    readers = [
        layer
        for _, layer in walk(model, models=True)
        if any(
            getattr(source, "name", None) == input_name
            # standalone Keras 2.0-2.1.2 spell it `inbound_nodes`
            for node in getattr(layer, "_inbound_nodes", None) or getattr(layer, "inbound_nodes", None) or []
            for source in _node_input_layers(node)
        )
    ]
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
            role = dataclasses.replace(
                role,
                high=high if role.high is None else min(role.high, high),
                low=1 if padded else role.low,
                padded=padded or role.padded,
            )
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


def random_inputs(model: Any, samples: int, seed: int, length: int = OPEN_DIM) -> List[np.ndarray]:
    """Random probes for each input (its shape, dtype and role), its open dimensions `length` long."""
    rng = np.random.default_rng(seed)
    arrays = []
    for dims, dtype, name in input_specs(model):
        shape = (samples,) + tuple(length if d is None else d for d in dims[1:])
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


# what `_failure` says of an output that is NaN everywhere (a mean over no steps): accepted when no length does better
_ALL_NAN = "is NaN everywhere"


def _failure(model: Any, inputs: List[np.ndarray], quick: bool = False) -> Tuple[List[np.ndarray], str]:
    """The source's outputs on `inputs`, and "" when it computed them, else why not.

    Not computed: a layer whose output shape would be empty (`empty_output`:
    then the source is not run), an empty output (cropped or convolved below
    one step), or one that is NaN everywhere (a pooling over no steps). `quick`: a
    tf.keras model is called eagerly (its `predict` traces again for each
    new shape, which a search of lengths pays for every length).
    """
    empty = empty_output(model, inputs)  # not run: TensorFlow's oneDNN pooling may crash on it
    if empty:
        return [], empty
    outputs = _called(model, inputs) if quick else predict(model, inputs)
    for k, out in enumerate(outputs):
        if out.size == 0:
            return outputs, f"output {k} is empty (shape {out.shape}): the input is too short for the model"
    for k, out in enumerate(outputs):
        if out.dtype.kind == "f" and np.all(np.isnan(out)):
            return outputs, f"output {k} {_ALL_NAN} (shape {out.shape}): the input is too short for the model"
    return outputs, ""


def _called(model: Any, inputs: List[np.ndarray]) -> List[np.ndarray]:
    import sys

    tf = sys.modules.get("tensorflow")
    if tf is None or not tf.executing_eagerly():  # standalone Keras 2: a TF1 graph, `predict` runs it as is
        return predict(model, inputs)
    tensors = [tf.convert_to_tensor(x) for x in inputs]
    out = model(tensors if len(tensors) > 1 else tensors[0], training=False)
    return [np.asarray(o) for o in output_list(model, out)]


def random_probe(
    model: Any, samples: int, seed: int, architecture: Any, source: str
) -> Tuple[List[np.ndarray], List[np.ndarray]]:
    """Random probe inputs the source computes with, and its outputs on them.

    Open dimensions are probed at `OPEN_DIM` first; where the source cannot
    compute that, at the smallest length it computes (`find_length`, asking
    the source itself one sample at a time).

    Raises:
        ProbeInputError: the source computes none of the probes tried.
    """
    inputs = random_inputs(model, samples, seed)
    try:
        outputs, failure = _failure(model, inputs)
    except Exception as exc:  # the source refuses them: other lengths are tried
        outputs, failure = [], summary(exc)
    if not failure:
        return inputs, outputs
    specs = input_specs(model)
    if not open_dims(specs):
        shapes = ", ".join(f"{name!r} {tuple(dims)}" for dims, _, name in specs)
        raise ProbeInputError(
            f"The source model ({source}) does not compute random probe inputs of its input shapes "
            f"({shapes}): {failure}. Nothing was converted. Give inputs it computes with --inputs FILE.npz "
            "(np.savez, one array per model input; in Python: `probe_inputs=`)."
        )
    try:
        length, _ = find_length(
            lambda n: _failure(model, random_inputs(model, 1, seed, n), quick=True)[1],
            specs,
            architecture,
            Attempt(OPEN_DIM, failure),
            source=source,
        )
    except ProbeInputError:
        if _ALL_NAN in failure:  # the source answers NaN at every length: that is its answer
            return inputs, outputs
        raise
    inputs = random_inputs(model, samples, seed, length)
    return inputs, predict(model, inputs)


def user_inputs(model: Any, probe_inputs: Any) -> List[np.ndarray]:
    given: Sequence[Any] = probe_inputs if isinstance(probe_inputs, (list, tuple)) else [probe_inputs]
    specs = input_specs(model)
    if len(given) != len(specs):
        raise InvalidArgumentError(
            f"Expected `probe_inputs` to hold one array per model input ({len(specs)}: "
            f"{[s[2] for s in specs]}). Received {len(given)} arrays. Pass a list in the "
            "model's input order."
        )
    arrays = []
    for value, (dims, dtype, name) in zip(given, specs):
        array = np.asarray(value)
        if array.ndim != len(dims) or any(d is not None and d != a for d, a in zip(dims[1:], array.shape[1:])):
            raise InvalidArgumentError(
                f"Expected the probe input for {name!r} to have shape {dims} (batch first). Received shape {array.shape}."
            )
        arrays.append(array.astype(dtype))
    return arrays


def predict(model: Any, inputs: List[np.ndarray]) -> List[np.ndarray]:
    x: Any = inputs if len(inputs) > 1 else inputs[0]
    out = model.predict(x, batch_size=len(inputs[0]), verbose=0)
    return [np.asarray(o) for o in output_list(model, out)]


def output_list(model: Any, out: Any) -> List[Any]:
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


def output_masks(model: Any, inputs: List[np.ndarray], family: str) -> List[Optional[np.ndarray]]:
    """The mask the source computes for each output on `inputs` (None: no mask).

    Standalone Keras 2 runs a TF1 graph: the model's symbolic output masks
    (`compute_mask` on its own inputs returns the ones built with it) are
    evaluated with a backend function. tf.keras / tf_keras run eagerly: a
    call of the model returns tensors that carry their `_keras_mask`.
    """
    count = len(model.outputs)
    if entry(family).graph_mode:
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

    out = model([tf.convert_to_tensor(x) for x in inputs] if len(inputs) > 1 else tf.convert_to_tensor(inputs[0]), training=False)
    tensors = output_list(model, out)
    masks: List[Optional[np.ndarray]] = []
    for tensor in tensors:
        mask = getattr(tensor, "_keras_mask", None)
        masks.append(None if mask is None else np.asarray(mask).astype(bool))
    return masks
