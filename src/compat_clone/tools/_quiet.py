"""The command line's stderr without the frameworks' C++ log lines.

TensorFlow 2.17+ writes absl/glog lines (``I0000 00:00:... port.cc:153] oneDNN
custom operations are on ...``, ``WARNING: All log messages before
absl::InitializeLog() ...``, a CUDA probe's ``E0000 ... failed call to cuInit``)
straight to file descriptor 2 from C++, before its own log level
(``TF_CPP_MIN_LOG_LEVEL``) is read, so no variable silences them all. The
commands that load a framework (`doctor`, `convert`) therefore run with fd 2
passed through a filter that drops those lines and forwards everything else,
in order. Only the command line's own process does this (and the processes it
starts, which inherit fd 2); `import compat_clone` in a user's process never
touches logging. ``COMPAT_CLONE_FRAMEWORK_LOGS=1`` keeps every line.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import threading
from typing import Iterator

__all__ = ["framework_logs_filtered", "is_framework_log_line"]

# glog / absl line prefix: severity letter, MMDD, time, thread id, file:line]
_LOG_LINE = re.compile(rb"^[IWE]\d{4} [\d:.]+\s+\d+ [\w./-]+:\d+\] ")
_ABSL_PREAMBLE = b"WARNING: All log messages before absl::InitializeLog() is called are written to STDERR"


def is_framework_log_line(line: bytes) -> bool:
    """True for a C++ info / warning / error log line of TensorFlow, XLA or absl (never a fatal one)."""
    return bool(_LOG_LINE.match(line)) or line.rstrip(b"\r\n") == _ABSL_PREAMBLE


def _pump(read_fd: int, write_fd: int) -> None:
    pending = b""
    while True:
        chunk = os.read(read_fd, 65536)
        if not chunk:
            break
        pending += chunk
        *lines, pending = pending.split(b"\n")
        out = b"".join(line + b"\n" for line in lines if not is_framework_log_line(line))
        if out:
            os.write(write_fd, out)
    if pending and not is_framework_log_line(pending):
        os.write(write_fd, pending)
    os.close(read_fd)


@contextlib.contextmanager
def framework_logs_filtered() -> Iterator[None]:
    """Within the block, lines the frameworks' C++ logging writes to fd 2 are dropped."""
    if os.environ.get("COMPAT_CLONE_FRAMEWORK_LOGS") == "1":
        yield
        return
    try:
        sys.stderr.flush()
        original = os.dup(2)
        read_fd, write_fd = os.pipe()
        os.dup2(write_fd, 2)
        os.close(write_fd)
    except (OSError, ValueError):  # no usable fd 2 (an embedded interpreter): leave it
        yield
        return
    pump = threading.Thread(target=_pump, args=(read_fd, original), name="compat-clone-stderr", daemon=True)
    pump.start()
    try:
        yield
    finally:
        with contextlib.suppress(OSError, ValueError):
            sys.stderr.flush()
        os.dup2(original, 2)  # the pipe's last writer in this process closes: the pump drains and ends
        pump.join(timeout=5)
        os.close(original)
