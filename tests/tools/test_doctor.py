"""`compat-clone doctor`: reports the environment and self-checks every family in it."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from compat_clone.known_issues import KNOWN_ISSUES, issues_for
from compat_clone.tools import doctor as _doctor


def test_families_from_metadata_only() -> None:
    fams = _doctor.families({"keras": "3.15.1", "tf_keras": "2.21.0"})
    assert fams == [("keras3", "keras", "3.15.1"), ("tf_keras", "tf_keras", "2.21.0")]
    assert _doctor.families({"keras": "2.2.4"}) == [("keras2", "keras", "2.2.4")]
    assert _doctor.families({"keras": "2.12.0"}) == [("tf_keras", "keras", "2.12.0")]


def test_known_issue_table_by_version() -> None:
    assert any("12202" in i.upstream for i in issues_for("keras2", "2.2.4"))
    assert not any("12202" in i.upstream for i in issues_for("keras2", "2.2.5"))
    assert any("17700" in i.upstream for i in issues_for("tf_keras", "2.15.1"))
    assert any(i.versions == "<3.3.3" for i in issues_for("keras3", "3.0.0"))
    assert not any(i.versions == "<3.3.3" for i in issues_for("keras3", "3.15.1"))
    assert all(i.family in ("keras2", "tf_keras", "keras3") for i in KNOWN_ISSUES)


@pytest.mark.soak
def test_doctor_json_self_check() -> None:
    """The real command, in a subprocess: every family here passes through compat_clone."""
    out = subprocess.run(
        [sys.executable, "-m", "compat_clone", "doctor", "--json"],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    report = json.loads(out.stdout)
    assert report["families"], "no family found"
    for fam in report["families"]:
        assert "error" not in fam, fam
        assert fam["self_check"], fam
        for row in fam["self_check"]:
            assert row["compat"] in ("ok", "n/a"), row
