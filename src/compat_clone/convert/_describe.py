"""The Keras 2 half of a conversion: a model as neutral data.

`describe(model)` runs in the model's own environment (standalone Keras
2.0-2.3 in TF1 graph mode, tf.keras 2.x, `tf_keras`) and returns a
`Description` (the conversion's format, `_format`): plain JSON-able data and
NumPy arrays, nothing of the source framework. `rebuild` (`_rebuild`) turns
it into a Keras 3 model in another process (or the same one), and `verify`
(`_proof`) checks the result against the source's outputs recorded here.
"""

from __future__ import annotations

import json
import sys
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from compat_clone._walk import walk
from compat_clone.convert._format import Description, ProbeSet, WeightRecord
from compat_clone.convert._layer_outputs import record
from compat_clone.convert._probes import output_masks, predict, random_probe, user_inputs
from compat_clone.errors import InvalidArgumentError, UnsupportedModelError
from compat_clone.families.registry import OWNER_PACKAGES, FamilyInfo, entry, family_of

__all__ = ["describe", "has_graph"]


def describe(
    model: Any,
    *,
    probe_inputs: Any = None,
    samples: int = 4,
    seed: int = 0,
    compile: bool = False,
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
        compile: also describe the training state of a compiled model (its
            loss, metrics, optimizer and the optimizer's slots and iteration
            count), with one training step on the first probe set for the
            proof (`Description.training`); the model is left as it was.

    Returns:
        A `Description`.

    Raises:
        NotAModelError: `model` is not a Keras model.
        InvalidArgumentError: `model` is a Keras 3 model, `samples` is not a
            positive integer, or `probe_inputs` does not fit the inputs.
        UnsupportedModelError: a subclassed model (no graph to describe).
        ProbeInputError: the source computes none of the random probes
            tried (its open dimensions at every length within a memory
            budget): pass `probe_inputs`.

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
    if not entry(info.family).conversion_source:
        raise InvalidArgumentError(
            f"Expected a Keras 2 model (standalone keras 2.x, tf.keras or tf_keras) to "
            f"describe. Received a model of {info.package} {info.version} "
            f"(family {info.family!r}), which needs no conversion: use "
            "`compat_clone.clone_model` to copy it."
        )
    if not isinstance(samples, int) or isinstance(samples, bool) or samples < 1:
        raise InvalidArgumentError(f"Expected `samples` to be a positive integer. Received: samples={samples!r}.")
    architecture = _architecture(model)
    weights: List[WeightRecord] = []
    notes: List[Dict[str, Any]] = []
    _record_layers(model, info, weights, notes)
    if probe_inputs is not None:  # the user's inputs replace the random ones
        probes = [ProbeSet("user", user_inputs(model, probe_inputs), [])]
        probes[0].outputs = predict(model, probes[0].inputs)
    else:  # open dimensions at a length the source computes with
        inputs, outputs = random_probe(model, samples, seed, architecture, f"{info.package} {info.version}")
        probes = [ProbeSet("random", inputs, outputs)]
    for probe in probes:
        masks = output_masks(model, probe.inputs, info.family)
        probe.masks = masks if any(m is not None for m in masks) else []
    layer_outputs = record(model, probes[0].inputs, entry(info.family).graph_mode)
    training = None
    if compile:
        from compat_clone.convert._training import describe_training

        graph = _batch_reader(info) is not None
        backend = sys.modules.get(info.package + ".backend") if graph else None
        training = describe_training(model, architecture, probes[0].inputs, backend)

    return Description(
        source={
            "family": info.family,
            "package": info.package,
            "version": info.version,
            "backend": str(info.backend),
            "python": "{}.{}".format(*sys.version_info[:2]),
        },
        architecture=architecture,
        weights=weights,
        probes=probes,
        notes=notes,
        layer_outputs=layer_outputs,
        training=training,
    )


def _architecture(model: Any) -> Dict[str, Any]:
    if not has_graph(model):
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


def has_graph(model: Any) -> bool:
    """Whether a model (`_walk.is_model`) has a layer graph to describe: not a subclassed one."""
    flag = getattr(model, "_is_graph_network", None)
    if flag is None:  # standalone Keras 2.0-2.1.2: every Model (a Container) is a graph of layers
        flag = hasattr(model, "input_layers") and hasattr(model, "layers")
    return bool(flag) or type(model).__name__ in (
        "Sequential",
        "Functional",
    )


def _batch_reader(info: FamilyInfo) -> Any:
    """Standalone Keras 2's `backend.batch_get_value` (`info`: the model's `FamilyInfo`), or None for the
    other families (eager reads)."""
    if not entry(info.family).graph_mode:
        return None
    backend = sys.modules.get(info.package + ".backend")
    return getattr(backend, "batch_get_value", None)


def _record_layers(model: Any, info: FamilyInfo, weights: List[WeightRecord], notes: List[Dict[str, Any]]) -> None:
    """Records the weights (and the notes) of every layer under `model` (of family `info`), by path."""
    layers = list(walk(model))
    read = _batch_reader(info)
    if read is None:
        per_layer = [sub.get_weights() for _, sub in layers]
    else:  # one session run for every layer, not one per layer (TF1 graph mode: 0.1 s each)
        flat = iter(read([v for _, sub in layers for v in sub.weights]))
        per_layer = [[next(flat) for _ in sub.weights] for _, sub in layers]
    for (path, sub), values in zip(layers, per_layer):
        for index, (variable, value) in enumerate(zip(sub.weights, values)):
            weights.append(WeightRecord(path, index, str(variable.name), np.asarray(value)))
        if type(sub).__name__ == "Lambda":
            notes.extend(_lambda_notes(sub, path))
        module = type(sub).__module__
        if ".applications." in module:
            # a layer class of a `keras.applications` model (ConvNeXt's
            # LayerScale): Keras 3's applications may have its counterpart
            notes.append({"kind": "application_class", "layer": path, "class": type(sub).__name__, "module": module})


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
        return [{"kind": "lambda_opaque", "layer": path, "detail": f"function {fn!r} has no Python code to carry over"}]
    scope = getattr(fn, "__globals__", {})
    found: List[Dict[str, Any]] = []
    import builtins

    # Names read from the function's module, then those its closure holds
    # (the closure's values are what Keras 2 writes into the config).
    bound: List[Tuple[str, Any, bool]] = [(name, scope[name], False) for name in sorted(set(_code_names(code))) if name in scope]
    cells = getattr(fn, "__closure__", None) or ()
    bound.extend((name, cell.cell_contents, True) for name, cell in zip(code.co_freevars, cells))
    for name, value, in_closure in bound:
        module = getattr(value, "__name__", "") if _is_module(value) else getattr(value, "__module__", None)
        root = (module or "").partition(".")[0]
        if root in OWNER_PACKAGES:
            found.append(
                {
                    "kind": "lambda_framework",
                    "layer": path,
                    "name": name,
                    "module": module,
                    "function": getattr(fn, "__qualname__", "?"),
                }
            )
            # TensorFlow's API itself (not a Keras under it, `K`), read as a global: a closure's module is not
            # carried. A Lambda that tf.keras loaded from a file reads tf.keras's own `tf`: tensorflow.compat.v2.
            if _is_module(value) and module in ("tensorflow", "tensorflow.compat.v2") and not in_closure:
                found.extend(_tensorflow_calls(code, name, value, path))
        elif _is_module(value):
            found.append({"kind": "lambda_module", "layer": path, "name": name, "module": module})
        elif in_closure and _is_module(value):
            found.append(
                {
                    "kind": "lambda_global",
                    "layer": path,
                    "name": name,
                    "detail": f"the module {module!r}, held by the function's closure",
                }
            )
        elif isinstance(value, (int, float, str, bool)) or value is None:
            if not in_closure:  # closure constants travel in the config itself
                found.append({"kind": "lambda_constant", "layer": path, "name": name, "value": value})
        elif in_closure or not hasattr(builtins, name):
            found.append(
                {"kind": "lambda_global", "layer": path, "name": name, "detail": f"{type(value).__name__} from module {module!r}"}
            )
    return found


def _attribute_chains(code: Any, name: str) -> List[str]:
    """The dotted attributes the code (its nested functions' included) reads off the global or free name `name`.

    ``tf.math.reduce_sum(x, 1)`` reads ``math.reduce_sum`` off ``tf``. A bare
    use of the name (passed on, stored) gives ``""``: no function to name.
    """
    import dis

    chains: List[str] = []
    instructions = list(dis.get_instructions(code))
    for k, ins in enumerate(instructions):
        if ins.opname not in ("LOAD_GLOBAL", "LOAD_DEREF", "LOAD_NAME") or ins.argval != name:
            continue
        parts = []
        for nxt in instructions[k + 1 :]:
            if nxt.opname not in ("LOAD_ATTR", "LOAD_METHOD"):
                break
            parts.append(str(nxt.argval))
        chains.append(".".join(parts))
    for const in code.co_consts:
        if hasattr(const, "co_code"):
            chains.extend(_attribute_chains(const, name))
    return chains


def _tensorflow_calls(code: Any, name: str, module: Any, path: str) -> List[Dict[str, Any]]:
    """One note per TensorFlow function a Lambda's code reaches through the module `name`: what it reads
    (``reduce_sum``) and the names `_tf_ops.OPS` knows that function by (``math.reduce_sum``), so that the rebuild can compute it with `keras.ops` (`_tf_ops.OPS`); ``api`` is empty for an
    attribute that is not an exported function (the rebuild refuses it, naming it)."""
    notes = []
    exported = _exported(module)
    for chain in sorted(set(_attribute_chains(code, name))):
        target: Any = module
        for part in chain.split(".") if chain else ():
            target = getattr(target, part, None)
        api = sorted(n for n, f in exported.items() if f is target) if chain and callable(target) else []
        notes.append({"kind": "lambda_tf_call", "layer": path, "name": name, "chain": chain, "api": api})
    return notes


def _exported(module: Any) -> Dict[str, Any]:
    """The functions of `_tf_ops.OPS` that the TensorFlow `module` exports, by their name there (``reduce_sum``
    and ``math.reduce_sum`` are one function)."""
    from compat_clone.convert._tf_ops import OPS

    found = {}
    for key in OPS:
        target: Any = module
        for part in key.split("."):
            target = getattr(target, part, None)
        if target is not None:
            found[key] = target
    return found


def _is_module(value: Any) -> bool:
    import types

    return isinstance(value, types.ModuleType)
