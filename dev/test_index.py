"""The test index: docs/tests.md, generated from the test tree and the two tables of the package.

What it lists, read with `ast` (no test module and no framework is imported):

* the feature checks: every function under ``tests/`` decorated ``@feature("...")``
  (the registry is ``tests/clone/features.py``; a check's name is its function's
  name), with its file and line, and the tests that run the registry: a test
  whose ``@pytest.mark.parametrize`` values name ``FEATURES`` or ``KNOWN_ISSUES``,
  directly or through a module-level assignment of its file;
* the known upstream problems, ``compat_clone.known_issues.KNOWN_ISSUES`` (the
  module is loaded from its file: it imports no framework), one row per
  (id, family) with its versions, ``handled_by``, its checks (linked to where
  each is defined) and the tests that name its id: a test function (``test*``
  at module level, or in a ``Test*`` class, of a ``tests/**/test_*.py`` file)
  whose source, decorators and comments included, holds the id as a whole word;
* the wrapper rules, ``compat_clone.wrapper_rules.WRAPPER_RULES``, each with the
  tests it cites (``path::name`` or a file), every one checked to exist;
* where the tests live: the product folders of ``tests/``, how many tests each
  holds, the markers they carry and ``tests/conftest.py``'s ``collect_ignore``.

A problem (a cited test that does not exist, a check a known issue names that no
``@feature`` defines, a folder of ``tests/`` this tool has no description for)
is printed and makes both modes exit 1.

This is a developer tool beside dev/structure_check.py (Python 3.9+: `ast` end
lines and `unparse`), not part of the distribution. tests/tools/test_test_index.py
fails when docs/tests.md is not what it writes; `make docs` rewrites it.

Usage: python dev/test_index.py (--write | --check) [--root DIR]
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Dict, Iterator, List, Optional, Sequence, Set, Tuple

__all__ = ["COMMAND", "Index", "build", "main", "render"]

COMMAND = "python dev/test_index.py --write"
DOC = Path("docs") / "tests.md"
DEFAULT_ROOT = Path(__file__).resolve().parent.parent
# Not test code: user projects the matrix tests run, and the migrate codemod's fixtures.
DATA_TREES = (
    "tests/matrix/sample_project",
    "tests/matrix/sample_tf_project",
    "tests/matrix/sample_declared_project",
    "tests/migrate/migrate_fixtures",
)
REGISTRIES = ("FEATURES", "KNOWN_ISSUES")
# Markers with a meaning for where a test runs (pyproject.toml's list, tests/conftest.py's rules).
MARKERS = ("keras2", "tf_keras", "keras3", "per_claim", "soak", "slow", "tooling")

# What each folder of tests/ holds and where it runs (tests/conftest.py, tests/matrix-overlay.toml).
FOLDERS: Dict[str, str] = {
    "clone": "the library itself: `clone_model`, weights, placement, the feature checks and the known-issues table. "
    "Runs in every matrix environment (`make test`) and in the default `.venv`, once per family the "
    "environment serves (fixture `K`)",
    "convert": "`compat_clone.convert` and `compat-clone convert`. Collected everywhere; the cross-environment "
    "cases run in their Keras 3.15 hosts, from sources that sibling environments of the same run write "
    "(tests/convert/source_cache.py)",
    "migrate": "`compat-clone migrate`: the codemod on fixtures and snippets (needs libcst: skipped in a matrix "
    "environment without it) and the migrated fixtures run with the environment's Keras",
    "matrix": "`compat-clone matrix`, its table, reports, CI output and pytest plugin: framework-free (`tooling`)",
    "tools": "`compat-clone doctor`, the packaging check (`make packaging`), the structure check (dev/) and this "
    "index: the files `collect_ignore` lists run from the developer environment only",
    "support": "helpers every product shares (the families a run tests, fresh interpreters); no tests",
}

_FOLDER_RULES = """\
`tests/conftest.py`, at the root of tests/, holds the `K` fixture (the Keras module of each family under
test) and decides where a collected test runs (`pytest_collection_modifyitems`):

