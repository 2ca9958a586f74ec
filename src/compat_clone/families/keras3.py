"""Keras 3 (`keras.models.clone_model`), on TensorFlow, JAX and PyTorch.

A thin family over the native call: Keras's own `clone_model` runs wherever
it is right, and the shared core (`_cloner.py`) fills what it lacks. The native
problems it works around are rows of `compat_clone.known_issues`, cited by id.
"""

from __future__ import annotations

import contextlib
import inspect
from typing import Any, Callable, ContextManager, Dict, Iterator, List, Optional, Sequence, Tuple

from compat_clone.errors import CompileError, InputTensorsError, layer_rebuild_error
from compat_clone.families._core import Family
from compat_clone.families._skip_init import Prefill
from compat_clone.families._types import CloneLayer, CloneRequest, CompileSettings, LayerMap, Node
from compat_clone.families.registry import FamilyInfo

__all__ = ["Keras3"]


class _Tree:
    """Keras's nested-structure helpers: feature-detected, never by version."""

    def __init__(self) -> None:
        try:  # 3.3+
            from keras.src import tree
        except ImportError:
            try:  # where `keras.src.tree` is absent: the older home of the module
                from keras.src.utils import tree
            except ImportError:  # 3.0: dm-tree itself
                import tree
        self.flatten = tree.flatten
        self.map_structure = tree.map_structure
        self.assert_same_structure = tree.assert_same_structure
        self.pack_sequence_as = getattr(tree, "pack_sequence_as", None) or _nest_pack()


def _nest_pack() -> Callable[..., Any]:
    from keras.src.utils.nest import pack_sequence_as  # 3.0

    return pack_sequence_as  # type: ignore[no-any-return]


_TREE: List[_Tree] = []


def _tree() -> _Tree:
    if not _TREE:
        _TREE.append(_Tree())
    return _TREE[0]


