"""The seam rules of the structure check: what crosses from one module, or product, to another.

Part of `dev/structure_check.py`, whose docstring states every rule (these
are rules 5-7) and which holds the KNOWN list. This module reads the parsed
tree of `structure_source` and imports nothing of the package it reads:

- `library_imports_tools`: the library imports nothing from the tools;
- `private_imports`: no module imports another module's ``_name``;
- `family_compares`: only ``families/`` compares a family name.
"""

from __future__ import annotations

import ast
from typing import Dict, Iterator, List, Optional, Set, Tuple

from structure_source import MATRIX, PACKAGE, Module, Violation, imports_of, resolve

FAMILY_NAMES = ("keras3", "tf_keras", "keras2")
FAMILY_CONSTANTS = ("KERAS3", "TF_KERAS", "KERAS2")
# A name or attribute so called holds a *package* name, and "tf_keras" is a
# package as well as a family: `package == "tf_keras"` is no family compare.
PACKAGE_OPERANDS = ("package", "root")


def tools_product(name: str, package: str) -> Optional[str]:
    """The tools product module `name` belongs to (``<package>.tools`` or the matrix), or None for the library."""
    for tools in (f"{package}.tools", MATRIX):
        if name == tools or name.startswith(tools + "."):
            return tools
    return None


def in_tools(name: str, package: str) -> bool:
    """Whether module `name` is a tool: under ``<package>.tools`` or in the matrix (``compat_clone_matrix``)."""
    return tools_product(name, package) is not None


def library_imports_tools(modules: Dict[str, Module], package: str = PACKAGE) -> List[Violation]:
    """Rule 5: a library module importing from ``<package>.tools`` or from the matrix.

    The library is every module of `package` outside ``tools/``, less ``__main__`` (the
    ``python -m`` door to the tools' command line, counted as a tool) and
    the package ``__init__`` (rule 4 reports that one).
    """
    found = []
    known = set(modules)
    for m in modules.values():
        if in_tools(m.name, package) or m.name in (package, f"{package}.__main__"):
            continue
        for edge in imports_of(m, known):
            if in_tools(edge.target, package):
                found.append(
                    Violation(
                        f"library-imports-tools {m.relpath}:{edge.target}",
                        f"{m.relpath}:{edge.line}",
                        f"a library module imports {edge.target} (the library imports nothing from "
                        f"{tools_product(edge.target, package)})",
                    )
                )
    return found


