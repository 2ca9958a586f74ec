"""Keras 3 (`keras.models.clone_model`), on TensorFlow, JAX and PyTorch.

A thin adapter: it delegates to Keras's own `clone_model` and fixes what the
native call gets wrong or lacks, each fix commented with the versions:

* `Lambda` layers holding a Python function: the native default clone does a
  config round trip, and since 3.9 (hardened further in 3.15.1)
  `Lambda.from_config` refuses a serialized `lambda` unless safe mode is off.
  Flipping `keras.config.enable_unsafe_deserialization()` would relax it for
  every thread and every later `load_model`. We never serialize the function:
  a `Lambda` is rebuilt from the live function object. A wrapper layer that
  holds a `Lambda` (e.g. `TimeDistributed(Lambda(...))`) is rebuilt under
  `SafeModeScope(False)`, which Keras keeps in thread-local state, so only
  that `from_config` call in this thread sees it. A nested model holding a
  `Lambda` is rebuilt from its live layers instead (a bytecode round trip
  loses the function's module globals).
* `sparse=True` / `ragged=True` inputs: native `_clone_functional_model`
  recreates inputs from `batch_shape`, `dtype` and `name` only, so the clone's
  inputs are dense (seen in 3.15.1). We create the inputs ourselves.
* `model.trainable = False` on a functional model is not passed to the clone
  (native passes it for Sequential only); we restore it, then each layer's own
  flag.
* `call_function` (native since 3.3.3) and `recursive=True` (native since
  3.3.3, every nesting level since 3.14): we supply both on every Keras 3
  release, with our own graph walk where the native one lacks `call_fn`.
"""

from __future__ import annotations

import contextlib
import inspect
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

from compat_clone import placement as _placement
from compat_clone.families._core import CloneRequest, call_clone_function, holds_layer_of, restore_trainable
from compat_clone.errors import (
    CloneFunctionError,
    CompatCloneError,
    InputTensorsError,
    UnsupportedModelError,
    layer_rebuild_error,
    subclassed_rebuild_error,
)
from compat_clone.weights import LayerMap

__all__ = ["clone", "variable_spec", "assign_pairs"]

_REGISTER_HINT = "keras.saving.register_keras_serializable()"


def _k() -> Any:
    import keras

    return keras


def _classes() -> Tuple[Any, Any, Any, Any]:
    from keras.src.layers.core.lambda_layer import Lambda
    from keras.src.models.functional import Functional
    from keras.src.models.sequential import Sequential
    # Functional graphs hold Operations too (e.g. the `not_equal` of a mask
    # in 3.15): the native clone passes them to clone_function like layers.
    from keras.src.ops.operation import Operation

    return Functional, Sequential, Lambda, Operation


class _Tree:
    """`keras.src.tree` (3.1+), or dm-tree plus `keras.src.utils.nest` (3.0)."""

    def __init__(self) -> None:
        try:
            from keras.src import tree
        except ImportError:  # Keras 3.0 used dm-tree directly
            import tree as dm_tree
            from keras.src.utils.nest import pack_sequence_as

            self.flatten = dm_tree.flatten
            self.map_structure = dm_tree.map_structure
            self.assert_same_structure = dm_tree.assert_same_structure
            self.pack_sequence_as = pack_sequence_as
        else:
            self.flatten = tree.flatten
            self.map_structure = tree.map_structure
            self.assert_same_structure = tree.assert_same_structure
            self.pack_sequence_as = tree.pack_sequence_as


_TREE: List[_Tree] = []


def _tree() -> _Tree:
    if not _TREE:
        _TREE.append(_Tree())
    return _TREE[0]


def _flatten(structure: Any) -> List[Any]:
    return list(_tree().flatten(structure))


# -- cloning one layer ------------------------------------------------------


def _clone_lambda(layer: Any) -> Any:
    """Rebuilds a `Lambda` from its live callables: nothing is deserialized."""
    config = layer.get_config()
    config["function"] = layer.function
    if getattr(layer, "_output_shape", None) is not None:
        config["output_shape"] = layer._output_shape
    if getattr(layer, "mask", None) is not None:
        config["mask"] = layer.mask
    config["arguments"] = dict(getattr(layer, "arguments", None) or {})
    return layer.__class__(**config)


