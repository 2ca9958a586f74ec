"""Standalone, multi-backend Keras 2.0-2.3 (`keras.models.clone_model`).

Our own graph walk, kept close to Keras 2.2.5's `keras/models.py`
(`_clone_functional_model` / `_clone_sequential_model`), with what the native
releases get wrong or lack corrected; each fix names the upstream bug:

* keras-team/keras #12202 (2.2.0-2.2.4; fixed in 2.2.5 by PR #12205): a layer
  with several outputs and no mask support makes `compute_mask` return
  `None`, `to_list` turns it into `[None]`, and zipping that with the outputs
  drops all outputs but the first; the clone ends in `AssertionError: Could
  not compute output Tensor(...)`. We keep one mask entry per output: the
  masks `Layer.__call__` recorded on the cloned node (it pads a single mask to
  every output, and a layer without mask support records `None`s), padded
  with `None` if a layer returned fewer.
* 2.2.0-2.2.4 key the tensor map by the tensors themselves (`tensor_map[x]`):
  tensors are unhashable on TF 2 unless v1 tensor equality is on. We key by
  `id()` (as 2.2.5 does), and the layer cache by `id()` as well.
* Native clones pass `mask=` by mutating `node.arguments` of the *source*
  model (`kwargs = node.arguments; kwargs['mask'] = ...`, 2.0-2.3.1), so the
  source changes and a later clone of it (or of the clone) is called with a
  stale mask from another graph. We copy the arguments, map any tensor in
  them to its clone, and let `Layer.__call__` collect the masks from the new
  inputs (the same masks, recorded on the new nodes).
* No `clone_function` before 2.3.0 (2.3.x: functional only), no
  `call_function`, no `recursive`: all supplied, for functional and
  Sequential models. Nested models are one unit by default (like native:
  `clone_function`, by default a config round trip, gets the whole nested
  model); with `recursive=True` they are rebuilt layer by layer with
  `clone_function` (and `call_function`) at every level, nesting and layer
  sharing kept.
* `Lambda` layers are rebuilt from the live function object, never
  serialized: `Lambda.from_config` rebuilds the function from `marshal`-ed
  bytecode with `keras.layers.core`'s globals, so a function reading a
  global of its own module fails (`NameError`) in every 2.x release.
* `model.trainable = False` and the flags of nested models are lost by the
  config round trip (2.0-2.3.1); restored.
* A Sequential model whose first layer is an explicit `InputLayer` loses it
  (`model.layers` omits it) and comes back unbuilt (2.2.x); the input is
  recreated. `Input(tensor=x, name='input_wrapper_for_' + x.name)` puts the
  tensor's `':0'` into a layer name; we sanitize it.
* Device placement (what `multi_gpu_model(cpu_relocation=True)` needed, and
  how #12202 was found): each cloned layer's variables are created under the
  device of its source layer's variables, unless `device=` names one.

Graph mode only (the TensorFlow backend of standalone Keras never ran
eagerly): weights are copied by one grouped assign op run in one session
call, cached per variable list.
"""

from __future__ import annotations

import contextlib
import re
import threading
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Set, Tuple

from compat_clone.families._core import CloneRequest, call_clone_function, holds_layer_of
from compat_clone.errors import (
    CloneFunctionError,
    CompatCloneError,
    DeviceNotFoundError,
    InputTensorsError,
    UnsupportedFeatureError,
    UnsupportedModelError,
    WeightsUnreadableError,
)
from compat_clone.weights import LayerMap

__all__ = ["clone", "variable_spec", "assign_pairs", "default_clone_layer"]


# -- the Keras module and its classes ---------------------------------------


def _k() -> Any:
    import keras

    return keras


def _K() -> Any:
    from keras import backend

    return backend


