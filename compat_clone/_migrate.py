"""`compat-clone migrate`: rewrite old `clone_model` code to use `compat_clone`.

A codemod built on libcst, so formatting and comments are preserved. It
rewrites:

* calls through an import it can follow: ``keras.models.clone_model(m)``,
  ``tf.keras.models.clone_model(m)``, ``models.clone_model(m)`` after
  ``from keras import models``, ``keras.models.clone_model(m)`` after
  ``import tf_keras as keras``, ... become ``compat_clone.clone_model(m)``
  (``import compat_clone`` is added; an import left unused is removed);
* ``from keras.models import clone_model`` (and the ``tf.keras`` /
  ``tensorflow.keras`` / ``tf_keras`` spellings) becomes
  ``from compat_clone import clone_model``; the calls stay as they are;
* ``c = clone_model(m)`` immediately followed by
  ``c.set_weights(m.get_weights())`` becomes
  ``c = clone_model(m, copy_weights=True)``.

Every argument and comment is kept. Uses it cannot rewrite safely are reported
as ``path:line:col: why`` and left alone: ``multi_gpu_model``,
``clone_and_build_model``, ``clone_model`` used as a value
(``f = keras.models.clone_model``), ``getattr(models, "clone_model")``, a
``clone_model`` that may come from a star import, and ``X.clone_model(...)``
where ``X`` is not an import it can follow.

Exit status: 0 done (diff printed, or files written, or nothing to do);
1 with ``--check`` when a file would change or a use needs a fix by hand;
2 usage error, libcst missing, or a path that could not be read or parsed
(reported and skipped; every other file is still processed).

libcst is imported only when the command runs, so `compat-clone --help` and
the other subcommands work without it.
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import os
import sys
from typing import Any, Dict, Iterator, List, Optional, Sequence, Set, Tuple, Union

__all__ = [
    "EXIT_OK",
    "EXIT_CHANGES",
    "EXIT_ERROR",
    "Report",
    "MigrateResult",
    "migrate_source",
    "migrate_path",
    "iter_python_files",
    "add_arguments",
    "run",
]

EXIT_OK = 0
EXIT_CHANGES = 1
EXIT_ERROR = 2

_INSTALL_HINT = (
    "`compat-clone migrate` needs libcst, which is not installed. "
    "Install it with `pip install 'compat-clone[migrate]'` (or `pip install 'libcst>=1.0'`)."
)

# Modules whose `clone_model` this tool rewrites, as the fully qualified
# import path a name resolves to (`import tensorflow as tf` makes
# `tf.keras.models` resolve to `tensorflow.keras.models`).
_CLONE_MODEL_HOMES = frozenset(
    {
        # standalone Keras 2.0-2.3 (keras/models.py), Keras 2.4-2.15 and Keras 3
        "keras.models",
        "keras.api.models",
        "keras.api._v2.keras.models",
        "keras.src.models",
        "keras.src.models.cloning",
        "keras.models.cloning",
        # tf.keras (TF 1.x / 2.x), including the compat namespaces
        "tensorflow.keras.models",
        "tensorflow.python.keras.models",
        "tensorflow.compat.v1.keras.models",
        "tensorflow.compat.v2.keras.models",
        "tensorflow.contrib.keras.models",
        "tensorflow.contrib.keras.api.keras.models",
        # tf_keras (Keras 2 kept alive for TF >= 2.16)
        "tf_keras.models",
        "tf_keras.src.models",
        "tf_keras.src.models.cloning",
    }
)
_CLONE_MODEL_TARGETS = frozenset(f"{home}.clone_model" for home in _CLONE_MODEL_HOMES)

# Every use this tool rewrites or reports contains one of these words; a file
# without them is left alone without the scope analysis.
_TRIGGERS = (b"clone_model", b"clone_and_build_model", b"multi_gpu_model")
_AST_ONLY = 0x400  # ast.PyCF_ONLY_AST

# Top-level packages whose star imports may bring a `clone_model` in.
_KERAS_ROOTS = ("keras", "tensorflow", "tf_keras")

_MULTI_GPU_WHY = (
    "`multi_gpu_model` was removed (deprecated in Keras 2.3.1 / TF 2.2, gone in TF 2.4 and "
    "Keras 3); not rewritten. For data parallelism use `tf.distribute.MirroredStrategy`; to "
    "clone the model under /cpu:0 as its `cpu_relocation=True` did, use "
    '`compat_clone.clone_model(model, device="/cpu:0")`.'
)
_CLONE_AND_BUILD_WHY = (
    "`clone_and_build_model` (tf.keras 2.x; gone in Keras 3) clones and compiles; not "
    "rewritten. Use `clone = compat_clone.clone_model(model, copy_weights=True)` and then "
    "`clone.compile(...)` with the optimizer, loss and metrics it was given."
)


@dataclasses.dataclass(frozen=True)
class Report:
    """A use of `clone_model` (or a relative) that was not rewritten.

    Attributes:
        path: the file, as given or as found under a given folder.
        line: 1-based line.
        column: 1-based column.
        why: what the use is, why it was left alone, and what to do.
    """

    path: str
    line: int
    column: int
    why: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}:{self.column}: {self.why}"


@dataclasses.dataclass
class MigrateResult:
    """The outcome of migrating one file's source.

    Attributes:
        path: the file name used in reports and diffs.
        source: the original bytes.
        migrated: the new bytes (equal to `source` when nothing changed).
        reports: the uses left for a fix by hand.
        error: why the file was skipped (it does not parse), else None.
    """

    path: str
    source: bytes
    migrated: bytes
    reports: List[Report]
    error: Optional[str] = None

    @property
    def changed(self) -> bool:
        return self.migrated != self.source

    def diff(self) -> str:
        """The change as a unified diff (`a/PATH`, `b/PATH`); empty if none."""
        if not self.changed:
            return ""
        encoding = _detect_encoding(self.source)
        old = self.source.decode(encoding).splitlines(keepends=True)
        new = self.migrated.decode(encoding).splitlines(keepends=True)
        lines = []
        for line in difflib.unified_diff(old, new, f"a/{self.path}", f"b/{self.path}"):
            if not line.endswith(("\n", "\r")):
                line += "\n\\ No newline at end of file\n"
            lines.append(line)
        return "".join(lines)


def _detect_encoding(source: bytes) -> str:
    import io
    import tokenize

    try:
        return tokenize.detect_encoding(io.BytesIO(source).readline)[0]
    except SyntaxError:
        return "utf-8"


def _libcst() -> Any:
    """Imports libcst, or raises ImportError with the install hint."""
    try:
        import libcst
    except ImportError as exc:
        raise ImportError(_INSTALL_HINT) from exc
    return libcst


def migrate_source(
    source: Union[str, bytes], path: str = "<string>", *, is_package_init: Optional[bool] = None
) -> MigrateResult:
    """Migrates one file's source; writes nothing.

    Args:
        source: the file's contents (bytes keep the encoding and newlines
            exactly; a str is encoded as UTF-8).
        path: the name used in reports and in the diff.
        is_package_init: whether the file is a package's `__init__.py`,
            where imports are kept even when unused (they may be
            re-exports). Defaults to what `path` says.

    Returns:
        A `MigrateResult`. A source that does not parse gives a result with
        `error` set and `migrated == source`.

    Raises:
        ImportError: libcst is not installed (the message says how to
            install it).

    Example:

    >>> from compat_clone._migrate import migrate_source
    >>> result = migrate_source("import keras\\nc = keras.models.clone_model(m)\\n")
    >>> print(result.migrated.decode(), end="")
    import compat_clone
    c = compat_clone.clone_model(m)
    """
    cst = _libcst()
    data = source.encode("utf-8") if isinstance(source, str) else bytes(source)
    if is_package_init is None:
        is_package_init = os.path.basename(path) == "__init__.py"
    if not any(word in data for word in _TRIGGERS):
        # Nothing to rewrite or report: skip libcst's (slow, pure Python) scope
        # analysis, but still say when the file does not parse.
        try:
            compile(data, path, "exec", flags=_AST_ONLY, dont_inherit=True)
        except (SyntaxError, ValueError) as exc:
            return MigrateResult(path, data, data, [], error=_parse_error(path, data, exc))
        return MigrateResult(path, data, data, [])
    try:
        module = cst.parse_module(data)
    except Exception as exc:  # ParserSyntaxError, or another error on odd input
        return MigrateResult(path, data, data, [], error=_parse_error(path, data, exc))
    codemod = _codemod()
    reports, new_module = codemod.migrate(module, path, is_package_init)
    migrated = new_module.bytes
    return MigrateResult(path, data, migrated, reports)


def _parse_error(path: str, data: bytes, exc: Exception) -> str:
    """`PATH:LINE:COL: does not parse, skipped (why)`, with Python's own words if it has them."""
    import ast

    try:
        ast.parse(data, filename=path)
    except SyntaxError as py_exc:  # e.g. "Missing parentheses in call to 'print'"
        return (
            f"{path}:{py_exc.lineno or 1}:{py_exc.offset or 1}: does not parse, skipped "
            f"({py_exc.msg})"
        )
    except Exception:
        pass
    line = getattr(exc, "raw_line", 1)
    column = getattr(exc, "raw_column", 0) + 1
    why = getattr(exc, "message", None) or str(exc).strip().splitlines()[0]
    return f"{path}:{line}:{column}: does not parse, skipped ({why})"


