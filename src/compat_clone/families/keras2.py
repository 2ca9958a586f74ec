"""Standalone, multi-backend Keras 2.0-2.3 (`keras.models.clone_model`).

The native walk is wrong in too many releases to lean on (known issues
`keras2-12202-masks`, `keras2-tensor-keys`, `keras2-mutates-source`), so the
core's own walk runs every functional clone and this family builds its
Sequential clones itself. Graph mode only (the TensorFlow backend of
standalone Keras never ran eagerly): weights are copied by one grouped assign
op run in one session call, cached per variable list.
"""

from __future__ import annotations

import contextlib
import re
import threading
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

from compat_clone.errors import CompileError, InputTensorsError, UnsupportedModelError
from compat_clone.families._compile import unprefix_metric_names
from compat_clone.families._core import Family, own_get_config
from compat_clone.families._tf1 import assign_locked, check_device, graph_scope, tf_module
from compat_clone.families._types import CloneRequest, CompileSettings, LayerCloner, Node
from compat_clone.families.registry import FamilyInfo
from compat_clone.placement import Placement

__all__ = ["Keras2"]


def _k() -> Any:
    import keras

    return keras


def _attr(obj: Any, *names: str) -> Any:
    # 2.0-2.1.2 spell these without the underscore (`input_layers`,
    # `nodes_by_depth`); 2.1.3+ with it.
    for name in names:
        if hasattr(obj, name):
            return getattr(obj, name)
    raise AttributeError(f"{type(obj).__name__} has none of {names}")


def _to_list(x: Any) -> List[Any]:
    return list(x) if isinstance(x, (list, tuple)) else [x]


