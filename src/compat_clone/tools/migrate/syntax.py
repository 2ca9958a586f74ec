"""Small readings of libcst nodes shared by the analysis and the rewrite.

Imported only after libcst is known to be installed (see
`compat_clone.tools.migrate.source.load_codemod`).
"""

from __future__ import annotations

from typing import Any, List, Optional

import libcst as cst
import libcst.matchers as m

__all__ = [
    "chain_nodes",
    "code",
    "comment_lines",
    "compat_clone_attr",
    "dotted",
    "import_compat_clone",
    "import_module_name",
    "inner_comments",
    "last_name",
    "root_name",
    "strings",
]

_EMPTY_MODULE = cst.Module(body=[])


def code(node: cst.CSTNode) -> str:
    """The source text of `node`, as written."""
    return _EMPTY_MODULE.code_for_node(node)


def dotted(node: Optional[cst.CSTNode]) -> Optional[str]:
    """`a.b.c` for a Name/Attribute chain, else None.

    Example:

    >>> dotted(cst.parse_expression("tf.keras.models"))
    'tf.keras.models'
    """
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        base = dotted(node.value)
        return None if base is None else f"{base}.{node.attr.value}"
    return None


def root_name(node: cst.CSTNode) -> Optional[cst.Name]:
    """The `a` of `a.b.c`; None when the chain starts with something else (a call...)."""
    while isinstance(node, cst.Attribute):
        node = node.value
    return node if isinstance(node, cst.Name) else None


def last_name(node: cst.CSTNode) -> Optional[str]:
    """The `c` of `a.b.c` (or of a plain `c`); None for any other expression."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return node.attr.value
    return None


def chain_nodes(node: cst.CSTNode) -> List[cst.CSTNode]:
    """Every node of the chain `a.b.c`: `a.b.c`, `a.b`, then `a`."""
    out: List[cst.CSTNode] = []
    while isinstance(node, cst.Attribute):
        out.append(node)
        node = node.value
    out.append(node)
    return out


def import_module_name(node: cst.ImportFrom) -> Optional[str]:
    """The absolute module of a `from X import ...`; None for relative ones."""
    if node.relative:
        return None
    return dotted(node.module) if node.module is not None else None


def strings(node: Any) -> List[str]:
    """The plain string literals in `node` (a string, or a list/tuple/set of them)."""
    if isinstance(node, cst.SimpleString):
        value = node.evaluated_value
        return [value] if isinstance(value, str) else []
    if isinstance(node, (cst.List, cst.Tuple, cst.Set)):
        out: List[str] = []
        for element in node.elements:
            out.extend(strings(element.value))
        return out
    return []


def comment_lines(line: cst.SimpleStatementLine) -> List[cst.EmptyLine]:
    """The comments of a statement line, as EmptyLines (leading, then trailing)."""
    out = [e for e in line.leading_lines if e.comment is not None]
    trailing = line.trailing_whitespace.comment
    if trailing is not None:
        out.append(cst.EmptyLine(comment=trailing))
    return out


def inner_comments(statement: cst.CSTNode) -> List[cst.Comment]:
    """The comments of a statement other than those of the lines above it, in source order.

    For a statement line, the comments inside its statements and at its end;
    for a compound statement (a loop), every comment of its header and body.
    """
    if isinstance(statement, cst.SimpleStatementLine):
        found = [c for small in statement.body for c in m.findall(small, m.Comment())]
        trailing = statement.trailing_whitespace.comment
        return [c for c in found if isinstance(c, cst.Comment)] + ([trailing] if trailing is not None else [])
    if hasattr(statement, "leading_lines"):
        statement = statement.with_changes(leading_lines=[])
    return [c for c in m.findall(statement, m.Comment()) if isinstance(c, cst.Comment)]


def import_compat_clone() -> cst.Import:
    """A new `import compat_clone`."""
    return cst.Import(names=[cst.ImportAlias(name=cst.Name("compat_clone"))])


def compat_clone_attr() -> cst.Attribute:
    """A new `compat_clone.clone_model`."""
    return cst.Attribute(value=cst.Name("compat_clone"), attr=cst.Name("clone_model"))
