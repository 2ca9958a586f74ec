"""The cloning core: what every Keras family shares, and the contract each one fills in.

Read `Family` first: it is the whole contract. A family module (`keras2`,
`tf_keras`, `keras3`) is one small subclass that says how *its* Keras spells
things: which classes are layers and models, how a functional graph's nodes
are read, how an `Input` is made, which native `clone_model` call can be
trusted. Everything else is here, written once:

* `Cloner.clone_layer`: one clone per source layer (shared layers stay
  shared), `recursive=True`, the user's `clone_function` (its failures named),
  the default config round trip (its failures explained);
* `Cloner.call`: the user's `call_function`, its failures named and its result
  checked;
* `Cloner.walk`: the depth-ordered walk over a functional graph, for the
  families and versions whose native walk cannot be used;
* `Cloner.clone_model`: Sequential / functional / subclassed dispatch, the
  refusals that apply to each, and `trainable` restored everywhere;
* the `input_tensors` checks and `Input` re-creation.
"""

from __future__ import annotations

import abc
import contextlib
import dataclasses
from typing import Any, Callable, ContextManager, Dict, Iterator, List, NamedTuple, Optional, Sequence, Tuple

from compat_clone.errors import (
    CloneFunctionError,
    CompatCloneError,
    InputTensorsError,
    UnsupportedModelError,
    layer_rebuild_error,
    subclassed_rebuild_error,
)
from compat_clone.families._layers import holds_layer_of, restore_trainable
from compat_clone.families._skip_init import zeros_initializers
from compat_clone.weights import LayerMap

__all__ = ["CloneRequest", "Family", "Node", "Cloner"]


@dataclasses.dataclass(frozen=True)
class CloneRequest:
    """What `compat_clone.clone_model` asks of a family, already validated."""

    input_tensors: Any = None
    clone_function: Optional[Callable[[Any], Any]] = None
    call_function: Optional[Callable[..., Any]] = None
    recursive: bool = False
    device: Any = None
    name: Optional[str] = None
    info: Any = None
    copy_weights: bool = False


class Node(NamedTuple):
    """One call in a functional graph, as `Family.nodes` reads it."""

    layer: Any  # the source layer (or Keras 3 operation) that was called
    inputs: List[Any]  # every source tensor the call needs, flat
    outputs: List[Any]  # the source tensors it produced, flat
    raw: Any  # the family's own node object


