"""What the tests use that Python 3.7 lacks (the standalone Keras 2 environments run TF 1.15 there)."""

from __future__ import annotations

from typing import Any, Iterable, Iterator, Tuple

_MISSING = object()


def zip_strict(*iterables: Iterable[Any]) -> Iterator[Tuple[Any, ...]]:
    """``zip(*iterables, strict=True)`` (Python >= 3.10): raises ValueError when the lengths differ."""
    iterators = [iter(it) for it in iterables]
    while True:
        items = [next(it, _MISSING) for it in iterators]
        ended = [item is _MISSING for item in items]
        if all(ended):
            return
        if any(ended):
            raise ValueError(f"zip_strict: argument {ended.index(True) + 1} is shorter than the others")
        yield tuple(items)