def iter_python_files(paths: Sequence[str]) -> Iterator[str]:
    """Yields the files to migrate: each file named, and every `*.py` under each folder.

    Folders are walked in sorted order, skipping hidden folders (`.git`,
    `.venv`), `__pycache__`, and virtual environments (a folder with a
    `pyvenv.cfg`).
    """
    for path in paths:
        if os.path.isdir(path):
            for root, dirs, files in os.walk(path):
                dirs[:] = sorted(
                    d
                    for d in dirs
                    if not d.startswith(".")
                    and d != "__pycache__"
                    and not os.path.exists(os.path.join(root, d, "pyvenv.cfg"))
                )
                for name in sorted(files):
                    if name.endswith(".py"):
                        yield os.path.join(root, name)
        else:
            yield path


def migrate_path(path: str) -> MigrateResult:
    """Reads and migrates one file; writes nothing (see `migrate_source`)."""
    with open(path, "rb") as f:
        data = f.read()
    return migrate_source(data, path)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Adds the `migrate` options to `parser`."""
    parser.description = (
        "Rewrite old Keras `clone_model` code to use compat_clone: calls and imports of "
        "clone_model from keras.models, tf.keras.models, tensorflow.keras.models and "
        "tf_keras.models, and a following `c.set_weights(m.get_weights())` folded into "
        "`copy_weights=True`. Prints a unified diff unless --write or --check. Uses that "
        "cannot be rewritten safely are reported as PATH:LINE:COL on stderr. "
        "Exit status: 0 done; 1 with --check when a file would change or a use needs a fix "
        "by hand; 2 usage error or a file that could not be read or parsed."
    )
    parser.add_argument(
        "paths", nargs="+", metavar="PATH", help="files, or folders to walk for *.py files"
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true", help="edit the files in place")
    mode.add_argument(
        "--check",
        action="store_true",
        help="change nothing; list the files that would change and report the uses to fix "
        "by hand; exit 1 if there is any (for CI)",
    )


def run(args: argparse.Namespace) -> int:
    """Runs `compat-clone migrate`; returns the exit status."""
    try:
        _libcst()
    except ImportError as exc:
        print(f"compat-clone migrate: {exc}", file=sys.stderr)
        return EXIT_ERROR
    errors = 0
    would_change: List[str] = []
    reports = 0
    missing = [p for p in args.paths if not os.path.exists(p)]
    for path in missing:
        print(f"{path}: no such file or folder, skipped", file=sys.stderr)
        errors += 1
    for path in iter_python_files([p for p in args.paths if p not in missing]):
        try:
            result = migrate_path(path)
        except (OSError, UnicodeDecodeError) as exc:
            print(f"{path}: could not be read, skipped ({exc})", file=sys.stderr)
            errors += 1
            continue
        except Exception as exc:  # a bug of this tool: skip the file, go on with the others
            print(
                f"{path}: could not be migrated ({type(exc).__name__}: {exc}), skipped; "
                "please report this at compat_clone's issue tracker",
                file=sys.stderr,
            )
            errors += 1
            continue
        if result.error is not None:
            print(result.error, file=sys.stderr)
            errors += 1
            continue
        for report in result.reports:
            print(report, file=sys.stderr)
        reports += len(result.reports)
        if not result.changed:
            continue
        would_change.append(path)
        if args.check:
            print(f"would migrate {path}")
        elif args.write:
            with open(path, "wb") as f:
                f.write(result.migrated)
            print(f"migrated {path}", file=sys.stderr)
        else:
            sys.stdout.write(result.diff())
    if args.check and (would_change or reports):
        print(
            f"{len(would_change)} file(s) would be migrated, {reports} use(s) need a fix by hand.",
            file=sys.stderr,
        )
    if errors:
        return EXIT_ERROR
    if args.check and (would_change or reports):
        return EXIT_CHANGES
    return EXIT_OK


# --------------------------------------------------------------------------
# The codemod proper. Its classes subclass libcst's visitors, so they are
# built on first use (`_codemod()`), after libcst is imported.

_CODEMOD: Any = None


def _codemod() -> Any:
    global _CODEMOD
    if _CODEMOD is None:
        _CODEMOD = _build_codemod(_libcst())
    return _CODEMOD


def _build_codemod(cst: Any) -> Any:  # noqa: C901 - one closure holding the libcst classes
    import types

    from libcst.metadata import (
        ImportAssignment,
        MetadataWrapper,
        ParentNodeProvider,
        PositionProvider,
        QualifiedNameProvider,
        QualifiedNameSource,
        ScopeProvider,
    )

    empty_module = cst.Module(body=[])

    def code(node: Any) -> str:
        return str(empty_module.code_for_node(node))

    def dotted(node: Any) -> Optional[str]:
        """`a.b.c` for a Name/Attribute chain, else None."""
        if isinstance(node, cst.Name):
            return str(node.value)
        if isinstance(node, cst.Attribute):
            base = dotted(node.value)
            return None if base is None else f"{base}.{node.attr.value}"
        return None

    def root_name(node: Any) -> Optional[Any]:
        while isinstance(node, cst.Attribute):
            node = node.value
        return node if isinstance(node, cst.Name) else None

    def last_name(node: Any) -> Optional[str]:
        if isinstance(node, cst.Name):
            return str(node.value)
        if isinstance(node, cst.Attribute):
            return str(node.attr.value)
        return None

    def chain_nodes(node: Any) -> List[Any]:
        out = []
        while isinstance(node, cst.Attribute):
            out.append(node)
            node = node.value
        out.append(node)
        return out

    def import_module_name(node: Any) -> Optional[str]:
        """The absolute module of a `from X import ...`; None for relative ones."""
        if node.relative:
            return None
        return dotted(node.module) if node.module is not None else None

    def comment_lines(line: Any) -> List[Any]:
        """The comments of a statement line, as EmptyLines (leading, then trailing)."""
        out = [e for e in line.leading_lines if e.comment is not None]
        trailing = line.trailing_whitespace.comment
        if trailing is not None:
            out.append(cst.EmptyLine(comment=trailing))
        return out

    class Analysis:
        def __init__(self) -> None:
            self.attr_calls: Set[Any] = (
                set()
            )  # Call nodes whose func becomes compat_clone.clone_model
            self.name_calls: Set[Any] = set()  # calls through a from-import that is rewritten
            self.rewritten_refs: Set[Any] = set()  # nodes of rewritten funcs (for unused imports)
            self.from_rewrites: Dict[Any, List[int]] = {}  # ImportFrom -> clone_model alias indexes
            self.split_lines: Dict[Any, Any] = {}  # statement line -> ImportFrom split off it
            self.fold_calls: Set[Any] = set()
            self.fold_comments: Dict[Any, Any] = {}  # call -> trailing comment of its set_weights
            self.fold_line_pairs: Dict[Any, Any] = {}  # assign line -> set_weights line
            self.fold_removed_lines: Set[Any] = set()
            self.fold_removed_small: Set[Any] = set()
            self.alias_removals: Dict[Any, Set[int]] = {}  # Import/ImportFrom -> alias indexes
            self.removed_import_lines: Set[Any] = set()
            self.reports: List[Tuple[int, int, str]] = []
            self.has_compat_clone_import = False

    class Analyzer(cst.CSTVisitor):  # type: ignore[misc]
        METADATA_DEPENDENCIES = (
            PositionProvider,
            QualifiedNameProvider,
            ScopeProvider,
            ParentNodeProvider,
        )

        def __init__(self, is_package_init: bool) -> None:
            super().__init__()
            self.a = Analysis()
            self.is_package_init = is_package_init
            self.bodies: List[Tuple[Any, Sequence[Any]]] = []
            self.star_imports: List[Tuple[str, int]] = []
            self.scopes: Set[Any] = set()
            self.exported: Set[str] = set()
            self.unbound_clone_calls: List[Any] = []
            self.suite_imports: Set[Any] = set()

        # -- helpers
        def report(self, node: Any, why: str) -> None:
            pos = self.get_metadata(PositionProvider, node).start
            self.a.reports.append((pos.line, pos.column + 1, why))

        def parent(self, node: Any) -> Any:
            return self.get_metadata(ParentNodeProvider, node, None)

        def resolved(self, node: Any) -> Optional[Set[str]]:
            """Qualified names `node` refers to through imports; None if it cannot tell.

            libcst resolves a dotted access such as `keras.models.x` through a
            module-level `import keras.models` even where a parameter named
            `keras` shadows it, so the root name's own bindings are checked too.
            """
            root = root_name(node)
            if root is None:
                return None
            scope = self.get_metadata(ScopeProvider, root, None)
            if scope is None:
                return None
            bindings = scope[root.value]
            if not bindings or not all(isinstance(b, ImportAssignment) for b in bindings):
                return None
            qnames = self.get_metadata(QualifiedNameProvider, node, set())
            if not qnames or any(q.source != QualifiedNameSource.IMPORT for q in qnames):
                return None
            return {q.name for q in qnames}

        def is_clone_target(self, node: Any) -> bool:
            names = self.resolved(node)
            return names is not None and bool(names) and names <= _CLONE_MODEL_TARGETS

        # -- visits
        def visit_Module(self, node: Any) -> None:
            self.bodies.append((node, node.body))
            self.scopes.add(self.get_metadata(ScopeProvider, node))
            for stmt in node.body:
                if isinstance(stmt, cst.SimpleStatementLine):
                    for small in stmt.body:
                        if isinstance(small, cst.Import) and any(
                            dotted(a.name) == "compat_clone" and a.asname is None
                            for a in small.names
                        ):
                            self.a.has_compat_clone_import = True
                        targets = []
                        if isinstance(small, cst.Assign):
                            targets = [t.target for t in small.targets]
                        elif isinstance(small, (cst.AnnAssign, cst.AugAssign)):
                            targets = [small.target]
                        if any(isinstance(t, cst.Name) and t.value == "__all__" for t in targets):
                            for s in _strings(cst, small.value):
                                self.exported.add(s)

        def visit_IndentedBlock(self, node: Any) -> None:
            self.bodies.append((node, node.body))

        def visit_FunctionDef(self, node: Any) -> None:
            scope = self.get_metadata(ScopeProvider, node.body, None)
            if scope is not None:
                self.scopes.add(scope)

        def visit_ClassDef(self, node: Any) -> None:
            scope = self.get_metadata(ScopeProvider, node.body, None)
            if scope is not None:
                self.scopes.add(scope)

        def visit_SimpleStatementSuite(self, node: Any) -> None:
            for small in node.body:
                self.suite_imports.add(small)

        def visit_ImportFrom(self, node: Any) -> None:
            module = import_module_name(node)
            if module is None:
                return
            if isinstance(node.names, cst.ImportStar):
                if module.partition(".")[0] in _KERAS_ROOTS:
                    pos = self.get_metadata(PositionProvider, node).start
                    self.star_imports.append((f"from {module} import *", pos.line))
                return
            clone_idx = []
            for i, alias in enumerate(node.names):
                name = dotted(alias.name)
                if name == "clone_model" and module in _CLONE_MODEL_HOMES:
                    clone_idx.append(i)
                elif name == "multi_gpu_model" and module.partition(".")[0] in _KERAS_ROOTS:
                    self.report(alias, _MULTI_GPU_WHY)
                elif name == "clone_and_build_model" and module.partition(".")[0] in _KERAS_ROOTS:
                    self.report(alias, _CLONE_AND_BUILD_WHY)
            if not clone_idx:
                return
            if len(clone_idx) < len(node.names):
                # Split into two imports: possible only on a statement line of its own block.
                line = self.parent(node)
                if node in self.suite_imports or not isinstance(line, cst.SimpleStatementLine):
                    self.report(
                        node,
                        f"`from {module} import clone_model` shares a one-line block with other "
                        "code; not rewritten: import clone_model from compat_clone by hand.",
                    )
                    return
                if line in self.a.split_lines:  # two such imports on one line: rare, left alone
                    self.report(node, "two imports of clone_model on one line; not rewritten.")
                    return
                self.a.split_lines[line] = node
            self.a.from_rewrites[node] = clone_idx

        def visit_Call(self, node: Any) -> None:
            func = node.func
            name = last_name(func)
            if name is not None and self.is_clone_target(func):  # also `cm(m)` after `... as cm`
                if isinstance(func, cst.Attribute):
                    self.a.attr_calls.add(node)
                    self.a.rewritten_refs.update(chain_nodes(func))
                else:
                    self.a.name_calls.add(node)
            elif name == "clone_model":
                if isinstance(func, cst.Attribute):
                    base = dotted(func.value) or code(func.value)
                    resolved = self.resolved(func)
                    if resolved and all(n.startswith("compat_clone.") for n in resolved):
                        return
                    if resolved is None and base.partition(".")[0] in ("self", "cls"):
                        return  # a method of the user's own class
                    if resolved is None:
                        self.report(
                            node,
                            f"`{base}.clone_model(...)`: cannot tell which module `{base}` is "
                            "(not an import this tool can follow); not rewritten. If it is "
                            "Keras's, call `compat_clone.clone_model(...)` instead.",
                        )
                elif isinstance(func, cst.Name):
                    scope = self.get_metadata(ScopeProvider, func, None)
                    if scope is not None and not scope[func.value]:
                        self.unbound_clone_calls.append(node)
            elif name == "multi_gpu_model":
                why = _MULTI_GPU_WHY
                if any(
                    a.keyword is not None
                    and a.keyword.value == "cpu_relocation"
                    and not (isinstance(a.value, cst.Name) and a.value.value == "False")
                    for a in node.args
                ):
                    why = "With `cpu_relocation=True`: " + why
                self.report(node, why)
            elif name == "clone_and_build_model":
                self.report(node, _CLONE_AND_BUILD_WHY)
            elif (
                isinstance(func, cst.Name)
                and func.value in ("getattr", "hasattr")
                and len(node.args) >= 2
                and "clone_model" in _strings(cst, node.args[1].value)
            ):
                self.report(
                    node,
                    f'`{func.value}(..., "clone_model")` looks clone_model up by name; not '
                    "followed. Use `compat_clone.clone_model` directly.",
                )

        def visit_Attribute(self, node: Any) -> None:
            if node.attr.value != "clone_model":
                return
            parent = self.parent(node)
            if isinstance(parent, cst.Call) and parent.func is node:
                return
            if isinstance(parent, (cst.Attribute, cst.ImportAlias, cst.Import, cst.ImportFrom)):
                return
            if self.is_clone_target(node):
                self.report(
                    node,
                    f"`{code(node)}` is used as a value (an alias or a callback); calls through "
                    "it are not rewritten. Use `compat_clone.clone_model` here.",
                )

        # -- after the walk (metadata is only available during it)
        def leave_Module(self, original_node: Any) -> None:
            self.result = self.finish()

        def finish(self) -> Analysis:
            self._unused_imports()
            self._folds()
            for node in self.unbound_clone_calls:
                if self.star_imports:
                    star, line = self.star_imports[0]
                    self.report(
                        node,
                        f"`clone_model` may come from the star import `{star}` (line {line}); "
                        "star imports are not rewritten. Import compat_clone and call "
                        "`compat_clone.clone_model(...)`.",
                    )
            self.a.reports.sort()
            return self.a

        def _removable_line(self, import_node: Any) -> Optional[Any]:
            """The statement line holding `import_node` if an import may be removed there."""
            if self.is_package_init or import_node in self.suite_imports:
                return None
            line = self.parent(import_node)
            if not isinstance(line, cst.SimpleStatementLine):
                return None
            block = self.parent(line)
            if isinstance(block, cst.Module):
                return line
            if isinstance(block, cst.IndentedBlock) and isinstance(
                self.parent(block), cst.FunctionDef
            ):
                return line
            return None  # inside try/if/with/class: keep (may be a fallback or a re-export)

        def _unused_imports(self) -> None:
            refs = self.a.rewritten_refs
            if not refs:
                return
            # alias node -> its import assignments
            by_alias: Dict[Tuple[Any, int], List[Any]] = {}
            for scope in self.scopes:
                for assignment in scope.assignments:
                    if not isinstance(assignment, ImportAssignment):
                        continue
                    imp: Any = assignment.node
                    if isinstance(imp, cst.ImportFrom) and isinstance(imp.names, cst.ImportStar):
                        continue
                    for i, alias in enumerate(imp.names):
                        bound = alias.evaluated_alias or alias.evaluated_name
                        if bound == assignment.name:
                            by_alias.setdefault((imp, i), []).append(assignment)
            for (imp, i), assignments in by_alias.items():
                accesses = [r.node for a in assignments for r in a.references]
                if not accesses or not all(n in refs for n in accesses):
                    continue
                alias = imp.names[i]
                bound = alias.evaluated_alias or alias.evaluated_name
                if bound.partition(".")[0] in self.exported or bound in self.exported:
                    continue
                line = self._removable_line(imp)
                if line is None or imp in self.a.from_rewrites:
                    continue
                self.a.alias_removals.setdefault(imp, set()).add(i)
            for imp, idx in self.a.alias_removals.items():
                if len(idx) == len(imp.names):
                    line = self.parent(imp)
                    if all(
                        s is imp
                        or (
                            s in self.a.alias_removals
                            and len(self.a.alias_removals[s]) == len(s.names)
                        )
                        for s in line.body
                    ):
                        self.a.removed_import_lines.add(line)

        def _fold_call(self, assign: Any) -> Optional[Tuple[Any, Any, Any]]:
            """(call, target, source) if `assign` is `x = <clone call>(m, ...)`."""
            if isinstance(assign, cst.Assign):
                if len(assign.targets) != 1:
                    return None
                target = assign.targets[0].target
            elif isinstance(assign, cst.AnnAssign) and assign.value is not None:
                target = assign.target
            else:
                return None
            call = assign.value
            if not isinstance(call, cst.Call):
                return None
            if call not in self.a.attr_calls and call not in self.a.name_calls:
                return None
            if isinstance(call.func, cst.Name):
                # every from-import it may come through must be one that is rewritten
                scope = self.get_metadata(ScopeProvider, call.func, None)
                bindings = scope[call.func.value] if scope is not None else ()
                if not bindings or not all(
                    isinstance(b, ImportAssignment) and b.node in self.a.from_rewrites
                    for b in bindings
                ):
                    return None
            source = None
            for arg in call.args:
                if arg.star:
                    return None
                if arg.keyword is None and source is None:
                    source = arg.value
                elif arg.keyword is not None and arg.keyword.value == "model":
                    source = arg.value
                elif arg.keyword is not None and arg.keyword.value == "copy_weights":
                    return None
            t, s = dotted(target), dotted(source) if source is not None else None
            if t is None or s is None:
                return None
            # `m = clone_model(m)` rebinds the source (so does `m = clone_model(m.sub)`):
            # the set_weights after it copies the clone onto itself, a no-op.
            if s == t or s.startswith(t + "."):
                return None
            return call, target, source

        def _is_set_weights(self, small: Any, target: Any, source: Any) -> bool:
            if not isinstance(small, cst.Expr) or not isinstance(small.value, cst.Call):
                return False
            call = small.value
            func = call.func
            if not (isinstance(func, cst.Attribute) and func.attr.value == "set_weights"):
                return False
            if dotted(func.value) != dotted(target) or len(call.args) != 1:
                return False
            arg = call.args[0]
            if arg.keyword is not None or arg.star:
                return False
            inner = arg.value
            return (
                isinstance(inner, cst.Call)
                and not inner.args
                and isinstance(inner.func, cst.Attribute)
                and inner.func.attr.value == "get_weights"
                and dotted(inner.func.value) == dotted(source)
            )

        def _folds(self) -> None:
            for _block, body in self.bodies:
                for i, line in enumerate(body):
                    if not isinstance(line, cst.SimpleStatementLine):
                        continue
                    # `c = clone(m); c.set_weights(m.get_weights())` on one line
                    for j in range(len(line.body) - 1):
                        found = self._fold_call(line.body[j])
                        if found and self._is_set_weights(line.body[j + 1], found[1], found[2]):
                            self.a.fold_calls.add(found[0])
                            self.a.fold_removed_small.add(line.body[j + 1])
                    # ... or on two consecutive lines
                    if i + 1 >= len(body) or line in self.a.fold_removed_lines:
                        continue
                    nxt = body[i + 1]
                    if (
                        len(line.body) == 1
                        and isinstance(nxt, cst.SimpleStatementLine)
                        and len(nxt.body) == 1
                    ):
                        found = self._fold_call(line.body[0])
                        if found and self._is_set_weights(nxt.body[0], found[1], found[2]):
                            self.a.fold_calls.add(found[0])
                            self.a.fold_line_pairs[line] = nxt
                            if nxt.trailing_whitespace.comment is not None:
                                self.a.fold_comments[found[0]] = nxt.trailing_whitespace.comment
                            self.a.fold_removed_lines.add(nxt)

    def compat_clone_attr() -> Any:
        return cst.Attribute(value=cst.Name("compat_clone"), attr=cst.Name("clone_model"))

    def arg_indent(call: Any) -> Optional[Any]:
        """The whitespace that starts the last argument's line, if args are one per line."""
        args = call.args
        if len(args) >= 2 and isinstance(args[-2].comma, cst.Comma):
            ws = args[-2].comma.whitespace_after
        else:
            ws = call.whitespace_before_args
        return ws if isinstance(ws, cst.ParenthesizedWhitespace) else None

    def append_copy_weights(call: Any, comment: Optional[Any] = None) -> Tuple[Any, bool]:
        """`call` with `copy_weights=True` appended; whether `comment` went on its line.

        With one argument per line the new argument gets a line of its own, and
        `comment` (the folded `set_weights` line's) goes at its end.
        """
        own_line = cst.TrailingWhitespace(
            whitespace=cst.SimpleWhitespace("  " if comment is not None else ""), comment=comment
        )
        new_arg = cst.Arg(
            keyword=cst.Name("copy_weights"),
            value=cst.Name("True"),
            equal=cst.AssignEqual(
                whitespace_before=cst.SimpleWhitespace(""),
                whitespace_after=cst.SimpleWhitespace(""),
            ),
        )
        args = list(call.args)
        last = args[-1]
        indent = arg_indent(call)
        placed = False
        if isinstance(last.comma, cst.Comma):
            ws = last.comma.whitespace_after
            if isinstance(ws, cst.ParenthesizedWhitespace) and indent is not None:
                # one argument per line, trailing comma: the new one on a line of its own
                last = last.with_changes(
                    comma=last.comma.with_changes(
                        whitespace_after=ws.with_changes(
                            empty_lines=(), indent=indent.indent, last_line=indent.last_line
                        )
                    )
                )
                placed = True
                new_arg = new_arg.with_changes(
                    comma=cst.Comma(
                        whitespace_after=cst.ParenthesizedWhitespace(
                            first_line=own_line,
                            empty_lines=ws.empty_lines,
                            indent=ws.indent,
                            last_line=ws.last_line,
                        )
                    )
                )
            else:
                new_arg = new_arg.with_changes(comma=last.comma)
                last = last.with_changes(
                    comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
                )
        else:
            ws = last.whitespace_after_arg
            if isinstance(ws, cst.ParenthesizedWhitespace) and indent is not None:
                # `)` on its own line, no trailing comma
                last = last.with_changes(
                    comma=cst.Comma(
                        whitespace_after=ws.with_changes(
                            empty_lines=(), indent=indent.indent, last_line=indent.last_line
                        )
                    ),
                    whitespace_after_arg=cst.SimpleWhitespace(""),
                )
                placed = True
                new_arg = new_arg.with_changes(
                    whitespace_after_arg=cst.ParenthesizedWhitespace(
                        first_line=own_line,
                        empty_lines=ws.empty_lines,
                        indent=ws.indent,
                        last_line=ws.last_line,
                    )
                )
            else:
                new_arg = new_arg.with_changes(whitespace_after_arg=last.whitespace_after_arg)
                last = last.with_changes(
                    comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")),
                    whitespace_after_arg=cst.SimpleWhitespace(""),
                )
        args[-1] = last
        args.append(new_arg)
        return call.with_changes(args=args), placed and comment is not None

    def drop_aliases(node: Any, drop: Set[int]) -> Tuple[Any, List[Any]]:
        """`node` (Import/ImportFrom) without the aliases at `drop`, and their comments."""
        names = list(node.names)
        moved: List[Any] = []
        rpar = getattr(node, "rpar", None)
        keep = [i for i in range(len(names)) if i not in drop]
        for i in sorted(drop):
            comma = names[i].comma
            if isinstance(comma, cst.Comma) and isinstance(
                comma.whitespace_after, cst.ParenthesizedWhitespace
            ):
                c = comma.whitespace_after.first_line.comment
                if c is not None:
                    moved.append(c)
        new = [names[i] for i in keep]
        if keep and keep[-1] != len(names) - 1:
            # the old last alias is gone: the new last one takes over its line ending
            old_last = names[-1]
            kept = new[-1]
            kws = kept.comma.whitespace_after if isinstance(kept.comma, cst.Comma) else None
            if isinstance(old_last.comma, cst.Comma):
                ows = old_last.comma.whitespace_after
                if isinstance(kws, cst.ParenthesizedWhitespace) and isinstance(
                    ows, cst.ParenthesizedWhitespace
                ):
                    new[-1] = kept.with_changes(
                        comma=kept.comma.with_changes(
                            whitespace_after=kws.with_changes(
                                empty_lines=kws.empty_lines,
                                indent=ows.indent,
                                last_line=ows.last_line,
                            )
                        )
                    )
                else:
                    new[-1] = kept.with_changes(comma=old_last.comma)
            else:
                rws = rpar.whitespace_before if rpar is not None else None
                if isinstance(rws, cst.ParenthesizedWhitespace) and rws.first_line.comment:
                    moved.append(rws.first_line.comment)  # `name  # comment` then `)`
                if (
                    rpar is not None
                    and isinstance(kws, cst.ParenthesizedWhitespace)
                    and isinstance(rws, cst.ParenthesizedWhitespace)
                ):
                    new[-1] = kept.with_changes(
                        comma=kept.comma.with_changes(
                            whitespace_after=kws.with_changes(
                                indent=rws.indent, last_line=rws.last_line
                            )
                        )
                    )
                    node = node.with_changes(
                        rpar=rpar.with_changes(whitespace_before=cst.SimpleWhitespace(""))
                    )
                else:
                    new[-1] = kept.with_changes(comma=cst.MaybeSentinel.DEFAULT)
        return node.with_changes(names=new), moved

    class Transformer(cst.CSTTransformer):  # type: ignore[misc]
        def __init__(self, a: Analysis) -> None:
            super().__init__()
            self.a = a
            self.split_off: Dict[Any, Any] = {}  # original line -> new line to add after it
            self.needs_import = bool(a.attr_calls)
            self.emptied: Set[Any] = set()  # original lines whose statements all went
            self.comment_placed: Set[Any] = set()  # fold comments put on the new argument

        def leave_Call(self, original: Any, updated: Any) -> Any:
            if original in self.a.attr_calls:
                updated = updated.with_changes(func=compat_clone_attr())
            if original in self.a.fold_calls:
                comment = self.a.fold_comments.get(original)
                updated, placed = append_copy_weights(updated, comment)
                if placed:
                    self.comment_placed.add(comment)
            return updated

        def leave_ImportFrom(self, original: Any, updated: Any) -> Any:
            idx = self.a.from_rewrites.get(original)
            if idx is not None:
                if len(idx) == len(original.names):
                    return updated.with_changes(module=cst.Name("compat_clone"), relative=())
                moved_names = [original.names[i] for i in idx]
                updated, comments = drop_aliases(updated, set(idx))
                new_aliases = [
                    cst.ImportAlias(name=alias.name, asname=alias.asname) for alias in moved_names
                ]
                for k in range(len(new_aliases) - 1):
                    new_aliases[k] = new_aliases[k].with_changes(
                        comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
                    )
                line = cst.SimpleStatementLine(
                    body=[cst.ImportFrom(module=cst.Name("compat_clone"), names=new_aliases)],
                    trailing_whitespace=cst.TrailingWhitespace(
                        whitespace=cst.SimpleWhitespace("  " if comments else ""),
                        comment=cst.Comment(comments[0].value) if comments else None,
                    ),
                )
                self.split_off[original] = line
                return updated
            drop = self.a.alias_removals.get(original)
            if drop and len(drop) < len(original.names):
                return drop_aliases(updated, drop)[0]
            return updated

        def leave_Import(self, original: Any, updated: Any) -> Any:
            drop = self.a.alias_removals.get(original)
            if drop and len(drop) < len(original.names):
                return drop_aliases(updated, drop)[0]
            return updated

        def leave_SimpleStatementLine(self, original: Any, updated: Any) -> Any:
            body = []
            for o, u in zip(original.body, updated.body):
                if o in self.a.fold_removed_small:
                    continue
                if o in self.a.alias_removals and len(self.a.alias_removals[o]) == len(o.names):
                    continue
                body.append(u)
            if not body:
                # libcst drops a line left empty; the block removes it instead (`_body`),
                # keeping its leading comments
                self.emptied.add(original)
                return updated
            if len(body) != len(updated.body):
                body[-1] = body[-1].with_changes(semicolon=cst.MaybeSentinel.DEFAULT)
            updated = updated.with_changes(body=body)
            removed = self.a.fold_line_pairs.get(original)
            if removed is not None:
                comments = comment_lines(removed)
                trailing = removed.trailing_whitespace.comment
                if trailing is not None and trailing in self.comment_placed:
                    comments = comments[:-1]
                elif trailing is not None and updated.trailing_whitespace.comment is None:
                    comments = comments[:-1]
                    updated = updated.with_changes(
                        trailing_whitespace=updated.trailing_whitespace.with_changes(
                            whitespace=cst.SimpleWhitespace("  "), comment=trailing
                        )
                    )
                if comments:
                    updated = updated.with_changes(
                        leading_lines=[*updated.leading_lines, *comments]
                    )
            return updated

        def _body(self, original: Any, updated: Any) -> Tuple[List[Any], List[Any], Optional[int]]:
            """New statements, lines left over for the footer, index of a removed import."""
            new_body: List[Any] = []
            carry: List[Any] = []
            removed_import_at: Optional[int] = None
            for o, u in zip(original.body, updated.body):
                if o in self.a.fold_removed_lines:
                    continue  # its comments went onto the clone line
                if o in self.emptied:
                    if removed_import_at is None and o in self.a.removed_import_lines:
                        removed_import_at = len(new_body)
                        new_body.append(
                            cst.SimpleStatementLine(
                                body=[], leading_lines=[*carry, *u.leading_lines]
                            )
                        )
                        carry = []
                    else:
                        carry.extend(u.leading_lines)
                    continue
                if carry:
                    u = u.with_changes(leading_lines=[*carry, *u.leading_lines])
                    carry = []
                new_body.append(u)
                for small in o.body if isinstance(o, cst.SimpleStatementLine) else ():
                    if small in self.split_off:
                        new_body.append(self.split_off[small])
            return new_body, carry, removed_import_at

        def _finish(self, new_body: List[Any], at: Optional[int], is_module: bool) -> List[Any]:
            """Fills (or drops) the placeholder left where an import was removed."""
            if at is None:
                return new_body
            placeholder = new_body[at]
            if is_module and self.needs_import and not self.a.has_compat_clone_import:
                new_body[at] = placeholder.with_changes(body=[_import_compat_clone(cst)])
                self.needs_import = False
                return new_body
            del new_body[at]
            if at < len(new_body):
                new_body[at] = new_body[at].with_changes(
                    leading_lines=[*placeholder.leading_lines, *new_body[at].leading_lines]
                )
            else:
                new_body.append(
                    cst.SimpleStatementLine(body=[], leading_lines=placeholder.leading_lines)
                )
            return new_body

        def leave_IndentedBlock(self, original: Any, updated: Any) -> Any:
            new_body, carry, at = self._body(original, updated)
            new_body = self._finish(new_body, at, False)
            footer = list(updated.footer)
            if (
                new_body
                and isinstance(new_body[-1], cst.SimpleStatementLine)
                and not new_body[-1].body
            ):
                carry = [*new_body.pop().leading_lines, *carry]
            if not new_body:
                new_body = [cst.SimpleStatementLine(body=[cst.Pass()], leading_lines=carry)]
                carry = []
            return updated.with_changes(body=new_body, footer=[*carry, *footer])

        def leave_Module(self, original: Any, updated: Any) -> Any:
            new_body, carry, at = self._body(original, updated)
            new_body = self._finish(new_body, at, True)
            if (
                new_body
                and isinstance(new_body[-1], cst.SimpleStatementLine)
                and not new_body[-1].body
            ):
                carry = [*new_body.pop().leading_lines, *carry]
            if self.needs_import and not self.a.has_compat_clone_import:
                new_body = _insert_import(cst, new_body)
            return updated.with_changes(body=new_body, footer=[*carry, *updated.footer])

    def migrate(module: Any, path: str, is_package_init: bool) -> Tuple[List[Report], Any]:
        wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
        analyzer = Analyzer(is_package_init)
        wrapper.visit(analyzer)
        a = analyzer.result
        reports = [Report(path, line, col, why) for line, col, why in a.reports]
        if not (a.attr_calls or a.from_rewrites or a.fold_calls):
            return reports, module
        new_module = wrapper.module.visit(Transformer(a))
        return reports, new_module

    return types.SimpleNamespace(migrate=migrate)


