"""What each family's native `clone_model` gets wrong: the table the adapters work around.

Data, not code: one row per upstream problem, with the versions it was seen
in (a `packaging` specifier over the owning package's version) and where
compat_clone handles it. `compat-clone doctor` prints the rows that apply to
the installed versions; its self-check then measures them.
"""

from __future__ import annotations

import dataclasses
from typing import List, Tuple

from packaging.specifiers import SpecifierSet
from packaging.version import Version

__all__ = ["KnownIssue", "KNOWN_ISSUES", "issues_for"]


@dataclasses.dataclass(frozen=True)
class KnownIssue:
    family: str
    versions: str  # specifier over the owning package's version
    upstream: str
    summary: str
    handled_by: str


KNOWN_ISSUES: Tuple[KnownIssue, ...] = (
    KnownIssue(
        "keras2", "<2.2.5", "keras-team/keras #12202 (fixed by PR #12205 in 2.2.5)",
        "a layer with several outputs and no mask support gets a mask list [None]: "
        "clone fails with 'Could not compute output'",
        "compat_clone.families.keras2: one mask entry per output",
    ),
    KnownIssue(
        "keras2", "<2.3", "keras 2.0-2.2 tensor map",
        "tensor map keyed by the tensors themselves (unhashable on TensorFlow 2)",
        "compat_clone.families.keras2: keyed by tensor identity",
    ),
    KnownIssue(
        "keras2", "<2.4", "no clone_function / recursive / call_function in 2.0-2.2",
        "features missing natively; nested models cloned as one unit",
        "compat_clone.families.keras2: backfilled",
    ),
    KnownIssue(
        "keras2", "<2.4", "model.trainable",
        "model.trainable = False is lost by the clone",
        "compat_clone.families.keras2: restored",
    ),
    KnownIssue(
        "tf_keras", ">=2.4", "model.trainable",
        "model.trainable = False on a model is lost by the clone",
        "compat_clone.families.tf_keras: restored, then each layer's flag",
    ),
    KnownIssue(
        "tf_keras", ">=2.12", "keras-team/keras #17700",
        "a layer called on a one-element list (Concatenate()([x])) fails to clone",
        "compat_clone.families.tf_keras: own graph walk keeps the call structure",
    ),
    KnownIssue(
        "tf_keras", ">=2.4", "no recursive / call_function in tf.keras 2.x",
        "nested models are passed whole to clone_function; no call_function",
        "compat_clone.families.tf_keras: backfilled",
    ),
    KnownIssue(
        "keras3", ">=3.0", "Lambda + safe mode",
        "a Lambda holding a Python lambda is refused by the config round trip "
        "(safe-mode deserialization); turning safe mode off globally is unsafe",
        "compat_clone.families.keras3: Lambda rebuilt from the live function",
    ),
    KnownIssue(
        "keras3", ">3.0.0", "sparse inputs",
        "sparse=True / ragged=True inputs come back dense (seen in 3.15.1, not in 3.0.0)",
        "compat_clone.families.keras3: inputs recreated with their flags",
    ),
    KnownIssue(
        "keras3", ">3.0.0", "model.trainable",
        "trainable=False on a functional model is lost (seen in 3.15.1, not in 3.0.0)",
        "compat_clone.families.keras3: restored",
    ),
    KnownIssue(
        "keras3", "<3.3.3", "call_function / recursive",
        "no call_function and no recursive argument",
        "compat_clone.families.keras3: own graph walk",
    ),
    KnownIssue(
        "keras3", "<3.14", "recursive=True",
        "recursion stops after the first nesting level",
        "compat_clone.families.keras3: every level",
    ),
    KnownIssue(
        "keras3", ">=3.0", "placement",
        "the clone ignores the source's device / distribution",
        "compat_clone.placement",
    ),
)


def issues_for(family: str, version: str) -> List[KnownIssue]:
    """The known native problems of `family` at `version`."""
    parsed = Version(version)
    return [
        issue
        for issue in KNOWN_ISSUES
        if issue.family == family and SpecifierSet(issue.versions).contains(parsed, prereleases=True)
    ]