- a test marked `keras2`, `tf_keras` or `keras3` is skipped where that family is not tested;
- `tooling` (framework-free tests of the tools) runs in two environments of a matrix run: the first
  of the built-in table with the run's oldest Python and the first with its newest; once per Python
  with `make test-wide`; everywhere outside the matrix;
- `per_claim` (tests that start interpreters of their own: the README's blocks, placement across
  devices) runs in the newest environment of a run serving the same family, backend, Keras module and
  TensorFlow major; in every environment with `make test-wide`, and outside the matrix;
- `soak` (memory over many clones, multi-process) runs where `COMPAT_CLONE_SOAK=1` (one environment
  per family and backend, set by tests/matrix-overlay.toml) and always outside the matrix;
- the drawn models (hypothesis: random graphs, generated subclasses) are 20 per family in each environment
  of `make test` and outside it 200; `make test-wide` draws 200 in one environment per family and backend
  and in keras-2.3.1 (`COMPAT_CLONE_WIDE_PROFILE`, tests/clone/strategies.py);
- an environment with `COMPAT_CLONE_SUITE=framework-free` (a conversion source only) skips every test
  that clones with its Keras (fixture `K` or `family`, or a family marker);
- `collect_ignore`: inside a matrix environment (`COMPAT_CLONE_ENV` set) these files are not collected.

