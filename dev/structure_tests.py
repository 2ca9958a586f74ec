"""The test-seam rule of the structure check: tests and bench reach compat_clone's privates through one door.

Part of `dev/structure_check.py`, whose docstring states every rule (this is
rule 9) and which holds the KNOWN list. The door is
``tests/support/internals.py``, the documented test seam; anywhere else
under ``tests/`` (its subfolders included, ``migrate_fixtures`` and the
sample projects aside) and ``bench/``, each of these is a violation:

- ``private-import``: importing a ``_name`` from a package module;
- ``private-module``: importing a package module whose dotted path has a
  ``_`` part (``compat_clone._walk``, ``from compat_clone import _patch``);
- ``private-read``: reading ``alias._name`` where ``alias`` is a package
  module (bound by ``import`` or ``from ... import module``);
- ``private-setattr``: ``monkeypatch.setattr(alias, "_name", ...)`` on a
  package module, or ``setattr("compat_clone.x._name", ...)``.

Keys name the file and what it reached (not the line), once per file.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Set, Tuple, Union

from structure_source import PACKAGE, TEST_DATA, Module, Violation, parse

SEAM = "tests/support/internals.py"
SKIPPED = TEST_DATA  # not test code of this project: files the tests read as data (their own trees)

__all__ = ["SEAM", "load_test_side", "seam_reaches"]


def load_test_side(root: Path) -> Dict[str, Module]:
    """Every ``.py`` under ``root/tests`` and ``root/bench``, parsed, less the data trees in SKIPPED."""
    found: Dict[str, Module] = {}
    for folder in ("tests", "bench"):
        for path in sorted((root / folder).rglob("*.py")):
            relpath = path.relative_to(root).as_posix()
            if not relpath.startswith(SKIPPED):
                found[relpath] = parse(path, root)
    return found


def _is_private(part: str) -> bool:
    return part.startswith("_") and not part.startswith("__")


def _ours(name: str, package: Union[str, Tuple[str, ...]]) -> bool:
    packages = (package,) if isinstance(package, str) else package
    return any(name == p or name.startswith(p + ".") for p in packages)


def _private_path(name: str) -> bool:
    return any(_is_private(part) for part in name.split("."))


def _dotted(node: ast.expr) -> Optional[str]:
    """``a.b.c`` for a chain of attributes on a name, else None."""
    parts: List[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return ".".join([node.id, *reversed(parts)])


class _Reaches:
    """One file's reaches into the package's privates, each kept once (the first)."""

    def __init__(self, m: Module, modules: Set[str], package: Union[str, Tuple[str, ...]]) -> None:
        self.m, self.modules, self.package = m, modules, package
        self.aliases: Dict[str, str] = {}  # local name -> package module it is bound to
        self.found: Dict[str, Violation] = {}

    def add(self, kind: str, what: str, line: int, message: str) -> None:
        key = f"test-seam {self.m.relpath}: {kind} {what}"
        self.found.setdefault(
            key, Violation(key, f"{self.m.relpath}:{line}", f"{message} (tests and bench reach privates only through {SEAM})")
        )

    def imports(self) -> None:
        for node in ast.walk(self.m.tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if _ours(alias.name, self.package):
                        self._module(alias.name, node.lineno)
                        local = alias.asname or alias.name.split(".")[0]
                        self.aliases[local] = alias.name if alias.asname else alias.name.split(".")[0]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and _ours(node.module or "", self.package):
                self._from(node)

    def _module(self, name: str, line: int) -> None:
        if _private_path(name):
            self.add("private-module", name, line, f"imports the private module {name}")

    def _from(self, node: ast.ImportFrom) -> None:
        base = node.module or ""
        self._module(base, node.lineno)
        for alias in node.names:  # the names it binds are modules to read through, private or not
            if f"{base}.{alias.name}" in self.modules:
                self.aliases[alias.asname or alias.name] = f"{base}.{alias.name}"
        if _private_path(base):
            return  # reported once, as the module
        for alias in node.names:
            full = f"{base}.{alias.name}"
            if full in self.modules:
                self._module(full, node.lineno)
            elif _is_private(alias.name):
                self.add("private-import", full, node.lineno, f"imports {alias.name}, private to {base}")

    def module_of(self, node: ast.expr) -> Optional[str]:
        """The package module an expression names through this file's aliases, else None."""
        dotted = _dotted(node)
        if dotted is None:
            return None
        head, _, rest = dotted.partition(".")
        if head not in self.aliases:
            return None
        name = ".".join(p for p in (self.aliases[head], rest) if p)
        return name if name in self.modules else None

    def reads(self) -> None:
        for node in ast.walk(self.m.tree):
            if isinstance(node, ast.Attribute) and _is_private(node.attr):
                owner = self.module_of(node.value)
                if owner is not None and not _private_path(owner):
                    self.add("private-read", f"{owner}.{node.attr}", node.lineno, f"reads {node.attr}, private to {owner}")
            elif isinstance(node, ast.Call):
                self._setattr(node)

    def _setattr(self, node: ast.Call) -> None:
        if not (isinstance(node.func, ast.Attribute) and node.func.attr == "setattr" and node.args):
            return
        first = node.args[0]
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            if _ours(first.value, self.package) and _private_path(first.value):
                self.add("private-setattr", first.value, node.lineno, f"monkeypatches {first.value}")
            return
        second = node.args[1] if len(node.args) > 1 else None
        owner = self.module_of(first)
        if owner is not None and isinstance(second, ast.Constant) and isinstance(second.value, str) and _is_private(second.value):
            self.add("private-setattr", f"{owner}.{second.value}", node.lineno, f"monkeypatches {second.value} of {owner}")


def _walk_files(files: Dict[str, Module]) -> Iterator[Module]:
    for relpath, m in sorted(files.items()):
        if relpath != SEAM:
            yield m


def seam_reaches(
    files: Dict[str, Module], modules: Dict[str, Module], package: Union[str, Tuple[str, ...]] = PACKAGE
) -> List[Violation]:
    """Rule 9: a file under tests/ or bench/, other than the seam, reaching a private name of the package(s)."""
    found: List[Violation] = []
    for m in _walk_files(files):
        reaches = _Reaches(m, set(modules), package)
        reaches.imports()
        reaches.reads()
        found.extend(reaches.found.values())
    return found
