"""The analysis of the idioms old code uses instead of `clone_model` (docs/migrate.md).

`idioms` reads the forms (a blend, a soft update's statements, a serialized
model); `IdiomAnalysis` decides, with what the walk knows of imports,
scopes and positions, what is rewritten, what is reported and what is noted,
and records it in the `Analysis`. Imported only after libcst is known to be
installed.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

import libcst as cst
import libcst.matchers as m
from libcst.metadata import Assignment, ImportAssignment, PositionProvider

from compat_clone.tools.migrate.idioms import (
    SERIALIZED_BY,
    SoftUpdate,
    assigned,
    bare,
    blend,
    find_soft_update,
    get_weights_of,
    is_trivial,
    literal_value,
    names_in,
    serialized_model,
    set_weights_call,
    single,
)
from compat_clone.tools.migrate.rules import (
    ASSIGN_UPDATE_WHY,
    CUSTOM_OBJECTS_WHY,
    DEEPCOPY_WHY,
    GRAPH_UPDATE_WHY,
    HARD_UPDATE_NOTE,
    MODEL_CLASSES,
    SOFT_UPDATE_NOTE,
    TAU_RANGE_WHY,
    keras_root,
    partial_lists_why,
    temporaries_why,
)
from compat_clone.tools.migrate.syntax import chain_nodes, code, dotted, inner_comments, last_name, root_name
from compat_clone.tools.migrate.update_forms import WHOLE_LISTS, find_array_update, find_variable_loop
from compat_clone.tools.migrate.walk import Analysis, Walk

__all__ = ["IdiomAnalysis"]


class IdiomAnalysis:
    """The idioms' part of the walk: called by the `Analyzer` that owns it.

    Args:
        analyzer: the walk (`walk.Walk`), for its metadata and its `Analysis`.
    """

    def __init__(self, analyzer: Walk) -> None:
        self.analyzer = analyzer
        # `t.assign(blend)` calls reported as `assign-update`, by call: a loop decided later takes its report back
        self.assign_reports: Dict[cst.Call, Tuple[int, int, str]] = {}

    @property
    def analysis(self) -> Analysis:
        """The `Analysis` the walk fills."""
        return self.analyzer.analysis

    def tuple_pair(self, node: cst.Tuple) -> None:
        """Reports `(target_weight, tau * source_weight + (1 - tau) * target_weight)`: a graph op."""
        if len(node.elements) == 2 and self.blends_with(node.elements[1].value, node.elements[0].value):
            self.analyzer.report(node, GRAPH_UPDATE_WHY)

    def note(self, node: cst.CSTNode, why: str) -> None:
        """Records a note (a rewrite's difference) at the position of `node`."""
        pos = self.analyzer.get_metadata(PositionProvider, node).start
        self.analysis.notes.append((pos.line, pos.column + 1, why))

    def call(self, node: cst.Call) -> bool:
        """Handles a call that is an idiom (a hand-rolled clone, a graph-op update, a deep copy).

        Returns:
            Whether it was one (then nothing else applies to it).
        """
        func = node.func
        name = last_name(func)
        args = node.args
        if name in SERIALIZED_BY:
            return self._hand_rolled_clone(node, name)
        if name == "update" and len(args) == 2 and self.blends_with(args[1].value, args[0].value):
            self.analyzer.report(node, GRAPH_UPDATE_WHY)  # `K.update(t, tau * s + (1 - tau) * t)`
            return True
        if name == "assign" and isinstance(func, cst.Attribute):
            if len(args) == 2 and self.blends_with(args[1].value, args[0].value):
                self.analyzer.report(node, GRAPH_UPDATE_WHY)  # `tf.assign(t, ...)`
                return True
            if len(args) == 1 and self.blends_with(args[0].value, func.value):
                self.analyzer.report(node, ASSIGN_UPDATE_WHY)  # `t.assign(...)`
                self.assign_reports[node] = self.analysis.reports[-1]
                return True
        if name == "deepcopy" and len(args) == 1 and self.analyzer.resolved(func) == {"copy.deepcopy"}:
            arg = dotted(args[0].value)
            if arg is not None and _looks_like_a_model(arg) and not self._plain_data(args[0].value):
                self.analyzer.report(node, DEEPCOPY_WHY.format(arg=arg))
                return True
        return False

    def _plain_data(self, node: cst.CSTNode) -> bool:
        """Whether the name `node` is bound, everywhere in its scope, to plain data (a literal, a comprehension,
        `dict(...)`, a NumPy array) or is a parameter annotated as such: its deep copy is no Keras model's."""
        if isinstance(node, cst.Attribute):
            return self._plain_attribute(node)
        scope = self.analyzer.scope(node) if isinstance(node, cst.Name) else None
        bindings = list(scope[node.value]) if scope is not None and isinstance(node, cst.Name) else []
        if not bindings:
            return False
        for binding in bindings:
            if not isinstance(binding, Assignment):  # an import, a builtin
                return False
            where = self.analyzer.parent(binding.node) if isinstance(binding.node, cst.Name) else binding.node
            if isinstance(where, cst.AssignTarget):
                value = getattr(self.analyzer.parent(where), "value", None)
            elif isinstance(where, cst.AnnAssign):
                value = where.value if where.value is not None else where.annotation.annotation
            elif isinstance(where, cst.Param) and where.annotation is not None:
                value = where.annotation.annotation
            else:
                return False
            if value is None or not self._is_plain_value(value):
                return False
        return True

    def _plain_attribute(self, node: cst.Attribute) -> bool:
        """`self.x` whose every assignment in its class (`self.x = ...`, `self.x: T = ...`) is plain data."""
        name = dotted(node)
        owner = self.analyzer.parent(node)
        while owner is not None and not isinstance(owner, cst.ClassDef):
            owner = self.analyzer.parent(owner)
        if owner is None or name is None or not name.startswith("self."):
            return False
        values: List[cst.CSTNode] = []
        for assign in m.findall(owner, m.Assign() | m.AnnAssign() | m.AugAssign()):
            targets = [t.target for t in assign.targets] if isinstance(assign, cst.Assign) else [getattr(assign, "target", None)]
            if any(t is not None and dotted(t) == name for t in targets):
                value = getattr(assign, "value", None)
                if isinstance(assign, cst.AugAssign) or value is None:
                    return False
                values.append(value)
        return bool(values) and all(self._is_plain_value(v) for v in values)

    def _is_plain_value(self, value: cst.CSTNode) -> bool:
        if isinstance(value, _PLAIN_NODES):
            return True
        head = value.value if isinstance(value, cst.Subscript) else value  # `Dict[str, int]`
        if isinstance(value, cst.Call):
            head = value.func
        name = dotted(head) if isinstance(head, (cst.Name, cst.Attribute)) else None
        if name is None:
            return False
        resolved = self.analyzer.resolved(head) or set()
        if any(q.partition(".")[0] == "numpy" for q in resolved):
            return True
        # a builtin (resolves to nothing imported) or one of the standard library's containers
        return name.rpartition(".")[2] in _PLAIN_TYPES and all(q.partition(".")[0] in _STDLIB for q in resolved)

    def blends_with(self, value: cst.CSTNode, target: cst.CSTNode) -> bool:
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
        names = self.analyzer.resolved(owner)
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
                self.analyzer.report(node, CUSTOM_OBJECTS_WHY.format(function=code(func), argument=argument, model=code(model)))
                return True
        self.analysis.idiom_clones[node] = model
        self._keep_comments(node)
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
        line = self.analyzer.parent(call)
        small = self.analyzer.parent(line) if isinstance(line, (cst.Assign, cst.Return)) else None
        if small is None or single(small) is not line or small in self.analysis.scoped_lines:
            return False
        module_scope = self.analyzer.scope(call)
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
            line = self.analyzer.parent(line)
        block = None if line is None else self.analyzer.parent(line)
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
        scope = self.analyzer.scope(statements[-1])
        if scope is None:
            return False
        start = self.analyzer.get_metadata(PositionProvider, statements[0]).start
        end = self.analyzer.get_metadata(PositionProvider, statements[-1]).end

        def inside(node: cst.CSTNode) -> bool:
            pos = self.analyzer.get_metadata(PositionProvider, node).start
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

    def target_updates(self, body: Sequence[cst.BaseStatement]) -> None:
        """Rewrites (or reports) the hard and soft target updates of one block.

        The forms: `T.set_weights(S.get_weights())`, soft updates on host lists
        (`idioms.find_soft_update`), updates by NumPy arithmetic and loops over
        zipped variable lists (`update_forms`).
        """
        folds = self.analysis.folds
        for i, line in enumerate(body):
            loop = find_variable_loop(line, i)
            if loop is not None:
                self._decide(body, loop)
                continue
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
            soft = find_soft_update(body, i) or find_array_update(body, i)
            if soft is not None:
                self._decide(body, soft)

    def _decide(self, body: Sequence[cst.BaseStatement], update: SoftUpdate) -> None:
        """Rewrites `update` where that is the same operation, reports it (by its rule) where it is not."""
        if _is_a_layer(update.source, update.target) or not all(self._is_of(f, package) for f, package in update.funcs):
            return  # not models, or not NumPy's / Keras's functions: not the idiom
        statements = list(body[update.first : update.last + 1])
        taken = self.analysis.idiom_removed | set(self.analysis.idiom_lines) | self.analysis.folds.removed_lines
        if any(s in taken for s in statements):
            return
        tau_text = None if update.tau is None else _tau_text(update.tau)
        why: Optional[str] = None
        value = None if update.tau is None else literal_value(update.tau.with_changes(lpar=[], rpar=[]))
        if value is not None and not 0.0 < value <= 1.0:
            why = TAU_RANGE_WHY.format(tau=tau_text, source=update.source, target=update.target)
        elif update.lists is not None and not set(update.lists) <= WHOLE_LISTS:
            why = partial_lists_why(update.rule, update.source, update.target, tau_text, update.lists)
        elif update.temporaries and not self._only_used_in(update.temporaries, statements):
            names = ", ".join(f"`{n}`" for n in update.temporaries)
            why = temporaries_why(update.rule, update.source, update.target, tau_text, names)
        self._take_back_assign_report(statements[-1])
        if why is not None:
            self.analyzer.report(statements[-1], why)
            return
        self._rewrite_update(statements, update.source, update.target, update.tau)

    def _is_of(self, func: cst.BaseExpression, package: str) -> bool:
        """Whether `func` is, through the imports, a function of `package` ("numpy", or "keras": any Keras)."""
        names = self.analyzer.resolved(func)
        if not names:
            return False
        if package == "keras":
            return all(keras_root(q) is not None for q in names)
        return all(q.partition(".")[0] == package for q in names)

    def _take_back_assign_report(self, statement: cst.CSTNode) -> None:
        """Drops the generic `assign-update` report of a loop now decided on its own."""
        for call in m.findall(statement, m.Call()):
            report = self.assign_reports.pop(call, None) if isinstance(call, cst.Call) else None
            if report is not None and report in self.analysis.reports:
                self.analysis.reports.remove(report)

    def _keep_comments(self, node: cst.CSTNode) -> None:
        """Keeps the comments inside `node`, which is replaced: they go above its statement."""
        comments = [c for c in m.findall(node, m.Comment()) if isinstance(c, cst.Comment)]
        statement: Any = node
        while statement is not None and not isinstance(statement, cst.BaseStatement):
            statement = self.analyzer.parent(statement)
        if comments and statement is not None:
            self.analysis.moved_comments.setdefault(statement, []).extend(comments)

    def _rewrite_update(self, statements: List[Any], source: str, target: str, tau: Optional[cst.BaseExpression]) -> None:
        """Replaces `statements` (the last a `set_weights` line or a loop) by one `copy_weights` call.

        The comments inside them are kept (the removed statements' by the
        transform; the last one's, from inside its expression, go above it), and
        the imports only they used may go.
        """
        tau_text = "" if tau is None else _tau_text(tau)
        call = f"compat_clone.copy_weights({source}, {target}"
        call += f", tau={tau_text})" if tau is not None else ")"
        last = statements[-1]
        self.analysis.idiom_lines[last] = cst.Expr(cst.parse_expression(call))
        if isinstance(last, cst.SimpleStatementLine):
            comments = [c for small in last.body for c in m.findall(small, m.Comment()) if isinstance(c, cst.Comment)]
        else:
            comments = inner_comments(last)
        if comments:
            self.analysis.moved_comments.setdefault(last, []).extend(comments)
        self.analysis.idiom_removed.update(statements[:-1])
        # the names only the removed code reads (`np`, `K`) may take their imports with them; not those the
        # new call reads (the models, `tau`)
        kept = {source.partition(".")[0], target.partition(".")[0], *names_in(tau or cst.Pass())}
        for statement in statements:
            for node in m.findall(statement, m.Name() | m.Attribute()):
                root = root_name(node)
                if root is not None and root.value not in kept:
                    self.analysis.rewritten_refs.add(node)
        if not self._built_alike(source, target):
            why = HARD_UPDATE_NOTE if tau is None else SOFT_UPDATE_NOTE
            self.note(statements[0], why.format(source=source, target=target, tau=tau_text))

    def _built_alike(self, source: str, target: str) -> bool:
        """Whether this file builds `target` as a clone of `source`, or by the same call."""
        source_values = [v for v in self.analyzer.assigned_values.get(source, []) if isinstance(v, cst.Call)]
        for value in self.analyzer.assigned_values.get(target, []):
            if not isinstance(value, cst.Call):
                continue
            model = self.analysis.idiom_clones.get(value)
            if model is None and value.args and value.args[0].keyword is None:
                model = value.args[0].value
            func = last_name(value.func) or ""
            if model is not None and dotted(model) == source and ("clone" in func.lower() or value in self.analysis.idiom_clones):
                return True
            if any(bare(v) == bare(value) for v in source_values):
                return True
        return False


def _tau_text(tau: cst.BaseExpression) -> str:
    """`tau` as the `tau=` argument writes it: without its parentheses, unless it spans lines."""
    text = code(tau.with_changes(lpar=[], rpar=[]))
    return code(tau) if "\n" in text else text


def _is_a_layer(*names: str) -> bool:
    """Whether one of the dotted names looks like a layer's (`copy_weights` takes models)."""
    return any("layer" in name.rpartition(".")[2].lower() for name in names)


# the last part of a name that looks like a model's: `target_model`, `q_net`, `actor`, ...
_MODEL_WORDS = ("model", "net", "actor", "critic", "policy", "target", "clone")


# What a deep copy of is no Keras model's: literals and comprehensions, and the builtin and standard containers
# (called or named as an annotation).
_PLAIN_NODES = (
    cst.Dict,
    cst.List,
    cst.Set,
    cst.Tuple,
    cst.SimpleString,
    cst.ConcatenatedString,
    cst.FormattedString,
    cst.Integer,
    cst.Float,
    cst.DictComp,
    cst.ListComp,
    cst.SetComp,
)
_PLAIN_TYPES = frozenset(
    {
        "dict",
        "list",
        "set",
        "tuple",
        "frozenset",
        "str",
        "bytes",
        "int",
        "float",
        "OrderedDict",
        "defaultdict",
        "deque",
        "Counter",
        "Dict",
        "List",
        "Set",
        "Tuple",
        "FrozenSet",
        "Mapping",
        "MutableMapping",
        "Sequence",
    }
)
_STDLIB = ("collections", "typing", "builtins")


def _looks_like_a_model(name: str) -> bool:
    last = name.rpartition(".")[2].lower()
    return any(word in last for word in _MODEL_WORDS)