class Keras3(Family):
    """Keras 3.0-3.15 on any backend."""

    def __init__(self, info: FamilyInfo) -> None:
        super().__init__(info)
        # `compile_config_loads`' answers, by `id(model)`: asked at several steps
        # of one clone, deserialized once per model (this object serves one call).
        self._config_loads: Dict[int, bool] = {}

    def layer_class(self) -> Any:
        # Functional graphs hold Operations too (the `not_equal` of a mask in
        # 3.15): the native clone passes them to clone_function like layers.
        from keras.src.ops.operation import Operation

        return Operation

    def weight_owner_class(self) -> Any:
        from keras.src.layers.layer import Layer

        return Layer

    def lambda_class(self) -> Any:
        from keras.src.layers.core.lambda_layer import Lambda

        return Lambda

    def is_sequential(self, layer: Any) -> bool:
        from keras.src.models.sequential import Sequential

        return isinstance(layer, Sequential)

    def is_functional(self, layer: Any) -> bool:
        from keras.src.models.functional import Functional

        return isinstance(layer, Functional) and not self.is_sequential(layer)

    def config_round_trip(self, layer: Any) -> Any:
        clone = super().config_round_trip(layer)
        try:  # compat_clone's own step (`native-exception-type`)
            _restore_single_outputs(layer, clone)
        except Exception as exc:
            raise layer_rebuild_error(layer, exc, self.register_hint()) from exc
        return clone

    def unsafe_scope(self) -> ContextManager[Any]:
        # `lambda-safe-mode`: SafeModeScope keeps its flag in keras'
        # global_state, a threading.local: this thread, this call only.
        from keras.src.saving import serialization_lib

        scope = getattr(serialization_lib, "SafeModeScope", None)
        return scope(False) if scope is not None else contextlib.nullcontext()

    # -- graphs ----------------------------------------------------------------

    def flatten(self, structure: Any) -> List[Any]:
        return list(_tree().flatten(structure))

    def nodes(self, model: Any) -> Iterator[Node]:
        for depth in sorted(model._nodes_by_depth.keys(), reverse=True):
            for node in model._nodes_by_depth[depth]:
                if node.operation is None or node.is_input:
                    continue
                yield Node(node.operation, list(node.input_tensors), self.flatten(node.outputs), node)

    def arguments(self, node: Node, tensor_map: Dict[int, Any]) -> Tuple[Sequence[Any], Dict[str, Any]]:
        args, kwargs = node.raw.arguments.fill_in(tensor_map)
        return tuple(args), dict(kwargs)

    def is_symbolic(self, value: Any) -> bool:
        from keras.src import backend

        return isinstance(value, backend.KerasTensor)

    def input_specs(self, model: Any) -> List[Dict[str, Any]]:
        # `keras3-sparse-inputs`: the native clone drops sparse / ragged.
        # `keras3-input-layer-name`: each Input named after its InputLayer.
        return [_spec(x, _input_layer_name(x)) for x in self.flatten(model.input)]

    def check_input_tensors(self, model: Any, input_tensors: Any) -> List[Any]:
        flat = super().check_input_tensors(model, input_tensors)
        # As native (every Keras 3 release checks it): exactly the structure
        # of `model.input`, so a dict-structured model cannot be fed a tuple.
        try:
            _tree().assert_same_structure(input_tensors, model.input)
        except (ValueError, TypeError) as exc:
            raise InputTensorsError(
                "`input_tensors` must have the same structure as model.input: "
                f"expected {_structure(model.input)}, received {_structure(input_tensors)}. "
                "Pass the tensors in the structure of `model.input`."
            ) from exc
        return flat

    def build_functional(self, model: Any, inputs: List[Any], outputs: List[Any]) -> Any:
        from keras.src.models.functional import Functional, functional_like_constructor

        tree = _tree()
        inputs_struct = tree.pack_sequence_as(model.input, inputs)
        outputs_struct = tree.pack_sequence_as(model._outputs_struct, outputs)
        if functional_like_constructor(model.__class__):
            new = model.__class__(inputs_struct, outputs_struct, name=model.name)
        else:
            new = Functional(inputs_struct, outputs_struct, name=model.name)
        if self.compile_config_loads(model):  # `keras3-compiled-clone-config`
            _compile_from_config(model, new)
        return new

    # -- native calls ----------------------------------------------------------

    def clone_functional_whole(self, model: Any, input_tensors: Any, clone_layer: CloneLayer) -> Optional[Any]:
        # `keras3-subclass-lost` (a subclass with a constructor of its own:
        # keras_hub backbones and tasks, a user's `Model` subclass) is the
        # engine's rebuild from config, asked first; where it failed, the
        # native result (a Functional) is returned.
        if not self.compile_config_loads(model):
            return None  # `keras3-compiled-clone-config`: our walk, which does not compile from config
        # The native clone takes the graph path for a Functional whatever its
        # class once clone_function is given, as ours always is.
        if input_tensors is None:
            # Our inputs, in the structure of `model.input`: they keep their
            # flags (`keras3-sparse-inputs`) and their layers' names
            # (`keras3-input-layer-name`), which the native call's do not.
            specs = self.input_specs(model)
            input_tensors = _tree().pack_sequence_as(model.input, [self.make_input(s) for s in specs])
        return self.native_clone_model()(model, input_tensors=input_tensors, clone_function=clone_layer)

    def clone_sequential(self, model: Any, input_tensors: Any, clone_layer: CloneLayer) -> Any:
        if input_tensors is not None:
            return self._sequential_on(model, self.flatten(input_tensors)[0], clone_layer)
        first = model._layers[0] if model._layers else None
        if not self.compile_config_loads(model) and getattr(model, "inputs", None):
            # `keras3-compiled-clone-config`: built here, on a new Input like the source's
            fresh = self.make_input(_spec(model.inputs[0], getattr(first, "name", None)))
            return self._sequential_on(model, fresh, clone_layer)
        try:
            spec = getattr(first, "output", None)
        except ValueError:  # 3.0: a layer never called has no output (an unbuilt model)
            spec = None
        if spec is not None and (getattr(spec, "sparse", False) or getattr(spec, "ragged", False)):
            # `keras3-sparse-inputs`: the native clone rebuilds the Input without its flags.
            input_tensors = self.make_input(_spec(spec, getattr(first, "name", None)))
        return self.native_clone_model()(model, input_tensors=input_tensors, clone_function=clone_layer)

    def _sequential_on(self, model: Any, tensor: Any, clone_layer: CloneLayer) -> Any:
        """A Sequential clone whose input is `tensor` (`keras3-sequential-input-tensors`).

        The native path wraps the tensor with `Input(tensor=...)` alone, which
        needs a shape where the known issue applies; the tensor's own shape,
        dtype and sparsity are passed here, which every release accepts.
        """
        from keras.src.layers import InputLayer
        from keras.src.models.sequential import Sequential

        first = model._layers[0] if model._layers and isinstance(model._layers[0], InputLayer) else None
        spec = _spec(tensor, first.name if first is not None else None)
        spec["tensor"] = tensor
        inputs = self.make_input(spec)
        layers = [clone_layer(layer) for layer in model.layers]
        new = Sequential([inputs, *layers], name=model.name, trainable=model.trainable)
        if self.compile_config_loads(model):  # `keras3-compiled-clone-config`
            _compile_from_config(model, new)
        return new

    def clone_subclassed(self, model: Any) -> Any:
        from compat_clone.errors import CompatCloneError, subclassed_rebuild_note

        try:  # the native serialize / deserialize path, explained on failure
            return self.native_clone_model()(model)
        except CompatCloneError:
            raise
        except Exception as exc:
            # `native-exception-type`: the native call's own exception, the
            # same object, with the advice as a note.
            raise subclassed_rebuild_note(model, exc)  # noqa: B904 (the caught exception re-raised)

    def build_like(self, source: Any, new: Any) -> None:
        # Keras 3 records the shapes a layer was built with (`get_build_config`);
        # a Model's `build_from_config` runs its `call` on symbolic inputs of
        # those shapes where its `build` is the default, as `keras.saving` does.
        # Where the class has its own `build`, `build_from_config` calls it
        # alone, and sub-layers it makes stay unbuilt, with a warning
        # (`keras3-build-made-layers`): the clone is called instead, as the
        # native recipe does, on symbolic inputs of those shapes (else, where its
        # `call` cannot run symbolically, on zeros of them).
        # Keras 3.0-3.2 record no build config for a subclass whose `call` cannot run symbolically (a Python `if`
        # on a tensor's value): its sub-layers, built by its eager calls, each recorded theirs, and are built so.
        if len(new.weights) >= len(source.weights):
            return
        config = source.get_build_config()
        if config:
            if getattr(type(new).build, "_is_default", False):
                new.build_from_config(config)
            if len(new.weights) < len(source.weights):
                _build_by_call(new, config)
        if len(new.weights) < len(source.weights):
            _build_layers_like(source, new)

    # -- compile=True ----------------------------------------------------------

    def compile_settings(self, model: Any) -> Optional[CompileSettings]:
        # `compile` records its arguments in `_compile_config` (a
        # SerializableDict; `.config` holds the live objects).
        if not getattr(model, "compiled", False):
            return None
        recorded = getattr(getattr(model, "_compile_config", None), "config", None)
        if not isinstance(recorded, dict):
            raise CompileError(
                f"Cannot compile the clone like its source: model {model.name!r} of type "
                f"{type(model).__name__} is compiled but keeps no record of its compile "
                "arguments (`_compile_config`; a `compile` override that does not call "
                "`super().compile`?). Pass `compile=False` and call `clone.compile(...)`."
            )
        arguments = dict(recorded)
        arguments.pop("optimizer", None)  # the live one: a LossScaleOptimizer where compile wrapped it
        from keras.src.optimizers.loss_scale_optimizer import LossScaleOptimizer

        optimizer = model.optimizer
        if "auto_scale_loss" in inspect.signature(model.compile).parameters:
            # Not recorded; it shows where mixed_float16 left the optimizer unwrapped.
            policy = getattr(getattr(model, "dtype_policy", None), "name", None)
            arguments["auto_scale_loss"] = isinstance(optimizer, LossScaleOptimizer) or policy != "mixed_float16"
        return CompileSettings(optimizer, arguments)

    def compile_config_loads(self, model: Any) -> bool:
        """Whether the source's serialized compile config deserializes (True if not compiled).

        `keras3-compiled-clone-config`: the native clone of a compiled model
        compiles the clone from the source's serialized compile config, which
        fails for a loss or metric function that is not registered.
        """
        if not getattr(model, "compiled", False):
            return True
        known = self._config_loads
        if id(model) not in known:
            from keras.src.saving import serialization_lib

            config = model.get_compile_config() or {}
            try:  # the optimizer too: a throwaway one, built nowhere
                serialization_lib.deserialize_keras_object(config)
                known[id(model)] = True
            except Exception:  # TypeError "Could not locate function", ValueError...
                known[id(model)] = False
        return known[id(model)]

    # -- weights ---------------------------------------------------------------

    def variable_spec(self, variable: Any) -> Tuple[Tuple[Optional[int], ...], str]:
        return tuple(variable.shape), str(variable.dtype)

    def assign_pairs(self, pairs: List[Tuple[Any, Any]], tau: float = 1.0) -> None:
        from compat_clone.placement import assign_keras3

        assign_keras3(pairs, tau)

    def prefill(self, request: CloneRequest, layer_map: LayerMap) -> Optional[Prefill]:
        # JAX and torch: a clone layer's variables start as device copies of
        # its source layer's (no zeros made, then overwritten). Only where the
        # clone lives where the source does and no distribution lays variables
        # out (a layout would trace the initializer under `jax.jit`).
        from compat_clone.placement import fresh_copy_keras3

        fresh_copy = fresh_copy_keras3(self.info.backend)
        if fresh_copy is None or request.device is not None or _distribution() is not None:
            return None
        reverse: Dict[int, Any] = {}

        def source_layer(layer: Any) -> Any:
            if id(layer) not in reverse and len(reverse) != len(layer_map):
                reverse.clear()
                reverse.update((id(new), src) for src, new in layer_map.values())
            return reverse.get(id(layer))

        return Prefill(source_layer, fresh_copy)


