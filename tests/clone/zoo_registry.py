"""The model zoo's registry: the `Case` record, the `CASES` table `@case` fills, and the family facts cases use.

The cases themselves are in tests/clone/zoo_cases.py, the judge (`run_side`) in
tests/clone/zoo.py; tests/clone/zoo.py's docstring says what the zoo is.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Optional, Tuple

from packaging.version import Version

from tests.clone.features import family_name

__all__ = [
    "ASPECTS",
    "Outcome",
    "Case",
    "CASES",
    "case",
    "keras_version",
    "keras3",
    "keras2",
    "tf_keras",
    "keras2_before",
    "every_aspect",
    "keras3_before",
    "native_bug",
]

ASPECTS = ("class", "outputs", "trainable", "source")
Outcome = Tuple[str, str]  # ("pass" | "fail" | "n/a", detail)


@dataclass(frozen=True)
class Case:
    """One zoo model.

    `build(K)` returns ``(model, inputs)``. `native_fails` maps an aspect to
    ``(reason, applies(K))``: where `applies` holds, the native clone is known
    to fail that aspect, and the test asserts it does. `refused` names a
    layer the native clone cannot rebuild from its config: there the native
    clone must fail, and compat_clone must refuse (`UnsupportedModelError`, or
    the native exception type with a note) naming that layer and the
    `clone_function` escape, or clone it right.
    `context(K)` wraps the build and both clones (mixed precision); `rtol` /
    `atol` compare outputs. `too_slow_on` maps a Keras 3 backend (or ``"tf1"``:
    standalone Keras 2 on TensorFlow 1.x) to why the
    case does not run there (time budget: the model exists there, so nothing
    is recorded for it).
    """

    name: str
    description: str
    build: Callable[[Any], Tuple[Any, Any]]
    native_fails: Dict[str, Tuple[str, Callable[[Any], bool]]] = field(default_factory=dict)
    refused: Optional[str] = None
    context: Optional[Callable[[Any], Any]] = None
    rtol: float = 1e-5
    atol: float = 1e-5
    too_slow_on: Dict[str, str] = field(default_factory=dict)


CASES: Dict[str, Case] = {}


def case(description: str, **options: Any) -> Callable[[Callable[[Any], Tuple[Any, Any]]], Callable[[Any], Tuple[Any, Any]]]:
    def register(build: Callable[[Any], Tuple[Any, Any]]) -> Callable[[Any], Tuple[Any, Any]]:
        CASES[build.__name__] = Case(build.__name__, description, build, **options)
        return build

    return register


# -- family facts ---------------------------------------------------------------


def keras_version(K: Any) -> Version:
    return Version(K.__version__)


def keras3(K: Any) -> bool:
    return family_name(K) == "keras3"


def keras2(K: Any) -> bool:
    return family_name(K) == "keras2"


def tf_keras(K: Any) -> bool:
    return family_name(K) == "tf_keras"


def keras2_before(version: str) -> Callable[[Any], bool]:
    return lambda K: keras2(K) and keras_version(K) < Version(version)


def every_aspect(reason: str, applies: Callable[[Any], bool]) -> Dict[str, Tuple[str, Callable[[Any], bool]]]:
    """`native_fails` for a native clone that fails outright (every aspect)."""
    return {aspect: (reason, applies) for aspect in ASPECTS}


def keras3_before(version: str) -> Callable[[Any], bool]:
    return lambda K: keras3(K) and keras_version(K) < Version(version)


def native_bug(issue_id: str) -> Callable[[Any], bool]:
    """Where the known-issues table says the row `issue_id` affects this release."""
    from compat_clone import known_issues

    rows = known_issues.issue(issue_id)
    return lambda K: any(row.family == family_name(K) and known_issues.affects(row, K.__version__) for row in rows)
