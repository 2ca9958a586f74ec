"""The `--to keras3` rewrite: carries out what `keras3.Keras3Analyzer` decided, keeping formatting and comments.

`migrate_keras3` runs the walk and the rewrite on one module. Imported only
after libcst is known to be installed.
"""

from __future__ import annotations

from typing import Any, Dict, List, Set, Tuple

import libcst as cst
import libcst.matchers as m
from libcst.metadata import MetadataWrapper

from compat_clone.tools.migrate.edits import append_keyword, drop_aliases, insert_import
from compat_clone.tools.migrate.imports import ImportNode
from compat_clone.tools.migrate.keras3 import Keras3Analysis, Keras3Analyzer, moves

__all__ = ["Keras3Transformer", "migrate_keras3"]


def migrate_keras3(module: cst.Module, is_package_init: bool) -> Tuple[List[Tuple[int, int, str, str]], bytes]:
    """Moves one parsed module to Keras 3.

    Args:
        module: the module (`codemod.parse`).
        is_package_init: the module is a package's `__init__.py`, whose imports are kept.

    Returns:
        The reports, as (line, column, why, rule), and the new source (the module's own bytes when nothing
        moves).

    Example:

    >>> from compat_clone.tools.migrate.codemod import parse
    >>> reports, new = migrate_keras3(parse(b"from tensorflow import keras\\n"), False)
    >>> new
    b'import keras\\n'
    """
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    analyzer = Keras3Analyzer(is_package_init)
    wrapper.visit(analyzer)
    k3 = analyzer.k3
    if not k3.changes:
        return k3.reports, module.bytes
    return k3.reports, wrapper.module.visit(Keras3Transformer(k3)).bytes


