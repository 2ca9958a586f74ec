"""The known-issues table, checked against the releases: generated from `compat_clone.known_issues`.

One test per (row, check) of the table. In an environment of the row's
family, the native `clone_model` must fail the check (or lack the argument
it needs) exactly where the row's versions say, and pass it everywhere else;
`compat_clone.clone_model` must pass it everywhere. A row whose versions are
too wide or too narrow fails here, in the environment that shows it.
"""

from __future__ import annotations

import importlib
import re
from typing import Any, List

import pytest

import compat_clone
from compat_clone.known_issues import KNOWN_ISSUES, KnownIssue, affects
from tests.clone.feature_checks import FEATURES
from tests.clone.features import family_name, native_clone, run_check

CASES = [(row, check) for row in KNOWN_ISSUES for check in row.checks]


@pytest.mark.parametrize("row,check", CASES, ids=[f"{r.id}-{r.family}-{c}" for r, c in CASES])
def test_known_issue(K: Any, row: KnownIssue, check: str) -> None:
    if family_name(K) != row.family:
        pytest.skip(f"a {row.family} row; this is {family_name(K)}")
    feature = FEATURES[check]
    version = K.__version__
    affected = affects(row, version)
    native, detail = run_check(feature, K, native_clone(K))
    if native == "n/a":
        pytest.skip(f"{check} does not exist in {K.__name__} {version}: {detail}")
    if affected:
        assert native in ("fail", "missing"), (
            f"known issue {row.id!r} says the native clone of {K.__name__} {version} "
            f"misbehaves on {check} ({row.versions}), but it passed: narrow the row's versions"
        )
    else:
        assert native == "pass", (
            f"the native clone of {K.__name__} {version} fails {check} ({native}: {detail}) "
            f"outside the versions of known issue {row.id!r} ({row.versions}): widen the row"
        )
    outcome, detail = run_check(feature, K, compat_clone.clone_model)
    assert outcome == "pass", f"compat_clone fails {check} ({row.id}): {detail}"


def _resolves(ref: str) -> bool:
    """Whether dotted path `ref` (``compat_clone.families._core.Family.clone_lambda``) names an object."""
    parts = ref.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for name in parts[cut:]:
            if not hasattr(obj, name):
                return False
            obj = getattr(obj, name)
        return True
    return False


@pytest.mark.tooling
def test_every_row_names_code_that_exists() -> None:
    """A row's `handled_by` names the code that handles it: each dotted path in it resolves (importing no framework),
    in the known issues and in compat_clone's own rules (`wrapper_rules`)."""
    from compat_clone.wrapper_rules import WRAPPER_RULES

    missing: List[str] = [
        f"{row.id}: {ref}"
        for row in (*KNOWN_ISSUES, *WRAPPER_RULES)
        for ref in re.findall(r"compat_clone(?:\.[A-Za-z_]\w*)+", row.handled_by)
        if not _resolves(ref)
    ]
    assert not missing, f"known issues naming code that does not exist: {missing}"
