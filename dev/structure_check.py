"""The structure check: the sizes, the import graph and the seams of compat_clone.

Run by `make lint` and by tests/tools/test_structure.py; reads the source with `ast`
and imports nothing of it. The rules:

1. (advisory: printed, never failing) no module of the package over 450 lines (its physical lines);
2. (advisory, too) no function or method over 80 lines, counted from its ``def`` line to its
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
4. ``compat_clone/__init__.py`` imports nothing from ``compat_clone.tools``
   or ``compat_clone_matrix``: the library's face exports library names only;
5. no library module imports from ``compat_clone.tools`` or from the matrix
   (``compat_clone_matrix``, a product of its own beside the library), by the
   same import statements as rule 3. The library is every module of
   ``compat_clone`` outside ``tools/``, less ``__main__.py`` (``python -m
   compat_clone``, the door to the tools' command line, counts as a tool); the
   package ``__init__`` is rule 4's;
6. no module imports another module's private name: a ``from X import _name``
   anywhere in the module, where ``_name`` has one leading underscore (not a
   dunder) and names no module (``from compat_clone.families import _driver``
   imports a private *module*, which this rule leaves alone). The name's
   owner is the module that binds it itself, found by following the
   ``from ... import`` re-exports at the top level of ``X``; a module
   importing its own name back is no violation. Relative imports are
   resolved as in rule 3. Reported once per importing module and name;
7. no family-name compare outside ``compat_clone/families/``: a ``Compare``
   one of whose operands is ``"keras3"``, ``"tf_keras"`` or ``"keras2"``,
   one of the constants ``KERAS3``, ``TF_KERAS``, ``KERAS2`` (a name or an
   attribute), or a tuple, list or set of those only. A package-name compare
   that looks alike is not one: a tuple that also holds ``"keras"`` or
   ``"tensorflow"`` is a package tuple, and an operand named ``package`` or
   ``root`` (a name or an attribute) holds a package name, so
   ``package == "tf_keras"`` is not reported. Dict keys, subscripts and
   tuples assigned to a name are not compares and are not seen;
8. no test file (``tests/**/*.py``, beside ``src/``, ``tests/support/``
   included; not the data trees ``tests/migrate/migrate_fixtures/`` and the
   ``tests/sample_*`` projects) over 450 lines, as rule 1, and none of its
   functions over 80 lines, as rule 2;
9. (retired: tests import the library's modules directly, private ones
   included; the string table of a test seam is gone, issue 46);
10. each module's ``__all__`` is what other modules use: a public name
    imported from another module of the packages is in that module's
    ``__all__``, which it declares (a name that is a module is not checked);
11. the tools (``compat_clone.tools``, the matrix, ``__main__``) import no
    private module of the library: its public names only.

Each violation is printed as ``path:line: what``; a cycle names its members
and every import inside it (each one a place the cycle could be cut).
Rules 5-7 live in dev/structure_seams.py, rules 10-11 in dev/structure_exports.py, the parsed tree in
dev/structure_source.py; this module holds the other rules, the KNOWN list
and the command line.

This is a developer check, not part of the distribution: it lives in dev/
beside bench/, not in the package (a user never runs it) and not in tests/
(the suite runs in every matrix environment, Python 3.7 included, where
``ast`` has no end lines and no ``unparse``).

Usage: python dev/structure_check.py [--src DIR] [--strict]
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Sequence, Set, Tuple

# The sibling modules import by their own names, whether this file runs as a
# script (dev/ is then sys.path[0]) or is imported as dev.structure_check.
_DEV = str(Path(__file__).resolve().parent)
if _DEV not in sys.path:
    sys.path.insert(0, _DEV)

from structure_exports import tools_reach_private_modules, unexported_imports  # noqa: E402
from structure_seams import family_compares, in_tools, library_imports_tools, private_imports, tools_product  # noqa: E402
from structure_source import (  # noqa: E402
    MATRIX,
    PACKAGE,
    Import,
    Module,
    Violation,
    import_graph,
    imports_of,
    load_modules,
    load_tests,
)

__all__ = ["ADVISORY_PREFIXES", "KNOWN", "PACKAGE", "Violation", "advisories", "check", "main", "report"]

MAX_MODULE_LINES = 450
MAX_FUNCTION_LINES = 80
DEFAULT_SRC = Path(__file__).resolve().parent.parent / "src"

# Violations tolerated for a while, each with the reason it is tolerated, so
# lint stays green while a fix lands elsewhere. It is empty: keep it that way.
# An entry whose violation is gone fails the check, so the list cannot outlive
# its reason. Keys are the `key` of each Violation.
KNOWN: Dict[str, str] = {}


def module_sizes(modules: Dict[str, Module], limit: int = MAX_MODULE_LINES) -> List[Violation]:
    return [
        Violation(f"module {m.relpath}", f"{m.relpath}:1", f"module has {m.lines} lines (at most {limit})")
        for m in modules.values()
        if m.lines > limit
    ]


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
                line = getattr(node, "lineno")  # noqa: B009 (ast.AST declares no lineno for mypy)
                found.append(
                    Violation(
                        f"function {m.relpath}:{name}",
                        f"{m.relpath}:{line}",
                        f"function {name} has {lines} lines without its docstring (at most {limit})",
                    )
                )
    return found


def sizes_of_tests(tests: Dict[str, Module]) -> List[Violation]:
    """Rule 8: the test files, measured as the package's modules (rule 1) and functions (rule 2)."""
    return module_sizes(tests) + function_sizes(tests)


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
        edges = [
            f"    {modules[a].relpath}:{edge.line}: imports {edge.target}"
            for a in members
            for edge in graph[a]
            if edge.target in inside
        ]
        first = modules[members[0]]
        message = f"import cycle among {len(members)} modules: {', '.join(members)}\n" + "\n".join(edges)
        found.append(Violation("cycle " + " ".join(members), f"{first.relpath}:1", message))
    return found