class Keras2(Family):
    """Standalone Keras 2.0-2.3, graph mode."""

    def __init__(self, info: FamilyInfo) -> None:
        super().__init__(info)
        self.device: Optional[str] = None

    def register_hint(self) -> str:
        way = "`keras.utils.get_custom_objects()[name] = cls`"
        return f"{way} (standalone Keras 2 has no `register_keras_serializable` decorator)"

    def layer_class(self) -> Any:
        engine = _k().engine
        return engine.Layer if hasattr(engine, "Layer") else _k().layers.Layer

    def lambda_class(self) -> Any:
        return _k().layers.Lambda

    def _input_layer_class(self) -> Any:
        return getattr(_k().engine, "InputLayer", None) or _k().layers.InputLayer

    def is_sequential(self, layer: Any) -> bool:
        return isinstance(layer, _k().models.Sequential)

    def is_functional(self, layer: Any) -> bool:
        # 2.1.3+: Model derives from engine.network.Network; 2.0-2.1 from
        # engine.topology.Container. Model covers every graph network either way.
        network = getattr(getattr(_k().engine, "network", None), "Network", None) or _k().models.Model
        return (
            isinstance(layer, network)
            and bool(getattr(layer, "_is_graph_network", True))
            and bool(getattr(layer, "inputs", None))
            and not self.is_sequential(layer)
        )

    def lambda_base_config(self, layer: Any) -> Dict[str, Any]:
        # `Lambda.get_config` here holds the callables' serialized forms and
        # keys the constructor refuses (`function_type`, `output_shape_type`):
        # the base layer's config (name, trainable, input shape, dtype)
        # instead; the core adds the live callables.
        return dict(self.layer_class().get_config(layer))

    def layer_scope(self, source_layer: Any) -> Any:
        """Variables made on `device=`, else on the source layer's device."""
        where = self.device or _layer_device(source_layer)
        if where is None or _k().backend.backend() != "tensorflow":
            return contextlib.nullcontext()
        return tf_module().device(where)

    # -- graphs ----------------------------------------------------------------

    def flatten(self, structure: Any) -> List[Any]:
        """Leaves of nested lists / tuples / dicts (dict values in key order), iteratively."""
        out: List[Any] = []
        stack = [structure]
        while stack:
            item = stack.pop()
            if isinstance(item, dict):
                stack.extend(reversed([item[k] for k in sorted(item)]))
            elif isinstance(item, (list, tuple)):
                stack.extend(reversed(item))
            else:
                out.append(item)
        return out

    def nodes(self, model: Any) -> Iterator[Node]:
        input_layer = self._input_layer_class()
        by_depth = dict(_attr(model, "_nodes_by_depth", "nodes_by_depth"))
        for depth in sorted(by_depth, reverse=True):
            for node in by_depth[depth]:
                if not isinstance(node.outbound_layer, input_layer):
                    yield Node(node.outbound_layer, _to_list(node.input_tensors), _to_list(node.output_tensors), node)

    def arguments(self, node: Node, tensor_map: Dict[int, Any]) -> Tuple[Sequence[Any], Dict[str, Any]]:
        # An RNN called with `initial_state=` / `constants=` records those
        # tensors twice: in its input list and in its keyword arguments. They
        # are passed once, as keywords (`keras2-rnn-state-twice`).
        given = {id(t) for value in (getattr(node.raw, "arguments", None) or {}).values() for t in _to_list(value)}
        sources = [x for x in node.inputs if id(x) not in given] or node.inputs
        inputs = [tensor_map[id(x)] for x in sources]
        return (inputs[0] if len(inputs) == 1 else inputs,), _map_arguments(node.raw, tensor_map)

    def is_symbolic(self, value: Any) -> bool:
        backend = _k().backend
        try:
            if hasattr(backend, "is_tensor"):  # 2.2.0+
                if backend.is_tensor(value):
                    return True
            else:  # 2.0-2.1: `is_keras_tensor` answers (True / False) for any backend
                backend.is_keras_tensor(value)  # tensor and raises ValueError for anything else
                return True
        except Exception:  # backend-specific failures on odd objects
            pass
        return type(value).__name__.endswith("Variable") or hasattr(value, "initializer")

    def not_symbolic_error(self, value: Any) -> InputTensorsError:
        return InputTensorsError(
            "Expected `input_tensors` to hold symbolic tensors: `keras.Input(...)`, "
            "placeholders or `K.variable`s. Received: "
            f"{type(value).__module__}.{type(value).__qualname__} {value!r}."
        )

    def input_specs(self, model: Any) -> List[Dict[str, Any]]:
        return [_input_spec(layer) for layer in _attr(model, "_input_layers", "input_layers")]

    def wrap_inputs(self, model: Any, flat: List[Any]) -> List[Any]:
        out = []
        for layer, x in zip(_attr(model, "_input_layers", "input_layers"), flat):
            _check_own_keras(x, self.layer_class())
            if not hasattr(x, "_keras_history"):  # a placeholder or a `K.variable`: wrapped like native
                x = _k().layers.Input(tensor=x, name="input_wrapper_for_" + layer.name)
            out.append(x)
        return out

    def clone_functional_whole(self, cloner: LayerCloner, model: Any, input_tensors: Any) -> Optional[Any]:
        # `keras2-subclass-lost`: a functional model of a Model subclass with
        # its own get_config comes back as a plain Model; rebuilt from its
        # config when nothing is asked of the graph. Otherwise our walk.
        if cloner.asks_nothing_of_graph(input_tensors) and own_get_config(model):
            return self.rebuild_from_config(model)
        return None

    def rebuild_from_config(self, model: Any) -> Optional[Any]:
        # `Network.from_config` rebuilds a plain graph from a graph config; a
        # subclass with its own `get_config` but no `from_config` is rebuilt
        # by its constructor, as Keras 3's `Model.from_config` does.
        cls = type(model)
        if own_get_config(model) and "from_config" not in {
            name for klass in cls.__mro__[: cls.__mro__.index(_k().models.Model)] for name in klass.__dict__
        }:
            try:
                return cls(**model.get_config())
            except Exception:  # the caller falls back to our walk (a plain Model)
                return None
        return super().rebuild_from_config(model)

    def build_functional(self, model: Any, inputs: List[Any], outputs: List[Any]) -> Any:
        return _k().models.Model(inputs, outputs, name=model.name)

    def clone_sequential(self, cloner: LayerCloner, model: Any, input_tensors: Any) -> Any:
        keras = _k()
        all_layers = list(getattr(model, "_layers", None) or model.layers)
        first = all_layers[0] if all_layers and isinstance(all_layers[0], self._input_layer_class()) else None
        head: List[Any] = []
        if input_tensors is not None:
            head = [self._sequential_input(self.flatten(input_tensors)[0])]
        elif first is not None:
            # `model.layers` may omit an explicit InputLayer, and the clone
            # would come back unbuilt: the InputLayer is recreated.
            head = [keras.layers.Input(**_input_spec(first))._keras_history[0]]
        new = keras.models.Sequential(name=model.name)
        for layer in head:
            new.add(layer)
        for layer in model.layers:
            if layer is first:  # 2.0-2.1 list the InputLayer in `model.layers`: recreated above
                continue
            clone = cloner.clone_layer(layer)
            with self.layer_scope(layer):
                new.add(clone)
        return new

    def config_round_trip(self, layer: Any) -> Any:
        # `keras2-app-unregistered`: objects the layer holds under names Keras
        # cannot resolve (2.0-2.1 MobileNet's `relu6` and DepthwiseConv2D) are
        # the ones its config names: given to `from_config` by those names.
        with _k().utils.custom_object_scope(_unregistered_objects(layer)):
            new = super().config_round_trip(layer)
        if self.is_sequential(layer) and isinstance(layer.get_config(), list):
            # `keras2-sequential-name`: 2.0-2.1 write a Sequential's config as
            # its list of layers, without the name; a nested one comes back renamed.
            new.name = layer.name
        return new

    def _sequential_input(self, x: Any) -> Any:
        _check_own_keras(x, self.layer_class())
        if not hasattr(x, "_keras_history"):
            return _k().layers.Input(tensor=x, name="input_wrapper_for_" + _safe_name(x))._keras_history[0]
        origin = x._keras_history[0]
        if not isinstance(origin, self._input_layer_class()):
            raise InputTensorsError(
                "Cannot clone a Sequential model on top of a tensor that comes from "
                f"layer {origin.name!r} ({type(origin).__name__}), not from an "
                "InputLayer. Pass `keras.Input(...)`, a placeholder or a variable, "
                "or use the functional API."
            )
        return origin

    def clone_subclassed(self, model: Any) -> Any:
        # A subclassed model (`_is_graph_network=False`) has no layer graph to
        # walk; the native call fails on it with an AttributeError. One with
        # its own `get_config` is rebuilt by its constructor; any other is
        # refused here, and the engine makes a new instance structurally.
        rebuilt = self.rebuild_from_config(model) if own_get_config(model) else None
        if rebuilt is not None:
            return rebuilt
        raise UnsupportedModelError(
            f"Cannot clone the subclassed (or never-called) model {model.name!r} "
            f"of type {type(model).__name__}: standalone Keras 2 keeps no layer "
            "graph for it, and its `get_config` is not implemented. Build it as "
            "a functional or Sequential model (then `clone_function` can adapt "
            "each layer), or implement `get_config` / create a new instance of "
            "its class and copy the weights with `compat_clone.copy_weights`."
        )

    def build_like(self, source: Any, new: Any) -> None:
        # A subclassed model called on data records placeholders for its inputs
        # (`Model._set_inputs`, Keras 2.2-2.3); the clone gets its own from
        # one-sample arrays of the same shapes (no data runs: `_set_inputs`
        # makes placeholders of arrays and calls the model on them), in the
        # source's graph (the placement's scope).
        import numpy as np

        inputs = getattr(source, "inputs", None)
        if len(new.weights) >= len(source.weights):
            return
        if not inputs:  # called on Keras tensors instead (`model(Input(...))`): the same call on new ones
            nodes = getattr(source, "_inbound_nodes", None) or []
            if nodes:
                tensors = _to_list(nodes[0].input_tensors)
                fresh = [_k().layers.Input(batch_shape=_k().backend.int_shape(t), dtype=t.dtype.name) for t in tensors]
                new(fresh[0] if len(fresh) == 1 else fresh)
            return
        samples = [
            np.zeros((1,) + tuple(x.shape.as_list()[1:]), dtype=getattr(x.dtype, "name", "float32")) for x in inputs
        ]
        new._set_inputs(samples[0] if len(samples) == 1 else samples)

    # -- the whole call: device, lock, graph -----------------------------------

    @contextlib.contextmanager
    def placement(self, model: Any, request: CloneRequest) -> Iterator[Placement]:
        """`device=` checked; then this family's lock and the source's graph.

        Variables are placed layer by layer (`layer_scope`), so nothing is
        left for `finish`; the clone is compiled inside this scope too (the
        optimizer's variables belong in the clone's graph).
        """
        backend = getattr(self.info, "backend", None) or _k().backend.backend()
        self.device = check_device(request.device, backend)
        # Graph-mode building is not thread-safe (concurrent `tf.Variable`
        # creation on one graph trips TensorFlow's scope stacks): clones and
        # copies of this family take one process-wide lock.
        with _LOCK, graph_scope(self.flatten, model, request.input_tensors):
            yield Placement(self.device or "each layer's variables beside its source's")

    def compile_clone(self, clone: Any, optimizer: Any, arguments: Dict[str, Any]) -> None:
        # 2.3 renames a metric object given for one output of several.
        unprefix_metric_names(clone, arguments)
        clone.compile(optimizer=optimizer, **arguments)

    def compile_settings(self, model: Any) -> Optional[CompileSettings]:
        # `compile` keeps its arguments as attributes; 2.3 renamed the metric
        # lists (`metrics` became the list of Metric objects). 2.0-2.1 have no
        # `_is_compiled` flag: `compile` is what sets `optimizer` and `loss` there.
        compiled = getattr(model, "_is_compiled", None)
        if compiled is None:
            compiled = hasattr(model, "loss")
        if not compiled or getattr(model, "optimizer", None) is None:
            return None
        if getattr(model, "_function_kwargs", None):
            raise CompileError(
                f"Cannot compile the clone like its source: model {model.name!r} was compiled "
                f"with backend function arguments {sorted(model._function_kwargs)}, which hold "
                "the source's session and graph objects. Pass `compile=False` and call "
                "`clone.compile(...)` with arguments for the clone. Nothing was cloned."
            )
        targets, fed = getattr(model, "targets", None) or [], getattr(model, "_feed_targets", None)
        if fed is not None and len(fed) != len(targets):
            raise CompileError(
                f"Cannot compile the clone like its source: model {model.name!r} was compiled "
                "with `target_tensors`, tensors of the source's graph. Pass `compile=False` and "
                "call `clone.compile(..., target_tensors=...)` with targets for the clone. "
                "Nothing was cloned."
            )
        metrics_key = "_compile_metrics" if hasattr(model, "_compile_metrics") else "metrics"
        weighted_key = "_compile_weighted_metrics" if hasattr(model, "_compile_weighted_metrics") else "weighted_metrics"
        return CompileSettings(
            model.optimizer,
            {
                "loss": model.loss,
                "metrics": getattr(model, metrics_key, None),
                "loss_weights": getattr(model, "loss_weights", None),
                "sample_weight_mode": getattr(model, "sample_weight_mode", None),
                "weighted_metrics": getattr(model, weighted_key, None),
            },
        )

    # -- weights ---------------------------------------------------------------

    def variable_spec(self, variable: Any) -> Tuple[Tuple[Optional[int], ...], str]:
        K = _k().backend
        base = getattr(getattr(variable, "dtype", None), "base_dtype", None)  # TF ref dtypes: float32_ref
        return tuple(K.int_shape(variable)), str(getattr(base, "name", None) or K.dtype(variable))

    def assign_pairs(self, pairs: List[Tuple[Any, Any]], tau: float = 1.0) -> None:
        if pairs:
            with _LOCK:
                assign_locked(pairs, tau)  # one cached graph op, tau fed when below 1

