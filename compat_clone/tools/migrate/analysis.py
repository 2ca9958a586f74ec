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
from compat_clone.tools.migrate.idioms import (
    SERIALIZED_BY,
    assigned,
    bare,
    blend,
    find_soft_update,
    get_weights_of,
    is_trivial,
    serialized_model,
    set_weights_call,
    single,
)
from compat_clone.tools.migrate.rules import (
    ASSIGN_UPDATE_WHY,
    CLONE_AND_BUILD_TARGETS,
    CLONE_MODEL_HOMES,
    CLONE_MODEL_TARGETS,
    CUSTOM_OBJECTS_WHY,
    DEEPCOPY_WHY,
    GRAPH_UPDATE_WHY,
    HARD_UPDATE_NOTE,
    MODEL_CLASSES,
    MULTI_GPU_WHY,
    REMOVED_WHY,
    SOFT_UPDATE_NOTE,
    is_keras_module,
    keras_root,
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
        # `(target_weight, tau * source_weight + (1 - tau) * target_weight)`: a graph-op update
        if len(node.elements) == 2 and self._blends_with(node.elements[1].value, node.elements[0].value):
            self.report(node, GRAPH_UPDATE_WHY)

    def visit_Call(self, node: cst.Call) -> None:
        if self._idiom_call(node):
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
            self._target_updates(body)
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

    # -- the idioms old codebases use (idioms.py; docs/migrate.md)
    def note(self, node: cst.CSTNode, why: str) -> None:
        """Records a note (a rewrite's difference) at the position of `node`."""
        pos = self.get_metadata(PositionProvider, node).start
        self.analysis.notes.append((pos.line, pos.column + 1, why))

    def _idiom_call(self, node: cst.Call) -> bool:
        """Handles a call that is an idiom (a hand-rolled clone, a graph-op update, a deep copy).

        Returns:
            Whether it was one (then nothing else applies to it).
        """
        func = node.func
        name = last_name(func)
        args = node.args
        if name in SERIALIZED_BY:
            return self._hand_rolled_clone(node, name)
        if name == "update" and len(args) == 2 and self._blends_with(args[1].value, args[0].value):
            self.report(node, GRAPH_UPDATE_WHY)  # `K.update(t, tau * s + (1 - tau) * t)`
            return True
        if name == "assign" and isinstance(func, cst.Attribute):
            if len(args) == 2 and self._blends_with(args[1].value, args[0].value):
                self.report(node, GRAPH_UPDATE_WHY)  # `tf.assign(t, ...)`
                return True
            if len(args) == 1 and self._blends_with(args[0].value, func.value):
                self.report(node, ASSIGN_UPDATE_WHY)  # `t.assign(...)`
                return True
        if name == "deepcopy" and len(args) == 1 and self.resolved(func) == {"copy.deepcopy"}:
            arg = dotted(args[0].value)
            if arg is not None and _looks_like_a_model(arg):
                self.report(node, DEEPCOPY_WHY.format(arg=arg))
                return True
        return False

    def _blends_with(self, value: cst.CSTNode, target: cst.CSTNode) -> bool:
        """Whether `value` is a blend of `target` with something else."""
        coefs = blend(value)
        return coefs is not None and bare(target) in coefs

    def _hand_rolled_clone(self, node: cst.Call, function: str) -> bool:
        """Rewrites (or reports) `model_from_json(m.to_json())` and its relatives.

        `function` is `model_from_config`, `model_from_json`, `model_from_yaml`
        (a Keras one, followed through imports) or `from_config` (of Keras's
        `Model`, `Sequential` or `Functional`). The serialization is in the
        call or bound to a name on the line just before it.
        """
        func = node.func
        owner = func.value if function == "from_config" and isinstance(func, cst.Attribute) else func
        if function == "from_config" and owner is func:
            return False
        names = self.resolved(owner)
        if not names:
            return False
        wanted = MODEL_CLASSES if function == "from_config" else {function}
        if not all(keras_root(q) is not None and q.rpartition(".")[2] in wanted for q in names):
            return False
        args = node.args
        if not args or args[0].keyword is not None or args[0].star:
            return False
        custom: Optional[cst.Arg] = None
        for i, arg in enumerate(args[1:]):
            keyword = arg.keyword.value if arg.keyword is not None else ("custom_objects" if i == 0 else "")
            if arg.star or keyword != "custom_objects":
                return False
            custom = arg
        first = args[0].value
        model = serialized_model(function, first)
        removed: Optional[cst.CSTNode] = None
        if model is None and isinstance(first, cst.Name):
            model, removed = self._serialized_just_before(node, first, function)
        if model is None:
            return False
        if custom is not None and not is_trivial(custom.value):
            root = keras_root(next(iter(names)))
            if not self._scope_line(node, custom.value, str(root)):
                argument = code(custom.with_changes(comma=cst.MaybeSentinel.DEFAULT)).strip()
                self.report(
                    node, CUSTOM_OBJECTS_WHY.format(function=code(func), argument=argument, model=code(model))
                )
                return True
        self.analysis.idiom_clones[node] = model
        self.analysis.rewritten_refs.update(chain_nodes(owner))
        if removed is not None:
            self.analysis.idiom_removed.add(removed)
        return True

    def _scope_line(self, call: cst.Call, custom: cst.BaseExpression, root: str) -> bool:
        """Plans `with custom_object_scope(custom):` around the line of `call`; False if it cannot.

        The line must be the call's statement alone (`c = ...`, `return ...`) in
        a block, and `custom_object_scope` either unbound in the module or an
        import; `<root>.utils.custom_object_scope` is imported when unbound.
        """
        line = self.parent(call)
        small = self.parent(line) if isinstance(line, (cst.Assign, cst.Return)) else None
        if small is None or single(small) is not line or small in self.analysis.scoped_lines:
            return False
        module_scope = self.scope(call)
        while module_scope is not None and module_scope.parent is not module_scope:
            module_scope = module_scope.parent
        bindings = module_scope["custom_object_scope"] if module_scope is not None else set()
        if bindings and not all(isinstance(b, ImportAssignment) for b in bindings):
            return False
        if not bindings:
            new_import = f"from {root}.utils import custom_object_scope"
            if self.analysis.scope_imports and self.analysis.scope_imports != [new_import]:
                return False  # two Keras packages in one file: left to the user
            self.analysis.scope_imports = [new_import]
        # `model_from_config(..., custom_objects=None)` works; `custom_object_scope(None)` does not
        value = code(custom) if isinstance(custom, cst.Dict) else f"{code(custom)} or {{}}"
        self.analysis.scoped_lines[small] = f"custom_object_scope({value})"
        return True

    def _serialized_just_before(
        self, call: cst.Call, name: cst.Name, function: str
    ) -> Tuple[Optional[cst.BaseExpression], Optional[cst.CSTNode]]:
        """(model, line) when `name` is bound on the line before `call`'s to the serialization.

        Only a name bound there and used by `call` alone: the line then goes.
        """
        line: Any = call
        while line is not None and not isinstance(line, cst.SimpleStatementLine):
            line = self.parent(line)
        block = None if line is None else self.parent(line)
        body = list(getattr(block, "body", ()))
        at = next((k for k, stmt in enumerate(body) if stmt is line), 0)
        if at == 0:
            return None, None
        prev = assigned(single(body[at - 1]))
        if prev is None or prev[0] != name.value:
            return None, None
        model = serialized_model(function, prev[1])
        if model is None or not self._only_used_in([name.value], body[at - 1 : at + 1]):
            return None, None
        return model, body[at - 1]

    def _only_used_in(self, names: Sequence[str], statements: Sequence[cst.CSTNode]) -> bool:
        """Whether each of `names` is bound and used only within `statements` (consecutive)."""
        scope = self.scope(statements[-1])
        if scope is None:
            return False
        start = self.get_metadata(PositionProvider, statements[0]).start
        end = self.get_metadata(PositionProvider, statements[-1]).end

        def inside(node: cst.CSTNode) -> bool:
            pos = self.get_metadata(PositionProvider, node).start
            return (start.line, start.column) <= (pos.line, pos.column) <= (end.line, end.column)

        for name in names:
            for assignment in scope.assignments[name]:
                node = getattr(assignment, "node", None)
                if node is None or not inside(node):
                    return False
                if not all(inside(ref.node) for ref in assignment.references):
                    return False
            if not all(inside(access.node) for access in scope.accesses[name]):
                return False
        return True

    def _target_updates(self, body: Sequence[cst.BaseStatement]) -> None:
        """Rewrites the hard and soft target updates of one block (`idioms.find_soft_update`)."""
        folds = self.analysis.folds
        for i, line in enumerate(body):
            small = single(line)
            found = None if small is None else set_weights_call(small)
            if found is None or line in folds.removed_lines or not isinstance(line, cst.SimpleStatementLine):
                continue
            target, arg = found
            source = get_weights_of(arg)
            if source is not None:
                if source != target and not _is_a_layer(source, target):
                    self._rewrite_update([line], source, target, None)
                continue
            soft = find_soft_update(body, i)
            if soft is None or _is_a_layer(soft.source, soft.target):
                continue
            statements = list(body[soft.first : soft.last + 1])
            taken = self.analysis.idiom_removed | set(self.analysis.idiom_lines) | folds.removed_lines
            if any(s in taken for s in statements):
                continue
            if soft.temporaries and not self._only_used_in(soft.temporaries, statements):
                continue
            self._rewrite_update(statements, soft.source, soft.target, soft.tau)

    def _rewrite_update(
        self, statements: List[Any], source: str, target: str, tau: Optional[cst.BaseExpression]
    ) -> None:
        """Replaces `statements` (the last a `set_weights` line) by one `copy_weights` call."""
        tau_text = ""
        if tau is not None:
            text = code(tau.with_changes(lpar=[], rpar=[]))
            tau_text = code(tau) if "\n" in text else text
        call = f"compat_clone.copy_weights({source}, {target}"
        call += f", tau={tau_text})" if tau is not None else ")"
        self.analysis.idiom_lines[statements[-1]] = cst.Expr(cst.parse_expression(call))
        self.analysis.idiom_removed.update(statements[:-1])
        if not self._built_alike(source, target):
            why = HARD_UPDATE_NOTE if tau is None else SOFT_UPDATE_NOTE
            self.note(statements[0], why.format(source=source, target=target, tau=tau_text))

    def _built_alike(self, source: str, target: str) -> bool:
        """Whether this file builds `target` as a clone of `source`, or by the same call."""
        source_values = [v for v in self.assigned_values.get(source, []) if isinstance(v, cst.Call)]
        for value in self.assigned_values.get(target, []):
            if not isinstance(value, cst.Call):
                continue
            model = self.analysis.idiom_clones.get(value)
            if model is None and value.args and value.args[0].keyword is None:
                model = value.args[0].value
            func = last_name(value.func) or ""
            if model is not None and dotted(model) == source and (
                "clone" in func.lower() or value in self.analysis.idiom_clones
            ):
                return True
            if any(bare(v) == bare(value) for v in source_values):
                return True
        return False


def _is_a_layer(*names: str) -> bool:
    """Whether one of the dotted names looks like a layer's (`copy_weights` takes models)."""
    return any("layer" in name.rpartition(".")[2].lower() for name in names)


# the last part of a name that looks like a model's: `target_model`, `q_net`, `actor`, ...
_MODEL_WORDS = ("model", "net", "actor", "critic", "policy", "target", "clone")


def _looks_like_a_model(name: str) -> bool:
    last = name.rpartition(".")[2].lower()
    return any(word in last for word in _MODEL_WORDS)