def init_imports_tools(modules: Dict[str, Module], package: str = PACKAGE) -> List[Violation]:
    init = modules.get(package)
    if init is None:
        return []
    return [
        Violation(
            f"init-imports-tools {init.relpath}",
            f"{init.relpath}:{edge.line}",
            f"the package's __init__ imports {edge.target} (it may import nothing from {tools_product(edge.target, package)})",
        )
        for edge in imports_of(init, set(modules))
        if in_tools(edge.target, package)
    ]


def check(src: Path = DEFAULT_SRC, package: str = PACKAGE) -> List[Violation]:
    """Every violation of the ten rules in ``src/<package>``, ``src/compat_clone_matrix``, ``tests/`` and ``bench/``,
    known ones included."""
    modules = {**load_modules(src, package), **load_modules(src, MATRIX)}
    return (
        module_sizes(modules)
        + function_sizes(modules)
        + import_cycles(modules)
        + init_imports_tools(modules, package)
        + library_imports_tools(modules, package)
        + private_imports(modules)
        + family_compares(modules, package)
        + sizes_of_tests(load_tests(src))
        + unexported_imports(modules)
        + tools_reach_private_modules(modules, package)
    )


#: Keys of the advisory rules (1, 2 and their test-file twins): sizes are printed, never failing.
#: A module is split by concept, never to meet a number (issue 46).
ADVISORY_PREFIXES = ("module ", "function ")


def advisories(violations: Sequence[Violation]) -> List[str]:
    """The size findings among `violations`, as printed lines (they never fail the check)."""
    return [f"advisory: {v}" for v in violations if v.key.startswith(ADVISORY_PREFIXES)]


def report(violations: Sequence[Violation], known: Dict[str, str]) -> Tuple[List[str], List[str], List[str]]:
    """(new violations, known ones still there, KNOWN entries whose violation is gone); sizes are advisory, left out."""
    violations = [v for v in violations if not v.key.startswith(ADVISORY_PREFIXES)]
    keys = {v.key for v in violations}
    new = [str(v) for v in violations if v.key not in known]
    still = [v.tagged(f"known, {known[v.key]}") for v in violations if v.key in known]
    gone = [
        f"KNOWN lists {key!r} ({owner}), which is fixed: remove it from dev/structure_check.py"
        for key, owner in known.items()
        if key not in keys
    ]
    return new, still, gone


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="structure_check",
        description=__doc__.split("\n\n")[0],
        epilog=f"Advisory, printed and never failing: modules at most {MAX_MODULE_LINES} lines; functions at most "
        f"{MAX_FUNCTION_LINES} lines from `def` to their last line, the docstring excluded. Failing: no import cycle among the package's modules (a static graph of "
        "its import statements, TYPE_CHECKING and function-level ones included; `from a.b import c` imports "
        "a.b, and a.b.c where that is a module); the package __init__ imports nothing from compat_clone.tools, and no "
        "other library module does (tools/ and __main__.py are the tools); no module imports another module's "
        "_private name (re-exports followed to the module that binds it); no family-name compare outside "
        "compat_clone/families/; test files (tests/**/*.py) at most as long as modules, their functions too (advisory). Exit 1 on a "
        "violation not listed in KNOWN, or on a KNOWN entry that is fixed.",
    )
    parser.add_argument(
        "--src",
        type=Path,
        default=DEFAULT_SRC,
        help="the folder holding compat_clone/; tests/ beside it is read too (default: src/)",
    )
    parser.add_argument("--strict", action="store_true", help="ignore the KNOWN list: report every violation")
    args = parser.parse_args(argv)
    found = check(args.src)
    new, still, gone = report(found, {} if args.strict else KNOWN)
    for line in advisories(found) + new + still + gone:
        print(line)
    print(f"structure check: {len(new)} violations, {len(still)} known (listed in KNOWN), {len(gone)} stale KNOWN entries")
    return 1 if new or gone else 0


if __name__ == "__main__":
    sys.exit(main())
