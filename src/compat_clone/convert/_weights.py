"""Writing a description's weights into the rebuilt Keras 3 model.

Each source layer's weights go to the Keras 3 layer at the same path, in
Keras 3's variable order. Where the two orders or layouts differ, a row of
`LAYOUTS` says how; every layer's weights are checked (count and shape)
before anything is written, and a Keras 3 layer left with weights the
source did not have is an error, not a silent initializer.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np

from compat_clone._walk import walk
from compat_clone.convert._format import Description
from compat_clone.errors import WeightsMismatchError

__all__ = ["LAYOUTS", "write_weights"]

# Keras 3 class name -> how a Keras 2 layer's weight list becomes its own.
# Measured against tf_keras 2.16-2.21, tf.keras 2.12-2.15 and standalone
# Keras 2.2.4-2.3.1: LSTM/GRU (both `reset_after`), Bidirectional (forward
# then backward), TimeDistributed, BatchNormalization (gamma, beta, moving
# mean, moving variance), Embedding and convolutions keep their order and
# shapes, so no row is needed for them; the shape check below guards it.
LAYOUTS: Dict[str, Callable[[List[np.ndarray]], List[np.ndarray]]] = {}


def write_weights(model: Any, description: Description, origin: Optional[Dict[int, str]] = None) -> None:
    """Copies every weight of `description` into `model` (checked first).

    Args:
        model: the rebuilt Keras 3 model.
        description: the source's description.
        origin: ``id(layer)`` -> the source path of a rebuilt layer, where
            it differs from the layer's path in `model` (renamed layers).

    Raises:
        WeightsMismatchError: a layer's weights differ in count or shape, or
            a layer is on one side only.
    """
    plan: List[Tuple[Any, List[np.ndarray]]] = []
    seen_paths = set()
    for keras3_path, layer in walk(model):
        path = (origin or {}).get(id(layer), keras3_path)
        if path in seen_paths:
            continue
        seen_paths.add(path)
        records = description.weights_of(path)
        targets = list(layer.weights)
        values = [r.value for r in records]
        rule = LAYOUTS.get(type(layer).__name__)
        if rule is not None:
            values = rule(values)
        if not targets and not values:
            continue
        got = [tuple(v.shape) for v in values]
        want = [tuple(int(d) for d in t.shape) for t in targets]
        if got != want:
            names = [r.name for r in records]
            raise WeightsMismatchError(
                f"Layer {path!r} ({type(layer).__name__}): the source has {len(got)} weights "
                f"{list(zip(names, got))}, its Keras 3 counterpart expects {len(want)} "
                f"{list(zip([t.path if hasattr(t, 'path') else t.name for t in targets], want))}. "
                "This layer's weight layout is not mapped: please report it with the "
                "description file."
            )
        plan.append((layer, values))
    described = {w.layer for w in description.weights}
    missing = sorted(described - seen_paths)
    if missing:
        raise WeightsMismatchError(
            f"The source's layers {missing} have weights but no counterpart in the Keras 3 "
            "model: the rebuilt graph lost them. Please report it with the description file."
        )
    for layer, values in plan:
        layer.set_weights([np.asarray(v) for v in values])