def _same_classmethod(cls: type, base: type, name: str) -> bool:
    mine = getattr(getattr(cls, name), "__func__", None)
    return mine is not None and mine is getattr(getattr(base, name), "__func__", None)


@contextlib.contextmanager
def _unsafe_in_this_thread() -> Iterator[None]:
    # SafeModeScope stores its flag in keras' global_state, a threading.local
    # (every Keras 3 release): other threads and later loads are untouched.
    from keras.src.saving import serialization_lib

    scope = getattr(serialization_lib, "SafeModeScope", None)
    if scope is None:
        yield
        return
    with scope(False):
        yield


def default_clone_layer(layer: Any) -> Any:
    """The native default (a config round trip), with the `Lambda` fix."""
    _, _, lambda_cls, _ = _classes()
    if isinstance(layer, lambda_cls) and _same_classmethod(type(layer), lambda_cls, "from_config"):
        return _clone_lambda(layer)
    config = layer.get_config()
    if holds_layer_of(layer, lambda_cls):
        with _unsafe_in_this_thread():
            return layer.__class__.from_config(config)
    return layer.__class__.from_config(config)


def _wrap(
    clone_function: Optional[Callable[[Any], Any]],
    call_function: Optional[Callable[..., Any]],
    recursive: bool,
    layer_map: LayerMap,
) -> Callable[[Any], Any]:
    """Layer sharing (one clone per source layer), recursion and checks."""
    functional_cls, sequential_cls, lambda_cls, layer_cls = _classes()
    fn = clone_function or default_clone_layer
    user_supplied = clone_function is not None

    def wrapped(layer: Any) -> Any:
        entry = layer_map.get(id(layer))
        if entry is not None:
            return entry[1]
        if recursive and isinstance(layer, (functional_cls, sequential_cls)):
            new = _clone_graph(
                layer, None, clone_function, call_function, recursive, layer_map
            )
        elif (
            not user_supplied
            and isinstance(layer, (functional_cls, sequential_cls))
            and holds_layer_of(layer, lambda_cls)
        ):
            # A nested model holding a `Lambda`, default clone: rebuilt from
            # its live layers (still one unit: no user callables inside). Its
            # config round trip would deserialize the function, which loses
            # the function's module globals (3.0-3.15.1: "could not
            # automatically infer the shape of the Lambda's output").
            new = _clone_graph(layer, None, None, None, False, layer_map)
        elif user_supplied:
            new = call_clone_function(
                fn, layer, layer_cls, "a Keras layer (or operation)", "another `keras.layers.Layer`"
            )
        else:
            try:
                new = fn(layer)
            except CompatCloneError:
                raise
            except Exception as exc:  # re-raised with the layer named
                raise layer_rebuild_error(layer, exc, _REGISTER_HINT) from exc
        layer_map[id(layer)] = (layer, new)
        return new

    return wrapped


# -- cloning a graph --------------------------------------------------------


def _native_has(param: str) -> bool:
    from keras.src.models import cloning

    return param in inspect.signature(cloning.clone_model).parameters


def _run_has_call_fn(model: Any) -> bool:
    return "call_fn" in inspect.signature(model._run_through_graph).parameters


def _new_inputs(model: Any) -> Any:
    """Inputs like the source's, sparse / ragged flags kept (3.15.1 drops them)."""
    tree = _tree()

    keras = _k()
    params = inspect.signature(keras.Input).parameters

    def make(x: Any) -> Any:
        kwargs: Dict[str, Any] = {"batch_shape": x.shape, "dtype": x.dtype, "name": x.name}
        for flag in ("sparse", "ragged"):
            if flag in params and getattr(x, flag, False):
                kwargs[flag] = True
        return keras.Input(**kwargs)

    return tree.map_structure(make, model.input)