One product's tests, in the developer environment: `.venv/bin/python -m pytest -q tests/clone`
(any folder of the table). In matrix environments: `make test MATRIX_ARGS="--env 'keras-3.15-*'"
PYTEST_ARGS="-n 2 -q tests/clone"`.
"""


@dataclasses.dataclass(frozen=True)
class Feature:
    name: str
    description: str
    path: str
    line: int


@dataclasses.dataclass(frozen=True)
class TestFunction:
    path: str
    name: str  # ``test_x`` or ``TestY::test_x``
    line: int
    source: str  # decorators to last line, comments included
    markers: Tuple[str, ...]  # from the module's pytestmark, its class and its decorators

    @property
    def node(self) -> str:
        return f"{self.path}::{self.name}"


@dataclasses.dataclass
class Index:
    """What docs/tests.md shows, and the problems found on the way."""

    features: List[Feature]
    tests: List[TestFunction]
    runners: List[str]  # one Markdown line per test that runs a registry
    issues: List[Tuple[str, str, str, str, Tuple[str, ...]]]  # id, family, versions, handled_by, checks
    rules: List[Tuple[str, str, Tuple[str, ...]]]  # id, handled_by, cited tests
    collect_ignore: List[str]
    problems: List[str]
    outside: Dict[str, str] = dataclasses.field(default_factory=dict)  # test file -> its text outside its tests


def _rel(root: Path, path: Path) -> str:
    return path.relative_to(root).as_posix()


def _python_files(root: Path) -> Iterator[Path]:
    for path in sorted((root / "tests").rglob("*.py")):
        rel = _rel(root, path)
        if not any(rel.startswith(tree + "/") for tree in DATA_TREES) and "__pycache__" not in path.parts:
            yield path


def _parse(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def _marks(nodes: Sequence[ast.expr]) -> Set[str]:
    """The `pytest.mark.NAME` of MARKERS anywhere in `nodes`."""
    return {
        sub.attr
        for node in nodes
        for sub in ast.walk(node)
        if isinstance(sub, ast.Attribute) and sub.attr in MARKERS and ast.unparse(sub.value).endswith("mark")
    }


def _features(root: Path, path: Path, tree: ast.Module) -> Iterator[Feature]:
    for node in ast.walk(tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for deco in node.decorator_list:
            if not (isinstance(deco, ast.Call) and ast.unparse(deco.func).split(".")[-1] == "feature"):
                continue
            first = deco.args[0] if deco.args else None
            text = first.value if isinstance(first, ast.Constant) and isinstance(first.value, str) else ast.unparse(deco)
            yield Feature(node.name, text, _rel(root, path), node.lineno)


def _test_functions(root: Path, path: Path, tree: ast.Module) -> Iterator[TestFunction]:
    lines = path.read_text(encoding="utf-8").splitlines()
    module_marks = _marks([n.value for n in tree.body if isinstance(n, ast.Assign) and "pytestmark" in ast.unparse(n)])

    def one(node: ast.FunctionDef | ast.AsyncFunctionDef, prefix: str, outer: Set[str]) -> TestFunction:
        start = min([node.lineno] + [d.lineno for d in node.decorator_list])
        end = node.end_lineno or node.lineno
        marks = tuple(sorted(module_marks | outer | _marks(node.decorator_list)))
        return TestFunction(_rel(root, path), prefix + node.name, node.lineno, "\n".join(lines[start - 1 : end]), marks)

    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
            yield one(node, "", set())
        elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            for sub in node.body:
                if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef)) and sub.name.startswith("test"):
                    yield one(sub, node.name + "::", _marks(node.decorator_list))


def _outside(path: Path, tests: List[TestFunction]) -> str:
    """The text of test file `path` less its test functions (module docstring, comments, helpers)."""
    text = path.read_text(encoding="utf-8")
    for test in tests:
        text = text.replace(test.source, "")
    return text


def _names(node: ast.AST) -> Set[str]:
    return {sub.id for sub in ast.walk(node) if isinstance(sub, ast.Name)}


def _runners(root: Path, path: Path, tree: ast.Module) -> Iterator[str]:
    """A line per test of `tree` parametrized over a registry, naming the values and how they are built."""
    assigned = {
        target.id: node
        for node in tree.body
        if isinstance(node, ast.Assign)
        for target in node.targets
        if isinstance(target, ast.Name)
    }

    def reaches(names: Set[str], seen: Set[str]) -> List[str]:
        found = sorted(names & set(REGISTRIES))
        for name in sorted(names - seen):
            if name in assigned and reaches(_names(assigned[name].value), seen | {name}):
                found.append(name)
        return found

    for node in tree.body:
        if not isinstance(node, ast.FunctionDef) or not node.name.startswith("test"):
            continue
        for deco in node.decorator_list:
            if not (isinstance(deco, ast.Call) and ast.unparse(deco.func).endswith("parametrize") and len(deco.args) > 1):
                continue
            via = reaches(_names(deco.args[1]), set())
            if not via:
                continue
            how = "; ".join(f"`{ast.unparse(assigned[name])}`" for name in via if name in assigned)
            ids = next((f", ids `{ast.unparse(k.value)}`" for k in deco.keywords if k.arg == "ids"), "")
            yield (
                f"- `{_rel(root, path)}::{node.name}`, line {node.lineno}: "
                f"`@pytest.mark.parametrize({ast.unparse(deco.args[0])}, {ast.unparse(deco.args[1])})`{ids}"
                + (f"; {how}" if how else "")
            )


def _load(root: Path, module: str) -> Optional[ModuleType]:
    """``src/compat_clone/<module>.py`` of `root`, loaded from its file (it imports no framework), or None."""
    path = root / "src" / "compat_clone" / f"{module}.py"
    if not path.exists():
        return None
    name = f"_test_index_{module}"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    loaded = importlib.util.module_from_spec(spec)
    sys.modules[name] = loaded  # dataclasses looks its module up while it builds the class
    try:
        spec.loader.exec_module(loaded)
    finally:
        del sys.modules[name]
    return loaded


def _cited_exists(root: Path, cited: str, tests: Dict[str, List[TestFunction]]) -> bool:
    path, _, name = cited.partition("::")
    if not (root / path).is_file():
        return False
    return not name or any(t.name == name for t in tests.get(path, []))


def _collect_ignore(root: Path) -> List[str]:
    path = root / "tests" / "conftest.py"
    if not path.exists():
        return []
    return sorted(
        sub.value
        for node in _parse(path).body
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "collect_ignore" for t in node.targets)
        for seq in ast.walk(node.value)
        if isinstance(seq, (ast.List, ast.Tuple))
        for sub in seq.elts
        if isinstance(sub, ast.Constant) and isinstance(sub.value, str)
    )


def build(root: Path = DEFAULT_ROOT) -> Index:
    """The index of the repository at `root`."""
    index = Index([], [], [], [], [], _collect_ignore(root), [])
    for path in _python_files(root):
        tree = _parse(path)
        index.features.extend(_features(root, path, tree))
        if path.name.startswith("test_"):
            found = list(_test_functions(root, path, tree))
            index.tests.extend(found)
            index.outside[_rel(root, path)] = _outside(path, found)
            index.runners.extend(_runners(root, path, tree))
    index.features.sort(key=lambda f: f.name)
    index.tests.sort(key=lambda t: t.node)
    defined = {f.name for f in index.features}
    known = _load(root, "known_issues")
    for row in getattr(known, "KNOWN_ISSUES", ()):
        index.issues.append((row.id, row.family, row.versions, row.handled_by, tuple(row.checks)))
        index.problems.extend(
            f"known issue {row.id!r} ({row.family}) names check {check!r}, which no @feature under tests/ defines"
            for check in row.checks
            if check not in defined
        )
    index.issues.sort()
    by_file: Dict[str, List[TestFunction]] = {}
    for test in index.tests:
        by_file.setdefault(test.path, []).append(test)
    rules = _load(root, "wrapper_rules")
    for rule in getattr(rules, "WRAPPER_RULES", ()):
        index.rules.append((rule.id, rule.handled_by, tuple(rule.tests)))
        index.problems.extend(
            f"wrapper rule {rule.id!r} cites {cited!r}, which is not a test under tests/"
            for cited in rule.tests
            if not _cited_exists(root, cited, by_file)
        )
    index.rules.sort()
    for folder in sorted(p.name for p in (root / "tests").iterdir() if p.is_dir() and not p.name.startswith((".", "_"))):
        if folder not in FOLDERS:
            index.problems.append(f"tests/{folder}/ has no description: add one to FOLDERS in dev/test_index.py")
    return index


def _cell(text: str) -> str:
    """A table cell: a code span where the text holds no backtick, pipes escaped."""
    return (text if "`" in text else f"`{text}`").replace("|", "\\|")


def _mentions(index: Index, word: str) -> List[str]:
    """The tests naming `word`: each test function whose source does, and each test file that does elsewhere."""
    pattern = re.compile(r"(?<![\w-])" + re.escape(word) + r"(?![\w-])")
    found = [t.node for t in index.tests if pattern.search(t.source)]
    found += [f"{path} (module)" for path, text in index.outside.items() if pattern.search(text)]
    return sorted(found)


def _feature_section(index: Index) -> List[str]:
    cited: Dict[str, List[str]] = {}
    for issue_id, family, *_, checks in index.issues:
        for check in checks:
            cited.setdefault(check, []).append(f"{issue_id} ({family})")
    out = ["| check | what it shows | defined at | known issues citing it |", "|---|---|---|---|"]
    for f in index.features:
        where = f"[{f.path}:{f.line}](../{f.path}#L{f.line})"
        what = f.description.replace("|", "\\|")
        out.append(f"| `{f.name}` | {what} | {where} | {', '.join(cited.get(f.name, [])) or '-'} |")
    return out


def _issue_section(index: Index) -> List[str]:
    where = {f.name: f for f in index.features}
    out = ["| id | family | versions | handled by | checks | tests naming the id |", "|---|---|---|---|---|---|"]
    for issue_id, family, versions, handled_by, checks in index.issues:
        links = [f"[`{c}`](../{where[c].path}#L{where[c].line})" if c in where else f"`{c}` (undefined)" for c in checks]
        named = "<br>".join(f"`{t}`" for t in _mentions(index, issue_id)) or "-"
        out.append(f"| `{issue_id}` | {family} | {_cell(versions)} | {_cell(handled_by)} | {', '.join(links) or '-'} | {named} |")
    return out


def _folder_section(index: Index, root: Path) -> List[str]:
    out = [
        "| folder | what it holds, where it runs | test files | tests | markers (tests carrying each) |",
        "|---|---|---|---|---|",
    ]
    for folder, text in sorted(FOLDERS.items()):
        if not (root / "tests" / folder).is_dir():
            continue
        tests = [t for t in index.tests if t.path.startswith(f"tests/{folder}/")]
        counts = {m: sum(m in t.markers for t in tests) for m in MARKERS}
        marks = ", ".join(f"`{m}` {n}" for m, n in sorted(counts.items()) if n) or "-"
        files = len({t.path for t in tests})
        out.append(f"| `tests/{folder}/` | {text} | {files} | {len(tests)} | {marks} |")
    return out


def render(index: Index, root: Path = DEFAULT_ROOT) -> str:
    """docs/tests.md's text for `index`."""
    ids = sorted({i[0] for i in index.issues})
    untested = [i for i in ids if not any(row[0] == i and row[4] for row in index.issues) and not _mentions(index, i)]
    checkless = sorted({row[0] for row in index.issues if not row[4]})
    lines = [
        f"<!-- Generated by `{COMMAND}` (also `make docs`); never edit by hand. "
        "tests/tools/test_test_index.py fails when it is stale. -->",
        "",
        "# The test index",
        "",
        f"{len(index.features)} feature checks; {len(index.issues)} known-issue rows ({len(ids)} ids), "
        f"{len(checkless)} of the ids with a row that names no check, {len(untested)} with no test at all"
        + (f" ({', '.join(untested)})" if untested else "")
        + f"; {len(index.rules)} wrapper rules. {len(index.tests)} test functions under tests/.",
        "",
        "## Where tests live",
        "",
        *_folder_section(index, root),
        "",
        *_FOLDER_RULES.splitlines(),
        "",
        "`collect_ignore`: " + (", ".join(f"`tests/{p}`" for p in index.collect_ignore) or "-") + ".",
        "",
        "## Feature checks",
        "",
        'A check is a function `check(K, clone)` decorated `@feature("...")`, registered under its function\'s name '
        "in `FEATURES` (tests/clone/features.py) when its module is imported. The tests that run the registry "
        "(found as a `parametrize` over `FEATURES` or `KNOWN_ISSUES`, directly or through a module-level name):",
        "",
        *sorted(index.runners),
        "",
        *_feature_section(index),
        "",
        "## Known upstream problems",
        "",
        "`compat_clone.known_issues.KNOWN_ISSUES`, one row per id and family. Each row's checks run in "
        "tests/clone/test_native_bugs.py (above): natively they must fail exactly inside the row's versions, "
        "through compat_clone pass everywhere. *Tests naming the id*: the test functions (`test*`, at module level "
        "or in a `Test*` class, of `tests/**/test_*.py`) whose source, decorators, docstring and comments "
        "included, holds the id as a whole word; a test file that holds it outside its test functions (its docstring, "
        "a comment, a helper) is listed as `(module)`.",
        "",
        *_issue_section(index),
        "",
        "## Wrapper rules",
        "",
        "`compat_clone.wrapper_rules.WRAPPER_RULES`: what a wrapper of the native call must keep, with the tests "
        "each cites (every one checked to exist).",
        "",
        "| id | handled by | tests |",
        "|---|---|---|",
        *(
            f"| `{rule_id}` | {_cell(handled)} | {'<br>'.join(f'`{c}`' for c in sorted(cited)) or '-'} |"
            for rule_id, handled, cited in index.rules
        ),
        "",
    ]
    return "\n".join(lines)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="test_index", description=__doc__.split("\n\n")[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true", help=f"write {DOC.as_posix()}")
    mode.add_argument("--check", action="store_true", help=f"exit 1 when {DOC.as_posix()} is not what --write writes")
    parser.add_argument("--root", type=Path, default=DEFAULT_ROOT, help="the repository (default: this checkout)")
    args = parser.parse_args(argv)
    root: Path = args.root.resolve()
    index = build(root)
    text = render(index, root)
    target = root / DOC
    for problem in index.problems:
        print(f"test index: {problem}", file=sys.stderr)
    if args.write:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        print(f"test index: wrote {DOC.as_posix()}")
    elif not target.exists() or target.read_text(encoding="utf-8") != text:
        print(f"test index: {DOC.as_posix()} is stale or missing: run `{COMMAND}` (or `make docs`)", file=sys.stderr)
        return 1
    return 1 if index.problems else 0


if __name__ == "__main__":
    sys.exit(main())