def _classes() -> Tuple[Any, Any, Any, Any, Any]:
    """(Layer, Network-or-Model, Sequential, InputLayer, Lambda)."""
    keras = _k()
    from keras.layers import Lambda

    engine = keras.engine
    layer_cls = engine.Layer if hasattr(engine, "Layer") else keras.layers.Layer
    # 2.1.3+: Model derives from engine.network.Network; 2.0-2.1: from
    # engine.topology.Container. Model covers every graph network either way.
    network_cls = getattr(getattr(engine, "network", None), "Network", None) or keras.models.Model
    input_layer_cls = getattr(engine, "InputLayer", None) or keras.layers.InputLayer
    return layer_cls, network_cls, keras.models.Sequential, input_layer_cls, Lambda


def _attr(obj: Any, *names: str) -> Any:
    # 2.0-2.1.2 spell these without the underscore (`input_layers`,
    # `nodes_by_depth`, `inbound_nodes`); 2.1.3+ with it.
    for name in names:
        if hasattr(obj, name):
            return getattr(obj, name)
    raise AttributeError(f"{type(obj).__name__} has none of {names}")


def _input_layers(model: Any) -> List[Any]:
    return list(_attr(model, "_input_layers", "input_layers"))


def _nodes_by_depth(model: Any) -> Dict[int, List[Any]]:
    return dict(_attr(model, "_nodes_by_depth", "nodes_by_depth"))


def _inbound_nodes(layer: Any) -> List[Any]:
    return list(_attr(layer, "_inbound_nodes", "inbound_nodes"))


def _to_list(x: Any) -> List[Any]:
    if isinstance(x, list):
        return x
    if isinstance(x, tuple):
        return list(x)
    return [x]


def _has_arg(fn: Any, name: str) -> bool:
    from keras.utils.generic_utils import has_arg

    return bool(has_arg(fn, name))


# -- cloning one layer ------------------------------------------------------


def _clone_lambda(layer: Any) -> Any:
    """Rebuilds a `Lambda` from its live callables: nothing is serialized.

    `Lambda.from_config` rebuilds the function from `marshal`-ed bytecode
    with `keras.layers.core`'s globals, so a function that reads a global of
    its own module breaks (every 2.x release).
    """
    _, _, _, _, lambda_cls = _classes()
    layer_cls = _classes()[0]
    base = layer_cls.get_config(layer)  # name, trainable, input shape, dtype
    kwargs: Dict[str, Any] = dict(base)
    kwargs["function"] = layer.function
    kwargs["output_shape"] = getattr(layer, "_output_shape", None)
    kwargs["mask"] = getattr(layer, "mask", None)
    kwargs["arguments"] = dict(getattr(layer, "arguments", None) or {})
    return layer.__class__(**kwargs)


def default_clone_layer(layer: Any) -> Any:
    """The native default: `layer.__class__.from_config(layer.get_config())`.

    `Lambda` layers are rebuilt from their live function instead.
    """
    _, _, _, _, lambda_cls = _classes()
    if type(layer) is lambda_cls:
        return _clone_lambda(layer)
    return layer.__class__.from_config(layer.get_config())


def _rebuild_error(layer: Any, exc: BaseException) -> UnsupportedModelError:
    """A layer whose default clone (a config round trip) failed.

    Worded like the other families' (`_errors.layer_rebuild_error`), with
    Keras 2's way of registering a class: it has no decorator.
    """
    from compat_clone.errors import _custom_classes_inside

    cls = type(layer)
    custom = _custom_classes_inside(layer)
    names = f" ({', '.join(custom)})" if custom else ""
    nested = (
        " pass `recursive=True` to clone this nested model layer by layer;"
        if hasattr(layer, "layers")
        else ""
    )
    return UnsupportedModelError(
        f"Cannot clone layer {getattr(layer, 'name', '?')!r} of class "
        f"{cls.__module__}.{cls.__qualname__}: rebuilding it from its config "
        f"failed with {type(exc).__name__}: {exc}\n"
        f"To fix it: make `{cls.__qualname__}.get_config()` return every "
        "argument of its constructor; register the custom classes its config "
        f"names{names} with `keras.utils.get_custom_objects()[name] = cls` "
        "(standalone Keras 2 has no `register_keras_serializable` decorator);"
        f"{nested} or pass a `clone_function` that builds this layer."
    )


