"""The warm worker of one environment: imports its Keras once, then forks a child per conversion step.

    python -m compat_clone.tools.convert._forkserver

Started by `compat_clone.tools.convert._warm` in an environment's own
interpreter, with that environment's variables. It reads one request per
line on stdin, JSON: ``{"argv": [...], "cwd": DIR, "env": {...}, "out": FILE, "err": FILE}``.
At the first request it imports what that step imports (the family's Keras
and the conversion library: `_worker.preload`), nothing that starts a thread
(TensorFlow, JAX and PyTorch start theirs at the first computation, never at
import). Each request is run by a forked child: its variables set to ``env``
(the server's own differ at most in those that change at every call:
`_warm`), the current folder to ``cwd`` (also ``sys.path[0]``, as ``python -m`` has it), stdout and stderr
written to the two files, ``_worker.main(argv)``'s status as its exit
status. The child's state dies with it: the next step starts from the
imports alone, as a fresh interpreter would, less their seconds.
The answer is one line on stdout: ``{"rc": N, "cpu": S}`` (N < 0: killed by
signal -N, as `subprocess` says it; S: the CPU seconds of the step's child
and of the server since its last answer, the imports at the first). End of
stdin ends the server, as do `IDLE_SECONDS` without a request.

Python 3.7-compatible: the standalone Keras 2 environments run 3.7.
"""

from __future__ import annotations

import json
import os
import resource
import select
import sys
import traceback
from typing import Any, Dict

__all__ = ["IDLE_SECONDS"]

#: a server with no request for this long ends (the client asks one request at a time, and reads its answer)
IDLE_SECONDS = 30.0


def _exit_status(status: int) -> int:
    if os.WIFSIGNALED(status):
        return -os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


def _child(request: Dict[str, Any]) -> None:
    """Runs one step in this (forked) process and leaves with its status; never returns."""
    rc = 1
    try:
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        for fd, path in ((1, request["out"]), (2, request["err"])):
            handle = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.dup2(handle, fd)
            os.close(handle)
        os.environ.clear()  # the step's own variables (the server's differ at most in `_warm._PER_STEP`'s)
        os.environ.update(request["env"])
        os.chdir(request["cwd"])
        sys.path[0] = request["cwd"]
        from compat_clone.tools.convert import _worker

        sys.argv = [_worker.__file__, *request["argv"]]
        rc = _worker.main(request["argv"])
    except SystemExit as e:  # argparse's refusal of a command line
        rc = e.code if isinstance(e.code, int) else 1
    except BaseException:  # a crash: its traceback, as the interpreter would print it
        traceback.print_exc()
        rc = 1
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(rc)


def main() -> int:
    """Serves requests until stdin ends."""
    answers = os.fdopen(os.dup(1), "w")  # the protocol's channel; fd 1 itself goes to stderr
    os.dup2(2, 1)
    preloaded = False
    spent = 0.0  # this server's own CPU seconds already counted in an answer
    while True:
        if not select.select([sys.stdin], [], [], IDLE_SECONDS)[0]:
            break  # idle: its memory back to the machine; the client starts another when it needs one
        line = sys.stdin.readline()
        if not line:
            break
        if not line.strip():
            continue
        request = json.loads(line)
        if not preloaded:
            preloaded = True
            try:
                from compat_clone.tools.convert import _worker

                _worker.preload(request["argv"])
            except Exception:  # the step itself meets the same failure, and says it in its own terms
                pass
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            _child(request)
        _, status, child = os.wait4(pid, 0)
        own = resource.getrusage(resource.RUSAGE_SELF)
        cpu = child.ru_utime + child.ru_stime + own.ru_utime + own.ru_stime - spent
        spent = own.ru_utime + own.ru_stime
        answers.write(json.dumps({"rc": _exit_status(status), "cpu": round(cpu, 3)}) + "\n")
        answers.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
