"""Rule 10 of the structure check: each module's ``__all__`` is what other modules use.

Part of `dev/structure_check.py`, whose docstring states every rule and which
holds the KNOWN list. It reads the parsed tree of `structure_source`:

- `unexported_imports`: a ``from X import name`` (any level, anywhere in the
  module) of a public name that another module of the packages binds must
  find ``name`` in ``X.__all__``, and ``X`` must declare one (a literal list
  or tuple of strings). A name that is itself a module is not a name of
  ``X``'s and is not checked; private names are rule 6's.
- `tools_reach_private_modules` (rule 11): the tools (``compat_clone.tools``,
  ``compat_clone_matrix``, ``__main__``) import no private module of the
  library (a module path with a ``_`` part outside the tools): they use the
  library's public names only.
"""

from __future__ import annotations

import ast
from typing import Dict, List, Optional, Set

from structure_seams import in_tools
from structure_source import PACKAGE, Module, Violation, imports_of, resolve

__all__ = ["declared_all", "tools_reach_private_modules", "unexported_imports"]


def declared_all(m: Module) -> Optional[Set[str]]:
    """The names of `m`'s top-level ``__all__``, or None where it declares none (or not as a literal)."""
    for stmt in m.tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            target, value = stmt.targets[0], stmt.value
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            target, value = stmt.target, stmt.value
        else:
            continue
        if isinstance(target, ast.Name) and target.id == "__all__":
            try:
                names = ast.literal_eval(value)
            except ValueError:
                return None
            return {n for n in names if isinstance(n, str)}
    return None


def unexported_imports(modules: Dict[str, Module]) -> List[Violation]:
    """Rule 10: public names imported from another module of the packages are in its ``__all__``."""
    alls = {name: declared_all(m) for name, m in modules.items()}
    found: Dict[str, Violation] = {}
    for m in modules.values():
        for node in ast.walk(m.tree):
            if not isinstance(node, ast.ImportFrom):
                continue
            base = resolve(m, node.level, node.module)
            if base not in modules or base == m.name:
                continue
            exported = alls[base]
            for alias in node.names:
                name = alias.name
                if name.startswith("_") or name == "*" or f"{base}.{name}" in modules:
                    continue
                if exported is not None and name in exported:
                    continue
                key = f"export {m.relpath}:{base}.{name}"
                why = "which declares no __all__" if exported is None else "whose __all__ leaves it out"
                found.setdefault(key, Violation(key, f"{m.relpath}:{node.lineno}", f"imports {name} from {base}, {why}"))
    return list(found.values())


def tools_reach_private_modules(modules: Dict[str, Module], package: str = PACKAGE) -> List[Violation]:
    """Rule 11: a tool module importing a private module of the library."""
    found: Dict[str, Violation] = {}
    known = set(modules)
    for m in modules.values():
        if not (in_tools(m.name, package) or m.name == f"{package}.__main__"):
            continue
        for edge in imports_of(m, known):
            if in_tools(edge.target, package) or not any(p.startswith("_") for p in edge.target.split(".")):
                continue
            key = f"tools-private {m.relpath}:{edge.target}"
            found.setdefault(
                key,
                Violation(key, f"{m.relpath}:{edge.line}", f"a tool imports {edge.target}, a private module of the library"),
            )
    return list(found.values())