# -- device placement -------------------------------------------------------


def _tf() -> Any:
    """The `tensorflow` module Keras' TF backend uses (TF 1.x, or compat.v1)."""
    from keras.backend import tensorflow_backend

    return tensorflow_backend.tf


def _check_device(device: Any, backend: str) -> Optional[str]:
    """Validates `device` before anything is built; returns it as a string."""
    if device is None:
        return None
    if backend != "tensorflow":
        raise UnsupportedFeatureError(
            f"`device=` needs the TensorFlow backend of standalone Keras; this "
            f"Keras runs on {backend!r}. Received: device={device!r}. Drop "
            "`device=` (the backend places variables itself)."
        )
    if hasattr(device, "to_string"):  # a tf.DeviceSpec
        device = device.to_string()
    if not isinstance(device, str) or not device:
        raise DeviceNotFoundError(
            f"Expected `device` to be a TensorFlow device string such as "
            f"'/CPU:0' or '/GPU:0'. Received: device={device!r}."
        )
    from tensorflow.python.eager import context
    from tensorflow.python.framework import device_spec

    try:
        spec = device_spec.DeviceSpecV2.from_string(device)
    except (ValueError, TypeError) as exc:
        raise DeviceNotFoundError(
            f"Cannot parse device {device!r}: {exc}. Expected a TensorFlow "
            "device string such as '/CPU:0' or '/GPU:0'."
        ) from None
    available = []
    for dev in context.context().list_logical_devices():
        parsed = device_spec.DeviceSpecV2.from_string(dev.name)
        available.append(dev.name)
        if spec.device_type is None or (
            parsed.device_type.upper() == spec.device_type.upper()
            and (spec.device_index is None or parsed.device_index == spec.device_index)
        ):
            return device
    raise DeviceNotFoundError(
        f"Device {device!r} does not exist on this machine. Available: "
        f"{', '.join(available) or 'none'}. Pass one of them, or device=None "
        "to create the clone's variables where the source's are."
    )


def _layer_device(layer: Any) -> Optional[str]:
    """The device of a layer's variables, when they all agree and it is set."""
    devices = {getattr(w, "device", "") or "" for w in getattr(layer, "weights", []) or []}
    if len(devices) == 1:
        only = devices.pop()
        return only or None
    return None


# -- the graph walk ---------------------------------------------------------


