"""tf.keras 2.4-2.15 (the `keras` 2.x package) and `tf_keras` (Keras 2 for TF 2.16+).

A thin family over the native `clone_model`: it runs wherever it is right,
and the shared core (`_cloner.py`) fills what it lacks. The native problems it works
around are rows of `compat_clone.known_issues`, cited by id.
"""

from __future__ import annotations

import contextlib
import inspect
import sys
from typing import Any, ContextManager, Dict, Iterator, List, Optional, Sequence, Tuple

from compat_clone.families._compile import unprefix_metric_names
from compat_clone.families._core import Family
from compat_clone.families._layer_state import assign_handlers, handler_spec, is_weight_handler, split_handlers
from compat_clone.families._types import CloneLayer, CompileSettings, LayerMap, Node

__all__ = ["TfKeras"]


def _tf() -> Any:
    import tensorflow as tf

    return tf


def _class_named(obj: Any, name: str) -> Optional[type]:
    for klass in type(obj).__mro__:
        if klass.__name__ == name:
            return klass
    return None


def _shadowed_layers(layer: Any, keras: Any) -> Dict[str, type]:
    """The layers `layer` holds (not itself) whose class name Keras resolves to another class of its own."""
    flatten = getattr(layer, "_flatten_layers", None)
    if flatten is None:
        return {}
    found: Dict[str, type] = {}
    for held in flatten(include_self=False):
        cls = type(held)
        public = getattr(keras.layers, cls.__name__, None)
        if public is not None and public is not cls and cls.__module__.split(".")[0] == public.__module__.split(".")[0]:
            found[cls.__name__] = cls
    return found


