"""Migrating one file's source, and the one place libcst is imported.

This module imports no libcst itself: `load_codemod` imports it when a file
is migrated, and only then the modules built on it (`codemod` and the
modules it uses), so `compat-clone --help` and the other subcommands work
without libcst.
"""

from __future__ import annotations

import ast
import dataclasses
import os
import re
from types import ModuleType
from typing import Dict, List, Optional, Set, Union

from compat_clone.tools.migrate.keras3_rules import KERAS3_TRIGGERS
from compat_clone.tools.migrate.report import MigrateResult, Report
from compat_clone.tools.migrate.rules import TRIGGERS, rule_of

__all__ = ["TARGETS", "load_codemod", "migrate_source", "migrate_path"]

# What `to=` (`--to`) accepts, and the words that make a file worth analysing for it: None, the cloning
# rules only, or a rule set added to them.
_TRIGGERS = {None: TRIGGERS, "keras3": TRIGGERS + KERAS3_TRIGGERS}
TARGETS = tuple(_TRIGGERS)

INSTALL_HINT = (
    "`compat-clone migrate` needs libcst, which is not installed. "
    "Install it with `pip install 'libcst>=1.0'`, or install compat_clone with its `compat-clone[migrate]` extra "
    "(`pip install '.[migrate]'` in a checkout, `pip install 'compat_clone-VERSION-py3-none-any.whl[migrate]'`)."
)


def load_codemod() -> ModuleType:
    """Imports libcst, then the codemod built on it.

    Returns:
        The module `compat_clone.tools.migrate.codemod`.

    Raises:
        ImportError: libcst is not installed; the message says how to
            install it.

    Example:

    >>> codemod = load_codemod()
    >>> codemod.__name__
    'compat_clone.tools.migrate.codemod'
    """
    try:
        import libcst  # noqa: F401 - checked first: the codemod may be imported already
    except ImportError as exc:
        raise ImportError(INSTALL_HINT) from exc
    import compat_clone.tools.migrate.codemod as codemod

    return codemod


def migrate_source(
    source: Union[str, bytes], path: str = "<string>", *, is_package_init: Optional[bool] = None, to: Optional[str] = None
) -> MigrateResult:
    """Migrates one file's source; writes nothing.

    Args:
        source: the file's contents (bytes keep the encoding and newlines
            exactly; a str is encoded as UTF-8).
        path: the name used in reports and in the diff.
        is_package_init: whether the file is a package's `__init__.py`,
            where imports are kept even when unused (they may be
            re-exports). Defaults to what `path` says.
        to: `"keras3"` to move the code to Keras 3 as well (`compat-clone
            migrate --to keras3`; the rules are `keras3_rules.KERAS3_RULES`);
            None (the default) for the cloning rules only.

    Returns:
        A `MigrateResult`. A source that does not parse gives a result with
        `error` set and `migrated == source`.

    Raises:
        ImportError: libcst is not installed (the message says how to
            install it).
        ValueError: `to` is not None or `"keras3"`.

    Example:

    >>> from compat_clone.tools.migrate import migrate_source
    >>> result = migrate_source("import keras\\nc = keras.models.clone_model(m)\\n")
    >>> print(result.migrated.decode(), end="")
    import compat_clone
    c = compat_clone.clone_model(m)
    """
    if to not in TARGETS:
        raise ValueError(f"Expected `to` to be one of {TARGETS}. Received: to={to!r}")
    codemod = load_codemod()
    data = source.encode("utf-8") if isinstance(source, str) else bytes(source)
    if is_package_init is None:
        is_package_init = os.path.basename(path) == "__init__.py"
    if not any(word in data for word in _TRIGGERS[to]):
        # Nothing to rewrite or report: skip libcst's (slow, pure Python) scope
        # analysis, but still say when the file does not parse.
        try:
            compile(data, path, "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
        except (SyntaxError, ValueError) as exc:
            return MigrateResult(path, data, data, [], error=_parse_error(path, data, exc))
        return MigrateResult(path, data, data, [])
    try:
        module = codemod.parse(data)
    except Exception as exc:  # ParserSyntaxError, or another error on odd input
        return MigrateResult(path, data, data, [], error=_parse_error(path, data, exc))
    reports: List[Report]
    migrated: bytes
    reports, migrated = codemod.migrate(module, path, is_package_init, to)
    return MigrateResult(path, data, migrated, _with_rules(reports, data))


# `# compat-clone: ok deepcopy` (or `ok deepcopy, graph-update`): the named rules' reports on this line, or on the
# next line when the comment stands alone, were reviewed.
_MARK_RE = re.compile(rb"#\s*compat-clone:\s*ok\b([^#\r\n]*)")


def _with_rules(reports: List[Report], data: bytes) -> List[Report]:
    """Each report with its rule, and marked reviewed where a `# compat-clone: ok RULE` comment names that rule."""
    marks: Dict[int, Set[str]] = {}
    for number, line in enumerate(data.splitlines(), start=1):
        found = _MARK_RE.search(line)
        if found is None:
            continue
        names = {n for n in re.split(r"[\s,]+", found.group(1).decode("utf-8", "replace")) if n}
        marks.setdefault(number, set()).update(names)
        if not line[: found.start()].strip():  # a comment line of its own: it marks the next line
            marks.setdefault(number + 1, set()).update(names)
    out = []
    for report in reports:
        rule = report.rule or rule_of(report.why)
        out.append(dataclasses.replace(report, rule=rule, reviewed=rule in marks.get(report.line, ())))
    return out


def migrate_path(path: str, *, to: Optional[str] = None) -> MigrateResult:
    """Reads and migrates one file; writes nothing (see `migrate_source`).

    Args:
        path: the file to read.
        to: `"keras3"` to move the code to Keras 3 as well; None for the cloning rules only.

    Returns:
        A `MigrateResult` named after `path`.

    Raises:
        OSError: the file could not be read.
        ImportError: libcst is not installed.
    """
    with open(path, "rb") as f:
        data = f.read()
    return migrate_source(data, path, to=to)


def _parse_error(path: str, data: bytes, exc: Exception) -> str:
    """`PATH:LINE:COL: does not parse, skipped (why)`, with Python's own words if it has them."""
    try:
        ast.parse(data, filename=path)
    except SyntaxError as py_exc:  # e.g. "Missing parentheses in call to 'print'"
        return f"{path}:{py_exc.lineno or 1}:{py_exc.offset or 1}: does not parse, skipped ({py_exc.msg})"
    except Exception:
        pass
    line = getattr(exc, "raw_line", 1)
    column = getattr(exc, "raw_column", 0) + 1
    why = getattr(exc, "message", None) or str(exc).strip().splitlines()[0]
    return f"{path}:{line}:{column}: does not parse, skipped ({why})"