def _compile_from_config(model: Any, new: Any) -> None:
    """As the native clone does for a compiled source: the clone compiled from its config."""
    if getattr(model, "compiled", False):
        new.compile_from_config(model.get_compile_config())


def _spec(x: Any, name: Optional[str]) -> Dict[str, Any]:
    """`Input(...)` arguments like tensor `x`; flags only where this Keras has them."""
    import keras

    params = inspect.signature(keras.Input).parameters
    spec: Dict[str, Any] = {"batch_shape": x.shape, "dtype": x.dtype, "name": name}
    for flag in ("sparse", "ragged"):
        if flag in params:
            spec[flag] = bool(getattr(x, flag, False))
    return spec


def _input_layer_name(x: Any) -> Optional[str]:
    """The name of the InputLayer that made symbolic input `x` (its tensor's name where none is known).

    An Input made without a name has a layer named `input_layer_N` and a
    tensor named `keras_tensor_N`; `Input(name=...)` names the layer.
    """
    history = getattr(x, "_keras_history", None)
    layer = history[0] if history else None
    name = getattr(layer, "name", None)
    return name if isinstance(name, str) else getattr(x, "name", None)


def _distribution() -> Any:
    """The global `keras.distribution` in force, or None (Keras 3.0-3.15: `distribution_lib.distribution()`)."""
    import sys

    module = sys.modules.get("keras.src.distribution.distribution_lib")
    getter = getattr(module, "distribution", None)
    return getter() if callable(getter) else None


