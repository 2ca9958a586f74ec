"""tests/convert/source_cache.py: an entry of the old releases' source files is read only for the key it was written for.

A stale entry (the writer script, a module it imports, its arguments or the
writer environment changed) is written again, never read; an interrupted
write is not an entry; two processes asking at once write it once. The
writer here is a small script run by this interpreter, standing in for an old
release's environment; the real writers' imports are checked by name.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Dict, List

import pytest

from tests.convert import source_cache

TESTS = Path(__file__).resolve().parent
# Framework-free: one matrix environment per Python version runs them (tests/conftest.py).
pytestmark = pytest.mark.tooling


def _standin_env(root: Path) -> Path:
    """An 'environment' whose interpreter is this one (it imports compat_clone, as a matrix environment does)."""
    (root / "bin").mkdir(parents=True)
    python = root / "bin" / "python"
    python.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    python.chmod(0o755)
    return root


def _writer(folder: Path) -> Path:
    """A writer script that imports a sibling module both ways the real ones do."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "helper.py").write_text("VALUE = 1\n")
    (folder / "other.py").write_text("from tests import helper\n")
    script = folder / "writer.py"
    script.write_text("import sys, json\nfrom tests import other\nimport helper\nprint(json.dumps({'args': sys.argv[1:]}))\n")
    return script


class _Writes:
    """`write` for `cached`: counts its calls, leaves a file and returns a report naming it."""

    def __init__(self, fail: bool = False, delay: float = 0.0) -> None:
        self.calls = 0
        self.fail = fail
        self.delay = delay

    def __call__(self, out: Path) -> Dict[str, Any]:
        self.calls += 1
        time.sleep(self.delay)
        (out / "model.h5").write_text(f"written {self.calls}")
        if self.fail:
            raise RuntimeError("the writer crashed")
        return {"files": [str(out / "model.h5")], "call": self.calls}


def _key(script: Path, env: Path, folder: Path, args: List[str], spec: Dict[str, Any]) -> Dict[str, Any]:
    return source_cache.writer_key(script, args, env, spec, {"PATH": "/usr/bin:/bin"}, folder)


def test_real_writers_key_on_the_modules_they_import() -> None:
    names = lambda script: [p.name for p in source_cache.script_files(TESTS / script)]  # noqa: E731
    assert names("convert_zoo_sources.py") == ["convert_zoo.py", "convert_zoo_sources.py"]
    assert names("convert_sources.py") == ["convert_custom.py", "convert_sources.py"]
    assert names("convert_field_sources.py") == ["convert_field_layers.py", "convert_field_sources.py"]


def test_a_fresh_entry_is_read_and_a_stale_one_written_again(tmp_path: Path) -> None:
    script = _writer(tmp_path / "tests")
    env = _standin_env(tmp_path / "env")
    folder = tmp_path / ".sources" / "kind" / "env" / "h5"
    spec = {"name": "env", "packages": ("keras==2.2.4",), "env": (("TF_CPP_MIN_LOG_LEVEL", "2"),)}  # a table entry
    key = _key(script, env, folder, ["h5"], spec)
    assert sorted(key["files"]) == ["helper.py", "other.py", "writer.py"]
    write = _Writes()
    first = source_cache.cached(folder, key, write)
    assert source_cache.cached(folder, _key(script, env, folder, ["h5"], spec), write) == first
    assert write.calls == 1
    # Each of these makes the entry stale: it is written again, and its old files are gone.
    changes = [
        lambda: (script.parent / "helper.py").write_text("VALUE = 2\n"),  # a module imported by name
        lambda: (script.parent / "other.py").write_text("from tests import helper  # changed\n"),
        lambda: script.write_text(script.read_text() + "# changed\n"),
    ]
    for n, change in enumerate(changes, start=2):
        change()
        report = source_cache.cached(folder, _key(script, env, folder, ["h5"], spec), write)
        assert write.calls == n and report["call"] == n
        assert (folder / "model.h5").read_text() == f"written {n}"
    for args, other in ((["h5", "keras"], spec), (["h5"], {**spec, "packages": ("keras==2.2.5",)})):
        source_cache.cached(folder, _key(script, env, folder, args, other), write)
    assert write.calls == len(changes) + 3
    (folder / "unrelated.txt").write_text("left by a stale entry")
    source_cache.cached(folder, key, write)  # the first key again: stale by now too
    assert not (folder / "unrelated.txt").exists()


def test_an_interrupted_write_is_no_entry(tmp_path: Path) -> None:
    script = _writer(tmp_path / "tests")
    env = _standin_env(tmp_path / "env")
    folder = tmp_path / "entry"
    key = _key(script, env, folder, ["h5"], {})
    with pytest.raises(RuntimeError, match="the writer crashed"):
        source_cache.cached(folder, key, _Writes(fail=True))
    assert (folder / "model.h5").exists() and not (folder / source_cache.KEY_FILE).exists()
    write = _Writes()
    assert source_cache.cached(folder, key, write)["call"] == 1 and write.calls == 1
    # A key file that does not parse (a write cut short by a full disk) is no entry either.
    (folder / source_cache.KEY_FILE).write_text('{"script": "writ')
    source_cache.cached(folder, key, write)
    assert write.calls == 2 and json.loads((folder / source_cache.KEY_FILE).read_text()) == key


def test_two_processes_asking_at_once_write_it_once(tmp_path: Path) -> None:
    folder = tmp_path / "entry"
    key = {"k": 1}
    code = (
        "import sys, time; sys.path.insert(0, sys.argv[1]); from tests.convert import source_cache; from pathlib import Path\n"
        "def write(out):\n    time.sleep(1.5); (out / 'f').write_text('x'); return {'pid': __import__('os').getpid()}\n"
        "print(source_cache.cached(Path(sys.argv[2]), {'k': 1}, write)['pid'])"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", code, str(TESTS.parents[1]), str(folder)], stdout=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    pids = {p.communicate(timeout=60)[0].strip() for p in procs}
    assert len(pids) == 1 and all(p.returncode == 0 for p in procs), pids
    # Threads of one process each take the lock too (one open file each).
    write = _Writes(delay=0.5)
    other = tmp_path / "other"
    threads = [threading.Thread(target=source_cache.cached, args=(other, key, write)) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert write.calls == 1


def test_entries_live_outside_the_checkout_where_the_user_caches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A fresh clone reads what an earlier clone wrote: the root is the user's cache folder, not the checkout."""
    fallback = tmp_path / "matrix" / ".sources"
    monkeypatch.delenv("COMPAT_CLONE_TEST_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert source_cache.root(fallback) == (tmp_path / "xdg" / "compat-clone" / "sources").resolve()
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert source_cache.root(fallback) == (tmp_path / "home" / ".cache" / "compat-clone" / "sources").resolve()
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/ignored")  # the XDG spec: an absolute path or none
    assert source_cache.root(fallback) == (tmp_path / "home" / ".cache" / "compat-clone" / "sources").resolve()
    monkeypatch.setenv("COMPAT_CLONE_TEST_CACHE", str(tmp_path / "chosen"))
    assert source_cache.root(fallback) == (tmp_path / "chosen" / "sources").resolve()
    # A root that cannot be made (a file stands where its folder would be): the matrix folder's.
    (tmp_path / "blocked").write_text("a file")
    monkeypatch.setenv("COMPAT_CLONE_TEST_CACHE", str(tmp_path / "blocked"))
    assert source_cache.root(fallback) == fallback.resolve() and fallback.is_dir()
