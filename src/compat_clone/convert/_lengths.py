"""Probe lengths for a model's open (`None`) dimensions: ones the source itself computes with.

A model's layers bound the lengths it accepts: cropping and valid
convolutions / pooling (with their strides) need a long enough input, a
`Reshape` to a fixed shape (then `Flatten` into a fixed `Dense`) an exact
one. `find_length` asks the source model itself, in its own environment,
one sample at a time: the default length first, then small lengths one by
one, the lengths the model's `Reshape` targets imply, then doubling lengths
up to a memory budget, and the smallest working length below the first
doubling one that works (bisected). Nothing is guessed from version
numbers: a length counts only once the source answered on it with outputs
that are not empty.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any, Callable, List, Optional, Sequence, Tuple

import numpy as np

from compat_clone.errors import ProbeInputError

__all__ = ["OPEN_DIM", "MAX_VALUES", "Attempt", "find_length", "open_dims", "summary"]

#: the length an open dimension is probed at first
OPEN_DIM = 5
#: the memory budget of the search: at most this many values in one probe sample (all inputs together)
MAX_VALUES = 1 << 21
# small lengths tried one by one after OPEN_DIM (exact lengths: a Reshape to a fixed shape)
_SMALL = range(OPEN_DIM + 1, 17)


@dataclasses.dataclass(frozen=True)
class Attempt:
    """One length tried, and why the source did not compute with it ("" when it did)."""

    length: int
    failure: str


def open_dims(specs: Sequence[Tuple[Tuple[Optional[int], ...], str, str]]) -> List[str]:
    """The model inputs (``name (shape)``) that have an open dimension past the batch one."""
    return [f"{name!r} {tuple(dims)}" for dims, _, name in specs if any(d is None for d in dims[1:])]


def _values_per_sample(specs: Sequence[Tuple[Tuple[Optional[int], ...], str, str]], length: int) -> int:
    return sum(int(np.prod([length if d is None else d for d in dims[1:]], dtype=np.int64)) for dims, _, _ in specs)


def _reshape_lengths(architecture: Any, specs: Sequence[Tuple[Tuple[Optional[int], ...], str, str]]) -> List[int]:
    """Lengths a `Reshape` to a fixed shape implies: its target size over the other dimensions of an input."""
    targets: List[int] = []

    def visit(entry: Any) -> None:
        if isinstance(entry, dict):
            if entry.get("class_name") == "Reshape":
                shape = (entry.get("config") or {}).get("target_shape") or ()
                if shape and all(isinstance(d, int) and d > 0 for d in shape):
                    targets.append(int(np.prod(shape)))
            for value in entry.values():
                visit(value)
        elif isinstance(entry, list):
            for value in entry:
                visit(value)

    visit(architecture)
    found: List[int] = []
    for dims, _, _ in specs:
        opened = sum(d is None for d in dims[1:])
        rest = int(np.prod([d for d in dims[1:] if d is not None], dtype=np.int64))
        if opened != 1 or rest <= 0:
            continue
        found.extend(t // rest for t in targets if t % rest == 0 and t // rest > OPEN_DIM)
    return sorted(set(found))


def summary(exc: BaseException) -> str:
    """One line of why the source refused a probe: its error's own message, not the traceback it quotes."""
    text = str(exc).split("Call arguments received")[0]  # tf.keras: the call's arguments follow the reason
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    starts = [k for k, line in enumerate(lines) if re.match(r"^\w+(Error|Exception): ", line)]
    said = " ".join(lines[starts[-1] :] if starts else lines)
    said = said if re.match(r"^\w+(Error|Exception): ", said) else f"{type(exc).__name__}: {said}"
    return f"{said[:300]}{'...' if len(said) > 300 else ''}"


def find_length(
    computes: Callable[[int], str],
    specs: Sequence[Tuple[Tuple[Optional[int], ...], str, str]],
    architecture: Any,
    first: Attempt,
    *,
    source: str,
) -> Tuple[int, List[Attempt]]:
    """The smallest length of the open dimensions the source computes with.

    Args:
        computes: length -> "" when the source answers on a one-sample probe
            of that length with outputs that are not empty, else why not.
        specs: the model's ``(shape, dtype, name)`` per input.
        architecture: the model's config (its `Reshape` targets are tried).
        first: the attempt at `OPEN_DIM` already made (with every sample).
        source: the source's Keras and version, for the message.

    Returns:
        ``(length, attempts)``.

    Raises:
        ProbeInputError: no length within `MAX_VALUES` works.
    """
    tried = [first]
    seen = {first.length}

    def attempt(length: int) -> bool:
        if length in seen or _values_per_sample(specs, length) > MAX_VALUES:
            return False
        seen.add(length)
        try:
            failure = computes(length)
        except Exception as exc:  # the source refuses this length: the next one is tried
            failure = summary(exc)
        tried.append(Attempt(length, failure))
        return not failure

    for length in list(_SMALL) + _reshape_lengths(architecture, specs):
        if attempt(length):
            return length, tried
    low, length = _SMALL[-1], _SMALL[-1] * 2
    while _values_per_sample(specs, length) <= MAX_VALUES:
        if attempt(length):
            high = length  # the smallest working one is in (low, high]: bisect (lengths bound from below)
            while high - low > 1:
                middle = (low + high) // 2
                if attempt(middle):
                    high = middle
                else:
                    low = middle
            return high, tried
        low, length = length, length * 2
    raise ProbeInputError(_refusal(specs, tried, source))


def _refusal(specs: Sequence[Tuple[Tuple[Optional[int], ...], str, str]], tried: List[Attempt], source: str) -> str:
    lengths = [a.length for a in tried]
    named = ", ".join(open_dims(specs)) or ", ".join(f"{name!r} {tuple(dims)}" for dims, _, name in specs)
    first, last = tried[0], tried[-1]
    said = f"at {first.length}: {first.failure}"
    if last is not first:
        said += f"; at {last.length}: {last.failure}"
    return (
        f"The source model ({source}) computes none of the probe inputs tried for input {named}: "
        f"{len(lengths)} lengths of its open dimensions, {_spans(sorted(lengths))} (up to "
        f"{MAX_VALUES:,} values per sample), all fail ({said}). Nothing was converted. Give inputs it "
        "computes with --inputs FILE.npz (np.savez, one array per model input; in Python: "
        "`probe_inputs=`)."
    )


def _spans(lengths: Sequence[int]) -> str:
    """``5-16, 24, 32, 64`` for a sorted list of lengths."""
    parts: List[str] = []
    start = prev = lengths[0]
    for n in list(lengths[1:]) + [-1]:
        if n == prev + 1:
            prev = n
            continue
        parts.append(str(start) if start == prev else f"{start}-{prev}")
        start = prev = n
    return ", ".join(parts)
