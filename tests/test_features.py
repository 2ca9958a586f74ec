"""Every feature, natively and through compat_clone, side by side.

compat_clone must pass every feature that exists in the family; the native
result is recorded (for COMPATIBILITY.md) and, where a native failure is a
known upstream bug, asserted in the family's own test module.
"""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

import compat_clone
from features import DESCRIPTIONS, FEATURES, native_clone, run_check


def _record(feature: str, K: Any, side: str, outcome: str, detail: str = "") -> None:
    folder = os.environ.get("COMPAT_CLONE_RESULTS")
    if not folder:
        return
    os.makedirs(folder, exist_ok=True)
    env = os.environ.get("COMPAT_CLONE_ENV", "default")
    line = {
        "env": env,
        "feature": feature,
        "description": DESCRIPTIONS[feature],
        "side": side,
        "outcome": outcome,
        "detail": detail[:300],
        "keras": f"{K.__name__.split('.')[0]} {K.__version__}",
    }
    path = os.path.join(folder, f"{env}.jsonl")
    with open(path, "a", encoding="utf-8") as fh:  # one line per write: safe across xdist workers
        fh.write(json.dumps(line) + "\n")


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
