"""A Keras 2 functional graph rebuilt in Keras 3: each node's call, in the source's order.

The description holds each layer's inbound nodes as Keras 2 writes them
(``[layer, node, tensor, kwargs]`` references); `functional` calls the
rebuilt layers on Keras 3 tensors until every node is made, so shared layers
(one layer, several nodes), masks and nested models come out as Keras 3
builds them.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from compat_clone._walk import MODEL_CLASS_NAMES
from compat_clone.convert._builder_protocol import GraphBuilder
from compat_clone.convert._tf_ops import PendingOp
from compat_clone.errors import UnconvertibleLayerError

__all__ = ["MODEL_CLASSES", "functional", "first_node", "is_model_entry"]

# A config names only its own class: the model class names of `_walk` (the
# one set, for live objects and configs alike).
MODEL_CLASSES = MODEL_CLASS_NAMES


def is_model_entry(class_name: str) -> bool:
    """Whether a config's `class_name` is a model's (``"Functional"``, ``"keras>Functional"``, ...)."""
    return class_name in MODEL_CLASSES or class_name.endswith(">Functional")


def functional(builder: GraphBuilder, config: Dict[str, Any], prefix: str, model_name: Optional[str]) -> Any:
    """The Keras 3 functional model of one Keras 2 functional config.

    Args:
        builder: the `_rebuild` builder making each layer (`GraphBuilder`:
            `layer`, `input_layer`, `op_call`, `keras3_names`).
        config: the model's Keras 2 config (``layers``, ``input_layers``,
            ``output_layers``).
        prefix: the model's path, ``"/"``-terminated (empty at the top).
        model_name: the Keras 3 model's name.
    """
    keras = builder.keras
    entries = config["layers"]
    names = builder.keras3_names([str(e.get("name", e["config"].get("name"))) for e in entries], prefix)
    # (layer name, node index) -> the node's output tensors
    outputs: Dict[Tuple[str, int], List[Any]] = {}
    built: Dict[str, Any] = {}
    done: Dict[str, int] = {}
    offset: Dict[str, int] = {}
    referenced = _referenced(config)
    for entry in entries:
        name = entry.get("name", entry["config"].get("name"))
        if entry["class_name"] == "InputLayer":
            tensor = builder.input_layer(entry["config"], prefix + name, names[name])
            outputs[(name, 0)] = [tensor]
            done[name] = len(entry.get("inbound_nodes") or []) or 1
        else:
            built[name] = builder.layer(entry, prefix + name, names[name])
            done[name] = 0
            offset[name] = _offset(entry, len(_nodes(entry.get("inbound_nodes") or [])), referenced.get(name, ()))
    pending = True
    while pending:
        pending = False
        progressed = False
        for entry in entries:
            name = entry.get("name", entry["config"].get("name"))
            if entry["class_name"] == "InputLayer":
                continue
            nodes = _nodes(entry.get("inbound_nodes") or [])
            while done[name] < len(nodes):
                node = nodes[done[name]]
                call = _node_call(node, outputs)
                if call is None:
                    pending = True
                    break
                args, kwargs = call
                if isinstance(built[name], PendingOp):
                    result = builder.op_call(built[name], args, kwargs)
                else:
                    result = built[name](args, **kwargs)
                result_list = list(result) if isinstance(result, (list, tuple)) else [result]
                outputs[(name, done[name] + offset.get(name, 0))] = result_list
                done[name] += 1
                progressed = True
        if pending and not progressed:
            raise UnconvertibleLayerError(
                f"The graph of model {config.get('name')!r} cannot be rebuilt: some nodes "
                "wait for inputs that no layer produces. The description is incomplete; "
                "describe the model again."
            )
    inputs = [outputs[(r[0], r[1])][r[2]] for r in _refs(config["input_layers"])]
    wanted = config["output_layers"]
    if isinstance(wanted, dict):
        # Model(i, {"score": ..., "probs": ...}) (tf.keras 2.4+ writes the dict): kept a dict.
        graph_out: Any = {key: outputs[(r[0], r[1])][r[2]] for key, r in wanted.items()}
    else:
        outs = [outputs[(r[0], r[1])][r[2]] for r in _refs(wanted)]
        graph_out = outs if _is_list(wanted) else outs[0]
    return keras.Model(
        inputs=inputs if _is_list(config["input_layers"]) else inputs[0],
        outputs=graph_out,
        name=model_name,
    )


def first_node(entry: Dict[str, Any]) -> int:
    """The index the config gives a layer's first call in this graph.

    Every Keras 2 family counts a nested model's own first node (the one
    its `Input` made) in the indices it writes, so the calls of a model
    built on its own `Input` start at 1 (a Sequential built without an
    input shape has no such node).
    """
    if not is_model_entry(entry["class_name"]):
        return 0
    inner = entry["config"]
    layers = inner if isinstance(inner, list) else inner.get("layers", [])
    if not layers:
        return 0
    first = layers[0]
    return int(first.get("class_name") == "InputLayer" or "batch_input_shape" in first.get("config", {}))


def _offset(entry: Dict[str, Any], calls: int, referenced: Any) -> int:
    """The node index of a layer's first call in this graph: `first_node`'s, unless the graph refers to a later
    index than its calls reach from there (standalone Keras 2.3's Sequential, built at its first call with no input
    shape, counts the node it made for itself, which its config does not show): then the calls end at that index."""
    first = first_node(entry)
    last = max(referenced, default=first)
    return last - calls + 1 if calls and last >= first + calls else first


def _referenced(config: Dict[str, Any]) -> Dict[str, List[int]]:
    """Per layer, the node indices of it that the graph refers to (other layers' calls, the model's outputs)."""
    found: Dict[str, List[int]] = {}

    def note(value: Any) -> None:
        if _is_ref(value):
            found.setdefault(value[0], []).append(int(value[1]))
        elif isinstance(value, list):
            for item in value:
                note(item)
        elif isinstance(value, dict):
            for item in value.values():
                note(item)

    for entry in config["layers"]:
        for node in _nodes(entry.get("inbound_nodes") or []):
            for ref in node:
                note(list(ref[:3]))
                if len(ref) > 3 and isinstance(ref[3], dict):
                    note(ref[3])
    note(config["output_layers"])
    return found


def _node_call(node: Any, outputs: Dict[Tuple[str, int], List[Any]]) -> Optional[Tuple[Any, Dict[str, Any]]]:
    """The arguments of one call, or None when an input is not built yet."""
    tensors = []
    kwargs: Dict[str, Any] = {}
    for ref in node:
        key = (ref[0], int(ref[1]))
        if key not in outputs:
            return None
        tensors.append(outputs[key][int(ref[2])])
        if len(ref) > 3 and ref[3]:
            kwargs.update(ref[3])
    resolved: Dict[str, Any] = {}
    for argument, value in kwargs.items():
        found, val = _resolve(value, outputs)
        if not found:
            return None
        resolved[argument] = val
    return (tensors[0] if len(tensors) == 1 else tensors), resolved


def _resolve(value: Any, outputs: Dict[Tuple[str, int], List[Any]]) -> Tuple[bool, Any]:
    """Tensor references inside call kwargs (``[layer, node, tensor]``) made tensors."""
    if _is_ref(value):
        key = (value[0], int(value[1]))
        if key not in outputs:
            return False, None
        return True, outputs[key][int(value[2])]
    if isinstance(value, list):
        items = [_resolve(v, outputs) for v in value]
        return all(ok for ok, _ in items), [v for _, v in items]
    return True, value


def _nodes(inbound: List[Any]) -> List[List[Any]]:
    """Keras 2 inbound nodes, each a list of ``[layer, node, tensor, kwargs]``."""
    nodes = []
    for node in inbound:
        if isinstance(node, dict):
            raise UnconvertibleLayerError(
                "A node of the description uses the Keras 3 call format; expected a Keras 2 "
                f"model's description. Received node {node!r}."
            )
        # A call on one tensor may be written as the bare reference
        # (`TFOpLambda`): ``["x", 0, 0, {...}]`` instead of ``[["x", 0, 0, {...}]]``.
        nodes.append([node] if node and isinstance(node[0], str) else node)
    return nodes


def _is_ref(value: Any) -> bool:
    return (
        isinstance(value, list)
        and len(value) == 3
        and isinstance(value[0], str)
        and isinstance(value[1], int)
        and isinstance(value[2], int)
    )


def _is_list(refs: Any) -> bool:
    return not _is_ref(refs)


def _refs(refs: Any) -> List[List[Any]]:
    return [refs] if _is_ref(refs) else list(refs)
