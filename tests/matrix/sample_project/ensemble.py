"""A user library: build an ensemble of independent copies of one Keras model.

It works with whatever Keras the caller's model comes from, because it clones
with `compat_clone.clone_model` instead of the family's own `clone_model`.
"""

from __future__ import annotations

from typing import Any, List

import compat_clone


def ensemble(model: Any, n: int, *, same_weights: bool = True) -> List[Any]:
    """Returns `n` clones of `model`, each with its own variables.

    Args:
        model: a Keras model of any family.
        n: how many copies.
        same_weights: start every copy from `model`'s weights (else freshly
            initialized ones).

    Returns:
        A list of `n` models, named ``<model.name>_0`` ... ``<model.name>_{n-1}``.
    """
    if n < 1:
        raise ValueError(f"Expected n >= 1. Received: n={n!r}.")
    return [compat_clone.clone_model(model, copy_weights=same_weights, name=f"{model.name}_{i}") for i in range(n)]
