"""The contract of a Keras family: what differs between Kerases, and nothing else.

Read `Family` first: it is the whole contract. A family module (`keras2`,
`tf_keras`, `keras3`) is one subclass that says how *its* Keras spells
things: which classes are layers and models, how a functional graph's nodes
are read, how an `Input` and a model are made, which native `clone_model`
call can be trusted, where variables are created, how compile settings are
read and how variables are assigned. Where every Keras agrees, the default
here is the one implementation (the `input_tensors` checks, `Input`
re-creation, the `Lambda` fixes of the config round trip).

`Family` never drives a clone. `_driver.clone` runs the phases of one
`clone_model` call in order, and `_cloner.Cloner` does the layer-by-layer
work, asking the family at each step. A hook receives data (the model, the
layers cloned so far) and, where the family's own `clone_model` clones the
layers, the engine's layer clone as a callable (`_types.CloneLayer`); never
the engine itself.
"""

from __future__ import annotations

import abc
import contextlib
from typing import Any, ContextManager, Dict, Iterator, List, Optional, Sequence, Tuple

from compat_clone.errors import (
    CompatCloneError,
    InputTensorsError,
    layer_rebuild_error,
    subclassed_rebuild_error,
    subclassed_rebuild_note,
)
from compat_clone.families._layers import holds_layer_of
from compat_clone.families._skip_init import Prefill
from compat_clone.families._types import CloneLayer, CloneRequest, CompileSettings, LayerMap, Node
from compat_clone.families.registry import OWNER_PACKAGES, FamilyInfo, keras_of, placement_backend

__all__ = ["Family", "own_get_config"]