class _Cloner:
    """One clone operation: shared layer cache, options, placement."""

    def __init__(
        self,
        clone_function: Optional[Callable[[Any], Any]],
        call_function: Optional[Callable[..., Any]],
        recursive: bool,
        device: Optional[str],
        layer_map: LayerMap,
    ) -> None:
        self.clone_function = clone_function
        self.call_function = call_function
        self.recursive = recursive
        self.device = device
        self.layer_map = layer_map
        (self.layer_cls, self.network_cls, self.sequential_cls,
         self.input_layer_cls, self.lambda_cls) = _classes()

    # placement ----------------------------------------------------------
    @contextlib.contextmanager
    def placed(self, source_layer: Any) -> Iterator[None]:
        """Creates what follows on `device=`, else on the source layer's device."""
        where = self.device or _layer_device(source_layer)
        if where is None or _K().backend() != "tensorflow":
            yield
            return
        with _tf().device(where):
            yield

    # layers ---------------------------------------------------------------
    def is_graph_model(self, layer: Any) -> bool:
        return isinstance(layer, self.network_cls) and bool(getattr(layer, "_is_graph_network", True))

    def layer(self, layer: Any) -> Any:
        """The clone of `layer` (made once: shared layers stay shared)."""
        entry = self.layer_map.get(id(layer))
        if entry is not None:
            return entry[1]
        nested = self.is_graph_model(layer) and getattr(layer, "inputs", None)
        # A nested model holding a Lambda is rebuilt from its live layers even
        # without `recursive`: its config round trip would rebuild the Lambda's
        # function from bytecode, losing the module globals it reads.
        if nested and (
            self.recursive or (self.clone_function is None and holds_layer_of(layer, self.lambda_cls))
        ):
            # Layer by layer, nesting kept (recursion over nesting levels
            # only; each level's graph walk is iterative).
            new = self.model(layer, None)
        elif self.clone_function is None:
            try:
                new = default_clone_layer(layer)
            except CompatCloneError:
                raise
            except Exception as exc:  # TypeError (constructor args), ValueError...
                raise _rebuild_error(layer, exc) from exc
        else:
            new = call_clone_function(
                self.clone_function, layer, self.layer_cls, "a Keras layer", "another `keras.layers.Layer`"
            )
        self.layer_map[id(layer)] = (layer, new)
        return new

    def call(self, source_layer: Any, new_layer: Any, inputs: Any, kwargs: Dict[str, Any]) -> Any:
        with self.placed(source_layer):
            if self.call_function is None:
                return new_layer(inputs, **kwargs)
            try:
                return self.call_function(new_layer, inputs, **kwargs)
            except Exception as exc:
                raise CloneFunctionError(
                    f"`call_function` raised {type(exc).__name__} on layer "
                    f"{source_layer.name!r} ({type(source_layer).__name__}): {exc}"
                ) from exc

    # models ---------------------------------------------------------------
    def model(self, model: Any, input_tensors: Any) -> Any:
        if isinstance(model, self.sequential_cls):
            new = self.sequential(model, input_tensors)
        else:
            new = self.functional(model, input_tensors)
        # The config round trip drops a model's own `trainable` flag (2.0-2.3.1).
        if new.trainable != model.trainable:
            new.trainable = model.trainable
        return new

    def new_inputs(self, model: Any, input_tensors: Any) -> List[Any]:
        keras = _k()
        K = _K()
        input_layers = _input_layers(model)
        if input_tensors is None:
            tensors = []
            for layer in input_layers:
                x = keras.layers.Input(
                    batch_shape=layer.batch_input_shape,
                    dtype=layer.dtype,
                    sparse=getattr(layer, "sparse", False),
                    name=layer.name,
                )
                tensors.append(x)
                self.layer_map[id(layer)] = (layer, x._keras_history[0])
            return tensors
        flat = _flat_input_tensors(model, input_tensors, len(input_layers))
        tensors = []
        for layer, x in zip(input_layers, flat):
            if not _is_keras_tensor(K, x):
                # A raw placeholder or a `K.variable`: wrap it like native.
                x = keras.layers.Input(tensor=x, name="input_wrapper_for_" + layer.name)
            origin = x._keras_history[0]
            if isinstance(origin, self.input_layer_cls):
                self.layer_map.setdefault(id(layer), (layer, origin))
            tensors.append(x)
        return tensors

    def functional(self, model: Any, input_tensors: Any) -> Any:
        keras = _k()
        inputs = self.new_inputs(model, input_tensors)
        # id(source tensor) -> (clone tensor, its mask)
        tensor_map: Dict[int, Tuple[Any, Any]] = {}
        for x, y in zip(model.inputs, inputs):
            tensor_map[id(x)] = (y, _history_masks([y])[0])

        by_depth = _nodes_by_depth(model)
        for depth in sorted(by_depth, reverse=True):
            for node in by_depth[depth]:
                source_layer = node.outbound_layer
                if isinstance(source_layer, self.input_layer_cls):
                    continue  # inputs are made above, never called
                sources = _to_list(node.input_tensors)
                if any(id(x) not in tensor_map for x in sources):
                    continue
                new_layer = self.layer(source_layer)
                computed = [tensor_map[id(x)] for x in sources]
                kwargs = _map_arguments(node, tensor_map, [m for _, m in computed])
                args = [t for t, _ in computed]
                outputs = _to_list(
                    self.call(source_layer, new_layer, args[0] if len(args) == 1 else args, kwargs)
                )
                references = _to_list(node.output_tensors)
                bad = [y for y in outputs if not hasattr(y, "_keras_history")]
                if bad:
                    raise CloneFunctionError(
                        f"The call of the clone of layer {source_layer.name!r} "
                        f"returned {type(bad[0]).__name__} {bad[0]!r}, not a Keras "
                        "symbolic tensor. Expected `call_function` to return what "
                        "`layer(*args, **kwargs)` returns."
                    )
                if len(outputs) != len(references):
                    raise CloneFunctionError(
                        f"The clone of layer {source_layer.name!r} returned "
                        f"{len(outputs)} output(s) where the source layer returns "
                        f"{len(references)}. Expected `clone_function` / "
                        "`call_function` to keep the layer's outputs."
                    )
                masks = _history_masks(outputs)
                for x, y, mask in zip(references, outputs, masks):
                    tensor_map[id(x)] = (y, mask)

        outputs = []
        for x in model.outputs:
            if id(x) not in tensor_map:
                raise CloneFunctionError(
                    f"Could not compute output {x} of model {model.name!r}: a "
                    "layer was not reached. Is the model's graph connected to its "
                    "inputs? Received a model whose output is produced by "
                    f"{x._keras_history[0].name!r}."
                )
            outputs.append(tensor_map[id(x)][0])
        return keras.models.Model(inputs, outputs, name=model.name)

    def sequential(self, model: Any, input_tensors: Any) -> Any:
        keras = _k()
        K = _K()
        if self.call_function is not None:
            raise CloneFunctionError(
                "`call_function` is not supported with Sequential models: their "
                "layers are listed, not called. Received a Sequential model "
                f"{model.name!r}; convert it to a functional model first."
            )
        stack = list(model.layers)
        all_layers = list(getattr(model, "_layers", None) or stack)
        first_input = all_layers[0] if all_layers and isinstance(all_layers[0], self.input_layer_cls) else None
        if input_tensors is None:
            head: List[Any] = []
            if first_input is not None:
                # 2.2.x `model.layers` omits the InputLayer; a model built from
                # an explicit InputLayer would come back unbuilt. Recreate it.
                x = keras.layers.Input(
                    batch_shape=first_input.batch_input_shape,
                    dtype=first_input.dtype,
                    sparse=getattr(first_input, "sparse", False),
                    name=first_input.name,
                )
                head = [x._keras_history[0]]
                self.layer_map[id(first_input)] = (first_input, head[0])
        else:
            flat = _to_list(input_tensors)
            if len(flat) != 1 or isinstance(flat[0], (list, tuple, dict)):
                raise InputTensorsError(
                    "Expected `input_tensors` to hold exactly one tensor for a "
                    f"Sequential model. Received {len(flat)}: {flat!r}."
                )
            x = flat[0]
            _check_tensor(x)
            if _is_keras_tensor(K, x):
                origin = x._keras_history[0]
                if not isinstance(origin, self.input_layer_cls):
                    raise InputTensorsError(
                        "Cannot clone a Sequential model on top of a tensor that "
                        f"comes from layer {origin.name!r} ({type(origin).__name__}), "
                        "not from an InputLayer. Pass `keras.Input(...)`, a "
                        "placeholder or a variable, or use the functional API."
                    )
            else:
                x = keras.layers.Input(tensor=x, name="input_wrapper_for_" + _safe_name(x))
            head = [x._keras_history[0]]
            if first_input is not None:
                self.layer_map[id(first_input)] = (first_input, head[0])
        new = keras.models.Sequential(name=model.name)
        for layer in head:
            new.add(layer)
        for layer in stack:
            clone = self.layer(layer)
            with self.placed(layer):
                new.add(clone)
        return new