class Keras3Transformer(cst.CSTTransformer):
    """Rewrites a module as `k3` says (run it on the module that was analysed).

    Args:
        k3: what the `Keras3Analyzer` decided for this module.
    """

    def __init__(self, k3: Keras3Analysis) -> None:
        super().__init__()
        self.k3 = k3
        self.by_import: Dict[ImportNode, Dict[int, str]] = {}
        for (imp, i), (target, _) in k3.aliases.items():
            self.by_import.setdefault(imp, {})[i] = target
        self.removed: Dict[ImportNode, Set[int]] = {}
        for imp, i in k3.removed:
            self.removed.setdefault(imp, set()).add(i)
        self.new_lines: Dict[ImportNode, List[str]] = {}  # import -> the lines added after (or instead of) it
        self.emptied: Set[ImportNode] = set()  # imports that lose every alias
        self.keras_placed = False
        self.comments: Dict[ImportNode, List[cst.Comment]] = {}  # import -> comments of the aliases it lost

    def on_leave(self, original_node: cst.CSTNode, updated_node: cst.CSTNode) -> Any:
        new = self.k3.replace.get(original_node)
        if new is not None:
            return new
        return super().on_leave(original_node, updated_node)

    def leave_Arg(self, original_node: cst.Arg, updated_node: cst.Arg) -> cst.Arg:
        keyword = self.k3.keywords.get(original_node)
        if keyword is None:
            return updated_node
        equal = updated_node.equal
        if not isinstance(equal, cst.AssignEqual):
            space = cst.SimpleWhitespace("")
            equal = cst.AssignEqual(whitespace_before=space, whitespace_after=space)
        return updated_node.with_changes(keyword=cst.Name(keyword), equal=equal)

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.Call:
        args = [u for o, u in zip(original_node.args, updated_node.args) if o not in self.k3.dropped]
        if len(args) != len(updated_node.args):
            if args and original_node.args[-1] in self.k3.dropped:
                args[-1] = args[-1].with_changes(comma=updated_node.args[-1].comma)
                if not isinstance(args[-1].comma, cst.Comma):
                    args[-1] = args[-1].with_changes(whitespace_after_arg=updated_node.args[-1].whitespace_after_arg)
            updated_node = updated_node.with_changes(args=args)
        for keyword, value in self.k3.appended.get(original_node, ()):
            updated_node = append_keyword(updated_node, keyword, cst.parse_expression(value))
        return updated_node

    def leave_Import(self, original_node: cst.Import, updated_node: cst.Import) -> Any:
        targets = self.by_import.get(original_node, {})
        names = list(updated_node.names)
        for i, target in targets.items():
            if moves(original_node, i, target):
                alias = names[i]
                bound = alias.evaluated_alias or alias.evaluated_name
                asname = None if bound == target else cst.AsName(name=cst.Name(bound))
                names[i] = alias.with_changes(name=cst.parse_expression(target), asname=asname)
        updated_node = updated_node.with_changes(names=names)
        return self._drop(original_node, updated_node, self.removed.get(original_node, set()))

    def leave_ImportFrom(self, original_node: cst.ImportFrom, updated_node: cst.ImportFrom) -> Any:
        if isinstance(original_node.names, cst.ImportStar):
            return updated_node
        targets = self.by_import.get(original_node, {})
        removed = self.removed.get(original_node, set())
        moving = {i: t for i, t in targets.items() if i not in removed and moves(original_node, i, t)}
        if not moving:
            return self._drop(original_node, updated_node, removed)
        modules = {t.rpartition(".")[0] for t in moving.values()}
        every = set(range(len(original_node.names)))
        if not removed and set(moving) == every and len(modules) == 1 and "" not in modules:
            # one new home for every name: only the module changes (comments and layout kept)
            return updated_node.with_changes(module=cst.parse_expression(modules.pop()), relative=())
        self.new_lines[original_node] = _import_lines(original_node, moving)
        return self._drop(original_node, updated_node, removed | set(moving))

    def _drop(self, original: ImportNode, updated: Any, drop: Set[int]) -> Any:
        """`updated` less the aliases `drop`; the comments that ended their lines go above the new lines."""
        if not drop:
            return updated
        if len(drop) == len(original.names):  # type: ignore[arg-type]
            self.emptied.add(original)
            found = [c for c in m.findall(updated, m.Comment()) if isinstance(c, cst.Comment)]
            self.comments[original] = found
            return updated
        new, self.comments[original] = drop_aliases(updated, drop)
        return new

    def leave_SimpleStatementLine(self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine) -> Any:
        body = [u for o, u in zip(original_node.body, updated_node.body) if o not in self.emptied]
        added = [_line(text) for o in original_node.body for text in self.new_lines.get(o, ())]  # type: ignore[call-overload]
        if self.k3.keras_import and original_node is self.k3.anchor:
            added.append(_line("import keras"))  # after the first Keras or TensorFlow import
            self.keras_placed = True
        if len(body) == len(updated_node.body) and not added:
            return updated_node
        moved = [cst.EmptyLine(comment=c) for o in original_node.body for c in self.comments.get(o, ())]  # type: ignore[call-overload]
        if moved and added:
            added[0] = added[0].with_changes(leading_lines=moved)
        lines: List[cst.SimpleStatementLine] = []
        if body:
            body[-1] = body[-1].with_changes(semicolon=cst.MaybeSentinel.DEFAULT)
            lines.append(updated_node.with_changes(body=body))
        elif added:  # the first new line takes the old line's place: its blank lines, comments and ending
            added[0] = added[0].with_changes(
                leading_lines=[*updated_node.leading_lines, *added[0].leading_lines],
                trailing_whitespace=updated_node.trailing_whitespace,
            )
        lines += added
        if not lines:
            return cst.RemovalSentinel.REMOVE
        return cst.FlattenSentinel(lines)

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        if not self.k3.keras_import or self.keras_placed:
            return updated_node
        return updated_node.with_changes(body=insert_import(list(updated_node.body), [_line("import keras")], compat_clone=False))


def _import_lines(imp: cst.ImportFrom, moving: Dict[int, str]) -> List[str]:
    """The import lines for the aliases of `imp` that move, one per new module, in their order."""
    names = list(imp.names)  # type: ignore[arg-type]
    by_module: Dict[str, List[str]] = {}
    plain: List[str] = []
    for i in sorted(moving):
        alias = names[i]
        module, _, name = moving[i].rpartition(".")
        bound = alias.evaluated_alias
        if not module:  # `from tensorflow import keras [as k]`
            plain.append(f"import {name}" + (f" as {bound}" if bound and bound != name else ""))
            continue
        by_module.setdefault(module, []).append(name + (f" as {bound}" if bound and bound != name else ""))
    lines = plain + [f"from {module} import {', '.join(found)}" for module, found in by_module.items()]
    return lines


def _line(text: str) -> cst.SimpleStatementLine:
    stmt = cst.parse_statement(text + "\n")
    assert isinstance(stmt, cst.SimpleStatementLine)
    return stmt
