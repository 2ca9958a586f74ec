"""The analysis: one walk over a module that decides what to rewrite and what to report.

`Analyzer` follows every name to its import (libcst's scope and qualified
name metadata) and records its decisions in an `Analysis`; `transform`
carries them out. The idioms old code uses instead of `clone_model` (target
updates, hand-rolled clones) are read by `idioms`' matchers and decided here,
where the imports and scopes are known. Imported only after libcst is known
to be installed.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

import libcst as cst
from libcst.metadata import (
    ImportAssignment,
    ParentNodeProvider,
    PositionProvider,
    QualifiedNameProvider,
    QualifiedNameSource,
    Scope,
    ScopeProvider,
)

from compat_clone.tools.migrate import imports
from compat_clone.tools.migrate.build_calls import BuildCall, plan
from compat_clone.tools.migrate.folds import Folds, find_folds
from compat_clone.tools.migrate.idiom_analysis import IdiomAnalysis
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
    root_name,
    strings,
)


@dataclasses.dataclass
class Analysis:
    """What the walk decided.

    Attributes:
        attr_calls: calls whose function becomes `compat_clone.clone_model`.
        name_calls: calls through a `from ... import clone_model` that is rewritten.
        rewritten_refs: the nodes of the rewritten functions (for unused imports).
        from_rewrites: `from ... import` -> indexes of its `clone_model` aliases.
        folds: the `set_weights` lines folded into `copy_weights=True`.
        alias_removals: import -> indexes of the aliases that only served rewritten calls.
        removed_import_lines: the statement lines those removals empty.
        build_calls: `clone_and_build_model` calls rewritten, and how (`build_calls.plan`).
        reports: (line, column, why) of each use left alone, sorted.
        has_compat_clone_import: the module already has `import compat_clone`.
        idiom_clones: hand-rolled clones (`model_from_json(m.to_json())`...) -> their model.
        idiom_lines: target-update lines -> the `compat_clone.copy_weights(...)` statement
            that replaces them.
        idiom_removed: the statements that go with an idiom (their comments are kept).
        notes: (line, column, why) of rewrites whose difference the user should know.
        scoped_lines: lines of hand-rolled clones given `custom_objects` -> the
            `custom_object_scope(...)` expression the rewritten line is wrapped in.
        scope_imports: the `from <keras>.utils import custom_object_scope` lines to add.
    """

    attr_calls: Set[cst.Call] = dataclasses.field(default_factory=set)
    name_calls: Set[cst.Call] = dataclasses.field(default_factory=set)
    rewritten_refs: Set[cst.CSTNode] = dataclasses.field(default_factory=set)
    from_rewrites: Dict[cst.ImportFrom, List[int]] = dataclasses.field(default_factory=dict)
    folds: Folds = dataclasses.field(default_factory=Folds)
    alias_removals: Dict[imports.ImportNode, Set[int]] = dataclasses.field(default_factory=dict)
    removed_import_lines: Set[cst.SimpleStatementLine] = dataclasses.field(default_factory=set)
    build_calls: Dict[cst.Call, BuildCall] = dataclasses.field(default_factory=dict)
    reports: List[Tuple[int, int, str]] = dataclasses.field(default_factory=list)
    has_compat_clone_import: bool = False
    idiom_clones: Dict[cst.Call, cst.BaseExpression] = dataclasses.field(default_factory=dict)
    idiom_lines: Dict[cst.SimpleStatementLine, cst.BaseSmallStatement] = dataclasses.field(
        default_factory=dict
    )
    idiom_removed: Set[cst.CSTNode] = dataclasses.field(default_factory=set)
    notes: List[Tuple[int, int, str]] = dataclasses.field(default_factory=list)
    scoped_lines: Dict[cst.SimpleStatementLine, str] = dataclasses.field(default_factory=dict)
    scope_imports: List[str] = dataclasses.field(default_factory=list)

    @property
    def uses_compat_clone(self) -> bool:
        """Whether the rewritten module calls `compat_clone.<something>`."""
        return bool(self.attr_calls or self.build_calls or self.idiom_clones or self.idiom_lines)

    @property
    def rewrites_anything(self) -> bool:
        """Whether the module changes (every fold goes with a rewritten call or import)."""
        return bool(self.from_rewrites) or self.uses_compat_clone


class Analyzer(cst.CSTVisitor):
    """Fills an `Analysis` in one walk (run it through a `MetadataWrapper`).

    Args:
        is_package_init: the module is a package's `__init__.py`, whose
            imports are kept (they may be re-exports).
    """

    METADATA_DEPENDENCIES = (
        PositionProvider,
        QualifiedNameProvider,
        ScopeProvider,
        ParentNodeProvider,
    )

    def __init__(self, is_package_init: bool) -> None:
        super().__init__()
        self.analysis = Analysis()
        self.is_package_init = is_package_init
        self.bodies: List[Sequence[cst.BaseStatement]] = []
        self.star_imports: List[Tuple[str, int]] = []
        self.scopes: Set[Scope] = set()
        self.exported: Set[str] = set()
        self.unbound_clone_calls: List[cst.Call] = []
        self.split_lines: Set[cst.CSTNode] = set()  # lines of a from-import split in two
        self.assigned_values: Dict[str, List[cst.BaseExpression]] = {}  # `a.b = value`, by `a.b`
        self.idioms = IdiomAnalysis(self)

    # -- metadata
    def report(self, node: cst.CSTNode, why: str) -> None:
        """Records `why` at the position of `node`."""
        pos = self.get_metadata(PositionProvider, node).start
        self.analysis.reports.append((pos.line, pos.column + 1, why))

    def parent(self, node: cst.CSTNode) -> Any:
        """The node that holds `node`; None for the module."""
        return self.get_metadata(ParentNodeProvider, node, None)

    def scope(self, node: cst.CSTNode) -> Optional[Scope]:
        """The scope `node` is in; None where libcst records none."""
        return self.get_metadata(ScopeProvider, node, None)

    def resolved(self, node: cst.CSTNode) -> Optional[Set[str]]:
        """Qualified names `node` refers to through imports; None if it cannot tell.

        libcst resolves a dotted access such as `keras.models.x` through a
        module-level `import keras.models` even where a parameter named
        `keras` shadows it, so the root name's own bindings are checked too.
        """
        root = root_name(node)
        scope = None if root is None else self.scope(root)
        if root is None or scope is None:
            return None
        bindings = scope[root.value]
        if not bindings or not all(isinstance(b, ImportAssignment) for b in bindings):
            return None
        qnames = self.get_metadata(QualifiedNameProvider, node, set())
        if not qnames or any(q.source != QualifiedNameSource.IMPORT for q in qnames):
            return None
        return {q.name for q in qnames}

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

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            name = dotted(target.target)
            if name is not None:
                self.assigned_values.setdefault(name, []).append(node.value)

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
        self._unused_imports()
        foldable = analysis.attr_calls | {
            call for call in analysis.name_calls if self._through_rewritten_import(call)
        }
        foldable |= set(analysis.idiom_clones)
        analysis.folds = find_folds(self.bodies, foldable, analysis.idiom_clones)
        for body in self.bodies:
            self.idioms.target_updates(body)
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
        if isinstance(small, cst.Import) and any(
            dotted(a.name) == "compat_clone" and a.asname is None for a in small.names
        ):
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
        return bool(bindings) and all(
            isinstance(b, ImportAssignment) and b.node in self.analysis.from_rewrites
            for b in bindings
        )

    def _removable_line(self, imp: imports.ImportNode) -> Optional[cst.SimpleStatementLine]:
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
        lines: Dict[imports.ImportNode, cst.SimpleStatementLine] = {}
        for imp, i, bound in imports.aliases_used_only_by(self.scopes, analysis.rewritten_refs):
            if bound.partition(".")[0] in self.exported or bound in self.exported:
                continue
            line = self._removable_line(imp)
            if line is None or imp in analysis.from_rewrites:
                continue
            analysis.alias_removals.setdefault(imp, set()).add(i)
            lines[imp] = line
        analysis.removed_import_lines = imports.emptied_lines(analysis.alias_removals, lines)
