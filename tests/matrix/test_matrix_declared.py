"""`compat-clone matrix --declared` and `--bisect` on a library of their own, end to end, on real releases.

tests/matrix/sample_declared_project is a small target-network library that
declares ``keras>=3.0`` and calls the native `keras.models.clone_model`. Its
frozen-model test passes up to Keras 3.3.2 and fails from 3.3.3, where the
native clone started to drop ``model.trainable = False`` (known issue
`trainable-model`, whose range this bisect corrected from ``>=3.3``).

A copy of the project (outside the checkout) is run as its author would, by
the installed ``compat_clone``: the index is the real one, the environments
real ones, derived from the built-in table and kept in the per-user cache
(here a cache folder of the test's own; uv keeps its usual cache).
Both tests build TensorFlow environments (marked `slow`): they run outside the
matrix and in keras-3.0-tf (a short environment of the run: not the longest
one's time, and its TensorFlow is the one most of these environments share).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict

import pytest

from compat_clone_matrix.range_runs import derived_root
from tests.matrix.matrix_support import building_environ, builds_in

SAMPLE = Path(__file__).resolve().parent / "sample_declared_project"
pytestmark = builds_in("keras-3.0-tf", "TensorFlow environments")


def _uv_cache(environ: Dict[str, str]) -> str:
    uv = environ.get("COMPAT_CLONE_UV") or shutil.which("uv") or "uv"
    return subprocess.run([uv, "cache", "dir"], env=environ, capture_output=True, text=True, check=True).stdout.strip()


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "target-nets"
    shutil.copytree(SAMPLE, folder, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    monkeypatch.setenv("UV_CACHE_DIR", os.environ.get("UV_CACHE_DIR") or _uv_cache(building_environ()))  # uv's stays
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # compat_clone's per-user cache: this test's own
    return folder


def _matrix(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "compat_clone",
            "matrix",
            "--jobs",
            "2",
            "--progress",
            "0",
            *args,
            "--",
            "python",
            "-m",
            "pytest",
            "-q",
        ],
        cwd=project,
        env=building_environ(),
        capture_output=True,
        text=True,
        timeout=1800,
    )


def test_declared_finds_that_the_range_does_not_hold_at_its_top(project: Path) -> None:
    first = _matrix(project, "--declared")
    out = first.stdout + first.stderr
    assert first.returncode == 1, out
    assert "declared in pyproject.toml: keras>=3.0" in out
    assert re.search(r"keras3\s+lowest\s+keras 3\.0\.0\s+in keras-3\.0\.0-tf \(from the table's keras-3\.0-tf\)", out), out
    assert re.search(r"^keras-3\.0\.0-tf\s+built\s+2\s+0\s+0\s+ok\s+.*keras 3\.0\.0 on tensorflow via keras", out, re.M), out
    assert re.search(r"^keras-3\.15\.1-tf\s+built\s+1\s+1\s+0\s+FAILED\s+.*keras 3\.15\.1 on tensorflow", out, re.M), out
    assert "keras3: the declared range keras>=3.0 does NOT hold: keras 3.15.1 (highest): FAILED" in out
    assert "compat-clone matrix --bisect keras3 --good 3.0.0 --bad 3.15.1 -- python -m pytest -q" in out
    assert "FAILED tests/test_target_nets.py::test_a_frozen_model_has_a_frozen_target" in out
    root = derived_root(project)
    assert str(root).startswith(os.environ["XDG_CACHE_HOME"]) and (root / "keras-3.0.0-tf" / "last.log").is_file()
    assert not (project / ".matrix").exists()  # nothing in the project's folder

    again = _matrix(project, "--declared")  # nothing that exists is built again
    assert again.returncode == 1
    assert re.search(r"^keras-3\.0\.0-tf\s+reused\s", again.stdout, re.M) and re.search(
        r"^keras-3\.15\.1-tf\s+reused\s", again.stdout, re.M
    )


def test_bisect_finds_the_patch_release_that_broke_it_and_the_known_issue(project: Path) -> None:
    listed = _matrix(project, "--bisect", "keras3", "--good", "3.3.0", "--bad", "3.3", "--list")
    assert listed.returncode == 0, listed.stdout + listed.stderr
    assert listed.stdout.split() == [
        w for v in ("3.3.0", "3.3.1", "3.3.2", "3.3.3") for w in (v, "from", "the", "table's", "keras-3.3-tf")
    ]

    done = _matrix(project, "--bisect", "keras3", "--good", "3.3.0", "--bad", "3.3")  # a series: the release the table pins
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert "bisect keras3: 4 releases from 3.3.0 (good) to 3.3.3 (bad)" in out
    assert "bisect keras3: last good 3.3.2 (keras-3.3.2-tf), first bad 3.3.3 (keras-3.3.3-tf)" in out
    assert "  FAILED tests/test_target_nets.py::test_a_frozen_model_has_a_frozen_target" in out
    assert re.search(r"^    trainable-model \(>=3\.3\.3; starts at 3\.3\.3\): `model\.trainable = False`", out, re.M), out
    assert "keras-3.3.1-tf" not in out  # halving: 3.3.2 was good, so 3.3.1 was never built

    wrong = _matrix(project, "--bisect", "keras3", "--good", "3.3.3", "--bad", "3.3.2")
    assert wrong.returncode == 1
    assert "nothing to bisect: --good 3.3.3 is bad; --bad 3.3.2 is good" in wrong.stdout
