"""Small stand-ins for what newer Pythons have, so the suite runs on every matrix interpreter."""

from __future__ import annotations

import sys
from typing import Iterable, Iterator, Tuple, TypeVar

if sys.version_info >= (3, 8):
    from importlib import metadata
else:  # Python 3.7 (the TF 1.15 environments): the backport compat_clone depends on there
    import importlib_metadata as metadata

A = TypeVar("A")
B = TypeVar("B")

__all__ = ["metadata", "zip_strict"]


def zip_strict(a: Iterable[A], b: Iterable[B]) -> Iterator[Tuple[A, B]]:
    """``zip(a, b, strict=True)`` (Python 3.10+): pairs, and a ValueError when the lengths differ."""
    a, b = list(a), list(b)
    if len(a) != len(b):
        raise ValueError(f"zip_strict: lengths differ: {len(a)} != {len(b)}")
    return iter(list(zip(a, b)))
