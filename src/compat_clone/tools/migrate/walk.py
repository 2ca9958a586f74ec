"""What the migrate walk records and what it knows of a module, shared by its two halves.

`Analysis` is the record of every decision (`transform` carries it out).
`Walk` is the libcst visitor's view of the module it walks: positions,
parents, scopes, names followed to their imports, and the values assigned to
dotted names. `analysis.Analyzer` (calls and imports) is a `Walk` and hands
itself to `idiom_analysis.IdiomAnalysis` (the idioms), which reads the module
through it: both halves stand on this module, neither on the other.
Imported only after libcst is known to be installed.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Dict, List, Optional, Set, Tuple

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

from compat_clone.tools.migrate.build_calls import BuildCall
from compat_clone.tools.migrate.folds import Folds
from compat_clone.tools.migrate.imports import ImportNode
from compat_clone.tools.migrate.syntax import dotted, root_name

__all__ = ["Analysis", "Walk"]


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
        idiom_lines: target-update lines (or loops) -> the `compat_clone.copy_weights(...)`
            statement that replaces them.
        idiom_removed: the statements that go with an idiom (their comments are kept).
        notes: (line, column, why) of rewrites whose difference the user should know.
        scoped_lines: lines of hand-rolled clones given `custom_objects` -> the
            `custom_object_scope(...)` expression the rewritten line is wrapped in.
        scope_imports: the `from <keras>.utils import custom_object_scope` lines to add.
        moved_comments: statement -> the comments from inside what is rewritten in it (an
            expression replaced, a loop body), which go above it.
    """

    attr_calls: Set[cst.Call] = dataclasses.field(default_factory=set)
    name_calls: Set[cst.Call] = dataclasses.field(default_factory=set)
    rewritten_refs: Set[cst.CSTNode] = dataclasses.field(default_factory=set)
    from_rewrites: Dict[cst.ImportFrom, List[int]] = dataclasses.field(default_factory=dict)
    folds: Folds = dataclasses.field(default_factory=Folds)
    alias_removals: Dict[ImportNode, Set[int]] = dataclasses.field(default_factory=dict)
    removed_import_lines: Set[cst.SimpleStatementLine] = dataclasses.field(default_factory=set)
    build_calls: Dict[cst.Call, BuildCall] = dataclasses.field(default_factory=dict)
    reports: List[Tuple[int, int, str]] = dataclasses.field(default_factory=list)
    has_compat_clone_import: bool = False
    idiom_clones: Dict[cst.Call, cst.BaseExpression] = dataclasses.field(default_factory=dict)
    idiom_lines: Dict[cst.BaseStatement, cst.BaseSmallStatement] = dataclasses.field(default_factory=dict)
    idiom_removed: Set[cst.CSTNode] = dataclasses.field(default_factory=set)
    notes: List[Tuple[int, int, str]] = dataclasses.field(default_factory=list)
    scoped_lines: Dict[cst.SimpleStatementLine, str] = dataclasses.field(default_factory=dict)
    scope_imports: List[str] = dataclasses.field(default_factory=list)
    moved_comments: Dict[cst.CSTNode, List[cst.Comment]] = dataclasses.field(default_factory=dict)

    @property
    def uses_compat_clone(self) -> bool:
        """Whether the rewritten module calls `compat_clone.<something>`."""
        return bool(self.attr_calls or self.build_calls or self.idiom_clones or self.idiom_lines)

    @property
    def rewrites_anything(self) -> bool:
        """Whether the module changes (every fold goes with a rewritten call or import)."""
        return bool(self.from_rewrites) or self.uses_compat_clone


class Walk(cst.CSTVisitor):
    """One walk over a module (run it through a `MetadataWrapper`): its `Analysis`, and what a node
    refers to. Subclassed by `analysis.Analyzer`, which decides."""

    METADATA_DEPENDENCIES = (
        PositionProvider,
        QualifiedNameProvider,
        ScopeProvider,
        ParentNodeProvider,
    )

    def __init__(self) -> None:
        super().__init__()
        self.analysis = Analysis()
        self.assigned_values: Dict[str, List[cst.BaseExpression]] = {}  # `a.b = value`, by `a.b`

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

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            name = dotted(target.target)
            if name is not None:
                self.assigned_values.setdefault(name, []).append(node.value)
