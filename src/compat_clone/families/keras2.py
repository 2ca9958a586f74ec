"""Standalone, multi-backend Keras 2.0-2.3 (`keras.models.clone_model`).

The native walk is wrong in too many releases to lean on (known issues
`keras2-12202-masks`, `keras2-rnn-state-twice`, `keras2-mutates-source`), so the
core's own walk runs every functional clone and this family builds its
Sequential clones itself. Graph mode only (the TensorFlow backend of
standalone Keras never ran eagerly): weights are copied by one grouped assign
op run in one session call, cached per variable list.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

from compat_clone.errors import CompileError, InputTensorsError, UnsupportedModelError
from compat_clone.families._compile import unprefix_metric_names
from compat_clone.families._core import Family, own_get_config
from compat_clone.families._keras2_parts import (
    attr_of,
    check_own_keras,
    input_spec,
    layer_device,
    map_arguments,
    safe_name,
    standalone_keras,
    to_list,
    unregistered_objects,
)
from compat_clone.families._tf1 import assign_locked, check_device, graph_scope, tf_module
from compat_clone.families._types import CloneLayer, CloneRequest, CompileSettings, Node
from compat_clone.families.registry import FamilyInfo
from compat_clone.placement import Placement

__all__ = ["Keras2"]


class Keras2(Family):
    """Standalone Keras 2.0-2.3, graph mode."""

    def __init__(self, info: FamilyInfo) -> None:
        super().__init__(info)
        self.device: Optional[str] = None

    def register_hint(self) -> str:
        way = "`keras.utils.get_custom_objects()[name] = cls`"
        return f"{way} (standalone Keras 2 has no `register_keras_serializable` decorator)"

    def layer_class(self) -> Any:
        engine = standalone_keras().engine
        return engine.Layer if hasattr(engine, "Layer") else standalone_keras().layers.Layer

    def lambda_class(self) -> Any:
        return standalone_keras().layers.Lambda

    def _input_layer_class(self) -> Any:
        return getattr(standalone_keras().engine, "InputLayer", None) or standalone_keras().layers.InputLayer

    def is_sequential(self, layer: Any) -> bool:
        return isinstance(layer, standalone_keras().models.Sequential)

    def is_functional(self, layer: Any) -> bool:
        # 2.1.3+: Model derives from engine.network.Network; 2.0-2.1 from
        # engine.topology.Container. Model covers every graph network either way.
        network = getattr(getattr(standalone_keras().engine, "network", None), "Network", None) or standalone_keras().models.Model
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
        where = self.device or layer_device(source_layer)
        if where is None or standalone_keras().backend.backend() != "tensorflow":
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
        by_depth = dict(attr_of(model, "_nodes_by_depth", "nodes_by_depth"))
        for depth in sorted(by_depth, reverse=True):
            for node in by_depth[depth]:
                if not isinstance(node.outbound_layer, input_layer):
                    yield Node(node.outbound_layer, to_list(node.input_tensors), to_list(node.output_tensors), node)

    def arguments(self, node: Node, tensor_map: Dict[int, Any]) -> Tuple[Sequence[Any], Dict[str, Any]]:
        # An RNN called with `initial_state=` / `constants=` records those
        # tensors twice: in its input list and in its keyword arguments. They
        # are passed once, as keywords (`keras2-rnn-state-twice`).
        given = {id(t) for value in (getattr(node.raw, "arguments", None) or {}).values() for t in to_list(value)}
        sources = [x for x in node.inputs if id(x) not in given] or node.inputs
        inputs = [tensor_map[id(x)] for x in sources]
        return (inputs[0] if len(inputs) == 1 else inputs,), map_arguments(node.raw, tensor_map)

    def is_symbolic(self, value: Any) -> bool:
        backend = standalone_keras().backend
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
        return [input_spec(layer) for layer in attr_of(model, "_input_layers", "input_layers")]

    def wrap_inputs(self, model: Any, flat: List[Any]) -> List[Any]:
        out = []
        for layer, x in zip(attr_of(model, "_input_layers", "input_layers"), flat):
            check_own_keras(x, self.layer_class())
            if not hasattr(x, "_keras_history"):  # a placeholder or a `K.variable`: wrapped like native
                x = standalone_keras().layers.Input(tensor=x, name="input_wrapper_for_" + layer.name)
            out.append(x)
        return out

    # `clone_functional_whole` is the default's None: the engine's walk, always. `keras2-subclass-lost`
    # (a Model subclass with its own get_config comes back as a plain Model) is the engine's rebuild from
    # config where nothing is asked of the graph (`rebuild_own_config`, through `rebuild_from_config` below).

    def rebuild_from_config(self, model: Any) -> Optional[Any]:
        # `Network.from_config` rebuilds a plain graph from a graph config; a
        # subclass with its own `get_config` but no `from_config` is rebuilt
        # by its constructor, as Keras 3's `Model.from_config` does.
        cls = type(model)
        if own_get_config(model) and "from_config" not in {
            name for klass in cls.__mro__[: cls.__mro__.index(standalone_keras().models.Model)] for name in klass.__dict__
        }:
            try:
                return cls(**model.get_config())
            except Exception:  # the caller falls back to our walk (a plain Model)
                return None
        return super().rebuild_from_config(model)

    def build_functional(self, model: Any, inputs: List[Any], outputs: List[Any]) -> Any:
        return standalone_keras().models.Model(inputs, outputs, name=model.name)

    def clone_sequential(self, model: Any, input_tensors: Any, clone_layer: CloneLayer) -> Any:
        keras = standalone_keras()
        all_layers = list(getattr(model, "_layers", None) or model.layers)
        first = all_layers[0] if all_layers and isinstance(all_layers[0], self._input_layer_class()) else None
        head: List[Any] = []
        if input_tensors is not None:
            head = [self._sequential_input(self.flatten(input_tensors)[0])]
        elif first is not None:
            # `model.layers` may omit an explicit InputLayer, and the clone
            # would come back unbuilt: the InputLayer is recreated.
            head = [keras.layers.Input(**input_spec(first))._keras_history[0]]
        new = keras.models.Sequential(name=model.name)
        for layer in head:
            new.add(layer)
        for layer in model.layers:
            if layer is first:  # 2.0-2.1 list the InputLayer in `model.layers`: recreated above
                continue
            clone = clone_layer(layer)
            with self.layer_scope(layer):
                new.add(clone)
        return new

    def config_round_trip(self, layer: Any) -> Any:
        # `keras2-app-unregistered`: objects the layer holds under names Keras
        # cannot resolve (2.0-2.1 MobileNet's `relu6` and DepthwiseConv2D) are
        # the ones its config names: given to `from_config` by those names.
        with standalone_keras().utils.custom_object_scope(unregistered_objects(layer)):
            new = super().config_round_trip(layer)
        if self.is_sequential(layer) and isinstance(layer.get_config(), list):
            # `keras2-sequential-name`: 2.0-2.1 write a Sequential's config as
            # its list of layers, without the name; a nested one comes back renamed.
            new.name = layer.name
        return new

    def _sequential_input(self, x: Any) -> Any:
        check_own_keras(x, self.layer_class())
        if not hasattr(x, "_keras_history"):
            return standalone_keras().layers.Input(tensor=x, name="input_wrapper_for_" + safe_name(x))._keras_history[0]
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
        rebuilt = self.rebuild_own_config(model)
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
        if len(new.weights) >= len(source.weights) and (not inputs or getattr(new, "inputs", None)):
            return  # built, and given its inputs where its source has them (a structural clone is marked built)
        if not inputs:  # called on Keras tensors instead (`model(Input(...))`): the same call on new ones
            nodes = getattr(source, "_inbound_nodes", None) or []
            if nodes:
                tensors = to_list(nodes[0].input_tensors)
                fresh = [
                    standalone_keras().layers.Input(batch_shape=standalone_keras().backend.int_shape(t), dtype=t.dtype.name)
                    for t in tensors
                ]
                new(fresh[0] if len(fresh) == 1 else fresh)
            return
        samples = [np.zeros((1,) + tuple(x.shape.as_list()[1:]), dtype=getattr(x.dtype, "name", "float32")) for x in inputs]
        new._set_inputs(samples[0] if len(samples) == 1 else samples)

    # -- the whole call: device, lock, graph -----------------------------------

    @contextlib.contextmanager
    def placement(self, model: Any, request: CloneRequest) -> Iterator[Placement]:
        """`device=` checked; then this family's lock and the source's graph.

        Variables are placed layer by layer (`layer_scope`), so nothing is
        left for `finish`; the clone is compiled inside this scope too (the
        optimizer's variables belong in the clone's graph).
        """
        backend = getattr(self.info, "backend", None) or standalone_keras().backend.backend()
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
        K = standalone_keras().backend
        base = getattr(getattr(variable, "dtype", None), "base_dtype", None)  # TF ref dtypes: float32_ref
        return tuple(K.int_shape(variable)), str(getattr(base, "name", None) or K.dtype(variable))

    def assign_pairs(self, pairs: List[Tuple[Any, Any]], tau: float = 1.0) -> None:
        if pairs:
            with _LOCK:
                assign_locked(pairs, tau)  # one cached graph op, tau fed when below 1


_LOCK = threading.RLock()