_LOCK = threading.RLock()


def _unregistered_objects(layer: Any) -> Dict[str, Any]:
    """Keras' own classes and activation functions inside `layer` whose names Keras does not resolve
    (a user's unregistered objects stay the user's to register)."""
    keras = _k()
    known = keras.utils.get_custom_objects()
    found: Dict[str, Any] = {}
    stack, seen = [layer], set()
    while stack:
        item = stack.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        name = type(item).__name__
        if _own(type(item)) and getattr(keras.layers, name, None) is None and name not in known \
                and not hasattr(keras.models, name):
            found[name] = type(item)
        activation = getattr(item, "activation", None)
        fn_name = getattr(activation, "__name__", None)
        if callable(activation) and _own(activation) and fn_name and fn_name not in known \
                and getattr(keras.activations, fn_name, None) is None:
            found[fn_name] = activation
        stack.extend(getattr(item, "layers", None) or ())
        inner = getattr(item, "layer", None)  # wrappers
        if inner is not None:
            stack.append(inner)
    return found


def _own(obj: Any) -> bool:
    return str(getattr(obj, "__module__", "")).startswith("keras.")


def _input_spec(layer: Any) -> Dict[str, Any]:
    return {
        "batch_shape": layer.batch_input_shape,
        "dtype": layer.dtype,
        "sparse": getattr(layer, "sparse", False),
        "name": layer.name,
    }


