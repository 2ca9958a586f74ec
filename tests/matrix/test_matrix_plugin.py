"""The pytest plugin shipped with compat-clone (entry point `compat_clone`), run in nested pytest sessions.

Off outside a matrix environment, cheap to load (two modules until it is on),
per-test results with ``--compat-results``, and the claim check that names the
environment or stops a mislabeled one. The plugin runs in the environment
running these tests.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Dict

import pytest

from compat_clone_matrix import report as _report
from compat_clone_matrix import results as _results
from tests.matrix.matrix_support import clean_environ
from tests.support._py import metadata

# Framework-free: one matrix environment per Python version runs them (tests/conftest.py);
# the plugin's claim checks (marked soak) import the environment's framework.
pytestmark = pytest.mark.tooling


_TESTS = """
import pytest

def test_ok():
    pass

def test_bad():
    assert 1 == 2, "one is not two"

def test_skipped():
    pytest.skip("not here")
"""


def _pytest(folder: Path, *args: str, **environ: str) -> subprocess.CompletedProcess[str]:
    (folder / "test_user.py").write_text(_TESTS)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],  # no -q: the header
        cwd=folder,
        env=clean_environ(**environ),
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_plugin_is_installed_and_imports_no_framework() -> None:
    # (`entry_points(group=...)` is Python 3.10+: read the distribution's own)
    points = {e.name: e.value for e in metadata.distribution("compat-clone").entry_points if e.group == "pytest11"}
    assert points.get("compat_clone") == "compat_clone_matrix.pytest_plugin"
    code = (
        "import sys, compat_clone_matrix.pytest_plugin; "
        "print(sorted(m for m in ('keras', 'tensorflow', 'tf_keras', 'jax', 'torch') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=clean_environ(), timeout=120)
    assert done.stdout.strip() == "[]", done.stdout + done.stderr
    # pytest loads the plugin in every process: until it is on, it costs its own two modules and nothing more
    code = (
        "import sys, pytest; before = set(sys.modules); import compat_clone_matrix.pytest_plugin; "
        "print(sorted(set(sys.modules) - before))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=clean_environ(), timeout=120)
    # (an environment fix-up's .pth imports compat_clone_matrix.envfix at start-up, and the package with it)
    added = set(ast.literal_eval(done.stdout.strip() or "None") or ())
    assert "compat_clone_matrix.pytest_plugin" in added, done.stdout + done.stderr
    assert added <= {"compat_clone_matrix", "compat_clone_matrix.pytest_plugin"}, done.stdout + done.stderr


def test_plugin_is_off_outside_a_matrix_env(tmp_path: Path) -> None:
    done = _pytest(tmp_path)
    assert done.returncode == 1 and "1 failed, 1 passed, 1 skipped" in done.stdout, done.stdout
    assert "compat-clone matrix env" not in done.stdout
    assert not (tmp_path / ".matrix").exists()


def test_plugin_writes_results_when_asked(tmp_path: Path) -> None:
    done = _pytest(tmp_path, "--compat-results", COMPAT_CLONE_RESULTS=str(tmp_path / "out"))
    assert "compat-clone matrix env: default (no claim)" in done.stdout, done.stdout
    lines = [json.loads(x) for x in (tmp_path / "out" / "default.tests.jsonl").read_text().splitlines()]
    outcomes = {r["feature"]: (r["outcome"], r["detail"]) for r in lines}
    assert outcomes["test_user.py::test_ok"] == ("pass", "")
    assert outcomes["test_user.py::test_bad"][0] == "fail" and "one is not two" in outcomes["test_user.py::test_bad"][1]
    assert outcomes["test_user.py::test_skipped"][0] == "n/a"
    results, _, _ = _results.load_results(tmp_path / "out")
    table = _report.render_table(results)
    assert "| `test_user.py::test_bad` | ❌ |" in table and "| `test_user.py::test_skipped` | · |" in table


def _true_claim() -> Dict[str, str]:
    """This environment's claim: the matrix's, or (default .venv) the Keras 3 it has."""
    if os.environ.get("COMPAT_CLONE_EXPECT_FAMILY"):
        return {
            k: os.environ[f"COMPAT_CLONE_EXPECT_{k}"]
            for k in ("FAMILY", "VERSION", "BACKEND")
            if os.environ.get(f"COMPAT_CLONE_EXPECT_{k}")
        }
    return {"FAMILY": "keras3", "VERSION": metadata.version("keras"), "BACKEND": "tensorflow"}


def _claim_environ(claim: Dict[str, str]) -> Dict[str, str]:
    environ = {f"COMPAT_CLONE_EXPECT_{k}": v for k, v in claim.items()}
    for name in ("KERAS_BACKEND", "TF_USE_LEGACY_KERAS"):
        if os.environ.get(name):
            environ[name] = os.environ[name]
    return environ


# The two tests below import the environment's framework in a nested session's check
# (~20 s each): they run where soak checks run (one matrix env per family and backend,
# and outside the matrix). Every matrix env's own session was checked by the plugin
# at its start already.
@pytest.mark.soak
def test_plugin_checks_the_claim_and_names_the_env(tmp_path: Path) -> None:
    claim = _true_claim()
    claim_file = tmp_path / "claim.json"
    done = _pytest(tmp_path, "-q", COMPAT_CLONE_ENV="here", COMPAT_CLONE_CLAIM_FILE=str(claim_file), **_claim_environ(claim))
    assert "1 failed, 1 passed, 1 skipped" in done.stdout, done.stdout + done.stderr
    # -q hides the report header: the proof closes the summary instead
    proof = [line for line in done.stdout.splitlines() if line.startswith("compat-clone matrix env: here (")]
    assert len(proof) == 1 and f"family={claim['FAMILY']}" in proof[0] and "; loaded " in proof[0], done.stdout
    checked = json.loads(claim_file.read_text())
    assert checked["ok"] and not checked["mislabeled"] and checked["env"] == "here"
    # these tests touch no Keras: said so (the runner's status NO KERAS), not certified
    assert checked["verdict"] == "NO KERAS" and checked["used"] == "no Keras", checked
    assert "compat-clone matrix env: here NO KERAS: the tests imported no Keras" in done.stdout
    assert proof[0].endswith(f"loaded {checked['loaded']}") and " via " in checked["loaded"]


@pytest.mark.soak
def test_plugin_stops_a_mislabeled_env(tmp_path: Path) -> None:
    claim = dict(_true_claim(), VERSION="0.0")
    claim_file = tmp_path / "claim.json"
    done = _pytest(
        tmp_path,
        "--compat-results",
        COMPAT_CLONE_ENV="liar",
        COMPAT_CLONE_CLAIM_FILE=str(claim_file),
        COMPAT_CLONE_RESULTS=str(tmp_path / "out"),
        **_claim_environ(claim),
    )
    assert done.returncode == 4, done.stdout + done.stderr
    out = done.stdout + done.stderr
    assert "environment 'liar' is not what it claims" in out and "the table claims version 0.0" in out
    assert "passed" not in done.stdout  # no test ran
    assert json.loads(claim_file.read_text())["mislabeled"] is True  # the runner's status MISLABELED
    assert not (tmp_path / "out").exists()  # no results file: the last run's results stay
