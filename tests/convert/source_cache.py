"""The Keras 2 source files of the cross-environment conversion tests, written once and kept outside the checkout.

An old release writes them in its own matrix environment (a *writer*:
tests/convert/convert_zoo_sources.py, convert_sources.py or convert_field_sources.py
run with that environment's interpreter) and the Keras 3 hosts read them.
Writing takes minutes in the TensorFlow 1.15 environments, so one entry is
written per writer and unit of work, and every host, xdist worker and later
run reads it. An entry is named by what it is made of (`writer_key`):

- the writer script and every module of `tests/` it imports (transitively),
  byte for byte;
- its arguments;
- the writer environment: its table entry, its interpreter, the
  distributions installed in it and the source of the compat_clone it
  imports (which writes the descriptions);
- the entry's own folder (reports name their files by absolute path).

A change to any of them is another key, and an entry whose recorded key is not
the one asked for is written again, never read (`cached`).

The entries live where `root` says: ``sources`` in the suite's cache
(tests/support/cache.py: ``~/.cache/compat-clone``, ``$COMPAT_CLONE_TEST_CACHE``
elsewhere), as uv keeps its wheels there: a fresh clone of the same
sources, or the next CI run on the same machine, reads what an earlier one
wrote (the entry's folder is then the same too, so its key is). Where that
folder cannot be made, under the matrix folder (``.matrix/.sources``). ``key.json`` is
written last, under a file lock: an interrupted write is not an entry, and two
processes asking at once write it once.

Standard library only, Python 3.7+: the writer environments (TensorFlow 1.15
on Python 3.7) import it too.
"""

from __future__ import annotations

import ast
import fcntl
import hashlib
import json
import resource
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Sequence

from tests.support.cache import cache_dir

__all__ = ["root", "script_files", "writer_key", "cached"]

KEY_FILE = "key.json"
REPORT_FILE = "report.json"
COST_FILE = "cost.json"  # what writing the entry took (wall and CPU seconds of the writer), for the record
# Prints where the interpreter's compat_clone lives and its Python: imports no framework.
_PROBE = "import os, sys, compat_clone; print(os.path.dirname(compat_clone.__file__)); print(sys.version)"


def root(fallback: Path) -> Path:
    """The folder the entries are kept in: ``sources`` in the suite's cache (tests/support/cache.py), else `fallback`.

    Args:
        fallback: the folder to use where the user's cache folder is not writable (the matrix's ``.sources``).

    Returns:
        An absolute folder that exists.
    """
    return cache_dir("sources", fallback)


def _imported_names(tree: ast.AST) -> List[str]:
    """Dotted names of the modules `tree` imports (``from tests import a`` gives ``tests.a``)."""
    names: List[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.append(node.module)
            names.extend(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def script_files(script: Path) -> List[Path]:
    """`script` and the modules of the suite it imports, directly or through each other, sorted.

    ``tests.convert.convert_zoo`` names ``tests/convert/convert_zoo.py`` (the
    project root is on the writer's path), and a bare ``convert_custom`` (a
    script that puts its own folder on ``sys.path``) ``tests/convert/convert_custom.py``.

    Args:
        script: a writer script under ``tests/``.

    Returns:
        The files whose bytes make up what the script writes (besides its environment).
    """
    folder = script.resolve().parent
    tests = next(p for p in (folder, *folder.parents) if p.name == "tests")
    seen: Dict[Path, None] = {}
    todo = [script.resolve()]
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen[path] = None
        for name in _imported_names(ast.parse(path.read_bytes(), filename=str(path))):
            parts = name.split(".")
            base = tests.parent if parts[0] == tests.name else folder
            candidate = base.joinpath(*parts[:-1], f"{parts[-1]}.py")
            if candidate.is_file():
                todo.append(candidate)
    return sorted(seen)


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _tree_digest(folder: Path) -> str:
    """One digest of every file under `folder` (names and bytes; compiled caches left out)."""
    h = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        h.update(str(path.relative_to(folder)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def _environment(env_dir: Path, environ: Mapping[str, str]) -> Dict[str, Any]:
    """What the writer environment at `env_dir` is: its Python, distributions and compat_clone source."""
    probe = subprocess.run(
        [str(env_dir / "bin" / "python"), "-c", _PROBE], env=dict(environ), capture_output=True, text=True, timeout=300
    )
    if probe.returncode != 0:
        raise RuntimeError(f"{env_dir / 'bin' / 'python'} cannot import compat_clone:\n{probe.stderr[-2000:]}")
    package, python = probe.stdout.splitlines()[:2]
    dists = sorted(p.name for p in env_dir.glob("lib/python*/site-packages/*.dist-info"))
    return {"python": python, "distributions": dists, "compat_clone": _tree_digest(Path(package))}


def writer_key(
    script: Path, args: Sequence[str], env_dir: Path, spec: Mapping[str, Any], environ: Mapping[str, str], folder: Path
) -> Dict[str, Any]:
    """The key of the entry `script ARGS`, run in the environment at `env_dir`, writes into `folder`.

    Args:
        script: the writer script.
        args: its arguments after the output folder and family.
        env_dir: the writer environment's folder (its ``bin/python`` runs the script).
        spec: the environment's table entry (its pins, variables and claim).
        environ: the process environment the script runs with.
        folder: the entry's folder.

    Returns:
        A JSON-able dict: equal keys mean the same files would be written.
    """
    root = script.resolve().parent
    files = {str(p.relative_to(root)): _digest(p.read_bytes()) for p in script_files(script)}
    key = {
        "script": script.name,
        "files": files,
        "args": list(args),
        "spec": dict(spec),
        "environment": _environment(env_dir, environ),
        "folder": str(folder.resolve()),
    }
    # As ``key.json`` reads back (a table entry's tuples become lists), so that equal means equal.
    normal: Dict[str, Any] = json.loads(json.dumps(key))
    return normal


def _entry_key(folder: Path) -> Any:
    try:
        return json.loads((folder / KEY_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _children_cpu() -> float:
    """CPU seconds of this process's finished children (the writer is one)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def cached(folder: Path, key: Dict[str, Any], write: Callable[[Path], Dict[str, Any]]) -> Dict[str, Any]:
    """The report of the entry at `folder` for `key`, written by ``write(folder)`` unless it is there.

    Under an exclusive lock on ``<folder>.lock``: an entry whose ``key.json``
    equals `key` is read; anything else at `folder` (another key: stale; no
    key: an interrupted write) is removed and `write` fills the folder afresh.
    Its report is kept as ``report.json``, what the write took as
    ``cost.json``, and the key written last.

    Args:
        folder: the entry's folder (its parent is created).
        key: from `writer_key`.
        write: fills the folder it is given and returns the report (JSON-able).

    Returns:
        The report `write` returned, now or when the entry was written.
    """
    folder.parent.mkdir(parents=True, exist_ok=True)
    with open(folder.with_name(folder.name + ".lock"), "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _entry_key(folder) == key and (folder / REPORT_FILE).is_file():
            report: Dict[str, Any] = json.loads((folder / REPORT_FILE).read_text(encoding="utf-8"))
            return report
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir()
        start, cpu = time.monotonic(), _children_cpu()
        report = write(folder)
        cost = {"wall_s": round(time.monotonic() - start, 1), "cpu_s": round(_children_cpu() - cpu, 1)}
        (folder / COST_FILE).write_text(json.dumps(cost), encoding="utf-8")
        (folder / REPORT_FILE).write_text(json.dumps(report), encoding="utf-8")
        (folder / KEY_FILE).write_text(json.dumps(key, indent=1, sort_keys=True), encoding="utf-8")
        return report