def _safe_name(x: Any) -> str:
    return re.sub(r"[^A-Za-z0-9_.\-/]", "_", str(getattr(x, "name", "tensor")))


def _check_tensor(x: Any) -> None:
    from keras.backend import is_tensor

    try:
        ok = bool(is_tensor(x))
    except Exception:  # pragma: no cover - backend-specific failures
        ok = False
    if not ok and not _is_variable(x):
        raise InputTensorsError(
            "Expected `input_tensors` to hold symbolic tensors: "
            "`keras.Input(...)`, placeholders or `K.variable`s. Received: "
            f"{type(x).__module__}.{type(x).__qualname__} {x!r}."
        )
    _check_own_keras(x)


def _check_own_keras(x: Any) -> None:
    """A Keras tensor must come from this standalone Keras, not tf.keras/tf_keras."""
    history = getattr(x, "_keras_history", None)
    if history is None:
        return
    origin = history[0]
    layer_cls = _classes()[0]
    if not isinstance(origin, layer_cls):
        owner = type(origin).__module__.partition(".")[0]
        raise InputTensorsError(
            "Expected `input_tensors` from the same standalone Keras as the model "
            f"(keras {_k().__version__}). Received "
            f"{type(x).__module__}.{type(x).__qualname__} {x!r}, made by layer "
            f"{getattr(origin, 'name', '?')!r} of package {owner!r}. Create it "
            "with this Keras' `keras.Input(...)`, or pass a placeholder or variable."
        )