def _layer_device(layer: Any) -> Optional[str]:
    """The device of a layer's variables, when they all agree and it is set."""
    devices = {getattr(w, "device", "") or "" for w in getattr(layer, "weights", []) or []}
    return (devices.pop() or None) if len(devices) == 1 else None


def _safe_name(x: Any) -> str:
    # `Input(tensor=x, name='input_wrapper_for_' + x.name)` would put the
    # tensor's ':0' into a layer name.
    return re.sub(r"[^A-Za-z0-9_.\-/]", "_", str(getattr(x, "name", "tensor")))


def _check_own_keras(x: Any, layer_cls: type) -> None:
    """A Keras tensor must come from this standalone Keras, not tf.keras/tf_keras."""
    history = getattr(x, "_keras_history", None)
    if history is None or isinstance(history[0], layer_cls):
        return
    origin = history[0]
    owner = type(origin).__module__.partition(".")[0]
    raise InputTensorsError(
        "Expected `input_tensors` from the same standalone Keras as the model "
        f"(keras {_k().__version__}). Received "
        f"{type(x).__module__}.{type(x).__qualname__} {x!r}, made by layer "
        f"{getattr(origin, 'name', '?')!r} of package {owner!r}. Create it "
        "with this Keras' `keras.Input(...)`, or pass a placeholder or variable."
    )


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(x is y for x, y in zip(a, b))
    return a is b


def _map_arguments(node: Any, tensor_map: Dict[int, Any]) -> Dict[str, Any]:
    """The node's call arguments, copied, with source tensors mapped to clones.

    `keras2-mutates-source`: native clones write `mask=` into the *source*
    node's arguments. We never mutate them; a `mask` argument that is the
    mask the source node received from its inputs is dropped, and
    `Layer.__call__` collects the clone's masks from the clone's inputs (one
    per output: `keras2-12202-masks`). Tensors given as keyword arguments
    (`initial_state=`, `constants=`) are mapped to their clones.
    """
    arguments = dict(getattr(node, "arguments", None) or {})
    if "mask" in arguments:
        source_masks = getattr(node, "input_masks", None)
        if source_masks is not None and _same(_to_list(arguments["mask"]), _to_list(source_masks)):
            del arguments["mask"]
    for key, value in list(arguments.items()):
        if isinstance(value, (list, tuple)):
            arguments[key] = type(value)(tensor_map.get(id(v), v) for v in value)
        else:
            arguments[key] = tensor_map.get(id(value), value)
    return arguments
