"""The data passed between the modules of one clone: what was asked, a graph's calls, compile settings.

Nothing here clones: these are the types the driver (`_driver.py`), the
cloning engine (`_cloner.py`), the contract (`_core.Family`) and the family
modules share, so that each of them imports this module and none of them
imports another to name a type.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Dict, List, NamedTuple, Optional

from compat_clone.families.registry import FamilyInfo
from compat_clone.weights import LayerMap

__all__ = ["CloneLayer", "CloneRequest", "Node", "CompileSettings", "LayerMap"]

#: The engine's layer clone (`_cloner.Cloner.clone_layer`), as a family's hooks receive it: a layer in,
#: its clone out, made once (shared layers stay shared). A hook hands it to the native `clone_model`
#: as its `clone_function`, or calls it for each layer of a Sequential model it builds itself.
CloneLayer = Callable[[Any], Any]


@dataclasses.dataclass(frozen=True)
class CloneRequest:
    """What `compat_clone.clone_model` asks, already validated (`api.py`).

    Attributes:
        input_tensors: tensors to build the clone on, or None.
        clone_function: the user's `fn(layer) -> new_layer`, or None.
        call_function: the user's `fn(layer, *args, **kwargs) -> outputs`, or None.
        recursive: whether nested models are cloned layer by layer.
        device: where the clone's variables go (None: where the source's are).
        name: the clone's new name, or None.
        info: the model's `FamilyInfo`.
        copy_weights: whether the source's variables are copied into the clone.
        compile: whether the clone is compiled like its source.
    """

    input_tensors: Any = None
    clone_function: Optional[Callable[[Any], Any]] = None
    call_function: Optional[Callable[..., Any]] = None
    recursive: bool = False
    device: Any = None
    name: Optional[str] = None
    info: Optional[FamilyInfo] = None
    copy_weights: bool = False
    compile: bool = False


class Node(NamedTuple):
    """One call in a functional graph, as `Family.nodes` reads it."""

    layer: Any  # the source layer (or Keras 3 operation) that was called
    inputs: List[Any]  # every source tensor the call needs, flat
    outputs: List[Any]  # the source tensors it produced, flat
    raw: Any  # the family's own node object


@dataclasses.dataclass(frozen=True)
class CompileSettings:
    """What the source's `compile` received, read by its family (live objects, not yet renewed).

    Attributes:
        optimizer: the source's optimizer object.
        arguments: every other `compile` keyword, as the family records it.
    """

    optimizer: Any
    arguments: Dict[str, Any]
