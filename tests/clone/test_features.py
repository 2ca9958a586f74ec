"""Every feature, natively and through compat_clone, side by side.

compat_clone must pass every feature that exists in the family; the native
result is recorded (for COMPATIBILITY.md) and, where a native failure is a
known upstream bug, asserted in the family's own test module.
"""

from __future__ import annotations

from typing import Any

import pytest

import compat_clone
from tests.clone.feature_checks import DESCRIPTIONS, FEATURES
from tests.clone.feature_records import write_records
from tests.clone.features import native_clone, run_check


def _record(feature: str, K: Any, side: str, outcome: str, detail: str = "") -> None:
    write_records(
        K, [{"feature": feature, "description": DESCRIPTIONS[feature], "side": side, "outcome": outcome, "detail": detail}]
    )


@pytest.mark.parametrize("name", sorted(FEATURES))
def test_feature(name: str, K: Any) -> None:
    check = FEATURES[name]
    native, native_detail = run_check(check, K, native_clone(K))
    _record(name, K, "native", native, native_detail)
    outcome, detail = run_check(check, K, compat_clone.clone_model)
    _record(name, K, "compat_clone", outcome, detail)
    if outcome == "n/a":
        pytest.skip(detail)
    assert outcome == "pass", f"compat_clone failed {name}: {detail} (native: {native} {native_detail})"
