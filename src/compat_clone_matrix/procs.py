"""Child processes of a matrix run: one process group each, killed together; parallelism."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import IO, List, Mapping, Optional, Sequence, Set

__all__ = ["cores", "default_jobs", "Procs", "workers_share"]


_GB = 1024**3


# --------------------------------------------------------------------------- jobs


def cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - macOS / Windows
        return os.cpu_count() or 1


def workers_share(jobs: int, envs: int) -> int:
    """The xdist workers ``pytest -n auto`` starts in each environment: the cores shared among those run at once.

    Each of `jobs` environments at a time (at most `envs`) gets an equal share, at least one: two environments
    with two workers each on two cores pay every worker's start (its framework imported, the suite collected)
    for no more cores, and contend for them.

    Args:
        jobs: environments run at once (``--jobs``).
        envs: environments in the run.

    Returns:
        The share, at least 1.
    """
    return max(1, cores() // max(1, min(jobs, envs)))


def default_jobs() -> int:
    """Parallel environments: one per core, at most one per 4 GB of memory.

    A TensorFlow test process with xdist workers peaks around 2-3 GB; 4 GB per
    environment leaves room for the build step's unpacking as well.
    """
    try:
        mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # pragma: no cover
        mem = 8 * _GB
    return max(1, min(cores(), mem // (4 * _GB)))


# --------------------------------------------------------------------------- running


class Procs:
    """Process groups of running children, so Ctrl-C or a timeout ends them all."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._procs: Set[subprocess.Popen[bytes]] = set()

    def call(
        self,
        cmd: Sequence[str],
        *,
        log: IO[str],
        env: Optional[Mapping[str, str]] = None,
        cwd: Optional[Path] = None,
        timeout: Optional[float] = None,
        cpu: Optional[List[float]] = None,
    ) -> int:
        """Runs `cmd` in its own process group, output to `log`; returns its exit code.

        The CPU seconds it and its reaped descendants used (xdist workers
        included) are appended to `cpu` where the platform reports them.
        """
        log.write(f"$ {' '.join(cmd)}\n")
        log.flush()
        proc = subprocess.Popen(
            list(cmd),
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=dict(env) if env is not None else None,
            cwd=cwd,
            start_new_session=True,
        )
        with self._lock:
            self._procs.add(proc)
        try:
            return self._wait(proc, timeout, cpu)
        except subprocess.TimeoutExpired:
            self._kill(proc)
            log.write(f"\ncompat-clone matrix: timed out after {timeout:.0f}s; process group killed\n")
            return -signal.SIGKILL
        finally:
            with self._lock:
                self._procs.discard(proc)

    @staticmethod
    def _wait(proc: subprocess.Popen[bytes], timeout: Optional[float], cpu: Optional[List[float]]) -> int:
        wait4 = getattr(os, "wait4", None)
        if wait4 is None or cpu is None:  # pragma: no cover - Windows
            return proc.wait(timeout=timeout)
        deadline = None if timeout is None else time.monotonic() + timeout
        delay = 0.01
        while True:
            pid, status, usage = wait4(proc.pid, os.WNOHANG)
            if pid:
                proc.returncode = _exit_code(status)
                cpu.append(usage.ru_utime + usage.ru_stime)
                return proc.returncode
            if deadline is not None and time.monotonic() >= deadline:
                raise subprocess.TimeoutExpired(proc.args, timeout or 0)
            time.sleep(delay)
            delay = min(delay * 2, 0.25)

    @staticmethod
    def _kill(proc: subprocess.Popen[bytes]) -> None:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(proc.pid, sig)
            except (ProcessLookupError, PermissionError):
                return
            try:
                proc.wait(timeout=10)
                return
            except subprocess.TimeoutExpired:
                continue

    def kill_all(self) -> None:
        with self._lock:
            procs = list(self._procs)
        for proc in procs:
            self._kill(proc)


def _exit_code(status: int) -> int:
    """``os.waitstatus_to_exitcode`` (Python 3.9+): the exit code, or minus the signal that ended it."""
    if os.WIFSIGNALED(status):
        return -os.WTERMSIG(status)
    return os.WEXITSTATUS(status)