class Family(abc.ABC):
    """The contract of one Keras family: what differs, nothing else.

    `_driver.new_family` makes one object per `clone_model` /
    `copy_weights` call, so a family may keep what it learns during that
    call (standalone Keras 2's checked device, Keras 3's compile-config
    answer) on itself.

    Args:
        info: the model's `FamilyInfo` (family, package, version, backend).
    """

    def __init__(self, info: FamilyInfo) -> None:
        self.info = info

    def register_hint(self) -> str:
        """How a custom class is registered, as error messages spell it (Keras 3's by default)."""
        return "`@keras.saving.register_keras_serializable()`"

    # -- the family's classes ------------------------------------------------

    def keras(self) -> Any:
        """The family's Keras module (`keras`, `tf_keras`, `tf.keras`): the model's own (`registry.keras_of`)."""
        return keras_of(self.info)

    def native_clone_model(self) -> Any:
        """The family's own `clone_model`, from its defining module (`native-alias-rebound`).

        Never the public alias: `keras.models.clone_model` may hold
        `compat_clone.clone_model` (`compat_clone.patch()`, or by hand).
        """
        from compat_clone._native import clone_model_of

        return clone_model_of(self.info.package)

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

    def lambda_base_config(self, layer: Any) -> Dict[str, Any]:
        """The `Lambda`'s config without its callables' serialized forms."""
        return dict(layer.get_config())

    def clone_lambda(self, layer: Any) -> Any:
        """A `Lambda` rebuilt from its live function: nothing is deserialized.

        compat_clone's own step (native deserializes the function): where it
        fails, `UnsupportedModelError` (`native-exception-type`).
        """
        try:
            config = self.lambda_base_config(layer)
            config.update(
                function=layer.function,
                output_shape=getattr(layer, "_output_shape", None),
                mask=getattr(layer, "mask", None),
                arguments=dict(getattr(layer, "arguments", None) or {}),
            )
            return layer.__class__(**config)
        except CompatCloneError:
            raise
        except Exception as exc:
            raise layer_rebuild_error(layer, exc, self.register_hint()) from exc

    def layer_scope(self, source_layer: Any) -> ContextManager[Any]:
        """Where a cloned layer's variables are created when it is called."""
        return contextlib.nullcontext()

    def unsafe_scope(self) -> ContextManager[Any]:
        """Safe mode off for this thread and this call (families that have it)."""
        return contextlib.nullcontext()

    def config_round_trip(self, layer: Any) -> Any:
        """The native default, a config round trip, with the `Lambda` fixes.

        Layer by layer, each by its own class (`keras3-unregistered-layer`:
        a class of the user's own is never looked up by name).

        An exception of the round trip itself is the native call's and passes
        through unchanged; a step of compat_clone's own raises
        `UnsupportedModelError` (`native-exception-type`).
        """
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

    def finish_functional(self, model: Any, new: Any, layer_map: LayerMap) -> None:  # noqa: B027 (a hook, no-op by default)
        """After our walk: what the family's own clone adds (tf.keras: ancillary layers).

        Args:
            model: the source model.
            new: its clone, as the walk built it.
            layer_map: the layers cloned so far, `id(source) -> (source, clone)`.
        """

    # -- native calls that are right --------------------------------------------

    def rebuild_own_config(self, model: Any) -> Optional[Any]:
        """A model whose class defines its own `get_config`, rebuilt from it as its class rebuilds it.

        The engine asks this first where nothing is asked of the graph (no
        `input_tensors`, `clone_function`, `call_function` or `recursive`):
        a subclass would otherwise come back as its Keras base class
        (`keras3-subclass-lost`, `keras2-subclass-lost`).

        Returns:
            The rebuilt model, or None where the class's config is Keras's own
            or the rebuild fails (the family's clone runs instead).
        """
        return self.rebuild_from_config(model) if own_get_config(model) else None

    def clone_functional_whole(self, model: Any, input_tensors: Any, clone_layer: CloneLayer) -> Optional[Any]:
        """A functional model cloned in one native call, where it is right.

        Args:
            model: the source model.
            input_tensors: the tensors to build the clone on (checked already), or None.
            clone_layer: the engine's layer clone, the native call's `clone_function`.

        Returns:
            The clone, or None where the engine's walk must run.
        """
        return None

    @abc.abstractmethod
    def clone_sequential(self, model: Any, input_tensors: Any, clone_layer: CloneLayer) -> Any:
        """A Sequential model cloned with `clone_layer` for each layer (`input_tensors` checked already)."""

    def rebuild_from_config(self, model: Any) -> Optional[Any]:
        """`model.__class__.from_config(model.get_config())`, or None where it fails."""
        try:
            return model.__class__.from_config(model.get_config())
        except CompatCloneError:
            raise
        except Exception:  # the caller falls back to what the native call returns
            return None

    def clone_subclassed(self, model: Any) -> Any:
        """A subclassed model, rebuilt from its config.

        Where this fails, the native `clone_model` says whose call it was
        (`native-exception-type`, feature detection on the failure path only):
        where it fails with the same exception type (tf.keras 2.7+ and tf_keras
        rebuild a subclassed model with this same round trip), the original
        exception goes on, the advice in a note; where native refuses the
        model (older tf.keras: a ValueError), the rebuild was compat_clone's
        own work and fails with `UnsupportedModelError`, a ValueError too.
        """
        try:
            return model.__class__.from_config(model.get_config())
        except CompatCloneError:
            raise
        except Exception as exc:  # NotImplementedError (no get_config), TypeError...
            if self._native_fails_alike(model, exc):
                raise subclassed_rebuild_note(model, exc)  # noqa: B904 (the caught exception re-raised)
            raise subclassed_rebuild_error(model, exc) from exc

    def _native_fails_alike(self, model: Any, exc: BaseException) -> bool:
        """Whether the native clone of `model` fails with `exc`'s type (it makes the same call)."""
        try:
            self.native_clone_model()(model)
        except Exception as native:  # the native refusal or the same round trip's failure
            return type(native) is type(exc)
        return False

    def is_revived(self, layer: Any) -> bool:
        """Whether `layer` was revived from a SavedModel without its class (tf.keras only)."""
        return False

    def bare_model(self) -> Any:
        """A model of this Keras with nothing in it: the attributes Keras itself gives every model."""
        return self.keras().Model()

    def new_variable(self, model: Any, source: Any) -> Any:
        """A variable owned by `model` like `source` (shape, dtype, `trainable`, name), holding its value.

        For a model's own variables in a structural clone (`_structure.structural_clone`):
        its initializer is recorded nowhere, so the source's value is copied
        (device to device, `assign_pairs`).
        """
        name = str(getattr(source, "name", "") or "variable").split("/")[-1].split(":")[0]
        dtype = source.dtype
        variable = model.add_weight(
            name=name,
            shape=tuple(source.shape),
            dtype=getattr(dtype, "name", dtype),
            initializer="zeros",
            trainable=bool(getattr(source, "trainable", True)),
        )
        self.assign_pairs([(source, variable)])
        return variable

    def build_like(self, source: Any, new: Any) -> None:  # noqa: B027 (a hook, no-op by default)
        """Builds `new`, a subclassed model's clone, as `source` was built (nothing where it is).

        A subclassed model rebuilt from its config, or made anew from its
        constructor, has no variables until it is built or called; the
        family builds it from what it recorded of the source's build (input
        shapes, input specs), symbolically: no data runs through it.
        """

    # -- placement and weights ----------------------------------------------------

    def placement(self, model: Any, request: CloneRequest) -> ContextManager[Any]:
        """The scope the clone is built in: where its variables are created.

        It yields an object whose `finish(clone, layer_map)` runs before the
        scope is left (`compat_clone.placement.Placement`). It checks
        `request.device` before anything is built.
        """
        from compat_clone.placement import scope

        return scope(model, request.device, placement_backend(self.info))

    # -- compile=True --------------------------------------------------------------

    @abc.abstractmethod
    def compile_settings(self, model: Any) -> Optional[CompileSettings]:
        """What `model.compile` received, as this Keras records it; None if never compiled.

        Live objects (the source's optimizer, losses, metrics): `_compile`
        re-creates them for the clone. Raises `CompileError` for a setting
        this Keras records but that cannot be carried to a clone.
        """

    def compile_clone(self, clone: Any, optimizer: Any, arguments: Dict[str, Any]) -> None:
        """Compiles the clone with a new optimizer and the (renewed) settings."""
        clone.compile(optimizer=optimizer, **arguments)

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

    def prefill(self, request: CloneRequest, layer_map: LayerMap) -> Optional[Prefill]:
        """Where a clone with weights can start from copies of the source's variables (None: zeros).

        Args:
            request: the validated request.
            layer_map: the clone's layer map, `id(source) -> (source, clone)`,
                filled as the engine clones (read when a clone layer's
                variables are made).
        """
        return None

    def weight_owner_class(self) -> Any:
        """The base class whose `add_weight` every layer's variables go through."""
        return self.layer_class()


def own_get_config(model: Any) -> bool:
    """Whether the model's class (not Keras itself) defines `get_config`."""
    for klass in type(model).__mro__:
        if "get_config" in klass.__dict__:
            return (klass.__module__ or "").partition(".")[0] not in OWNER_PACKAGES
    return False


def _same_from_config(cls: type, base: type) -> bool:
    mine = getattr(getattr(cls, "from_config"), "__func__", None)  # noqa: B009 (`type` declares no from_config for mypy)
    return mine is not None and mine is getattr(getattr(base, "from_config"), "__func__", None)  # noqa: B009
