"""Helpers shared by the matrix test modules (not a test module itself)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List

import pytest

from compat_clone.tools import matrix as _matrix

__all__ = ["CI_TABLE", "ci_project", "clean_environ", "building_environ", "builds_in", "matrix_in", "one_env_table", "standin"]


def clean_environ(**extra: str) -> Dict[str, str]:
    """This process's variables without the matrix's own (these tests may run inside a matrix env).

    uv is `false`: stand-in environments are fresh, nothing is built (and no
    uv is looked for or installed); a stale stamp fails the run loudly.
    """
    environ = {k: v for k, v in os.environ.items() if not k.startswith("COMPAT_CLONE_")}
    environ["COMPAT_CLONE_UV"] = shutil.which("false") or "false"
    environ.update(extra)
    return environ


def building_environ() -> Dict[str, str]:
    """This process's variables without the matrix's own, for a run that builds real environments with uv:
    the checkout's own uv (.tools/bin/uv) unless ``COMPAT_CLONE_UV`` names one, this interpreter's folder first on PATH."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("COMPAT_CLONE_") or k == "COMPAT_CLONE_UV"}
    local_uv = Path(__file__).resolve().parents[2] / ".tools" / "bin" / "uv"
    if "COMPAT_CLONE_UV" not in environ and local_uv.exists():
        environ["COMPAT_CLONE_UV"] = str(local_uv)
    environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{environ.get('PATH', '')}"
    return environ


def builds_in(host: str, what: str) -> List[Any]:
    """`pytestmark` of a module whose tests build real environments: `slow`, and run outside the matrix and in `host` only."""
    return [
        pytest.mark.slow,
        pytest.mark.skipif(
            os.environ.get("COMPAT_CLONE_ENV") not in (None, host),
            reason=f"builds {what}: runs outside the matrix and in {host} only",
        ),
    ]


def one_env_table(**env: Any) -> Dict[str, Any]:
    entry = {"name": "a", "packages": ["keras==3.15.1"]}
    entry.update(env)
    return {"defaults": {"packages": ["pytest"], "env": {"X": "1"}}, "env": [entry]}


#: A table of three enabled environments (a, b, c) and one wide-only (extra); nothing is installed.
CI_TABLE = """
[defaults]
install_compat_clone = false
packages = ["pytest"]

[[env]]
name = "a"
packages = ["keras==3.15.1"]
env = { KERAS_BACKEND = "jax" }
expect = { family = "keras3", version = "3.15", backend = "jax" }

[[env]]
name = "b"
packages = ["tensorflow-cpu==2.15.1"]
expect = { family = "tf_keras", version = "2.15", backend = "tensorflow" }

[[env]]
name = "c"
packages = ["keras==3.0.0"]

[[env]]
name = "extra"
enabled = false
tags = ["wide"]
packages = ["keras==3.1.1"]
"""


def ci_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project folder holding `CI_TABLE` as its matrix.toml, made the working folder."""
    (tmp_path / "matrix.toml").write_text(CI_TABLE, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def standin(root: Path, env: Any) -> None:
    """A stand-in environment for `env` under `root`: this interpreter behind a fresh stamp."""
    env_dir = root / env.name
    (env_dir / "bin").mkdir(parents=True)
    (env_dir / "bin" / "python").symlink_to(sys.executable)
    # The stamp as the child process computes it: with `clean_environ()`'s variables
    # (no COMPAT_CLONE_PIP_ARGS / COMPAT_CLONE_WHEEL of an enclosing `make test`).
    saved = {k: os.environ.pop(k) for k in list(os.environ) if k.startswith("COMPAT_CLONE_")}
    try:
        stamp = _matrix.env_stamp(env)
    finally:
        os.environ.update(saved)
    (env_dir / ".compat-clone-stamp").write_text(stamp + "\n")


def matrix_in(project: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """`python -m compat_clone matrix ARGV` run in `project`, with `clean_environ()`, its output captured."""
    return subprocess.run(
        [sys.executable, "-m", "compat_clone", "matrix", *argv],
        cwd=project,
        env=clean_environ(),
        capture_output=True,
        text=True,
        timeout=300,
    )
