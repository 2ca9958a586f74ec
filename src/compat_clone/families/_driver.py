"""The clone driver: the phases of one `clone_model` call, in order, in one place.

`api.py` validates the arguments and hands a `CloneRequest` to `clone`,
which runs:

1. **family**: the `Family` of the model's Keras (`new_family`: the class of
   `FAMILY_CLASSES`, imported here, for the family the registry read off the model);
2. **compile settings** (`compile=True`): read off the source and checked
   before anything is built, so a refusal leaves nothing half made;
3. **build**: inside the family's placement (the source's device or
   strategy, standalone Keras 2's graph and lock), the `Cloner` clones the
   model layer by layer; with weights to copy, variables start as zeros (or
   as device copies of the source's) instead of running their initializers;
   the placement then places what its scope could not;
4. **compile**: the clone compiled like its source, in the same placement;
5. **checks and name**: layers rebuilt from their constructor's arguments
   checked against their sources, the new name given;
6. **weights** (`copy_weights=True`): every variable of the source copied
   into the clone, paired through the clone's layer map, device to device.

`copy_weights` (the public function) is phase 6 alone, on two models.
"""

from __future__ import annotations

import contextlib
from typing import Any, ContextManager, Mapping, Optional, Type

from compat_clone._walk import is_model
from compat_clone.errors import WeightsMismatchError
from compat_clone.families import _compile
from compat_clone.families._cloner import Cloner
from compat_clone.families._core import Family
from compat_clone.families._layer_state import carry_state, holds_adapted_state
from compat_clone.families._skip_init import Prefill, zeros_initializers
from compat_clone.families._types import CloneRequest, LayerMap
from compat_clone.families.keras2 import Keras2
from compat_clone.families.keras3 import Keras3
from compat_clone.families.registry import KERAS2, KERAS3, TF_KERAS, FamilyInfo
from compat_clone.families.tf_keras import TfKeras
from compat_clone.weights import plan_copy, plan_copy_cached, refresh_derived_state, tracked_pairs

__all__ = ["FAMILY_CLASSES", "clone", "copy_weights", "new_family"]

#: The class that clones each family's models (each module imports its framework inside its functions only).
FAMILY_CLASSES: Mapping[str, Type[Family]] = {KERAS3: Keras3, TF_KERAS: TfKeras, KERAS2: Keras2}


def new_family(info: FamilyInfo) -> Family:
    """The `Family` that clones models of `info`'s family: one object per call."""
    return FAMILY_CLASSES[info.family](info)


def clone(model: Any, request: CloneRequest) -> Any:
    """Clones `model` as `request` asks (validated already); returns the clone."""
    assert request.info is not None  # api.py sets it
    family = new_family(request.info)
    settings = _compile.read(family, model) if request.compile else None
    cloner = Cloner(family, request)
    prefill = family.prefill(request, cloner.layer_map) if request.copy_weights else None
    with _initializers(family, request.copy_weights, prefill), family.placement(model, request) as where:
        new = cloner.clone_model(model, request.input_tensors)
        where.finish(new, cloner.layer_map)
        if settings is not None:
            _compile.apply(family, new, settings)
    cloner.check_rebuilt()
    # a user's `clone_function` decides what its layers hold; a model with no adaptable layer has nothing to carry
    if request.clone_function is None and holds_adapted_state(model):
        _carry_state(family, model, new, cloner.layer_map, variables=not request.copy_weights)
    if request.name is not None:
        _rename(new, request.name)
    if request.copy_weights:
        _copy(family, model, new, cloner.layer_map, 1.0, prefill)
    return new


def copy_weights(source: Any, target: Any, info: FamilyInfo, tau: float) -> None:
    """Copies `source`'s variables into `target` (two models of `info`'s family; `tau` validated)."""
    _copy(new_family(info), source, target, None, tau, None)


def _initializers(family: Family, copy_weights: bool, prefill: Optional[Prefill]) -> ContextManager[Any]:
    """With weights to copy next: zeros (or the source's copies) instead of the initializers."""
    if not copy_weights:
        return contextlib.nullcontext()
    return zeros_initializers(family.weight_owner_class(), prefill)


def _copy(
    family: Family, source: Any, target: Any, layer_map: Optional[LayerMap], tau: float, prefill: Optional[Prefill]
) -> None:
    if layer_map is None:  # copy_weights: often the same two models, step after step
        pairs = plan_copy_cached(source, target, family.variable_spec)
    else:
        pairs = plan_copy(source, target, family.variable_spec, layer_map)
    if prefill is not None:  # a clone that started from copies: checked, not written twice
        done = prefill.done
        pairs = [(s, d) for s, d in pairs if not _copied(done.get(id(d)), s, d)]
    if tau == 1.0:
        family.assign_pairs(pairs)  # the exact copy: unchanged fast paths
    else:
        family.assign_pairs(pairs, tau)
    refresh_derived_state(target)


def _carry_state(family: Family, model: Any, new: Any, layer_map: LayerMap, variables: bool) -> None:
    """The adapted state of preprocessing layers, carried into the clone (`adapted-state-not-cloned`)."""
    pairs = list(layer_map.values())
    for src, dst in [(model, new), *pairs]:  # layers rebuilt inside a model rebuilt from its config
        if is_model(src) and getattr(src, "built", True) and getattr(dst, "built", True):
            # structures that differ: the layer map's pairs only; tf.keras's unbuilt model has no `weights` (ValueError)
            with contextlib.suppress(WeightsMismatchError, ValueError):
                pairs.extend(tracked_pairs(src, dst)[0])
    carry_state(pairs, family.variable_spec, family.assign_pairs, variables)


def _copied(entry: Any, src: Any, dst: Any) -> bool:
    return entry is not None and entry[0] is dst and entry[1] is src


def _rename(model: Any, name: str) -> None:
    """Gives a model a new name (Keras 3 has a setter, Keras 2 a private field)."""
    try:
        model.name = name
    except AttributeError:
        model._name = name
