"""The source tree as the structure check reads it: parsed modules and their import statements.

Part of `dev/structure_check.py` (which holds the rules and their list): this
module parses, names and resolves, and judges nothing. It imports nothing of
the package it reads.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Dict, List, NamedTuple, Optional, Set

PACKAGE = "compat_clone"
# The version matrix: a product of its own beside the library, in the same distribution.
MATRIX = "compat_clone_matrix"
# Under tests/, trees that the tests read as data (projects of their own), not test code.
TEST_DATA = (
    "tests/migrate/migrate_fixtures/",
    "tests/matrix/sample_project/",
    "tests/matrix/sample_tf_project/",
    "tests/matrix/sample_declared_project/",
)


class Violation(NamedTuple):
    key: str  # stable across line moves: what KNOWN lists
    where: str  # path:line
    message: str

    def __str__(self) -> str:
        return f"{self.where}: {self.message}"

    def tagged(self, tag: str) -> str:
        """The violation with `tag` before its message: ``path:line: [tag] what``."""
        return f"{self.where}: [{tag}] {self.message}"


class Import(NamedTuple):
    target: str  # the package module the statement names
    line: int


class Module(NamedTuple):
    name: str  # dotted: compat_clone_matrix.cli
    path: Path
    relpath: str  # compat_clone_matrix/cli.py
    tree: ast.Module
    lines: int


def parse(path: Path, root: Path) -> Module:
    """The module at ``path``, named by its path below ``root``."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    text = path.read_text(encoding="utf-8")
    relpath = path.relative_to(root).as_posix()
    return Module(".".join(parts), path, relpath, ast.parse(text, str(path)), len(text.splitlines()))


def load_modules(src: Path, package: str = PACKAGE) -> Dict[str, Module]:
    """Every module of ``src/<package>``, parsed, by dotted name."""
    modules = (parse(path, src) for path in sorted((src / package).rglob("*.py")))
    return {m.name: m for m in modules}


def load_tests(src: Path) -> Dict[str, Module]:
    """The test files beside ``src``: ``tests/**/*.py`` less the data trees in TEST_DATA, parsed; none without tests/."""
    root = src.parent
    paths = sorted((root / "tests").rglob("*.py"))
    modules = (parse(path, root) for path in paths if not path.relative_to(root).as_posix().startswith(TEST_DATA))
    return {m.name: m for m in modules}


def resolve(module: Module, level: int, name: Optional[str]) -> str:
    """The absolute module a relative ``from`` names."""
    if level == 0:
        return name or ""
    base = module.name.split(".")
    if module.path.name != "__init__.py":
        base.pop()  # a plain module's package
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join(base + ([name] if name else []))


def imports_of(module: Module, known: Set[str]) -> List[Import]:
    """The package modules ``module``'s import statements name, anywhere in it."""
    found: List[Import] = []
    for node in ast.walk(module.tree):
        if isinstance(node, ast.Import):
            found.extend(Import(alias.name, node.lineno) for alias in node.names if alias.name in known)
        elif isinstance(node, ast.ImportFrom):
            base = resolve(module, node.level, node.module)
            for alias in node.names:
                child = f"{base}.{alias.name}"
                if child in known:
                    found.append(Import(child, node.lineno))
            if base in known:
                found.append(Import(base, node.lineno))
    return sorted({i for i in found if i.target != module.name}, key=lambda i: (i.line, i.target))


def import_graph(modules: Dict[str, Module]) -> Dict[str, List[Import]]:
    known = set(modules)
    return {name: imports_of(m, known) for name, m in modules.items()}
