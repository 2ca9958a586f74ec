"""tf.keras 2.4-2.15 (the `keras` package behind `tf.keras`) and `tf_keras`.

A thin adapter over the family's own `clone_model(model, input_tensors,
clone_function)`. What it adds or fixes, with the versions:

* `model.trainable = False` is not carried to the clone by the native call
  (tf.keras 2.4-2.15, tf_keras 2.14-2.21): restored, then each layer's own flag.
* A layer called on a one-element list, e.g. `Concatenate()([x])`, fails to
  clone natively: `functional.reconstruct_from_config` unpacks the list and
  calls the layer on a bare tensor (keras-team/keras #17700; seen in 2.15 and
  tf_keras 2.21). Such graphs, and every `call_function`, go through our own
  graph walk, which calls each layer with the exact argument structure its
  node recorded.
* `recursive=True` (absent natively): nested functional / Sequential models
  are cloned layer by layer with `clone_function` at every level.
* `call_function` (absent natively): supplied by the same walk for functional
  models; refused for Sequential models, whose layers are not called.
* `name=` renames the clone.
* `Lambda` layers inside a nested model or a wrapper: a nested `from_config`
  runs in safe mode, and since tf.keras 2.12 (tf_keras alike) a serialized
  `lambda` is refused there (and a bytecode round trip loses the function's
  module globals). A nested model holding a `Lambda` is rebuilt by our graph
  walk from the live layers; a wrapper is rebuilt under `SafeModeScope(False)`,
  which these releases keep in a threading.local: this thread, this call.
"""

from __future__ import annotations

import contextlib
import importlib
import sys
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


def _keras_module(info: Any) -> Any:
    if info.package == "tensorflow":  # the in-tree tf.python.keras (TF <= 2.5)
        import tensorflow as tf

        return tf.keras
    return importlib.import_module(info.package)


def _tf() -> Any:
    import tensorflow as tf

    return tf


def _class_named(obj: Any, name: str) -> Optional[type]:
    for klass in type(obj).__mro__:
        if klass.__name__ == name:
            return klass
    return None


def _is_graph_model(layer: Any) -> bool:
    return bool(getattr(layer, "_is_graph_network", False)) and _class_named(layer, "Model") is not None


def _is_sequential(layer: Any) -> bool:
    return _class_named(layer, "Sequential") is not None


def _default_clone_layer(layer: Any) -> Any:
    # The native default, tf.keras 2.4-2.15 and tf_keras alike.
    return layer.__class__.from_config(layer.get_config())


@contextlib.contextmanager
def _unsafe_in_this_thread(lambda_cls: type) -> Iterator[None]:
    # A nested `from_config` runs under `SafeModeScope(True)`, and since
    # tf.keras 2.12 (tf_keras alike) `Lambda.from_config` then refuses a
    # serialized `lambda`. The flag lives in `serialization_lib.SAFE_MODE`, a
    # threading.local: this scope relaxes it for this thread and this call only.
    lib = getattr(sys.modules.get(lambda_cls.__module__), "serialization_lib", None)
    scope = getattr(lib, "SafeModeScope", None)
    if scope is None:  # before 2.12: no safe mode
        yield
        return
    with scope(False):
        yield