class TfKeras(Family):
    """tf.keras 2.x and tf_keras."""

    def register_hint(self) -> str:
        keras = self.keras()
        name = getattr(keras, "__name__", "tf_keras")
        if hasattr(getattr(keras, "saving", None), "register_keras_serializable"):
            return f"`@{name}.saving.register_keras_serializable()`"
        return f"`@{name}.utils.register_keras_serializable()`"

    def layer_class(self) -> Any:
        return self.keras().layers.Layer

    def lambda_class(self) -> Any:
        return self.keras().layers.Lambda

    def is_sequential(self, layer: Any) -> bool:
        return _class_named(layer, "Sequential") is not None

    def is_functional(self, layer: Any) -> bool:
        return (
            bool(getattr(layer, "_is_graph_network", False))
            and _class_named(layer, "Model") is not None
            and not self.is_sequential(layer)
        )

    def clone_lambda(self, layer: Any) -> Any:
        # A top-level `Lambda.from_config` runs outside safe mode here, and its
        # bytecode round trip is the native behaviour: kept.
        return layer.__class__.from_config(layer.get_config())

    def config_round_trip(self, layer: Any) -> Any:
        # `tf-keras-shadowed-cell`: a layer's config names the layers it holds
        # (an RNN's cell, a wrapper's layer) by class name, and Keras resolves
        # the name to its public class: keras 2.12 also exports GRUCellV1 and
        # LSTMCellV1, named GRUCell and LSTMCell, so their clone held the V2
        # cells. The held layers whose name resolves to another class are given
        # by that name, for this call.
        keras = self.keras()
        shadowed = _shadowed_layers(layer, keras)
        if not shadowed:
            return super().config_round_trip(layer)
        with keras.utils.custom_object_scope(shadowed):
            return super().config_round_trip(layer)

    def unsafe_scope(self) -> ContextManager[Any]:
        # A nested `from_config` runs in safe mode where the release has one;
        # `serialization_lib.SAFE_MODE` is a threading.local: this thread, this call.
        lambda_cls = self.lambda_class()
        lib = getattr(sys.modules.get(lambda_cls.__module__), "serialization_lib", None)
        scope = getattr(lib, "SafeModeScope", None)
        return scope(False) if scope is not None else contextlib.nullcontext()

    # -- graphs ----------------------------------------------------------------

    def flatten(self, structure: Any) -> List[Any]:
        return list(_tf().nest.flatten(structure))

    def nodes(self, model: Any) -> Iterator[Node]:
        for depth in sorted(model._nodes_by_depth.keys(), reverse=True):
            for node in model._nodes_by_depth[depth]:
                if not node.is_input:
                    yield Node(node.layer, self.flatten(node.keras_inputs), self.flatten(node.outputs), node)

    def arguments(self, node: Node, tensor_map: Dict[int, Any]) -> Tuple[Sequence[Any], Dict[str, Any]]:
        def swap(value: Any) -> Any:
            return tensor_map.get(id(value), value)

        nest = _tf().nest
        return nest.map_structure(swap, node.raw.call_args), nest.map_structure(swap, node.raw.call_kwargs)

    def is_symbolic(self, value: Any) -> bool:
        try:
            if self.keras().backend.is_keras_tensor(value):
                return True
        except ValueError:  # not a tensor at all
            return False
        # a graph tensor / placeholder (accepted natively, wrapped by `wrap_inputs`)
        return bool(_tf().is_tensor(value) and not hasattr(value, "numpy"))

    def input_specs(self, model: Any) -> List[Dict[str, Any]]:
        specs = []
        for layer in model._input_layers:
            config = layer.get_config()
            specs.append(
                {
                    "batch_shape": config.get("batch_input_shape") or config.get("batch_shape"),
                    "dtype": config.get("dtype"),
                    "sparse": config.get("sparse", False),
                    "ragged": config.get("ragged", False),
                    "name": config.get("name"),
                }
            )
        return specs

    def wrap_inputs(self, model: Any, flat: List[Any]) -> List[Any]:
        keras = self.keras()
        return [
            x if keras.backend.is_keras_tensor(x) else keras.Input(tensor=x, name="input_wrapper_for_" + layer.name)
            for x, layer in zip(flat, model._input_layers)
        ]

    def build_functional(self, model: Any, inputs: List[Any], outputs: List[Any]) -> Any:
        nest = _tf().nest
        new_inputs = nest.pack_sequence_as(model._nested_inputs, inputs)
        new_outputs = nest.pack_sequence_as(model._nested_outputs, outputs)
        functional = _class_named(model, "Functional")
        like = getattr(sys.modules.get(functional.__module__) if functional else None, "has_functional_like_constructor", None)
        if like is not None and like(model.__class__):
            return model.__class__(new_inputs, new_outputs, name=model.name)
        return self.keras().Model(new_inputs, new_outputs, name=model.name)

    def finish_functional(self, model: Any, new: Any, layer_map: LayerMap) -> None:
        # Layers that feed no output (`add_loss` / `add_metric` on an inner
        # tensor) are re-inserted, as the native clone does, with its helper.
        created = [layer_map[id(layer)][1] for layer in model.layers if id(layer) in layer_map]
        ancillary = [layer for layer in created if layer not in new.layers]
        cloning = sys.modules.get(self.native_clone_model().__module__)
        insert = getattr(cloning, "_insert_ancillary_layers", None)
        functional = sys.modules.get(getattr(_class_named(model, "Functional"), "__module__", ""))
        skip_first = getattr(functional, "_should_skip_first_node", None)
        if not ancillary or insert is None or skip_first is None:
            return
        nodes = [node for layer in created for node in (layer.inbound_nodes[1:] if skip_first(layer) else layer.inbound_nodes)]
        insert(new, ancillary, model.metrics_names, nodes)

    # -- native calls ----------------------------------------------------------

    def rebuild_own_config(self, model: Any) -> Optional[Any]:
        # A Functional whose `get_config` is not Keras's default (`_is_default`):
        # the native call rebuilds it from config, and so do we, failing as it does.
        if getattr(model.get_config, "_is_default", False):
            return None
        return self.clone_subclassed(model)

    def clone_functional_whole(self, model: Any, input_tensors: Any, clone_layer: CloneLayer) -> Optional[Any]:
        if _has_single_list_call(model):
            return None  # `tf-keras-single-list-call`: the native walk loses the list
        return self.native_clone_model()(model, input_tensors=input_tensors, clone_function=clone_layer)

    def clone_sequential(self, model: Any, input_tensors: Any, clone_layer: CloneLayer) -> Any:
        return self.native_clone_model()(model, input_tensors=input_tensors, clone_function=clone_layer)

    # -- compile=True ----------------------------------------------------------

    def is_revived(self, layer: Any) -> bool:
        # `tf-keras-revived-layer`: `load_model` of a SavedModel without the
        # custom classes makes classes deriving from RevivedLayer /
        # RevivedNetwork, whose config names the lost class.
        return any(klass.__name__.startswith("Revived") for klass in type(layer).__mro__)

    def build_like(self, source: Any, new: Any) -> None:
        # `subclass-clone-unbuilt`: tf.keras records the first call's input signature (`_get_save_spec`,
        # `_saved_model_inputs_spec` before 2.5) and the build shape
        # (`_build_input_shape`): the clone is called on that signature inside
        # a traced function (symbolic, its variables lifted out), else built
        # from the shape (`Model.build` calls the model on placeholders).
        if not getattr(source, "built", False) or _weight_count(new) >= _weight_count(source):
            return
        spec = _save_spec(source)
        if spec is not None:
            _trace(new, spec)
        elif getattr(source, "_build_input_shape", None) is not None:
            new.build(source._build_input_shape)

    def compile_clone(self, clone: Any, optimizer: Any, arguments: Dict[str, Any]) -> None:
        # `compile` renames a metric object given for one output of several.
        unprefix_metric_names(clone, arguments)
        clone.compile(optimizer=optimizer, **arguments)

    def compile_settings(self, model: Any) -> Optional[CompileSettings]:
        # `_get_compile_args` is what the native `clone_and_build_model` and
        # saving read: optimizer, the user's losses, loss weights and metrics.
        if not getattr(model, "_is_compiled", False) or not hasattr(model, "_get_compile_args"):
            return None
        arguments = dict(model._get_compile_args())
        optimizer = arguments.pop("optimizer")
        params = inspect.signature(model.compile).parameters
        if "run_eagerly" in params:
            arguments["run_eagerly"] = getattr(model, "_run_eagerly", None)
        if "steps_per_execution" in params:
            arguments["steps_per_execution"] = _steps_per_execution(model, self.keras())
        for key in ("jit_compile", "pss_evaluation_shards"):  # 2.8+ / 2.12+
            if key in params and hasattr(model, "_" + key):
                arguments[key] = getattr(model, "_" + key)
        return CompileSettings(optimizer, arguments)

    # -- weights ---------------------------------------------------------------

    def variable_spec(self, variable: Any) -> Tuple[Tuple[Optional[int], ...], str]:
        if is_weight_handler(variable):  # `copy-weight-handler`: a lookup table, not a variable
            return handler_spec(variable)
        dtype = getattr(variable.dtype, "base_dtype", variable.dtype)
        return tuple(variable.shape.as_list()), str(getattr(dtype, "name", dtype))

    def assign_pairs(self, pairs: List[Tuple[Any, Any]], tau: float = 1.0) -> None:
        from compat_clone.placement import assign_tf

        handlers, variables = split_handlers(pairs)
        assign_tf(variables, tau)  # variable to variable: stays on the device
        assign_handlers(handlers)  # `copy-weight-handler`: tables, as `set_weights` fills them


