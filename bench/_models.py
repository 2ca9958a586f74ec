"""Model builders for the benchmarks: plain functions of the Keras module `K`.

The same builder serves every family (`keras` 3, `tf_keras` / `tf.keras`,
standalone `keras` 2.2.x): only layers and calls that exist in all of them
are used. Nothing is downloaded (`weights=None`).
"""

from __future__ import annotations

import contextlib
import sys
from typing import Any, Iterator


@contextlib.contextmanager
def recursion_limit(limit: int) -> Iterator[None]:
    """Raises the recursion limit inside the block (never lowers it).

    Keras (3.15, tf_keras 2.21) walks a functional graph recursively
    (`_build_map_helper`), so building a model of a few thousand layers needs
    a higher limit; the caller should run in a thread with a large stack.
    """
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, limit))
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


def resnet50(K: Any) -> Any:
    """ResNet50 built in code (`weights=None`): 177 layers, 25.6M parameters."""
    return K.applications.ResNet50(weights=None)


def dense_chain(K: Any, depth: int, width: int = 16) -> Any:
    """`depth` Dense layers, one after the other."""
    inputs = x = K.Input((width,))
    for _ in range(depth):
        x = K.layers.Dense(width)(x)
    return K.Model(inputs, x)


def relu_chain(K: Any, depth: int, width: int = 8) -> Any:
    """`depth` weightless ReLU layers in a chain: all cost is graph bookkeeping.

    Used for the growth curve, where a layer without variables exposes the
    per-layer cost of the clone machinery (ours and Keras's) most plainly.
    """
    inputs = x = K.Input((width,))
    for _ in range(depth):
        x = K.layers.ReLU()(x)
    return K.Model(inputs, x)


def shared_dag(K: Any, branches: int = 200, width: int = 16, shared: int = 4) -> Any:
    """`branches` parallel branches that reuse `shared` layers, summed at the end.

    Each branch calls one shared Dense on the input, its own Dense, then
    another shared Dense: `branches + shared + 1` layers, `3 * branches + 1`
    call nodes, every shared layer called from many branches.
    """
    inputs = K.Input((width,))
    common = [K.layers.Dense(width, name=f"shared_{i}") for i in range(shared)]
    outputs = []
    for b in range(branches):
        h = common[b % shared](inputs)
        h = K.layers.Dense(width)(h)
        outputs.append(common[(b + 1) % shared](h))
    return K.Model(inputs, K.layers.Add()(outputs))


def count_layers(model: Any) -> int:
    return len(model.layers)