def _is_variable(x: Any) -> bool:
    return type(x).__name__.endswith("Variable") or hasattr(x, "initializer")


def _is_keras_tensor(K: Any, x: Any) -> bool:
    return hasattr(x, "_keras_history")


def _flatten(structure: Any) -> List[Any]:
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


def _flat_input_tensors(model: Any, input_tensors: Any, expected: int) -> List[Any]:
    # Standalone Keras 2 models have a flat list of inputs; another structure
    # holding the right number of tensors is flattened (as Keras 3's `tree`
    # re-packs it), in order.
    flat = _flatten(input_tensors)
    if len(flat) != expected:
        names = [layer.name for layer in _input_layers(model)]
        raise InputTensorsError(
            f"Expected `input_tensors` to hold {expected} tensor(s), one per "
            f"model input ({names}). Received {len(flat)}."
        )
    for x in flat:
        _check_tensor(x)
    return flat


def _history_masks(tensors: Sequence[Any]) -> List[Any]:
    """The mask `Layer.__call__` recorded for each tensor (None without history)."""
    masks = []
    for y in tensors:
        history = getattr(y, "_keras_history", None)
        mask = None
        if history is not None:
            layer, node_index, tensor_index = history[:3]
            output_masks = _to_list(_inbound_nodes(layer)[node_index].output_masks)
            # #12202: a single None for several outputs means "no mask" for each.
            mask = output_masks[tensor_index] if tensor_index < len(output_masks) else None
        masks.append(mask)
    return masks


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(x is y for x, y in zip(a, b))
    return a is b


def _map_arguments(node: Any, tensor_map: Dict[int, Tuple[Any, Any]], masks: List[Any]) -> Dict[str, Any]:
    """The node's call arguments, copied, with source tensors mapped to clones.

    Never mutates `node.arguments` (native 2.0-2.3.1 do). A `mask` argument
    that is the mask the source node received from its inputs (native clones
    write it there) is dropped: `Layer.__call__` collects the clone's masks
    from the clone's inputs.
    """
    arguments = dict(getattr(node, "arguments", None) or {})
    if "mask" in arguments:
        source_masks = getattr(node, "input_masks", None)
        given = arguments["mask"]
        if source_masks is not None and _same(_to_list(given), _to_list(source_masks)):
            del arguments["mask"]
    for key, value in list(arguments.items()):
        if isinstance(value, (list, tuple)):
            arguments[key] = type(value)(
                tensor_map[id(v)][0] if id(v) in tensor_map else v for v in value
            )
        elif id(value) in tensor_map:
            arguments[key] = tensor_map[id(value)][0]
    return arguments