def _check_symbolic(flat: List[Any]) -> None:
    from keras.src import backend

    bad = [x for x in flat if not isinstance(x, backend.KerasTensor)]
    if bad:
        cls = type(bad[0])
        text = repr(bad[0])
        if len(text) > 120:
            text = text[:117] + "..."
        raise InputTensorsError(
            "Expected `input_tensors` to hold Keras 3 symbolic tensors "
            f"(`keras.Input(...)`). Received: {cls.__module__}.{cls.__qualname__} "
            f"{text}. Create them with `keras.Input(shape=...)` from the same "
            "Keras as the model (Keras 3 `keras`, not `tf_keras` / `tf.keras`)."
        )


def _check_input_tensors(model: Any, input_tensors: Any) -> Any:
    tree = _tree()

    flat = _flatten(input_tensors)
    _check_symbolic(flat)
    expected = len(model.inputs)
    if len(flat) != expected:
        raise InputTensorsError(
            f"Expected `input_tensors` to hold {expected} tensor(s), one per "
            f"model input ({[x.name for x in model.inputs]}). Received "
            f"{len(flat)}."
        )
    try:
        tree.assert_same_structure(input_tensors, model.input)
    except (ValueError, TypeError):
        if expected == 1 and len(flat) == 1:
            return tree.pack_sequence_as(model.input, flat)
        return tree.pack_sequence_as(model.input, flat)
    return input_tensors


def _walk(model: Any, inputs: Any, operation_fn: Callable[[Any], Any], call_fn: Callable[..., Any]) -> Any:
    """`Functional._run_through_graph` with `call_fn`, for releases before 3.3.3."""
    tree = _tree()

    tensor_dict: Dict[int, Any] = {}
    for x, y in zip(model.inputs, _flatten(inputs)):
        tensor_dict[id(x)] = y
    for depth in sorted(model._nodes_by_depth.keys(), reverse=True):
        for node in model._nodes_by_depth[depth]:
            if not node.operation or node.is_input:
                continue
            if any(id(x) not in tensor_dict for x in node.input_tensors):
                continue
            args, kwargs = node.arguments.fill_in(tensor_dict)
            outputs = call_fn(operation_fn(node.operation), *args, **kwargs)
            for x, y in zip(node.outputs, _flatten(outputs)):
                tensor_dict[id(x)] = y
    flat_out = [tensor_dict[id(x)] for x in model.outputs]
    return tree.pack_sequence_as(model._outputs_struct, flat_out)


def _build_functional(model: Any, inputs: Any, outputs: Any) -> Any:
    from keras.src.models.functional import Functional, functional_like_constructor

    if functional_like_constructor(model.__class__):
        new = model.__class__(inputs, outputs, name=model.name)
    else:
        new = Functional(inputs, outputs, name=model.name)
    if getattr(model, "compiled", False):
        new.compile_from_config(model.get_compile_config())
    return new