class Family(abc.ABC):
    """The contract of one Keras family: what differs, nothing else.

    Args:
        info: the model's `FamilyInfo` (family, package, version, backend).
    """

    #: how a custom class is registered, for error messages
    register_hint = "`@keras.saving.register_keras_serializable()`"

    def __init__(self, info: Any) -> None:
        self.info = info
        #: (source, clone) of layers rebuilt another way than their config
        self.rebuilt: List[Tuple[Any, Any]] = []

    def check_rebuilt(self) -> None:
        """Raises where a layer rebuilt another way than its config differs from its source."""

    # -- the family's classes ------------------------------------------------

    @abc.abstractmethod
    def keras(self) -> Any:
        """The family's Keras module (`keras`, `tf_keras`, `tf.keras`)."""

    @abc.abstractmethod
    def layer_class(self) -> Any:
        """What a `clone_function` must return."""

    @abc.abstractmethod
    def lambda_class(self) -> Any:
        """The family's `Lambda` layer class."""

    @abc.abstractmethod
    def is_sequential(self, layer: Any) -> bool:
        """Whether `layer` is a Sequential model."""

    @abc.abstractmethod
    def is_functional(self, layer: Any) -> bool:
        """Whether `layer` is a functional (graph) model that is not Sequential."""

    # -- one layer ---------------------------------------------------------

    def clone_lambda(self, layer: Any) -> Any:
        """A `Lambda` rebuilt from its live function: nothing is deserialized."""
        config = layer.get_config()
        config.update(
            function=layer.function,
            output_shape=getattr(layer, "_output_shape", None),
            mask=getattr(layer, "mask", None),
            arguments=dict(getattr(layer, "arguments", None) or {}),
        )
        return layer.__class__(**config)

    def layer_scope(self, source_layer: Any) -> ContextManager[Any]:
        """Where a cloned layer's variables are created when it is called."""
        return contextlib.nullcontext()

    def unsafe_scope(self) -> ContextManager[Any]:
        """Safe mode off for this thread and this call (families that have it)."""
        return contextlib.nullcontext()

    def default_clone(self, layer: Any) -> Any:
        """The native default, a config round trip, with the `Lambda` fixes."""
        lambda_cls = self.lambda_class()
        if isinstance(layer, lambda_cls) and _same_from_config(type(layer), lambda_cls):
            return self.clone_lambda(layer)
        if holds_layer_of(layer, lambda_cls):  # e.g. TimeDistributed(Lambda(...))
            with self.unsafe_scope():
                return layer.__class__.from_config(layer.get_config())
        return layer.__class__.from_config(layer.get_config())

    # -- a functional graph --------------------------------------------------

    @abc.abstractmethod
    def flatten(self, structure: Any) -> List[Any]:
        """The leaves of a nested structure, in the family's order."""

    @abc.abstractmethod
    def nodes(self, model: Any) -> Iterator[Node]:
        """The model's calls, deepest first; input nodes left out."""

    @abc.abstractmethod
    def arguments(self, node: Node, tensor_map: Dict[int, Any]) -> Tuple[Sequence[Any], Dict[str, Any]]:
        """The node's call arguments, each source tensor replaced by `tensor_map[id(tensor)]`."""

    @abc.abstractmethod
    def is_symbolic(self, value: Any) -> bool:
        """Whether `value` is a symbolic tensor a clone can be built on."""

    @abc.abstractmethod
    def input_specs(self, model: Any) -> List[Dict[str, Any]]:
        """`Input(...)` keyword arguments for each model input, flags included."""

    def make_input(self, spec: Dict[str, Any]) -> Any:
        """One new `Input`, passing only the flags this Keras knows and that are set."""
        return self.keras().Input(**{k: v for k, v in spec.items() if v is not None and v is not False})

    def check_input_tensors(self, model: Any, input_tensors: Any) -> List[Any]:
        """The flat `input_tensors`, checked; raises `InputTensorsError`."""
        flat = self.flatten(input_tensors)
        expected = len(model.inputs)
        if len(flat) != expected:
            raise InputTensorsError(
                f"Expected `input_tensors` to hold {expected} tensor(s), one per "
                f"model input ({[getattr(x, 'name', '?') for x in model.inputs]}). "
                f"Received {len(flat)}."
            )
        for value in flat:
            if not self.is_symbolic(value):
                raise self.not_symbolic_error(value)
        return flat

    def not_symbolic_error(self, value: Any) -> InputTensorsError:
        cls = type(value)
        text = repr(value)
        text = text if len(text) <= 120 else text[:117] + "..."
        keras = self.keras().__name__
        owner = cls.__module__.partition(".")[0]
        hint = (
            f" It comes from a different Keras (`{owner}`) than the model's."
            if owner in ("keras", "tf_keras") and owner != keras.partition(".")[0]
            else ""
        )
        return InputTensorsError(
            "Expected `input_tensors` to hold symbolic tensors of the model's Keras "
            f"(`{keras}.Input(...)`). Received: {cls.__module__}.{cls.__qualname__} "
            f"{text}.{hint} Create them with `{keras}.Input(shape=...)` of the same "
            "Keras as the model."
        )

    def wrap_inputs(self, model: Any, flat: List[Any]) -> List[Any]:
        """Turns accepted non-Keras tensors into model inputs (standalone Keras 2)."""
        return flat

    @abc.abstractmethod
    def build_functional(self, model: Any, inputs: List[Any], outputs: List[Any]) -> Any:
        """A functional model of the source's class where it can be, else the base class."""

    # -- native calls that are right --------------------------------------------

    def clone_functional_whole(self, cloner: "Cloner", model: Any, input_tensors: Any) -> Optional[Any]:
        """A functional model cloned in one call (`input_tensors` checked already):
        the native clone where it is right, or a rebuild from config; None where
        the core's walk must run."""
        return None

    @abc.abstractmethod
    def clone_sequential(self, cloner: "Cloner", model: Any, input_tensors: Any) -> Any:
        """A Sequential model cloned with `cloner.clone_layer` for each layer."""

    def rebuild_from_config(self, model: Any) -> Optional[Any]:
        """`model.__class__.from_config(model.get_config())`, or None where it fails."""
        try:
            return model.__class__.from_config(model.get_config())
        except CompatCloneError:
            raise
        except Exception:  # the caller falls back to what the native call returns
            return None

    def clone_subclassed(self, model: Any) -> Any:
        """A subclassed model, rebuilt from its config."""
        try:
            return model.__class__.from_config(model.get_config())
        except CompatCloneError:
            raise
        except Exception as exc:  # NotImplementedError (no get_config), TypeError...
            raise subclassed_rebuild_error(model, exc) from exc

    # -- placement and weights ----------------------------------------------------

    def placement(self, model: Any, request: CloneRequest) -> ContextManager[Any]:
        """Where the clone's variables are created (`compat_clone.placement.scope`)."""
        from compat_clone import placement

        return placement.scope(model, request.device, self.info)

    def build(self, model: Any, request: CloneRequest, cloner: "Cloner") -> Any:
        """Runs the clone inside the family's placement (and locks)."""
        with self.placement(model, request) as where:
            new = cloner.clone_model(model, request.input_tensors)
            where.finish(new, cloner.layer_map)
        return new

    @abc.abstractmethod
    def variable_spec(self, variable: Any) -> Tuple[Tuple[Optional[int], ...], str]:
        """(shape, dtype name) of a variable, for the copy's checks."""

    @abc.abstractmethod
    def assign_pairs(self, pairs: List[Tuple[Any, Any]], tau: float = 1.0) -> None:
        """Copies checked (source, target) variable pairs, device to device.

        `tau` (already validated, in (0, 1]) below 1 asks for a soft update:
        every floating-point target becomes `tau * source + (1 - tau) * target`
        in one fused operation where the backend has one, every other target
        (counters, seed states) is copied exactly; `tau == 1.0` is the exact
        copy. Nothing may be written when the operation cannot run.
        """

    # -- the public entry ------------------------------------------------------

    def weight_owner_class(self) -> Any:
        """The base class whose `add_weight` every layer's variables go through."""
        return self.layer_class()

    def clone(self, model: Any, request: CloneRequest) -> Tuple[Any, LayerMap]:
        """Clones `model`; returns the clone and its layer map.

        With `request.copy_weights` the clone's variables start as zeros (the
        caller copies the source's values into every one of them next).
        """
        cloner = Cloner(self, request)
        skip = zeros_initializers(self.weight_owner_class()) if request.copy_weights else contextlib.nullcontext()
        with skip:
            new = self.build(model, request, cloner)
        self.check_rebuilt()
        if request.name is not None:
            rename(new, request.name)
        return new, cloner.layer_map