class _Cloner:
    """One clone call: the layer map, the family's module, the user callables."""

    def __init__(
        self,
        keras: Any,
        clone_function: Optional[Callable[[Any], Any]],
        call_function: Optional[Callable[..., Any]],
        recursive: bool,
    ) -> None:
        self.keras = keras
        self.clone_function = clone_function
        self.call_function = call_function
        self.recursive = recursive
        self.layer_map: LayerMap = {}
        self.layer_cls = keras.layers.Layer

    # -- one layer ---------------------------------------------------------

    def clone_layer(self, layer: Any) -> Any:
        entry = self.layer_map.get(id(layer))
        if entry is not None:  # shared layer: cloned once, still shared
            return entry[1]
        if self.recursive and (_is_graph_model(layer) or _is_sequential(layer)):
            new = self.clone_graph(layer, None)
        elif self.clone_function is None:
            try:
                new = self._default_clone(layer)
            except CompatCloneError:
                raise
            except Exception as exc:  # TypeError / NotImplementedError / ValueError
                raise layer_rebuild_error(layer, exc, _register_hint(self.keras)) from exc
        else:
            new = call_clone_function(
                self.clone_function, layer, self.layer_cls, "a Keras layer", "another layer of the same Keras"
            )
        self.layer_map[id(layer)] = (layer, new)
        return new

    def _default_clone(self, layer: Any) -> Any:
        lambda_cls = self.keras.layers.Lambda
        if not holds_layer_of(layer, lambda_cls):
            return _default_clone_layer(layer)
        if _is_graph_model(layer) or _is_sequential(layer):
            # A nested model holding a `Lambda`: rebuilt by our graph walk from
            # the live layers (one unit still: no user callables inside), so no
            # function is deserialized; a bytecode round trip loses the
            # function's module globals and is refused in safe mode (2.12+).
            inner = _Cloner(self.keras, None, None, False)
            inner.layer_map = self.layer_map
            return inner.clone_graph(layer, None)
        with _unsafe_in_this_thread(lambda_cls):  # e.g. TimeDistributed(Lambda)
            return _default_clone_layer(layer)

    # -- one model ---------------------------------------------------------

    def clone_graph(self, model: Any, input_tensors: Any) -> Any:
        keras = self.keras
        if _is_sequential(model):
            if self.call_function is not None:
                raise CloneFunctionError(
                    "`call_function` is not supported with Sequential models: "
                    "their layers are listed, not called. Received the "
                    f"Sequential model {model.name!r}; convert it to a "
                    "functional model first."
                )
            if input_tensors is not None:
                flat = _tf().nest.flatten(input_tensors)
                if len(flat) != 1:
                    raise InputTensorsError(
                        "Expected `input_tensors` to hold exactly one tensor for a "
                        f"Sequential model. Received {len(flat)}."
                    )
                _check_symbolic(keras, flat)
            new = keras.models.clone_model(model, input_tensors=input_tensors, clone_function=self.clone_layer)
        elif _is_graph_model(model) and not (
            # A Functional subclass with its own get_config and nothing passed:
            # the native call rebuilds it from config, and so do we.
            not getattr(model.get_config, "_is_default", False)
            and self.clone_function is None
            and self.call_function is None
            and input_tensors is None
            and not self.recursive
        ):
            if input_tensors is not None:
                _check_count(model, input_tensors)
                _check_symbolic(keras, _tf().nest.flatten(input_tensors))
            if self.call_function is not None or _has_single_list_call(model):
                new = self._walk_clone(model, input_tensors)
            else:
                new = keras.models.clone_model(model, input_tensors=input_tensors, clone_function=self.clone_layer)
        else:
            if self.clone_function is not None or input_tensors is not None or self.call_function:
                raise UnsupportedModelError(
                    "`clone_function`, `call_function` and `input_tensors` need "
                    "a Functional or Sequential model, whose layer graph is "
                    f"known. Received a subclassed model of type "
                    f"{type(model).__name__}. Rebuild it with "
                    "`model.__class__.from_config(model.get_config())`."
                )
            new = _clone_subclassed(model)
        restore_trainable(model, new, self.layer_map)
        return new

    def _new_inputs(self, model: Any, input_tensors: Any) -> List[Any]:
        keras = self.keras
        if input_tensors is None:
            made = []
            for layer in model._input_layers:
                config = layer.get_config()
                made.append(
                    keras.Input(
                        batch_shape=config.get("batch_input_shape") or config.get("batch_shape"),
                        dtype=config.get("dtype"),
                        sparse=config.get("sparse", False),
                        ragged=config.get("ragged", False),
                        name=config.get("name"),
                    )
                )
            return made
        flat = _tf().nest.flatten(input_tensors)
        out = []
        for tensor, layer in zip(flat, model._input_layers):
            if not keras.backend.is_keras_tensor(tensor):
                tensor = keras.Input(tensor=tensor, name="input_wrapper_for_" + layer.name)
            out.append(tensor)
        return out

    def _walk_clone(self, model: Any, input_tensors: Any) -> Any:
        """Our graph walk: each node's call replayed with its own argument structure."""
        tf = _tf()
        inputs = self._new_inputs(model, input_tensors)
        tensor_map: Dict[int, Any] = {id(x): y for x, y in zip(model.inputs, inputs)}

        def swap(value: Any) -> Any:
            return tensor_map.get(id(value), value)

        call = self.call_function
        for depth in sorted(model._nodes_by_depth.keys(), reverse=True):
            for node in model._nodes_by_depth[depth]:
                if node.is_input:
                    continue
                if any(id(x) not in tensor_map for x in tf.nest.flatten(node.keras_inputs)):
                    continue
                args = tf.nest.map_structure(swap, node.call_args)
                kwargs = tf.nest.map_structure(swap, node.call_kwargs)
                layer = self.clone_layer(node.layer)
                if call is None:
                    outputs = layer(*args, **kwargs)
                else:
                    try:
                        outputs = call(layer, *args, **kwargs)
                    except CompatCloneError:
                        raise
                    except Exception as exc:
                        raise CloneFunctionError(
                            f"`call_function` raised {type(exc).__name__} on layer "
                            f"{layer.name!r}: {exc}"
                        ) from exc
                    flat_out = tf.nest.flatten(outputs)
                    if not flat_out or not all(_is_symbolic(self.keras, x) for x in flat_out):
                        raise CloneFunctionError(
                            "`call_function` must return the symbolic output(s) of "
                            f"calling the layer; for layer {layer.name!r} it returned "
                            f"{type(outputs).__name__}: {outputs!r}. Return "
                            "`layer(*args, **kwargs)` (or tensors computed from it)."
                        )
                for old, new in zip(tf.nest.flatten(node.outputs), tf.nest.flatten(outputs)):
                    tensor_map[id(old)] = new
        new_inputs = tf.nest.pack_sequence_as(model._nested_inputs, inputs)
        new_outputs = tf.nest.pack_sequence_as(
            model._nested_outputs, [tensor_map[id(x)] for x in model.outputs]
        )
        functional_mod = sys.modules[_class_named(model, "Functional").__module__] if _class_named(
            model, "Functional"
        ) else None
        like = getattr(functional_mod, "has_functional_like_constructor", None)
        if like is not None and like(model.__class__):
            return model.__class__(new_inputs, new_outputs, name=model.name)
        return self.keras.Model(new_inputs, new_outputs, name=model.name)


