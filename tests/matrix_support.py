"""Helpers shared by the matrix test modules (not a test module itself)."""

from __future__ import annotations

import os
import shutil
from typing import Any, Dict

__all__ = ["clean_environ", "one_env_table"]


def clean_environ(**extra: str) -> Dict[str, str]:
    """This process's variables without the matrix's own (these tests may run inside a matrix env).

    uv is `false`: stand-in environments are fresh, nothing is built (and no
    uv is looked for or installed); a stale stamp fails the run loudly.
    """
    environ = {k: v for k, v in os.environ.items() if not k.startswith("COMPAT_CLONE_")}
    environ["COMPAT_CLONE_UV"] = shutil.which("false") or "false"
    environ.update(extra)
    return environ


def one_env_table(**env: Any) -> Dict[str, Any]:
    entry = {"name": "a", "packages": ["keras==3.15.1"]}
    entry.update(env)
    return {"defaults": {"packages": ["pytest"], "env": {"X": "1"}}, "env": [entry]}