# -- entry points -----------------------------------------------------------


_LOCK = threading.RLock()


def _graph_of(model: Any) -> Any:
    for tensor in list(getattr(model, "outputs", None) or []) + list(getattr(model, "weights", None) or []):
        graph = getattr(tensor, "graph", None)
        if graph is not None:
            return graph
    return None


def _graph_scope(model: Any, input_tensors: Any) -> Any:
    """The graph to build the clone in, as a `with` context.

    Native Keras builds the clone in the current default graph (or in the
    graph of `input_tensors`), and so do we. One exception: TensorFlow 2's
    compat.v1 gives every thread its own default graph, so in a worker thread
    the current graph is a fresh, empty one, unknown to the source and to
    Keras's session: there the source's graph is used.
    """
    graph = None
    for tensor in _flatten(input_tensors) if input_tensors is not None else []:
        graph = getattr(tensor, "graph", None)
        if graph is not None:
            break
    if graph is None:
        source = _graph_of(model)
        try:
            current = _tf().get_default_graph()
        except Exception:  # Theano / CNTK backends: no graphs
            current = None
        if source is not None and current is not None and current is not source and not current.get_operations():
            graph = source
    as_default = getattr(graph, "as_default", None)
    return as_default() if as_default is not None else contextlib.nullcontext()


def _restore_layer_flags(layer_map: LayerMap, network_cls: Any, user_fn: bool) -> None:
    # Model.from_config drops a nested model's `trainable` (2.0-2.3.1). A
    # user clone_function decides flags itself.
    if user_fn:
        return
    for src, dst in layer_map.values():
        if isinstance(src, network_cls) and dst.trainable != src.trainable:
            dst.trainable = src.trainable


def clone(model: Any, request: CloneRequest) -> Tuple[Any, LayerMap]:
    """Clones a standalone Keras 2 model; returns the clone and its layer map."""
    r = request
    backend = getattr(r.info, "backend", None) or _K().backend()
    where = _check_device(r.device, backend)
    layer_map: LayerMap = {}
    cloner = _Cloner(r.clone_function, r.call_function, r.recursive, where, layer_map)
    if not getattr(model, "_is_graph_network", True) or (
        not isinstance(model, cloner.sequential_cls) and not getattr(model, "inputs", None)
    ):
        # A subclassed model (2.2.0+ `_is_graph_network=False`) has no layer
        # graph to walk; native 2.2.x fails on it with an AttributeError.
        raise UnsupportedModelError(
            f"Cannot clone the subclassed (or never-called) model {model.name!r} "
            f"of type {type(model).__name__}: standalone Keras 2 keeps no layer "
            "graph for it, and its `get_config` is not implemented. Build it as "
            "a functional or Sequential model (then `clone_function` can adapt "
            "each layer), or implement `get_config` / create a new instance of "
            "its class and copy the weights with `compat_clone.copy_weights`."
        )
    # TensorFlow 2's compat.v1 keeps a default graph per thread: a clone made
    # in a worker thread would otherwise be built in that thread's own, empty
    # graph, away from the source's tensors and Keras's session.
    # Graph-mode building is not thread-safe (concurrent `tf.Variable`
    # creation on one graph trips TensorFlow's scope stacks): clones and
    # copies of this family take one process-wide lock.
    with _LOCK, _graph_scope(model, r.input_tensors):
        new = cloner.model(model, r.input_tensors)
    _restore_layer_flags(layer_map, cloner.network_cls, r.clone_function is not None)
    if r.name is not None:
        new.name = r.name
    return new, layer_map


# -- weights ----------------------------------------------------------------


