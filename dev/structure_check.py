"""The structure check: the sizes of compat_clone's modules and functions, and its import graph.

Run by `make lint` and by tests/test_structure.py; reads the source with `ast`
and imports nothing of it. The rules:

1. no module of the package over 450 lines (its physical lines);
2. no function or method over 80 lines, counted from its ``def`` line to its
   last line with its docstring excluded (decorators are not counted; a
   nested function counts in its parent's lines and on its own);
3. no import cycle among the package's modules. The graph is static: an edge
   is an explicit import statement naming a package module, wherever it
   stands (module level, under ``if TYPE_CHECKING:``, inside a function as a
   lazy import). ``from a.b import c`` names ``a.b`` (it reads ``c`` from
   that package's namespace) and also ``a.b.c`` where that is a module, so a
   package ``__init__`` importing its children counts, and so does a child
   importing a sibling through its package (``from a.b import sibling``;
   write ``from a.b.sibling import name`` instead); the parent packages
   Python imports on the way (``a`` for ``import a.b``) do not. ``importlib.import_module`` calls are not
   import statements and are not seen;
4. ``compat_clone/__init__.py`` imports nothing from ``compat_clone.tools``:
   the library's face exports library names only.

Each violation is printed as ``path:line: what``; a cycle names its members
and every import inside it (each one a place the cycle could be cut).

This is a developer check, not part of the distribution: it lives in dev/
beside bench/, not in the package (a user never runs it) and not in tests/
(the suite runs in every matrix environment, Python 3.7 included, where
``ast`` has no end lines).

Usage: python dev/structure_check.py [--src DIR] [--strict]
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path
from typing import Dict, Iterator, List, NamedTuple, Optional, Sequence, Set, Tuple

PACKAGE = "compat_clone"
MAX_MODULE_LINES = 450
MAX_FUNCTION_LINES = 80
DEFAULT_SRC = Path(__file__).resolve().parent.parent / "src"

# Violations tolerated for a while, each with the branch that removes it, so
# lint stays green while a fix lands elsewhere. It is empty: keep it that
# way. An entry whose violation is gone fails the check, so the
# list cannot outlive its reason. Keys are the `key` of each Violation.
KNOWN: Dict[str, str] = {}


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
    name: str  # dotted: compat_clone.tools.matrix.cli
    path: Path
    relpath: str  # compat_clone/tools/matrix/cli.py
    tree: ast.Module
    lines: int


def load_modules(src: Path, package: str = PACKAGE) -> Dict[str, Module]:
    """Every module of ``src/<package>``, parsed, by dotted name."""
    modules: Dict[str, Module] = {}
    for path in sorted((src / package).rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        text = path.read_text(encoding="utf-8")
        relpath = path.relative_to(src).as_posix()
        modules[".".join(parts)] = Module(".".join(parts), path, relpath, ast.parse(text, str(path)), len(text.splitlines()))
    return modules


def module_sizes(modules: Dict[str, Module], limit: int = MAX_MODULE_LINES) -> List[Violation]:
    return [Violation(f"module {m.relpath}", f"{m.relpath}:1", f"module has {m.lines} lines (at most {limit})")
            for m in modules.values() if m.lines > limit]


def _functions(node: ast.AST, prefix: str = "") -> Iterator[Tuple[str, ast.AST]]:
    """Every function below ``node`` with its qualified name (Class.method, outer.inner)."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield prefix + child.name, child
            yield from _functions(child, f"{prefix}{child.name}.")
        elif isinstance(child, ast.ClassDef):
            yield from _functions(child, f"{prefix}{child.name}.")
        else:
            yield from _functions(child, prefix)


def function_lines(node: ast.AST) -> int:
    """Lines from the ``def`` to the function's last line, its docstring excluded."""
    assert isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    end = node.end_lineno or node.lineno
    lines = end - node.lineno + 1
    first = node.body[0]
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        lines -= (first.end_lineno or first.lineno) - first.lineno + 1
    return lines


def function_sizes(modules: Dict[str, Module], limit: int = MAX_FUNCTION_LINES) -> List[Violation]:
    found = []
    for m in modules.values():
        for name, node in _functions(m.tree):
            lines = function_lines(node)
            if lines > limit:
                line = getattr(node, "lineno")
                found.append(Violation(f"function {m.relpath}:{name}", f"{m.relpath}:{line}",
                                       f"function {name} has {lines} lines without its docstring (at most {limit})"))
    return found