def _check_count(model: Any, input_tensors: Any) -> None:
    flat = _tf().nest.flatten(input_tensors)
    if len(flat) != len(model.inputs):
        raise InputTensorsError(
            f"Expected `input_tensors` to hold {len(model.inputs)} tensor(s), one "
            f"per model input ({[x.name for x in model.inputs]}). Received "
            f"{len(flat)}."
        )


def _register_hint(keras: Any) -> str:
    name = getattr(keras, "__name__", "tf_keras")
    if hasattr(getattr(keras, "saving", None), "register_keras_serializable"):
        return f"{name}.saving.register_keras_serializable()"
    return f"{name}.utils.register_keras_serializable()"


def _is_symbolic(keras: Any, value: Any) -> bool:
    try:
        return bool(keras.backend.is_keras_tensor(value))
    except ValueError:  # not a tensor at all
        return False


def _check_symbolic(keras: Any, flat: List[Any]) -> None:
    """Refuses what the native call would fail on deep inside (str, numpy, Keras 3 tensors)."""
    tf = _tf()
    for value in flat:
        if _is_symbolic(keras, value) or (
            tf.is_tensor(value) and not hasattr(value, "numpy")  # a graph tensor / placeholder
        ):
            continue
        cls = type(value)
        text = repr(value)
        if len(text) > 120:
            text = text[:117] + "..."
        owner = cls.__module__.partition(".")[0]
        hint = (
            f" It comes from a different Keras (`{owner}`) than the model's."
            if owner in ("keras", "tf_keras") and owner != keras.__name__.partition(".")[0]
            else ""
        )
        raise InputTensorsError(
            f"Expected `input_tensors` to hold symbolic tensors of the model's Keras "
            f"(`{keras.__name__}.Input(...)`). Received: {cls.__module__}."
            f"{cls.__qualname__} {text}.{hint} Create them with "
            f"`{keras.__name__}.Input(shape=...)`."
        )


def _has_single_list_call(model: Any) -> bool:
    """True when a node called its layer on a one-element list (keras #17700)."""
    for nodes in model._nodes_by_depth.values():
        for node in nodes:
            args = getattr(node, "call_args", None)
            if args and isinstance(args[0], (list, tuple)) and len(args[0]) == 1:
                return True
    return False


def _clone_subclassed(model: Any) -> Any:
    try:
        return model.__class__.from_config(model.get_config())
    except CompatCloneError:
        raise
    except Exception as exc:  # NotImplementedError (no get_config), TypeError, ValueError...
        raise subclassed_rebuild_error(model, exc) from exc


def clone(model: Any, request: CloneRequest) -> Tuple[Any, LayerMap]:
    """Clones a tf.keras / tf_keras model; returns the clone and its layer map."""
    r = request
    cloner = _Cloner(_keras_module(r.info), r.clone_function, r.call_function, r.recursive)
    with _placement.scope(model, r.device, r.info):
        new = cloner.clone_graph(model, r.input_tensors)
    if r.name is not None:
        new._name = r.name
    return new, cloner.layer_map


def variable_spec(variable: Any) -> Tuple[Tuple[Optional[int], ...], str]:
    dtype = getattr(variable.dtype, "base_dtype", variable.dtype)
    return tuple(variable.shape.as_list()), str(getattr(dtype, "name", dtype))


def assign_pairs(pairs: List[Tuple[Any, Any]]) -> None:
    """Variable to variable (`dst.assign(src)`): stays on the device."""
    _placement.assign_tf(pairs)