def variable_spec(variable: Any) -> Tuple[Tuple[Optional[int], ...], str]:
    K = _K()
    dtype = getattr(variable, "dtype", None)
    base = getattr(dtype, "base_dtype", None)  # TF ref dtypes: float32_ref
    name = getattr(base, "name", None) or K.dtype(variable)
    return tuple(K.int_shape(variable)), str(name)


# graph._compat_clone_assign_ops: {(id(src), id(dst)), ...: (srcs, dsts, op)}; the variables are held
# to make sure ids are not reused while the entry lives (it dies with the graph).


def assign_pairs(pairs: List[Tuple[Any, Any]]) -> None:
    """Variable to variable in one session run: one grouped assign op, cached.

    No host round trip and no per-variable `session.run` (native
    `set_weights` / `batch_set_value` feed numpy arrays through placeholders).
    Repeated copies between the same variables reuse the op, so the graph
    does not grow.
    """
    if not pairs:
        return
    with _LOCK:
        _assign_locked(pairs)


def _assign_locked(pairs: List[Tuple[Any, Any]]) -> None:
    K = _K()
    if K.backend() != "tensorflow":
        # Theano / CNTK shared variables: no graph-side assign across them;
        # the backend's batch transfer is what they offer (untested here).
        _host_copy(K, pairs)
        return
    tf = _tf()
    graphs: Set[Any] = {getattr(v, "graph", None) for pair in pairs for v in pair}
    if len(graphs) != 1:
        # Source and target in different graphs (e.g. `K.clear_session()`
        # between them): an op cannot read one and write the other; only the
        # host can carry the values.
        _host_copy(K, pairs)
        return
    graph = graphs.pop()
    key = tuple((id(s), id(d)) for s, d in pairs)
    # The cache lives on the graph itself: it dies with the graph (a
    # module-level map keyed by graph would keep every old graph alive).
    # (tf.Graph has __slots__: a graph collection holds it.)
    holder = graph.get_collection_ref("_compat_clone_assign_ops")
    if not holder:
        holder.append({})
    per_graph = holder[0]
    entry = per_graph.get(key)
    if entry is None or not all(a is s and b is d for a, b, (s, d) in zip(entry[0], entry[1], pairs)):
        with graph.as_default():
            ops = [tf.assign(dst, src) for src, dst in pairs]
            op = tf.group(*ops, name="compat_clone_copy_weights")
        entry = ([s for s, _ in pairs], [d for _, d in pairs], op)
        per_graph[key] = entry
    with graph.as_default():  # the session Keras keeps for this graph
        session = K.get_session()  # also initializes the clone's new variables
    if session.graph is not graph:
        # The variables live in a graph no session of Keras runs (built
        # under another `graph.as_default()`): carry the values by the host.
        _host_copy(K, pairs)
        return
    try:
        session.run(entry[2])
    except tf.errors.FailedPreconditionError as exc:
        raise _unreadable_error(exc) from exc


def _host_copy(K: Any, pairs: List[Tuple[Any, Any]]) -> None:
    """Every value read into host memory, then written: where no graph op can copy."""
    values = K.batch_get_value([src for src, _ in pairs])
    K.batch_set_value([(dst, value) for (_, dst), value in zip(pairs, values)])


def _unreadable_error(exc: BaseException) -> WeightsUnreadableError:
    found = re.search(r"(Could not find variable \S+?|Attempting to use uninitialized value \S+?)\.?(\s|$)", str(exc))
    first = found.group(1) if found else type(exc).__name__
    thread = threading.current_thread().name
    return WeightsUnreadableError(
        "Cannot read the source's weights in the "
        f"TensorFlow session Keras uses in thread {thread!r}: {first}. Keras 2.3 on a TF 1.x "
        "graph keeps one session per thread, and the model's values live in the session of "
        "the thread that built or trained it; this thread's session has never seen them. "
        "Capture that session where the model lives (`session = keras.backend.get_session()`) "
        "and clone inside `with session.as_default():` in the other thread. The source "
        "model is unchanged."
    )