def _resolve(module: Module, level: int, name: Optional[str]) -> str:
    """The absolute module a relative ``from`` names."""
    if level == 0:
        return name or ""
    base = module.name.split(".")
    if not module.path.name == "__init__.py":
        base.pop()  # a plain module's package
    if level > 1:
        base = base[:len(base) - (level - 1)]
    return ".".join(base + ([name] if name else []))


def imports_of(module: Module, known: Set[str]) -> List[Import]:
    """The package modules ``module``'s import statements name, anywhere in it."""
    found: List[Import] = []
    for node in ast.walk(module.tree):
        if isinstance(node, ast.Import):
            found.extend(Import(alias.name, node.lineno) for alias in node.names if alias.name in known)
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(module, node.level, node.module)
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


def _components(graph: Dict[str, List[Import]]) -> List[List[str]]:
    """Strongly connected components (Tarjan, iterative), each sorted."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on_stack: Set[str] = set()
    found: List[List[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = len(index)
                stack.append(node)
                on_stack.add(node)
            targets = sorted({edge.target for edge in graph[node]})
            if i < len(targets):
                work.append((node, i + 1))
                target = targets[i]
                if target not in index:
                    work.append((target, 0))
                elif target in on_stack:
                    low[node] = min(low[node], index[target])
                continue
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                found.append(sorted(component))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return found


def import_cycles(modules: Dict[str, Module]) -> List[Violation]:
    graph = import_graph(modules)
    found = []
    for members in _components(graph):
        if len(members) < 2:
            continue
        inside = set(members)
        edges = [f"    {modules[a].relpath}:{edge.line}: imports {edge.target}"
                 for a in members for edge in graph[a] if edge.target in inside]
        first = modules[members[0]]
        message = f"import cycle among {len(members)} modules: {', '.join(members)}\n" + "\n".join(edges)
        found.append(Violation("cycle " + " ".join(members), f"{first.relpath}:1", message))
    return found


def init_imports_tools(modules: Dict[str, Module], package: str = PACKAGE) -> List[Violation]:
    init = modules.get(package)
    if init is None:
        return []
    tools = f"{package}.tools"
    return [Violation(f"init-imports-tools {init.relpath}", f"{init.relpath}:{edge.line}",
                      f"the package's __init__ imports {edge.target} (it may import nothing from {tools})")
            for edge in imports_of(init, set(modules)) if edge.target == tools or edge.target.startswith(tools + ".")]


def check(src: Path = DEFAULT_SRC, package: str = PACKAGE) -> List[Violation]:
    """Every violation of the four rules in ``src/<package>``, known ones included."""
    modules = load_modules(src, package)
    return (module_sizes(modules) + function_sizes(modules) + import_cycles(modules)
            + init_imports_tools(modules, package))


def report(violations: Sequence[Violation], known: Dict[str, str]) -> Tuple[List[str], List[str], List[str]]:
    """(new violations, known ones still there, KNOWN entries whose violation is gone)."""
    keys = {v.key for v in violations}
    new = [str(v) for v in violations if v.key not in known]
    still = [v.tagged(f"known, {known[v.key]}") for v in violations if v.key in known]
    gone = [f"KNOWN lists {key!r} ({owner}), which is fixed: remove it from dev/structure_check.py"
            for key, owner in known.items() if key not in keys]
    return new, still, gone


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="structure_check", description=__doc__.split("\n\n")[0],
        epilog=f"Modules at most {MAX_MODULE_LINES} lines; functions at most {MAX_FUNCTION_LINES} lines from `def` "
               "to their last line, the docstring excluded; no import cycle among the package's modules (a static graph of "
               "its import statements, TYPE_CHECKING and function-level ones included; `from a.b import c` imports "
               "a.b, and a.b.c where that is a module); the package __init__ imports nothing from compat_clone.tools. Exit 1 on a "
               "violation not listed in KNOWN, or on a KNOWN entry that is fixed.")
    parser.add_argument("--src", type=Path, default=DEFAULT_SRC, help="the folder holding compat_clone/ (default: src/)")
    parser.add_argument("--strict", action="store_true", help="ignore the KNOWN list: report every violation")
    args = parser.parse_args(argv)
    new, still, gone = report(check(args.src), {} if args.strict else KNOWN)
    for line in new + still + gone:
        print(line)
    print(f"structure check: {len(new)} violations, {len(still)} known (listed in KNOWN), {len(gone)} stale KNOWN entries")
    return 1 if new or gone else 0


if __name__ == "__main__":
    sys.exit(main())
