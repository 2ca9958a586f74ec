"""What a matrix run prints while commands run: the running environments with elapsed time.

On a terminal, one live line at the bottom, redrawn every second (cleared
before any other line is printed); elsewhere (CI logs, a file) a plain line
every `interval` seconds. Each running environment shows its elapsed time and,
when its log has one, pytest's last progress figure (``[ 45%]``).
"""

from __future__ import annotations

import re
import shutil
import threading
import time
from pathlib import Path
from typing import IO, Dict, Optional, Tuple

from compat_clone_matrix.summary import format_seconds

__all__ = ["Progress"]

_PERCENT_RE = re.compile(r"\[\s*(\d{1,3})%\]")
_TAIL_BYTES = 4096


def _last_percent(log: Optional[Path]) -> str:
    """pytest's last ``[ NN%]`` in the log's tail, or ``""``."""
    if log is None:
        return ""
    try:
        with open(log, "rb") as handle:
            handle.seek(0, 2)
            size = handle.tell()
            handle.seek(max(0, size - _TAIL_BYTES))
            tail = handle.read().decode("utf-8", errors="replace")
    except OSError:
        return ""
    found = _PERCENT_RE.findall(tail)
    return f" {found[-1]}%" if found else ""


class Progress:
    """Prints a run's lines and, while commands run, which are running and for how long.

    Args:
        stream: where to print (the run's stdout).
        live: redraw one line in place (a terminal) instead of printing plain lines.
        interval: seconds between plain lines; 0 turns the running-line off.
    """

    def __init__(self, stream: IO[str], *, live: bool, interval: float) -> None:
        self.stream = stream
        self.live = live and interval > 0
        self.interval = 1.0 if self.live else interval
        self._lock = threading.Lock()
        self._t0 = time.monotonic()
        self._running: Dict[str, Tuple[float, Optional[Path]]] = {}
        self._shown = False  # a live line is on screen
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None

    def say(self, name: str, text: str) -> None:
        """One event line: ``[  1m02s] keras-3.15-jax: running``."""
        with self._lock:
            self._clear()
            print(f"[{format_seconds(time.monotonic() - self._t0):>6}] {name}: {text}", file=self.stream, flush=True)
            self._draw()

    def begin(self, name: str, log: Optional[Path] = None) -> None:
        with self._lock:
            self._running[name] = (time.monotonic(), log)
            if self._thread is None and self.interval > 0:
                self._thread = threading.Thread(target=self._tick, name="compat-clone-progress", daemon=True)
                self._thread.start()

    def end(self, name: str) -> None:
        with self._lock:
            self._running.pop(name, None)
            self._clear()
            self._draw()

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
        with self._lock:
            self._clear()

    def line(self) -> str:
        """``running 2: keras-3.15-jax 1m02s 45%, tf_keras-2.21 40s`` (empty when nothing runs)."""
        now = time.monotonic()
        parts = [f"{name} {format_seconds(now - start)}{_last_percent(log)}" for name, (start, log) in self._running.items()]
        if not parts:
            return ""
        return f"[{format_seconds(now - self._t0):>6}] running {len(parts)}: {', '.join(parts)}"

    # -- drawing (lock held)

    def _clear(self) -> None:
        if self._shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self._shown = False

    def _draw(self) -> None:
        if not self.live:
            return
        text = self.line()
        if text:
            width = shutil.get_terminal_size((100, 20)).columns - 1
            self.stream.write(text[:width])
            self.stream.flush()
            self._shown = True

    def _tick(self) -> None:
        while not self._stop.wait(self.interval):
            with self._lock:
                if self.live:
                    self._clear()
                    self._draw()
                else:
                    text = self.line()
                    if text:
                        print(text, file=self.stream, flush=True)
