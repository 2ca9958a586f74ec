"""The warm conversion workers (`compat_clone.tools.convert._warm`): a step answers as in a fresh interpreter.

Each step of `compat-clone convert` runs in an environment's interpreter; a
process that converts several files keeps that interpreter's Keras imported
and forks a child per step. What a step answers must not depend on it: the
same exit status, stdout and stderr as a fresh interpreter's, the current
folder of the caller at that step, and nothing left from an earlier step.
The steps here are refused before any Keras runs (a ``--model`` that is not a
function, imported from the current folder), so they run in any environment.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path
from typing import List, Tuple

import pytest

from compat_clone.tools.convert import _warm

pytestmark = pytest.mark.tooling

PROBE = """\
import builtins, os
seen = getattr(builtins, "_compat_clone_probe", None)  # set by an earlier import in the same process
builtins._compat_clone_probe = os.getpid()
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "imports.txt"), "a") as f:
    f.write(f"{os.getpid()} {seen}\\n")
build = 3
"""


def _step(folder: Path) -> List[str]:
    return ["describe", "--family", "tf_keras", "--model", "m.h5", "--out", "d.npz", "--build", "probe_model:build"]


def _run(folder: Path, monkeypatch: pytest.MonkeyPatch, warm: bool) -> Tuple[int, str, str]:
    """(exit status, stdout, the last line of stderr): a fresh ``python -m`` also warns on stderr that runpy found
    the worker imported by its package, which the command line never shows (it prints a refusal's last line)."""
    monkeypatch.chdir(folder)
    monkeypatch.setenv("COMPAT_CLONE_WARM_WORKERS", "1" if warm else "0")
    rc, out, err = _warm.run_step(sys.executable, dict(os.environ), _step(folder))
    return rc, out, ([line for line in err.splitlines() if line.strip()] or [""])[-1]


@pytest.fixture
def folders(tmp_path: Path) -> List[Path]:
    made = []
    for name in ("a", "b"):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "probe_model.py").write_text(PROBE)
        made.append(folder)
    return made


@pytest.mark.skipif(not _warm._enabled(), reason="no warm workers here (Windows, macOS): every step runs fresh")
def test_a_warm_step_answers_what_a_fresh_interpreter_answers(folders: List[Path], monkeypatch: pytest.MonkeyPatch) -> None:
    fresh = _run(folders[0], monkeypatch, warm=False)
    assert fresh[0] == 2 and "SourceModelError" in fresh[2] and "is a int, not a function" in fresh[2], fresh
    warm = [_run(folder, monkeypatch, warm=True) for folder in (folders[0], folders[1], folders[0])]
    assert all(answer == fresh for answer in warm), (fresh, warm)
    # each step imported the caller's folder's module, in a process of its own, which saw no earlier import
    lines = [line.split() for folder in folders for line in (folder / "imports.txt").read_text().splitlines()]
    assert len(lines) == 4 and all(seen == "None" for _, seen in lines), lines
    assert len({pid for pid, _ in lines}) == 4, lines


@pytest.mark.skipif(not _warm._enabled(), reason="no warm workers here (Windows, macOS): every step runs fresh")
def test_a_server_that_ended_is_replaced(folders: List[Path], monkeypatch: pytest.MonkeyPatch) -> None:
    first = _run(folders[0], monkeypatch, warm=True)
    (server,) = [proc for key, proc in _warm._servers.items() if key[0] == sys.executable]
    os.kill(server.pid, signal.SIGKILL)
    server.wait()
    again = _run(folders[0], monkeypatch, warm=True)
    assert again == first and first[0] == 2, (first, again)
    (replaced,) = [proc for key, proc in _warm._servers.items() if key[0] == sys.executable]
    assert replaced.pid != server.pid and replaced.poll() is None
    before = _warm.cpu_seconds()
    _run(folders[1], monkeypatch, warm=True)
    assert _warm.cpu_seconds() > before  # the step's seconds are counted where the caller can see them