def rename(model: Any, name: str) -> None:
    """Gives a model a new name (Keras 3 has a setter, Keras 2 a private field)."""
    try:
        model.name = name
    except AttributeError:
        model._name = name


def own_get_config(model: Any) -> bool:
    """Whether the model's class (not Keras itself) defines `get_config`."""
    for klass in type(model).__mro__:
        if "get_config" in klass.__dict__:
            return (klass.__module__ or "").partition(".")[0] not in ("keras", "tf_keras", "tensorflow")
    return False


def _same_from_config(cls: type, base: type) -> bool:
    mine = getattr(getattr(cls, "from_config"), "__func__", None)
    return mine is not None and mine is getattr(getattr(base, "from_config"), "__func__", None)


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
            new = Cloner(family, CloneRequest())._share(self.layer_map).clone_model(layer, None)
        elif self.clone_function is not None:
            new = self._user_clone(layer)
        else:
            try:
                new = family.default_clone(layer)
            except CompatCloneError:
                raise
            except Exception as exc:  # TypeError (constructor args), ValueError...
                raise layer_rebuild_error(layer, exc, family.register_hint) from exc
        self.layer_map[id(layer)] = (layer, new)
        return new

    def asks_nothing_of_graph(self, input_tensors: Any) -> bool:
        """Whether this clone may be rebuilt from the model's config (no graph change asked)."""
        return (
            input_tensors is None
            and self.clone_function is None
            and self.call_function is None
            and not self.recursive
        )

    def pair_layers(self, model: Any, new: Any) -> None:
        """Maps the layers of a model rebuilt from config onto the source's, where they line up."""
        old_layers = list(getattr(model, "layers", None) or [])
        new_layers = list(getattr(new, "layers", None) or [])
        if len(old_layers) == len(new_layers) and all(
            type(a) is type(b) for a, b in zip(old_layers, new_layers)
        ):
            for a, b in zip(old_layers, new_layers):
                self.layer_map.setdefault(id(a), (a, b))

    def _share(self, layer_map: LayerMap) -> "Cloner":
        self.layer_map = layer_map
        return self

    def _user_clone(self, layer: Any) -> Any:
        assert self.clone_function is not None
        try:
            new = self.clone_function(layer)
        except CompatCloneError:
            raise
        except Exception as exc:
            raise CloneFunctionError(
                f"`clone_function` raised {type(exc).__name__} on layer "
                f"{layer.name!r} ({type(layer).__name__}): {exc}"
            ) from exc
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
            raise CloneFunctionError(
                f"`call_function` raised {type(exc).__name__} on layer "
                f"{getattr(source_layer, 'name', source_layer)!r}: {exc}"
            ) from exc
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
                        "Expected `input_tensors` to hold exactly one tensor for a "
                        f"Sequential model. Received {len(flat)}."
                    )
                if not family.is_symbolic(flat[0]):
                    raise family.not_symbolic_error(flat[0])
            new = family.clone_sequential(self, model, input_tensors)
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
            new = family.clone_subclassed(model)
            self.pair_layers(model, new)
        restore_trainable(model, new, self.layer_map, deep=self.clone_function is None)
        return new

    def _clone_functional(self, model: Any, input_tensors: Any) -> Any:
        family = self.family
        given = None
        if input_tensors is not None:
            given = family.wrap_inputs(model, family.check_input_tensors(model, input_tensors))
        if self.call_function is None:
            native = family.clone_functional_whole(self, model, input_tensors)
            if native is not None:
                if not self.layer_map:  # rebuilt from its config: no layer was cloned one by one
                    self.pair_layers(model, native)
                return native
        inputs = given if given is not None else [family.make_input(s) for s in family.input_specs(model)]
        return family.build_functional(model, inputs, self.walk(model, inputs))

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
