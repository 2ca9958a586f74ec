"""The order environments start in: the longest first, by what the same run took last time.

With ``--jobs N`` the matrix runs N environments at a time and starts the next
when one ends. Started in the table's order, the environments that take longest
(often the newest, at the table's end) start last, and the run ends with one of
them running alone while the other slots sit idle. Started longest first, the
slots finish close together.

What "longest" means comes from the previous run of the same project and command:
each environment's seconds are kept in the per-user cache
(``<user cache>/matrix/durations/<key>.json``, `compat_clone_matrix.paths`), so a
fresh clone of the project finds them. The key is the project's name (its
``pyproject.toml``, else its folder's name) and the command. Environments without
a record start first, in the table's order: nothing is known of them. The order
changes when an environment runs, never what it runs or what is reported (the
summary and the reports keep the table's order). A cache that cannot be read or
written only loses the order.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import Dict, List, Mapping, Sequence, TypeVar

from compat_clone_matrix.paths import user_cache_dir

__all__ = ["durations_file", "longest_first", "read_durations", "record_durations"]

T = TypeVar("T")


def _project_name(folder: Path) -> str:
    try:
        text = (folder / "pyproject.toml").read_text(encoding="utf-8")
    except OSError:
        return folder.name
    found = re.search(r'^\s*name\s*=\s*["\']([^"\']+)["\']', text, re.MULTILINE)
    return found.group(1) if found else folder.name


def durations_file(folder: Path, command: Sequence[str]) -> Path:
    """Where the environments' seconds of `command` run in the project at `folder` are kept."""
    key = hashlib.sha256(("\0".join([_project_name(folder), *command])).encode()).hexdigest()[:16]
    return user_cache_dir() / "matrix" / "durations" / f"{key}.json"


def read_durations(path: Path) -> Dict[str, float]:
    """The recorded seconds per environment name; empty when there is no readable record."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {str(k): float(v) for k, v in data.items() if isinstance(v, (int, float))}


def record_durations(path: Path, seconds: Mapping[str, float]) -> None:
    """Merges `seconds` into the record at `path` (written whole, then renamed into place)."""
    merged = {**read_durations(path), **{name: round(s, 1) for name, s in seconds.items()}}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(merged, indent=1, sort_keys=True), encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        pass  # only the next run's order is lost


def longest_first(items: Sequence[T], names: Sequence[str], durations: Mapping[str, float]) -> List[T]:
    """`items` reordered: those whose name has no record first (in their order), then the longest first.

    Example:

    >>> longest_first(["a", "b", "c", "d"], ["a", "b", "c", "d"], {"a": 10.0, "b": 90.0, "d": 30.0})
    ['c', 'b', 'd', 'a']
    """
    order = sorted(range(len(items)), key=lambda i: (names[i] in durations, -durations.get(names[i], 0.0), i))
    return [items[i] for i in order]