def _trace(model: Any, spec: Any) -> None:
    """Calls `model` on placeholders shaped as `spec` in a graph of its own, without AutoGraph first.

    What `Model.build` does for a shape, done for the recorded signature: the
    layers' variables are made outside the graph (Keras opens an init scope
    to build a layer), the graph is dropped. One pass through the user's
    ``call``, where a `tf.function` takes two (a function that makes
    variables is traced again once they exist) and more work for its
    concrete function. AutoGraph is not run either: it converts the user's
    ``call`` (and whatever it calls) before tracing, seconds per class where
    the plain call takes a fraction of one. Keras's own layers do not need
    it; a ``call`` whose Python control flow reads tensors does, and raises
    when called as written: it is traced again as a `tf.function` with
    AutoGraph (a layer built by the first attempt stays built).
    """
    tf = _tf()
    try:
        _call_on_placeholders(tf, model, spec)
    except Exception:  # noqa: BLE001 -- any failure of the plain call: the converted trace decides
        tf.function(lambda inputs: model(inputs)).get_concrete_function(spec)


def _call_on_placeholders(tf: Any, model: Any, spec: Any) -> None:
    """`model` called once on placeholders of `spec` (dense `TensorSpec`s only) inside a fresh `FuncGraph`."""
    graph_class = getattr(getattr(tf, "__internal__", None), "FuncGraph", None)  # TF >= 2.5
    specs = tf.nest.flatten(spec)
    if graph_class is None or not all(type(s) is tf.TensorSpec for s in specs):
        tf.function(lambda inputs: model(inputs), autograph=False).get_concrete_function(spec)
        return
    with graph_class("compat_clone_build").as_default(), _autograph_off():
        placeholders = [tf.compat.v1.placeholder(s.dtype, s.shape) for s in specs]
        model(tf.nest.pack_sequence_as(spec, placeholders))