def _strings(cst: Any, node: Any) -> List[str]:
    """The plain string literals in `node` (a string, or a list/tuple of them)."""
    if isinstance(node, cst.SimpleString):
        value = node.evaluated_value
        return [value] if isinstance(value, str) else []
    if isinstance(node, (cst.List, cst.Tuple, cst.Set)):
        out: List[str] = []
        for el in node.elements:
            out.extend(_strings(cst, el.value))
        return out
    return []


def _import_compat_clone(cst: Any) -> Any:
    return cst.Import(names=[cst.ImportAlias(name=cst.Name("compat_clone"))])


def _insert_import(cst: Any, body: List[Any]) -> List[Any]:
    """Adds `import compat_clone` after the module's leading imports.

    The leading block is the docstring, the imports, and `try:` blocks of
    imports, up to the first other statement. Importing compat_clone imports
    no framework, so it may sit before code that sets `KERAS_BACKEND`.
    """

    def is_docstring(stmt: Any) -> bool:
        return (
            isinstance(stmt, cst.SimpleStatementLine)
            and len(stmt.body) == 1
            and isinstance(stmt.body[0], cst.Expr)
            and isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
        )

    def is_import_line(stmt: Any) -> bool:
        return isinstance(stmt, cst.SimpleStatementLine) and all(
            isinstance(s, (cst.Import, cst.ImportFrom)) for s in stmt.body
        )

    def is_import_try(stmt: Any) -> bool:
        return isinstance(stmt, cst.Try) and all(is_import_line(s) for s in stmt.body.body)

    at = 0
    for k, stmt in enumerate(body):
        if (k == 0 and is_docstring(stmt)) or is_import_line(stmt) or is_import_try(stmt):
            at = k + 1
        else:
            break
    line = cst.SimpleStatementLine(body=[_import_compat_clone(cst)])
    if at == 0 and body:
        # the first statement's leading comments (e.g. `# In[1]:`) go above the import,
        # then a blank line (two before a def or class)
        first = body[0]
        line = line.with_changes(leading_lines=first.leading_lines)
        blank = 2 if isinstance(first, (cst.FunctionDef, cst.ClassDef)) else 1
        body = [first.with_changes(leading_lines=[cst.EmptyLine()] * blank), *body[1:]]
    return [*body[:at], line, *body[at:]]
