"""The analysis: one walk over a module that decides what to rewrite and what to report.

`Analyzer` follows every name to its import (libcst's scope and qualified
name metadata, read through `walk.Walk`) and records its decisions in an
`Analysis` (`walk`); `transform` carries them out. The idioms old code uses instead of `clone_model` (target
updates, hand-rolled clones) are read by `idioms`' matchers and decided here,
where the imports and scopes are known. Imported only after libcst is known
to be installed.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Set, Tuple

import libcst as cst
from libcst.metadata import ImportAssignment, PositionProvider, Scope

from compat_clone.tools.migrate.build_calls import plan
from compat_clone.tools.migrate.folds import find_folds
from compat_clone.tools.migrate.idiom_analysis import IdiomAnalysis
from compat_clone.tools.migrate.imports import ImportNode, aliases_used_only_by, emptied_lines
from compat_clone.tools.migrate.rules import (
    CLONE_AND_BUILD_TARGETS,
    CLONE_MODEL_HOMES,
    CLONE_MODEL_TARGETS,
    MULTI_GPU_WHY,
    REMOVED_WHY,
    is_keras_module,
)
from compat_clone.tools.migrate.syntax import (
    chain_nodes,
    code,
    dotted,
    import_module_name,
    last_name,
    strings,
)
from compat_clone.tools.migrate.walk import Walk

__all__ = ["Analyzer"]


class Analyzer(Walk):
    """Fills an `Analysis` in one walk (run it through a `MetadataWrapper`).

    Args:
        is_package_init: the module is a package's `__init__.py`, whose
            imports are kept (they may be re-exports).
    """

    def __init__(self, is_package_init: bool) -> None:
        super().__init__()
        self.is_package_init = is_package_init
        self.bodies: List[Sequence[cst.BaseStatement]] = []
        self.star_imports: List[Tuple[str, int]] = []
        self.scopes: Set[Scope] = set()
        self.exported: Set[str] = set()
        self.unbound_clone_calls: List[cst.Call] = []
        self.split_lines: Set[cst.CSTNode] = set()  # lines of a from-import split in two
        self.idioms = IdiomAnalysis(self)

    # -- what a node is
    def _is_build_target(self, node: cst.CSTNode) -> bool:
        """Whether `node` is Keras's `clone_and_build_model`, an attribute reached through imports.

        A bare name (`from ... import clone_and_build_model`) is reported at its import.
        """
        names = self.resolved(node)
        return isinstance(node, cst.Attribute) and bool(names) and names is not None and names <= CLONE_AND_BUILD_TARGETS

    def is_clone_target(self, node: cst.CSTNode) -> bool:
        """Whether `node` is Keras's `clone_model`, reached through imports."""
        names = self.resolved(node)
        return names is not None and bool(names) and names <= CLONE_MODEL_TARGETS

    # -- visits
    def visit_Module(self, node: cst.Module) -> None:
        self.bodies.append(node.body)
        self._add_scope(node)
        for stmt in node.body:
            if isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    self._read_module_statement(small)

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        self.bodies.append(node.body)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._add_scope(node.body)

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._add_scope(node.body)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        module = import_module_name(node)
        if module is None:
            return
        if isinstance(node.names, cst.ImportStar):
            if is_keras_module(module):
                line = self.get_metadata(PositionProvider, node).start.line
                self.star_imports.append((f"from {module} import *", line))
            return
        clone_idx = []
        for i, alias in enumerate(node.names):
            name = dotted(alias.name)
            if name == "clone_model" and module in CLONE_MODEL_HOMES:
                clone_idx.append(i)
            elif name in REMOVED_WHY and is_keras_module(module):
                self.report(alias, REMOVED_WHY[name])
        if not clone_idx:
            return
        if len(clone_idx) == len(node.names) or self._may_split(node, module):
            self.analysis.from_rewrites[node] = clone_idx

    def visit_Tuple(self, node: cst.Tuple) -> None:
        self.idioms.tuple_pair(node)

    def visit_Call(self, node: cst.Call) -> None:
        if self.idioms.call(node):  # a hand-rolled clone, a graph-op update, a deep copy
            return
        func = node.func
        name = last_name(func)
        if name is not None and self.is_clone_target(func):  # also `cm(m)` after `... as cm`
            if isinstance(func, cst.Attribute):
                self.analysis.attr_calls.add(node)
                self.analysis.rewritten_refs.update(chain_nodes(func))
            else:
                self.analysis.name_calls.add(node)
        elif name == "clone_model":
            self._unfollowed_clone_call(node)
        elif name == "multi_gpu_model":
            relocates = any(
                a.keyword is not None
                and a.keyword.value == "cpu_relocation"
                and not (isinstance(a.value, cst.Name) and a.value.value == "False")
                for a in node.args
            )
            self.report(node, ("With `cpu_relocation=True`: " if relocates else "") + MULTI_GPU_WHY)
        elif name == "clone_and_build_model" and self._is_build_target(func):
            decided = plan(node)
            if isinstance(decided, str):
                self.report(node, decided)
            else:  # `compat_clone.clone_model(..., compile=True)`
                self.analysis.build_calls[node] = decided
                self.analysis.rewritten_refs.update(chain_nodes(func))
        elif name in REMOVED_WHY:
            self.report(node, REMOVED_WHY[name])
        elif (
            isinstance(func, cst.Name)
            and func.value in ("getattr", "hasattr")
            and len(node.args) >= 2
            and "clone_model" in strings(node.args[1].value)
        ):
            self.report(
                node,
                f'`{func.value}(..., "clone_model")` looks clone_model up by name; not '
                "followed. Use `compat_clone.clone_model` directly.",
            )

    def visit_Attribute(self, node: cst.Attribute) -> None:
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
    def leave_Module(self, original_node: cst.Module) -> None:
        analysis = self.analysis
        foldable = analysis.attr_calls | {call for call in analysis.name_calls if self._through_rewritten_import(call)}
        foldable |= set(analysis.idiom_clones)
        analysis.folds = find_folds(self.bodies, foldable, analysis.idiom_clones)
        for body in self.bodies:
            self.idioms.target_updates(body)
        self._unused_imports()  # after the updates: an import only a rewritten update used may go
        if self.star_imports:
            star, line = self.star_imports[0]
            for node in self.unbound_clone_calls:
                self.report(
                    node,
                    f"`clone_model` may come from the star import `{star}` (line {line}); "
                    "star imports are not rewritten. Import compat_clone and call "
                    "`compat_clone.clone_model(...)`.",
                )
        analysis.reports.sort()
        analysis.notes.sort()

    # -- helpers
    def _add_scope(self, node: cst.CSTNode) -> None:
        scope = self.scope(node)
        if scope is not None:
            self.scopes.add(scope)

    def _read_module_statement(self, small: cst.BaseSmallStatement) -> None:
        """Notes an `import compat_clone` and the names listed in `__all__`."""
        value: Optional[cst.BaseExpression]
        if isinstance(small, cst.Import) and any(dotted(a.name) == "compat_clone" and a.asname is None for a in small.names):
            self.analysis.has_compat_clone_import = True
        if isinstance(small, cst.Assign):
            targets, value = [t.target for t in small.targets], small.value
        elif isinstance(small, (cst.AnnAssign, cst.AugAssign)):
            targets, value = [small.target], small.value
        else:
            return
        if any(isinstance(t, cst.Name) and t.value == "__all__" for t in targets):
            self.exported.update(strings(value))

    def _may_split(self, node: cst.ImportFrom, module: str) -> bool:
        """Whether `node` may be split in two to move `clone_model` out; reports why not.

        That is possible only on a statement line of its own block.
        """
        line = self.parent(node)
        if not isinstance(line, cst.SimpleStatementLine):
            self.report(
                node,
                f"`from {module} import clone_model` shares a one-line block with other "
                "code; not rewritten: import clone_model from compat_clone by hand.",
            )
            return False
        if line in self.split_lines:  # two such imports on one line: rare, left alone
            self.report(node, "two imports of clone_model on one line; not rewritten.")
            return False
        self.split_lines.add(line)
        return True

    def _unfollowed_clone_call(self, node: cst.Call) -> None:
        """A `clone_model(...)` call not followed to Keras's through an import.

        `x.clone_model(...)` is reported when `x` is not an import it can follow
        (nor `self` or `cls`); another library's is left alone. A bare
        `clone_model(...)` bound nowhere is kept for the star-import check.
        """
        func = node.func
        if isinstance(func, cst.Attribute):
            base = dotted(func.value) or code(func.value)
            # `self.clone_model(...)`, `cls.clone_model(...)`: a method of the user's own class
            if self.resolved(func) is None and base.partition(".")[0] not in ("self", "cls"):
                self.report(
                    node,
                    f"`{base}.clone_model(...)`: cannot tell which module `{base}` is "
                    "(not an import this tool can follow); not rewritten. If it is "
                    "Keras's, call `compat_clone.clone_model(...)` instead.",
                )
        elif isinstance(func, cst.Name):
            scope = self.scope(func)
            if scope is not None and not scope[func.value]:
                self.unbound_clone_calls.append(node)

    def _through_rewritten_import(self, call: cst.Call) -> bool:
        """Whether every binding of the name `call` calls is a from-import that is rewritten."""
        func = call.func
        scope = self.scope(func)
        if not isinstance(func, cst.Name) or scope is None:
            return False
        bindings = scope[func.value]
        return bool(bindings) and all(isinstance(b, ImportAssignment) and b.node in self.analysis.from_rewrites for b in bindings)

    def _removable_line(self, imp: ImportNode) -> Optional[cst.SimpleStatementLine]:
        """The statement line holding `imp` if an import may be removed there."""
        line = self.parent(imp)
        if self.is_package_init or not isinstance(line, cst.SimpleStatementLine):
            return None
        block = self.parent(line)
        if isinstance(block, cst.Module):
            return line
        if isinstance(block, cst.IndentedBlock) and isinstance(self.parent(block), cst.FunctionDef):
            return line
        return None  # inside try/if/with/class: keep (may be a fallback or a re-export)

    def _unused_imports(self) -> None:
        analysis = self.analysis
        if not analysis.rewritten_refs:
            return
        lines: Dict[ImportNode, cst.SimpleStatementLine] = {}
        for imp, i, bound in aliases_used_only_by(self.scopes, analysis.rewritten_refs):
            if bound.partition(".")[0] in self.exported or bound in self.exported:
                continue
            line = self._removable_line(imp)
            if line is None or imp in analysis.from_rewrites:
                continue
            analysis.alias_removals.setdefault(imp, set()).add(i)
            lines[imp] = line
        analysis.removed_import_lines = emptied_lines(analysis.alias_removals, lines)
