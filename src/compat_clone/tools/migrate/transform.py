"""The rewrite: carries out what the `Analysis` decided, keeping formatting and comments.

Imported only after libcst is known to be installed.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Set, Tuple

import libcst as cst

from compat_clone.tools.migrate.build_calls import rewrite
from compat_clone.tools.migrate.edits import (
    append_copy_weights,
    compat_clone_import_line,
    drop_aliases,
    insert_import,
)
from compat_clone.tools.migrate.imports import drops_every_alias
from compat_clone.tools.migrate.syntax import comment_lines, compat_clone_attr, import_compat_clone, inner_comments
from compat_clone.tools.migrate.walk import Analysis

__all__ = ["Transformer"]


class Transformer(cst.CSTTransformer):
    """Rewrites a module as `analysis` says (run it on the module that was analysed).

    Statements that go are removed by their block, which keeps their leading
    comments (libcst would drop them with the statement).

    Args:
        analysis: what the `Analyzer` decided for this module.
    """

    def __init__(self, analysis: Analysis) -> None:
        super().__init__()
        self.analysis = analysis
        self.split_off: Dict[cst.CSTNode, cst.SimpleStatementLine] = {}  # import -> line after it
        self.needs_import = analysis.uses_compat_clone and not analysis.has_compat_clone_import
        self.emptied: Set[cst.CSTNode] = set()  # original lines whose statements all went
        self.comment_placed: Set[cst.Comment] = set()  # fold comments put on the new argument

    def on_leave(self, original_node: cst.CSTNode, updated_node: cst.CSTNode) -> Any:
        result: Any = super().on_leave(original_node, updated_node)
        comments = self.analysis.moved_comments.get(original_node)
        if comments and isinstance(result, cst.CSTNode) and hasattr(result, "leading_lines"):
            # comments from inside a rewritten expression or loop: above the statement, in their order
            moved = [cst.EmptyLine(comment=c) for c in comments]
            result = result.with_changes(leading_lines=[*result.leading_lines, *moved])
        return result

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        updated = updated_node
        model = self.analysis.idiom_clones.get(original_node)
        if model is not None:  # `model_from_json(m.to_json())` -> `compat_clone.clone_model(m)`
            updated = cst.Call(func=compat_clone_attr(), args=[cst.Arg(value=model)])
        if original_node in self.analysis.attr_calls:
            updated = updated.with_changes(func=compat_clone_attr())
        build = self.analysis.build_calls.get(original_node)
        if build is not None:
            updated = rewrite(original_node, updated, build).with_changes(func=compat_clone_attr())
        if original_node in self.analysis.folds.calls:
            comment = self.analysis.folds.comments.get(original_node)
            updated, placed = append_copy_weights(updated, comment)
            if placed and comment is not None:
                self.comment_placed.add(comment)
        return updated

    def leave_ImportFrom(self, original_node: cst.ImportFrom, updated_node: cst.ImportFrom) -> Any:
        idx = self.analysis.from_rewrites.get(original_node)
        if idx is None:
            return self._drop_aliases(original_node, updated_node)
        names: Any = original_node.names
        if len(idx) == len(names):
            return updated_node.with_changes(module=cst.Name("compat_clone"), relative=())
        updated, comments = drop_aliases(updated_node, set(idx))
        self.split_off[original_node] = compat_clone_import_line([names[i] for i in idx], comments)
        return updated

    def leave_Import(self, original_node: cst.Import, updated_node: cst.Import) -> Any:
        return self._drop_aliases(original_node, updated_node)

    def leave_SimpleStatementLine(self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine) -> Any:
        replacement = self.analysis.idiom_lines.get(original_node)
        if replacement is not None:  # a target update -> `compat_clone.copy_weights(...)`
            return updated_node.with_changes(body=[replacement])
        scope = self.analysis.scoped_lines.get(original_node)
        if scope is not None:  # a hand-rolled clone given custom_objects
            return self._in_scope(original_node, updated_node, scope)
        removals = self.analysis.alias_removals
        body = [
            u
            for o, u in zip(original_node.body, updated_node.body)
            if o not in self.analysis.folds.removed_small and not drops_every_alias(o, removals)
        ]
        if not body:
            # libcst drops a line left empty; the block removes it instead (`_body`),
            # keeping its leading comments
            self.emptied.add(original_node)
            return updated_node
        if len(body) != len(updated_node.body):
            body[-1] = body[-1].with_changes(semicolon=cst.MaybeSentinel.DEFAULT)
        updated = updated_node.with_changes(body=body)
        removed = self.analysis.folds.line_pairs.get(original_node)
        return updated if removed is None else self._take_comments(removed, updated)

    def leave_IndentedBlock(self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock) -> cst.IndentedBlock:
        new_body, carry = self._new_body(original_node, updated_node, is_module=False)
        if not new_body:
            new_body = [cst.SimpleStatementLine(body=[cst.Pass()], leading_lines=carry)]
            carry = []
        return updated_node.with_changes(body=new_body, footer=[*carry, *updated_node.footer])

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        new_body, carry = self._new_body(original_node, updated_node, is_module=True)
        extra = [cst.parse_statement(line) for line in self.analysis.scope_imports]
        if self.needs_import or extra:
            new_body = insert_import(new_body, extra, compat_clone=self.needs_import)
        return updated_node.with_changes(body=new_body, footer=[*carry, *updated_node.footer])

    # -- helpers
    def _in_scope(self, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine, scope: str) -> cst.With:
        """`with <scope>:` holding `updated` (its comments folded in as for any clone line)."""
        removed = self.analysis.folds.line_pairs.get(original)
        if removed is not None:
            updated = self._take_comments(removed, updated)
        return cst.With(
            items=[cst.WithItem(item=cst.parse_expression(scope))],
            body=cst.IndentedBlock(body=[updated.with_changes(leading_lines=[])]),
            leading_lines=updated.leading_lines,
        )

    def _drop_aliases(self, original: Any, updated: Any) -> Any:
        """`updated` without the aliases that served only rewritten calls, if some stay."""
        drop = self.analysis.alias_removals.get(original)
        if drop and len(drop) < len(original.names):
            return drop_aliases(updated, drop)[0]
        return updated

    def _take_comments(self, removed: cst.SimpleStatementLine, updated: cst.SimpleStatementLine) -> cst.SimpleStatementLine:
        """`updated` (a clone line) with the comments of the `set_weights` line folded into it.

        The trailing comment goes on the new argument's line (done already) or
        at the end of the clone line when it has none; the others above it.
        """
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
            updated = updated.with_changes(leading_lines=[*updated.leading_lines, *comments])
        return updated

    def _new_body(self, original: Any, updated: Any, is_module: bool) -> Tuple[List[Any], List[cst.EmptyLine]]:
        """A block's new statements, and the comment lines left over for its footer."""
        new_body, carry, at = self._body(original, updated)
        if at is not None:
            self._fill_placeholder(new_body, at, is_module)
        if new_body and isinstance(new_body[-1], cst.SimpleStatementLine) and not new_body[-1].body:
            carry = [*new_body.pop().leading_lines, *carry]
        return new_body, carry

    def _body(self, original: Any, updated: Any) -> Tuple[List[Any], List[Any], Optional[int]]:
        """New statements, lines left over for the footer, index of a removed import."""
        new_body: List[Any] = []
        carry: List[Any] = []
        removed_import_at: Optional[int] = None
        for o, u in zip(original.body, updated.body):
            if o in self.analysis.folds.removed_lines:
                continue  # its comments went onto the clone line
            if o in self.analysis.idiom_removed:  # part of an idiom: its comments go on
                carry.extend(u.leading_lines)
                carry.extend(cst.EmptyLine(comment=c) for c in inner_comments(o))
                continue
            replacement = self.analysis.idiom_lines.get(o)
            if replacement is not None and not isinstance(o, cst.SimpleStatementLine):
                # a loop -> one `compat_clone.copy_weights(...)` line (its comments moved above by `on_leave`)
                u = cst.SimpleStatementLine(body=[replacement], leading_lines=u.leading_lines)
            if o in self.emptied:
                if removed_import_at is None and o in self.analysis.removed_import_lines:
                    removed_import_at = len(new_body)
                    new_body.append(cst.SimpleStatementLine(body=[], leading_lines=[*carry, *u.leading_lines]))
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

    def _fill_placeholder(self, new_body: List[Any], at: int, is_module: bool) -> None:
        """Fills (or drops) the placeholder left at `at` where an import was removed."""
        placeholder = new_body[at]
        if is_module and self.needs_import:
            new_body[at] = placeholder.with_changes(body=[import_compat_clone()])
            self.needs_import = False
            return
        del new_body[at]
        if at < len(new_body):
            new_body[at] = new_body[at].with_changes(leading_lines=[*placeholder.leading_lines, *new_body[at].leading_lines])
        else:
            new_body.append(cst.SimpleStatementLine(body=[], leading_lines=placeholder.leading_lines))