def _autograph_off() -> ContextManager[Any]:
    """AutoGraph's status set to disabled while the model is called in a graph.

    Keras converts a subclass's ``call`` with AutoGraph whenever it is called
    outside eager execution, unless the enclosing status says disabled (what
    ``tf.function(autograph=False)`` sets): the conversion was 40 % of a
    tf_keras subclass's clone (40 generated models, tf_keras 2.21: 7.6 CPU s
    with it, 4.4 without). The status lives in TensorFlow's AutoGraph context
    module; where that is missing, the call runs as Keras makes it.
    """
    try:
        from tensorflow.python.autograph.core import ag_ctx
    except ImportError:  # pragma: no cover -- every TensorFlow 2 has it
        return contextlib.nullcontext()
    status = getattr(getattr(ag_ctx, "Status", None), "DISABLED", None)
    control = getattr(ag_ctx, "ControlStatusCtx", None)
    return contextlib.nullcontext() if status is None or control is None else control(status=status)


def _weight_count(model: Any) -> int:
    try:
        return len(model.weights)
    except ValueError:  # a subclass with its own `build`, not yet built: "weights not yet created"
        return 0


def _save_spec(model: Any) -> Any:
    """The input signature of the model's first call, or None (never called)."""
    getter = getattr(model, "_get_save_spec", None)
    if callable(getter):
        try:
            return getter(dynamic_batch=True)
        except TypeError:  # no `dynamic_batch` argument
            return getter()
    return getattr(model, "_saved_model_inputs_spec", None)


def _steps_per_execution(model: Any, keras: Any) -> Any:
    """The `steps_per_execution` the model was compiled with ("auto" where it tunes it)."""
    if getattr(model, "_autotune_steps_per_execution", False):  # 2.13+
        return "auto"
    variable = getattr(model, "_steps_per_execution", None)
    if variable is None:
        return None
    # eager (TF 2's default) reads the variable directly; a TF 1.x graph via the session
    return int(variable.numpy() if _tf().executing_eagerly() else keras.backend.get_value(variable))


def _has_single_list_call(model: Any) -> bool:
    """True when a node called its layer on a one-element list (keras #17700)."""
    for nodes in model._nodes_by_depth.values():
        for node in nodes:
            args = getattr(node, "call_args", None)
            if args and isinstance(args[0], (list, tuple)) and len(args[0]) == 1:
                return True
    return False
