"""The codemod on one parsed module: analyse, then rewrite what the analysis allows.

This is the module `compat_clone.tools.migrate.source.load_codemod` imports
once libcst is known to be installed; it and the modules it imports use
libcst freely.
"""

from __future__ import annotations

from typing import List, Optional, Tuple

import libcst as cst
from libcst.metadata import MetadataWrapper

from compat_clone.tools.migrate.analysis import Analyzer
from compat_clone.tools.migrate.keras3_transform import migrate_keras3
from compat_clone.tools.migrate.report import Report
from compat_clone.tools.migrate.transform import Transformer

__all__ = ["parse", "migrate"]


def parse(data: bytes) -> cst.Module:
    """Parses a file's bytes (any encoding it declares, any newlines) into a module.

    Raises:
        libcst.ParserSyntaxError: the source does not parse.
    """
    return cst.parse_module(data)


def migrate(module: cst.Module, path: str, is_package_init: bool, to: Optional[str] = None) -> Tuple[List[Report], bytes]:
    """Migrates one parsed module.

    Args:
        module: the module, as `parse` gave it.
        path: the file name used in the reports.
        is_package_init: the module is a package's `__init__.py`, whose
            imports are kept even when unused.
        to: `"keras3"` to apply the Keras 3 rules too (`keras3_rules`), after the cloning rules; None for
            the cloning rules only.

    Returns:
        The reports of the uses left alone (then the notes on rewrites), and the new source (the
        module's own bytes when nothing is rewritten).

    Example:

    >>> module = parse(b"import keras\\nkeras.models.clone_model(m)\\n")
    >>> reports, new = migrate(module, "a.py", is_package_init=False)
    >>> print(new.decode(), end="")
    import compat_clone
    compat_clone.clone_model(m)
    """
    reports, new = _clone_rules(module, path, is_package_init)
    if to is None:
        return reports, new
    # the Keras 3 reports are read from the file as written (their lines are the user's); the rewrite runs
    # on what the cloning rules made of it
    found, moved = migrate_keras3(module, is_package_init)
    if new != module.bytes:
        moved = migrate_keras3(parse(new), is_package_init)[1]
    reports += [Report(path, line, column, why, rule=rule) for line, column, why, rule in found]
    return reports, moved


def _clone_rules(module: cst.Module, path: str, is_package_init: bool) -> Tuple[List[Report], bytes]:
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    analyzer = Analyzer(is_package_init)
    wrapper.visit(analyzer)
    analysis = analyzer.analysis
    reports = [Report(path, line, column, why) for line, column, why in analysis.reports]
    reports += [Report(path, line, column, why, note=True) for line, column, why in analysis.notes]
    if not analysis.rewrites_anything:
        return reports, module.bytes
    return reports, wrapper.module.visit(Transformer(analysis)).bytes