def _structure(structure: Any) -> str:
    return str(_tree().map_structure(lambda x: getattr(x, "name", type(x).__name__), structure))


def _sub_models(layer: Any) -> List[Any]:
    """`layer` and every model nested in it (wrappers' layers included), in a stable order."""
    walk = getattr(layer, "_flatten_layers", None)
    found = list(walk(include_self=True, recursive=True)) if walk is not None else [layer]
    return [x for x in found if hasattr(x, "_outputs_struct")]


def _restore_single_outputs(source: Any, clone: Any) -> None:
    """`keras3-functional-output-list`: a single-output model rebuilt by
    `from_config` returns a one-element list, which breaks what consumes its
    output shape (e.g. `TimeDistributed(<model>)`). Each nested model of the
    clone gets its source's output structure back."""
    sources, clones = _sub_models(source), _sub_models(clone)
    if len(sources) != len(clones):  # not the same nesting: nothing to pair safely
        return
    for src, new in zip(sources, clones):
        single = src._outputs_struct
        listed = new._outputs_struct
        if not isinstance(single, (list, tuple, dict)) and isinstance(listed, list) and len(listed) == 1:
            new._outputs_struct = listed[0]


def _build_by_call(model: Any, config: Dict[str, Any]) -> None:
    """Calls `model` on inputs of the shapes its source was built with: symbolic first, else zeros."""
    import numpy as np
    from keras.src.backend import KerasTensor

    shapes = config.get("input_shape")
    if shapes is None:
        return
    try:
        model(_shaped(shapes, lambda s: KerasTensor(s)))
    except Exception:  # a `call` that cannot run on symbolic inputs: on zeros, one sample where the batch is open
        model(_shaped(shapes, lambda s: np.zeros(tuple(1 if d is None else d for d in s), dtype="float32")))


def _build_layers_like(source: Any, new: Any) -> None:
    """The clone's unbuilt sub-layers built from the build configs of the source's, paired in tracking order.

    The pairing stops at the first two of different classes (the verification that follows names the difference);
    the clone is marked built where the source is and every sub-layer now is.
    """
    ours = new._flatten_layers(include_self=False)
    theirs = source._flatten_layers(include_self=False)
    for src, dst in zip(theirs, ours):
        if type(src) is not type(dst):
            return
        if src.built and not dst.built:
            config = src.get_build_config()
            if config:
                dst.build_from_config(config)
    if source.built and all(layer.built for layer in new._flatten_layers(include_self=False)):
        new.built = True


def _shaped(shapes: Any, make: Callable[[Tuple[Any, ...]], Any]) -> Any:
    """`make(shape)` for each shape of a nested structure of shapes (tuples of ints and None)."""
    if isinstance(shapes, dict):
        return {key: _shaped(value, make) for key, value in shapes.items()}
    if isinstance(shapes, (list, tuple)) and all(d is None or isinstance(d, int) for d in shapes):
        return make(tuple(shapes))
    return [_shaped(value, make) for value in shapes]