def _top_level(body: List[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements a module runs at import: its body, and the bodies of its top-level if / try / with."""
    for stmt in body:
        yield stmt
        blocks: List[List[ast.stmt]] = []
        if isinstance(stmt, ast.If):
            blocks = [stmt.body, stmt.orelse]
        elif isinstance(stmt, ast.With):
            blocks = [stmt.body]
        elif isinstance(stmt, ast.Try):
            blocks = [stmt.body, stmt.orelse, stmt.finalbody, *(h.body for h in stmt.handlers)]
        for block in blocks:
            yield from _top_level(block)


def _reexports(modules: Dict[str, Module]) -> Dict[str, Dict[str, Tuple[str, str]]]:
    """Per module, the names its top level binds by ``from X import name``: bound name -> (X, name in X)."""
    table: Dict[str, Dict[str, Tuple[str, str]]] = {}
    for m in modules.values():
        bound = table.setdefault(m.name, {})
        for stmt in _top_level(m.tree.body):
            if isinstance(stmt, ast.ImportFrom):
                base = resolve(m, stmt.level, stmt.module)
                bound.update((alias.asname or alias.name, (base, alias.name)) for alias in stmt.names)
    return table


def _is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _owner(name: str, where: str, reexports: Dict[str, Dict[str, Tuple[str, str]]]) -> Tuple[str, str]:
    """(the module that binds private `name` itself, the name there), following `where`'s re-exports in the package.

    A re-export stops where it leaves the package, names a module, or binds a
    public name under a private alias (``from .y import f as _f``: ``_f`` is
    then the re-exporting module's own private name).
    """
    seen: Set[str] = set()
    while where not in seen:
        seen.add(where)
        origin = reexports.get(where, {}).get(name)
        if origin is None or origin[0] not in reexports or f"{origin[0]}.{origin[1]}" in reexports or not _is_private(origin[1]):
            break
        where, name = origin
    return where, name


def private_imports(modules: Dict[str, Module]) -> List[Violation]:
    """Rule 6: a ``from X import _name`` whose ``_name`` another module of the package binds.

    Anywhere in a module (top level, ``TYPE_CHECKING``, inside a function).
    ``_name`` is private (one leading underscore, not a dunder) and names no
    module. Its owner is found by following re-exports to the module that
    binds it itself; a module importing its own name back is not reported.
    One violation per importing module and name, at its first import.
    """
    reexports = _reexports(modules)
    found: Dict[str, Violation] = {}
    for m in modules.values():
        statements = sorted((n for n in ast.walk(m.tree) if isinstance(n, ast.ImportFrom)), key=lambda n: n.lineno)
        for node in statements:
            base = resolve(m, node.level, node.module)
            if base not in modules:
                continue
            for alias in node.names:
                if not _is_private(alias.name) or f"{base}.{alias.name}" in modules:
                    continue
                owner, original = _owner(alias.name, base, reexports)
                if owner == m.name:
                    continue
                via = "" if owner == base else f", through {base}"
                named = alias.name if original == alias.name else f"{alias.name} ({original} there)"
                key = f"private-name {m.relpath}:{alias.name}"
                found.setdefault(
                    key,
                    Violation(
                        key,
                        f"{m.relpath}:{node.lineno}",
                        f"imports {named}, private to {owner}{via} (import names from a module's __all__)",
                    ),
                )
    return list(found.values())


def _compares(node: ast.AST, scope: str = "") -> Iterator[Tuple[str, ast.Compare]]:
    """Every compare below `node`, in source order, with its enclosing function or class (dotted; "" at top level)."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.Compare):
            yield scope, child
        inner = scope
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            inner = f"{scope}.{child.name}" if scope else child.name
        yield from _compares(child, inner)


def _family_value(node: ast.expr) -> bool:
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str) and node.value in FAMILY_NAMES
    name: Optional[str] = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
    return name in FAMILY_CONSTANTS


def _family_operand(node: ast.expr) -> bool:
    """A family name, or a tuple / list / set of family names only (a package tuple holds "keras" or "tensorflow")."""
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return bool(node.elts) and all(_family_value(e) for e in node.elts)
    return _family_value(node)


def _names_package(node: ast.expr) -> bool:
    name: Optional[str] = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
    return name in PACKAGE_OPERANDS


def is_family_compare(node: ast.Compare) -> bool:
    """One of the compare's pairs has a family operand and, on its other side, no package name."""
    operands = [node.left, *node.comparators]
    return any(
        (_family_operand(a) and not _names_package(b)) or (_family_operand(b) and not _names_package(a))
        for a, b in zip(operands, operands[1:])
    )


def family_compares(modules: Dict[str, Module], package: str = PACKAGE) -> List[Violation]:
    """Rule 7: a family-name compare in a module outside ``<package>/families/``.

    Keyed by module, enclosing function and the compare's text (a second
    identical compare in the same function gets ``#2``), so that a line move
    keeps the key.
    """
    found = []
    families = f"{package}.families"
    for m in modules.values():
        if m.name == families or m.name.startswith(families + "."):
            continue
        seen: Dict[str, int] = {}
        for scope, node in _compares(m.tree):
            if not is_family_compare(node):
                continue
            text = ast.unparse(node)
            key = f"family-compare {m.relpath}:{scope or '<module>'}: {text}"
            seen[key] = seen.get(key, 0) + 1
            if seen[key] > 1:
                key += f" #{seen[key]}"
            found.append(
                Violation(
                    key, f"{m.relpath}:{node.lineno}", f"compares a family name: {text} (only {families} compares family names)"
                )
            )
    return found
