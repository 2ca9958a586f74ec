"""Warm workers: each environment's interpreter started once per process, its Keras imported once.

A conversion runs its steps in the environments' own interpreters
(`compat_clone.tools.convert._worker`); importing TensorFlow or Keras there is
most of a small model's conversion (3-8 CPU s a step, against 1-2 for the
work). A process that converts several files (a script calling the command
line's `main` in a loop, a test suite) keeps one server per interpreter, for
the variables of its last step (other variables start another, and end the
first; `compat_clone.tools.convert._forkserver`), which imports the
step's Keras at its first request and forks a child per step: each step
starts from those imports alone, as a fresh interpreter would, and its
state dies with it. The result is the one `subprocess.run` gives: the exit
status, stdout and stderr.

Where a server cannot be used (no ``os.fork``: Windows; macOS, where a
process that loaded system frameworks may not fork safely; or
``COMPAT_CLONE_WARM_WORKERS=0``), or one ends unexpectedly, the step runs in a
fresh interpreter as before. A server ends after 30 seconds without a step
(`_forkserver.IDLE_SECONDS`), and with the process that started it (its
stdin closes), each waited for, so its CPU seconds count where the process's
children's do.
"""

from __future__ import annotations

import atexit
import json
import os
import subprocess
import sys
import tempfile
import threading
from typing import IO, Dict, List, Mapping, Optional, Sequence, Tuple, cast

__all__ = ["WORKER", "cpu_seconds", "run_step"]

WORKER = "compat_clone.tools.convert._worker"  # the module each step runs (`python -m WORKER STEP ...`)
_SERVER = "compat_clone.tools.convert._forkserver"
_SWITCH = "COMPAT_CLONE_WARM_WORKERS"

_lock = threading.Lock()
_cpu = [0.0]  # CPU seconds the servers answered for
_servers: Dict[Tuple[str, Tuple[Tuple[str, str], ...]], subprocess.Popen[str]] = {}


def _enabled() -> bool:
    # macOS: a process that loaded system frameworks may not fork safely (Python's multiprocessing spawns there)
    return hasattr(os, "fork") and sys.platform != "darwin" and os.environ.get(_SWITCH, "1") != "0"


#: variables that change at every call and that no import reads: a server serves steps that differ in them only
#: (each step's child runs with the step's own values); pytest names the running test in the first
_PER_STEP = ("PYTEST_CURRENT_TEST",)


def _server(python: str, environ: Mapping[str, str]) -> subprocess.Popen[str]:
    key = (python, tuple(sorted((k, v) for k, v in environ.items() if k not in _PER_STEP)))
    proc = _servers.get(key)
    if proc is None or proc.poll() is not None:
        for other in [k for k in _servers if k[0] == python]:  # one server per interpreter: the last variables'
            _stop(_servers.pop(other))
        proc = subprocess.Popen(
            [python, "-m", _SERVER],
            env=dict(environ),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        _servers[key] = proc
    return proc


def _read(path: str) -> str:
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def _served(python: str, environ: Mapping[str, str], argv: Sequence[str]) -> Optional[Tuple[int, str, str]]:
    """The step run by the interpreter's server; None where the server ended before it answered."""
    handles: List[Tuple[int, str]] = [tempfile.mkstemp(prefix="compat-clone-step.", suffix=name) for name in (".out", ".err")]
    for handle, _ in handles:
        os.close(handle)
    out, err = handles[0][1], handles[1][1]
    try:
        with _lock:
            proc = _server(python, environ)
            try:
                stdin, stdout = cast(IO[str], proc.stdin), cast(IO[str], proc.stdout)
                stdin.write(
                    json.dumps({"argv": list(argv), "cwd": os.getcwd(), "env": dict(environ), "out": out, "err": err}) + "\n"
                )
                stdin.flush()
                answer = stdout.readline()
            except OSError:
                answer = ""
            if not answer:  # it ended (killed, out of memory): the next step starts another
                _stop(proc)
                return None
        reply = json.loads(answer)
        _cpu[0] += float(reply.get("cpu", 0.0))
        return int(reply["rc"]), _read(out), _read(err)
    finally:
        for path in (out, err):
            if os.path.exists(path):
                os.unlink(path)


def run_step(python: str, environ: Mapping[str, str], argv: Sequence[str]) -> Tuple[int, str, str]:
    """Runs ``python -m WORKER <argv>`` with `environ`: (exit status, stdout, stderr), as `subprocess.run` gives them.

    Args:
        python: the environment's interpreter.
        environ: the variables the step runs with.
        argv: the step and its arguments (``["describe", ...]``), as `_worker.main` takes them.

    Returns:
        The step's exit status (negative: killed by that signal), its stdout and its stderr.
    """
    if _enabled():
        served = _served(python, environ, argv)
        if served is not None:
            return served
    proc = subprocess.run([python, "-m", WORKER, *argv], env=dict(environ), capture_output=True, text=True)
    return proc.returncode, proc.stdout, proc.stderr


def cpu_seconds() -> float:
    """CPU seconds the servers of this process spent on its steps so far, their imports included.

    A server's seconds reach the process's children's (``RUSAGE_CHILDREN``) only when it ends, with the
    process; a caller timing one step (the test suite's CPU report) adds the difference of this count.

    Returns:
        The seconds, summed over every step a server ran.
    """
    return _cpu[0]


def _stop(proc: subprocess.Popen[str]) -> None:
    for stream in (proc.stdin, proc.stdout):
        try:
            if stream is not None:
                stream.close()
        except OSError:
            pass
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@atexit.register
def _stop_all() -> None:
    """Ends every server (end of stdin) and waits for it."""
    with _lock:
        while _servers:
            _stop(_servers.popitem()[1])
