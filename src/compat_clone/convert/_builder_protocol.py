"""What the rebuild's helpers ask of the builder that calls them.

`_rebuild._Builder` makes each layer and model; the graph walk (`_graph`)
and the `Lambda` rebuild (`_lambdas`) call back into it. They import these
protocols, not `_rebuild`, so the import graph stays one way
(`_rebuild` → `_graph`, `_lambdas` → this module) and mypy checks every call
back: each protocol names exactly what its helper uses, and `_Builder`
satisfies both.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from compat_clone._compat import Protocol
from compat_clone.convert._format import Description
from compat_clone.convert._tf_ops import PendingOp

__all__ = ["GraphBuilder", "LambdaBuilder"]


class GraphBuilder(Protocol):
    """What `_graph.functional` asks of the builder: one layer, one input, one TensorFlow op call, the names."""

    # The Keras 3 module (`import keras`).
    keras: Any

    def layer(self, entry: Dict[str, Any], path: str, keras3_name: Optional[str] = None) -> Any:
        """One layer (or nested model) of the source, built in Keras 3."""
        ...

    def input_layer(self, config: Dict[str, Any], path: str, keras3_name: Optional[str] = None) -> Any:
        """The Keras 3 input tensor of one `InputLayer` config."""
        ...

    def op_call(self, pending: PendingOp, args: Any, kwargs: Dict[str, Any]) -> Any:
        """Calls a TensorFlow function's Keras 3 layer on `args`."""
        ...

    def keras3_names(self, names: List[str], prefix: str) -> Dict[str, str]:
        """Keras 3 names for one model's layers (source name -> Keras 3 name)."""
        ...


class LambdaBuilder(Protocol):
    """What `_lambdas.lambda_layer` asks of the builder: the conversion's inputs, its change log, activations."""

    # The Keras 3 module (`import keras`).
    keras: Any
    # The source model's description: its notes on each `Lambda` and the source's Python.
    description: Description
    # The user's `custom_objects`, by name.
    custom: Dict[str, Any]
    # What the conversion changed on purpose, one line each.
    changes: List[str]

    def activation(self, name: str) -> Any:
        """The function a Keras 2 activation name stands for."""
        ...
