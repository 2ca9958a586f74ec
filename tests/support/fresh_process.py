"""Run a worker script in a fresh interpreter and read the JSON records it writes.

Some checks need a process of their own: TensorFlow's logical devices must be
configured before TensorFlow initializes, and JAX reads its forced host device
count at start. A worker script runs every such check once, writes one record
per check (`Recorder`) and the test asserts its record (`expect`).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import traceback
from typing import Any, Callable, Dict, List, Optional

import pytest

__all__ = [
    "ROOT",
    "TESTS",
    "WORKER_TIMEOUT",
    "Recorder",
    "expect",
    "free_ports",
    "once_per_run",
    "records",
    "run_script",
    "worker_path",
]

TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROOT = os.path.dirname(TESTS)
WORKER_TIMEOUT = 300


def worker_path(env: Dict[str, str]) -> str:
    """``PYTHONPATH`` for a worker: tests/ (for ``conftest``), the project root (for ``tests.*``), then `env`'s."""
    return os.pathsep.join([TESTS, ROOT, env.get("PYTHONPATH", "")])


def run_script(
    script: str, args: List[str], env: Dict[str, str], timeout: int = WORKER_TIMEOUT
) -> subprocess.CompletedProcess[str]:
    """`script` run with `args` in a fresh interpreter, this process's environment updated with `env`."""
    full_env = dict(os.environ)
    full_env.update(env)
    full_env.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    full_env["PYTHONPATH"] = worker_path(full_env)
    return subprocess.run(
        [sys.executable, os.path.abspath(script), *args],
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
    )


def once_per_run(tmp_path_factory: Any, name: str, produce: Callable[[], Any]) -> Any:
    """`produce()` once per test run, even when pytest-xdist spreads the tests.

    Under xdist every worker process has its own module fixtures; the workers
    of one run share the parent of their base temp folders (the xdist recipe
    for once-per-session fixtures), so the first worker to get the lock runs
    the (slow, multi-process) worker and the others read its file. `name`
    names the lock and the JSON file: one per worker mode.
    """
    if not os.environ.get("PYTEST_XDIST_WORKER") or os.name != "posix":
        return produce()
    import fcntl

    base = str(tmp_path_factory.getbasetemp().parent / name)
    with open(base + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.path.exists(base + ".json"):
            with open(base + ".json", encoding="utf-8") as fh:
                return json.load(fh)
        result = produce()
        with open(base + ".json", "w", encoding="utf-8") as fh:
            json.dump(result, fh)
        return result


def records(
    tmp_path_factory: Any, script: str, mode: str, env: Optional[Dict[str, str]] = None, extra: Optional[List[str]] = None
) -> Dict[str, Any]:
    """The records of ``script MODE OUT [extra]``, run once per test run (lock named ``placement_MODE``)."""
    return dict(once_per_run(tmp_path_factory, f"placement_{mode}", lambda: _run_worker(script, mode, env, extra)))


def _run_worker(script: str, mode: str, env: Optional[Dict[str, str]], extra: Optional[List[str]]) -> Dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "out.json")
        proc = run_script(script, [mode, out, *(extra or [])], env or {})
        if not os.path.exists(out):
            pytest.fail(f"worker {mode!r} wrote no results (rc={proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}")
        with open(out, encoding="utf-8") as fh:
            return dict(json.load(fh))


def expect(found: Dict[str, Any], key: str) -> Dict[str, Any]:
    """The record `key`, failing the test where it is missing or records an error."""
    if key not in found:
        pytest.fail(f"no record {key!r}; the worker recorded {sorted(found)}")
    rec = found[key]
    if rec.get("error"):
        pytest.fail(f"{key} failed in the worker:\n{rec['error']}")
    return dict(rec)


def free_ports(n: int) -> List[int]:
    """`n` TCP ports free on 127.0.0.1 just now."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


class Recorder:
    """A worker's records: each check's outcome (and what it returned) under its key."""

    def __init__(self) -> None:
        self.records: Dict[str, Any] = {}

    def run(self, key: str, fn: Callable[[], Optional[Dict[str, Any]]]) -> None:
        try:
            extra = fn() or {}
            self.records[key] = {"ok": True, **extra}
        except BaseException:  # recorded; the test reports it
            self.records[key] = {"ok": False, "error": traceback.format_exc()}

    def write(self, path: str) -> None:
        with open(path, "w", encoding="utf-8") as fh:
            json.dump(self.records, fh, indent=1, default=str)
