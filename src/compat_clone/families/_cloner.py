"""The cloning engine: one model cloned layer by layer, the same in every family.

The layer cache (shared layers stay shared), `recursive`, the user's
`clone_function` and `call_function` with their checks, the default config
round trip with its fallback, the depth-ordered graph walk, and the
Sequential / functional / subclassed dispatch. A family (`_core.Family`)
supplies what differs; `Cloner` asks it, handing it data and, where the
family's own `clone_model` clones the layers, `Cloner.clone_layer` as a
callable. Read from `Cloner.clone_model` down: the model's kind, then the
family's clone of it, then each layer's (`clone_layer`). The phases around
this one (compile settings, placement, weights) are run by `_driver.clone`.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

from compat_clone._walk import is_model
from compat_clone.errors import (
    CloneFunctionError,
    CompatCloneError,
    InputTensorsError,
    UnsupportedModelError,
    WeightsMismatchError,
    add_note,
    layer_rebuild_note,
    revived_text,
    with_reason,
)
from compat_clone.families._core import Family
from compat_clone.families._layer_state import carry_before_call
from compat_clone.families._layers import holds_layer_of, restore_trainable
from compat_clone.families._structure import (
    Parts,
    Refused,
    copy_plain_attributes,
    copy_user_attributes,
    differences,
    keras_base,
    layer_difference,
    structural_clone,
)
from compat_clone.families._types import CloneRequest, LayerMap
from compat_clone.weights import tracked_pairs, tracked_paths, untracked_weights

__all__ = ["Cloner"]


class Cloner:
    """One `clone_model` call: the layer map and the user's callables.

    Args:
        family: the family's `Family`.
        request: the validated request.
    """

    def __init__(self, family: Family, request: CloneRequest) -> None:
        self.family = family
        self.clone_function = request.clone_function
        self.call_function = request.call_function
        self.recursive = request.recursive
        self.layer_map: LayerMap = {}
        #: (source, clone) of layers rebuilt from their constructor's arguments
        self.rebuilt: List[Tuple[Any, Any]] = []

    # -- one layer -------------------------------------------------------------

    def clone_layer(self, layer: Any) -> Any:
        """The clone of `layer`, made once: shared layers stay shared."""
        entry = self.layer_map.get(id(layer))
        if entry is not None:
            return entry[1]
        family = self.family
        nested = family.is_functional(layer) or family.is_sequential(layer)
        if nested and self.recursive:
            new = self.clone_model(layer, None)
        elif nested and self.clone_function is None and holds_layer_of(layer, family.lambda_class()):
            # A nested model holding a `Lambda`, default clone: rebuilt from its
            # live layers (one unit still: no user callables inside). Its config
            # round trip would rebuild the function from bytecode, which loses
            # its module globals (every family) and is refused in safe mode.
            new = Cloner(family, CloneRequest())._share(self).clone_model(layer, None)
        elif self.clone_function is not None:
            new = self._user_clone(layer)
        else:
            try:
                new = self._default_clone(layer)
            except CompatCloneError:
                raise
            except Exception as exc:  # TypeError (constructor args), ValueError...
                # `native-exception-type`: the failing call is the native
                # default, `from_config(get_config())` (compat_clone's own
                # steps raise `UnsupportedModelError` themselves): the same
                # object goes on, its type the one native lets through.
                raise layer_rebuild_note(layer, exc, family.register_hint())  # noqa: B904 (the caught exception re-raised)
        self.layer_map[id(layer)] = (layer, new)
        return new

    def _asks_nothing_of_graph(self, input_tensors: Any) -> bool:
        """Whether this clone may be rebuilt from the model's config (no graph change asked)."""
        return input_tensors is None and self.clone_function is None and self.call_function is None and not self.recursive

    def _pair_layers(self, model: Any, new: Any) -> None:
        """Maps the layers of a model rebuilt from config onto the source's, where they line up."""
        old_layers = list(getattr(model, "layers", None) or [])
        new_layers = list(getattr(new, "layers", None) or [])
        if len(old_layers) == len(new_layers) and all(type(a) is type(b) for a, b in zip(old_layers, new_layers)):
            for a, b in zip(old_layers, new_layers):
                self.layer_map.setdefault(id(a), (a, b))

    def _share(self, parent: Cloner) -> Cloner:
        self.layer_map = parent.layer_map
        self.rebuilt = parent.rebuilt
        return self

    def _default_clone(self, layer: Any) -> Any:
        """The config round trip; where it fails, a rebuild from the constructor's arguments."""
        if self.family.is_revived(layer):
            self._refuse_revived(layer)
        try:
            new = self.family.config_round_trip(layer)
        except Exception:
            new = self._from_constructor_arguments(layer)
            if new is None:
                raise
        carry_before_call(layer, new)  # `lookup-table-not-cloned`: before the clone is called
        return new

    def _refuse_revived(self, layer: Any) -> None:
        """Refuses a layer revived without its class: with the native round trip's own exception
        where it fails (`native-exception-type`), else `UnsupportedModelError` (never silently wrong)."""
        try:
            self.family.config_round_trip(layer)
        except Exception as exc:
            raise add_note(exc, "compat_clone: " + revived_text(layer))  # noqa: B904 (the caught exception re-raised)
        raise UnsupportedModelError(revived_text(layer))

    def _from_constructor_arguments(self, layer: Any) -> Optional[Any]:
        """A layer whose config does not round-trip, rebuilt from what its constructor received.

        Keras 3 (and tf.keras / tf_keras since 2.13) record each layer's
        constructor arguments (`_auto_config`; None where they were not
        serializable). Arguments that hold layers or variables would be
        shared with the source: then None. The rebuilt layer's weights are
        checked against the source's once the clone is built (`check_rebuilt`).
        """
        auto = getattr(layer, "_auto_config", None)
        arguments = dict(getattr(auto, "config", None) or {})
        if auto is None or any(self._holds_state(v) for v in arguments.values()):
            return None
        arguments.setdefault("name", layer.name)
        try:
            new = layer.__class__(**arguments)
        except Exception:
            return None
        self.rebuilt.append((layer, new))
        return new

    def _holds_state(self, value: Any) -> bool:
        leaves = value if isinstance(value, (list, tuple)) else list(value.values()) if isinstance(value, dict) else [value]
        return any(isinstance(v, self.family.weight_owner_class()) or hasattr(v, "assign") for v in leaves)

    def check_rebuilt(self) -> None:
        """Raises where a layer rebuilt from its constructor's arguments differs from its source
        (its weights' shapes, then its config, variables and flags: `_structure.layer_difference`)."""
        for src, new in self.rebuilt:
            expected = [tuple(v.shape) for v in src.weights]
            got = [tuple(v.shape) for v in new.weights]
            differs = None if expected == got else f"it holds weights of shapes {got} where the source holds {expected}"
            differs = differs or layer_difference(src.name, src, new, whole=False)
            if differs is not None:
                raise UnsupportedModelError(
                    f"Cannot clone layer {src.name!r} of class {type(src).__qualname__}: its "
                    "config does not round-trip, and rebuilt from its constructor's arguments "
                    f"{differs}. Pass a `clone_function` that builds this layer."
                )

    def _user_clone(self, layer: Any) -> Any:
        assert self.clone_function is not None
        try:
            new = self.clone_function(layer)
        except CompatCloneError:
            raise
        except Exception as exc:
            # `wrapped-user-exception`: the same object, as the native call
            # lets it through (a library's `except` must still catch it).
            raise add_note(  # noqa: B904 (the caught exception re-raised)
                exc,
                f"compat_clone: raised by `clone_function` on layer {layer.name!r} ({type(layer).__name__}).",
            )
        if not isinstance(new, self.family.layer_class()):
            raise CloneFunctionError(
                "`clone_function` must return a Keras layer of the model's Keras; for "
                f"layer {layer.name!r} it returned {type(new).__name__}: {new!r}. Return "
                "`layer.__class__.from_config(layer.get_config())` or another layer."
            )
        return new

    # -- one call --------------------------------------------------------------

    def call(self, source_layer: Any, layer: Any, args: Sequence[Any], kwargs: Dict[str, Any]) -> Any:
        """Calls a cloned layer, through the user's `call_function` if given."""
        with self.family.layer_scope(source_layer):
            if self.call_function is None:
                return layer(*args, **kwargs)
            return self._user_call(source_layer, layer, args, kwargs)

    def _user_call(self, source_layer: Any, layer: Any, args: Sequence[Any], kwargs: Dict[str, Any]) -> Any:
        assert self.call_function is not None
        try:
            outputs = self.call_function(layer, *args, **kwargs)
        except CompatCloneError:
            raise
        except Exception as exc:
            raise add_note(  # noqa: B904 (`wrapped-user-exception`: the same object, with a note)
                exc,
                f"compat_clone: raised by `call_function` on layer {getattr(source_layer, 'name', source_layer)!r}.",
            )
        flat = self.family.flatten(outputs)
        if not flat or not all(self.family.is_symbolic(x) for x in flat):
            raise CloneFunctionError(
                "`call_function` must return the symbolic output(s) of calling the "
                f"layer; for layer {getattr(layer, 'name', layer)!r} it returned "
                f"{type(outputs).__name__}: {outputs!r}. Return "
                "`layer(*args, **kwargs)` (or tensors computed from it)."
            )
        return outputs

    # -- one model -------------------------------------------------------------

    def clone_model(self, model: Any, input_tensors: Any) -> Any:
        """Clones a Sequential, functional or subclassed model; `trainable` kept."""
        family = self.family
        if family.is_sequential(model):
            if self.call_function is not None:
                raise CloneFunctionError(
                    "`call_function` is not supported with Sequential models: their "
                    f"layers are listed, not called. Received the Sequential model "
                    f"{model.name!r}; convert it to a functional model first."
                )
            if input_tensors is not None:
                flat = family.flatten(input_tensors)
                if len(flat) != 1:
                    raise InputTensorsError(
                        f"Expected `input_tensors` to hold exactly one tensor for a Sequential model. Received {len(flat)}."
                    )
                if not family.is_symbolic(flat[0]):
                    raise family.not_symbolic_error(flat[0])
            new = self._keep_class(model, family.clone_sequential(model, input_tensors, self.clone_layer))
        elif family.is_functional(model):
            new = self._clone_functional(model, input_tensors)
        else:
            if self.clone_function is not None or input_tensors is not None or self.call_function is not None:
                raise UnsupportedModelError(
                    "`clone_function`, `call_function` and `input_tensors` need a "
                    "Functional or Sequential model, whose layer graph is known. "
                    f"Received a subclassed model of type {type(model).__name__}. "
                    "Rebuild it with `model.__class__.from_config(model.get_config())`."
                )
            new = self._clone_subclassed(model)
        restore_trainable(model, new, self.layer_map, deep=self.clone_function is None)
        return new

    def _keep_class(self, model: Any, new: Any) -> Any:
        """A Sequential subclass's clone, of the source's class (`sequential-subclass-lost`).

        The native clone makes a plain `Sequential` of the cloned layers; its
        class becomes the source's (a subclass of that very class: the
        instance is the same kind of object), and the attributes the
        subclass's own code set are copied by the structural rules
        (`_structure.copy_user_attributes`).
        """
        cls = type(model)
        if type(new) is cls or keras_base(cls) is not type(new):
            return new
        new.__class__ = cls
        try:
            copy_user_attributes(model, new, self._parts())
        except Refused as why:
            raise UnsupportedModelError(
                f"Cannot clone the Sequential subclass {model.name!r} of type {cls.__name__}: {why}. "
                "Keep such state out of the model, or pass it to the clone yourself."
            ) from why
        return new

    def _clone_subclassed(self, model: Any) -> Any:
        """A subclassed model: rebuilt from its config, else as its structure; checked against its source.

        The config round trip is the native path (`Family.clone_subclassed`).
        Where it fails, or rebuilds a model that differs from the source (a
        `get_config` that leaves out an argument: `subclass-config-differs`),
        the clone is made as the source's structure (`_structure.structural_clone`,
        `subclass-layers-in-constructor`): a new instance whose attributes are
        clones of the source's, the subclass's constructor not run. Either
        candidate is built as the source was (`Family.build_like`) and compared
        with it path by path (`_structure.differences`) before it is returned.
        Where no candidate is the source's structure, the clone is refused: with
        the native call's own exception where it failed (`native-exception-type`),
        the reason in its message, else with `UnsupportedModelError`.
        """
        family = self.family
        if family.is_revived(model):
            self._refuse_revived(model)
        hidden = untracked_weights(model, [layer for layer, _ in tracked_pairs(model, model)[0]])
        if hidden:
            raise UnsupportedModelError(
                f"Cannot clone the subclassed model {model.name!r} of type {type(model).__name__}: layers "
                f"holding weights sit in {', '.join(hidden)}, which this Keras ({family.info.package} "
                f"{family.info.version}) does not track, so they are not among `model.weights` and no "
                "copy can carry them. Assign each such layer to an attribute of its own."
            )
        native_error: Optional[BaseException] = None
        try:
            new = family.clone_subclassed(model)
        except Exception as exc:
            native_error = exc
        else:
            copy_plain_attributes(model, new, family.bare_model)
            differs = self._finish_subclassed(model, new)
            if differs is None:
                return new
            config_text = f"rebuilt from its config it differs from the source: {differs}"
        try:
            new = structural_clone(model, self._parts())
        except Refused as why:
            differs = f"it cannot be copied as its structure: {why}"
        else:
            differs = self._finish_subclassed(model, new)
            if differs is None:
                return new
            differs = f"copied as its structure it differs from the source: {differs}"
        if native_error is not None:
            # The caught exception itself, re-raised (its type the one native lets through), the reason in its message.
            raise with_reason(native_error, f"compat_clone: no structural clone either: {differs}.")
        raise UnsupportedModelError(
            f"Cannot clone the subclassed model {model.name!r} of type {type(model).__name__}: {config_text}; "
            f"and {differs}. Implement `get_config()` returning every constructor argument, or build the model "
            "functionally and use `clone_function`."
        )

    def _finish_subclassed(self, model: Any, new: Any) -> Optional[str]:
        """Builds a candidate clone like its source, pairs its layers; returns how it differs (None: it does not)."""
        family = self.family
        try:
            family.build_like(model, new)
        except CompatCloneError:
            raise
        except Exception as exc:  # a candidate that cannot run as its source was run is not its structure
            return f"built like the source, it raised {type(exc).__name__}: {str(exc).strip()[:300]}"
        try:
            layers = tracked_paths(model, new)[0]
        except WeightsMismatchError as exc:
            return str(exc)
        candidate: LayerMap = dict(self.layer_map)
        for _, src, dst in layers[1:]:
            candidate.setdefault(id(src), (src, dst))
        restore_trainable(model, new, candidate, deep=True)  # flags only: the walk's pairs stand
        differs = differences(model, new, lambda v: isinstance(v, family.layer_class()), layers)
        if differs is None:
            self.layer_map.update((key, pair) for key, pair in candidate.items() if key not in self.layer_map)
        return differs

    def _parts(self) -> Parts:
        family = self.family
        return Parts(
            clone_layer=self._clone_part,
            is_layer=lambda v: isinstance(v, family.layer_class()),
            bare=family.bare_model,
            new_variable=family.new_variable,
        )

    def _clone_part(self, layer: Any) -> Any:
        """A layer or model a subclassed model's constructor receives, cloned (shared stays shared)."""
        entry = self.layer_map.get(id(layer))
        if entry is not None:
            return entry[1]
        family = self.family
        if is_model(layer) and not (family.is_functional(layer) or family.is_sequential(layer)):
            new = self.clone_model(layer, None)
            self.layer_map[id(layer)] = (layer, new)
            return new
        return self.clone_layer(layer)

    def _clone_functional(self, model: Any, input_tensors: Any) -> Any:
        family = self.family
        given = None if input_tensors is None else family.check_input_tensors(model, input_tensors)
        if self.call_function is None:
            native = None
            if self._asks_nothing_of_graph(input_tensors):
                # Nothing asked of the graph: a class with a config of its own is rebuilt from it, as the class
                # rebuilds itself (`keras3-subclass-lost`, `keras2-subclass-lost`); where it cannot be, the family's clone.
                native = family.rebuild_own_config(model)
            if native is None:
                native = family.clone_functional_whole(model, input_tensors, self.clone_layer)
            if native is not None:
                if not self.layer_map:  # rebuilt from its config: no layer was cloned one by one
                    self._pair_layers(model, native)
                return native
        if given is not None:  # wrapped only for our walk: the native call wraps its own
            inputs = family.wrap_inputs(model, given)
        else:
            inputs = [family.make_input(s) for s in family.input_specs(model)]
        new = family.build_functional(model, inputs, self.walk(model, inputs))
        family.finish_functional(model, new, self.layer_map)
        return new

    def walk(self, model: Any, inputs: List[Any]) -> List[Any]:
        """Replays the model's graph on `inputs` with cloned layers; returns its outputs."""
        family = self.family
        tensor_map: Dict[int, Any] = {}
        for x, y in zip(model.inputs, inputs):
            tensor_map[id(x)] = y
        for node in family.nodes(model):
            if any(id(x) not in tensor_map for x in node.inputs):
                continue  # a branch that does not start from the model's inputs
            layer = self.clone_layer(node.layer)
            args, kwargs = family.arguments(node, tensor_map)
            outputs = family.flatten(self.call(node.layer, layer, args, kwargs))
            if len(outputs) != len(node.outputs):
                raise CloneFunctionError(
                    f"The clone of layer {getattr(node.layer, 'name', node.layer)!r} returned "
                    f"{len(outputs)} output(s) where the source returns {len(node.outputs)}. "
                    "Expected `clone_function` / `call_function` to keep the layer's outputs."
                )
            for old, new in zip(node.outputs, outputs):
                tensor_map[id(old)] = new
        missing = [x for x in model.outputs if id(x) not in tensor_map]
        if missing:
            raise CloneFunctionError(
                f"Could not compute output {missing[0]} of model {model.name!r}: a layer "
                "was not reached. Is the model's graph connected to its inputs?"
            )
        return [tensor_map[id(x)] for x in model.outputs]