def _clone_graph(
    model: Any,
    input_tensors: Any,
    clone_function: Optional[Callable[[Any], Any]],
    call_function: Optional[Callable[..., Any]],
    recursive: bool,
    layer_map: LayerMap,
) -> Any:
    keras = _k()
    functional_cls, sequential_cls, _, _ = _classes()
    wrapped = _wrap(clone_function, call_function, recursive, layer_map)

    if isinstance(model, sequential_cls):
        if call_function is not None:
            raise CloneFunctionError(
                "`call_function` is not supported with Sequential models: their "
                "layers are listed, not called. Received a Sequential model "
                f"{model.name!r}; convert it to a functional model first."
            )
        if input_tensors is None:
            first = model._layers[0] if model._layers else None
            spec = getattr(first, "output", None)
            if first is not None and spec is not None and (
                getattr(spec, "sparse", False) or getattr(spec, "ragged", False)
            ):
                # 3.15.1 rebuilds a Sequential's Input without `sparse`.
                input_tensors = _new_inputs_from(spec, first.name)
        else:
            flat = _flatten(input_tensors)
            if len(flat) != 1:
                raise InputTensorsError(
                    "Expected `input_tensors` to hold exactly one tensor for a "
                    f"Sequential model. Received {len(flat)}."
                )
            _check_symbolic(flat)
        new = keras.models.clone_model(model, input_tensors=input_tensors, clone_function=wrapped)
    elif isinstance(model, functional_cls):
        # Native clone_model always takes the graph path for a Functional
        # instance (its `is_default(get_config)` test sees the wrapped
        # clone_function, which is never None), and so do we.
        inputs = _new_inputs(model) if input_tensors is None else _check_input_tensors(model, input_tensors)
        if call_function is not None and not _run_has_call_fn(model):
            outputs = _walk(model, inputs, wrapped, _wrap_call(call_function))
            new = _build_functional(model, inputs, outputs)
        elif call_function is not None:
            new = keras.models.clone_model(
                model,
                input_tensors=inputs,
                clone_function=wrapped,
                call_function=_wrap_call(call_function),
            )
        else:
            new = keras.models.clone_model(model, input_tensors=inputs, clone_function=wrapped)
    else:
        if clone_function is not None or input_tensors is not None or call_function is not None:
            raise UnsupportedModelError(
                "`clone_function`, `call_function` and `input_tensors` need a "
                "Functional or Sequential model, whose layer graph is known. "
                f"Received a subclassed model of type {type(model).__name__}. "
                "Rebuild it with `model.__class__.from_config(model.get_config())`."
            )
        new = _clone_custom(model)
    restore_trainable(model, new, layer_map)
    return new


def _new_inputs_from(spec: Any, name: str) -> Any:
    keras = _k()
    kwargs: Dict[str, Any] = {"batch_shape": spec.shape, "dtype": spec.dtype, "name": name}
    for flag in ("sparse", "ragged"):
        if getattr(spec, flag, False):
            kwargs[flag] = True
    return keras.Input(**kwargs)


def _wrap_call(call_function: Callable[..., Any]) -> Callable[..., Any]:
    from keras.src import backend

    def call(layer: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            outputs = call_function(layer, *args, **kwargs)
        except CompatCloneError:
            raise
        except Exception as exc:
            raise CloneFunctionError(
                f"`call_function` raised {type(exc).__name__} on layer "
                f"{getattr(layer, 'name', layer)!r}: {exc}"
            ) from exc
        flat = _flatten(outputs)
        if not flat or not all(isinstance(x, backend.KerasTensor) for x in flat):
            raise CloneFunctionError(
                "`call_function` must return the symbolic output(s) of calling "
                f"the layer; for layer {getattr(layer, 'name', layer)!r} it "
                f"returned {type(outputs).__name__}: {outputs!r}. Return "
                "`layer(*args, **kwargs)` (or tensors computed from it)."
            )
        return outputs

    return call


def _clone_custom(model: Any) -> Any:
    """A subclassed model: the native serialize/deserialize path, explained on failure."""
    keras = _k()
    try:
        return keras.models.clone_model(model)
    except CompatCloneError:
        raise
    except Exception as exc:  # NotImplementedError (no get_config), TypeError, ValueError...
        raise subclassed_rebuild_error(model, exc) from exc


def clone(model: Any, request: CloneRequest) -> Tuple[Any, LayerMap]:
    """Clones a Keras 3 model; returns the clone and its layer map."""
    r = request
    layer_map: LayerMap = {}
    with _placement.scope(model, r.device, r.info) as placement:
        new = _clone_graph(model, r.input_tensors, r.clone_function, r.call_function, r.recursive, layer_map)
        if r.name is not None:
            new.name = r.name
        placement.finish(new, layer_map)  # JAX shardings / torch devices per variable
    return new, layer_map


# -- weights ----------------------------------------------------------------


def variable_spec(variable: Any) -> Tuple[Tuple[Optional[int], ...], str]:
    return tuple(variable.shape), str(variable.dtype)


def assign_pairs(pairs: List[Tuple[Any, Any]]) -> None:
    """Variable to variable on the device; on JAX the arrays are shared."""
    _placement.assign_keras3(pairs)
