"""The `--to keras3` analysis: one walk that decides what moves to Keras 3 and what is reported.

Names are followed to their imports with libcst's scope and qualified-name
metadata (`walk.Walk`); where an old name lives in Keras 3 is `keras3_rules`'
data. The walk collects imports, attribute chains and calls; `leave_Module`
decides, once every import of the module is known, and `keras3_transform`
carries the decisions out. Imported only after libcst is known to be installed.
"""

from __future__ import annotations

import dataclasses
from typing import Dict, List, Mapping, Optional, Set, Tuple

import libcst as cst
import libcst.matchers as m
from libcst.metadata import ImportAssignment, PositionProvider, Scope

from compat_clone.tools.migrate.imports import ImportNode, aliases_used_only_by, bound_name
from compat_clone.tools.migrate.keras3_api import KERAS3_NAMES
from compat_clone.tools.migrate.keras3_rules import (
    BACKEND_FIXES,
    GENERATOR_METHODS,
    GENERATOR_WORKER_ARGS,
    OPS,
    SAVE_SUFFIXES,
    backend_rule,
    is_keras3_module,
    is_optimizer_class,
    keras3_target,
    keras_rest,
    message,
    removed_fix,
)
from compat_clone.tools.migrate.syntax import chain_nodes, code, dotted, import_module_name, root_name
from compat_clone.tools.migrate.walk import Walk

__all__ = ["AliasKey", "Keras3Analysis", "Keras3Analyzer", "moves"]

# (import, alias index): one name an import binds.
AliasKey = Tuple[ImportNode, int]


@dataclasses.dataclass
class Keras3Analysis:
    """What the walk decided.

    Attributes:
        replace: expression node -> the expression written instead (a chain, a call's function, a method name).
        keywords: argument -> the keyword it gets (`lr` -> `learning_rate`, a positional one named).
        dropped: the arguments that go (`save_format=` a path already says).
        appended: call -> (keyword, value source) written out at its end.
        aliases: (import, alias index) -> (the Keras 3 name it imports, the name it binds); the import's
            aliases are regrouped by module (`keras3_transform`).
        removed: (import, alias index) of the aliases whose every use was rewritten, which go.
        keras_import: whether `import keras` is to be added.
        anchor: the module-level line after which it goes (the first Keras or TensorFlow import), if any.
        reports: (line, column, why, rule) of each use left for a fix by hand, sorted.
    """

    replace: Dict[cst.CSTNode, cst.BaseExpression] = dataclasses.field(default_factory=dict)
    keywords: Dict[cst.Arg, str] = dataclasses.field(default_factory=dict)
    dropped: Set[cst.Arg] = dataclasses.field(default_factory=set)
    appended: Dict[cst.Call, List[Tuple[str, str]]] = dataclasses.field(default_factory=dict)
    aliases: Dict[AliasKey, Tuple[str, str]] = dataclasses.field(default_factory=dict)
    removed: Set[AliasKey] = dataclasses.field(default_factory=set)
    keras_import: bool = False
    anchor: Optional[cst.SimpleStatementLine] = None
    reports: List[Tuple[int, int, str, str]] = dataclasses.field(default_factory=list)

    @property
    def changes(self) -> bool:
        """Whether the module changes."""
        return bool(self.replace or self.keywords or self.dropped or self.appended or self.removed or self.keras_import) or any(
            moves(imp, i, target) for (imp, i), (target, _) in self.aliases.items()
        )


def moves(imp: ImportNode, i: int, target: str) -> bool:
    """Whether alias `i` of `imp` imports something else once it imports `target` (its bound name is kept)."""
    alias = list(imp.names)[i]  # type: ignore[arg-type]
    name = dotted(alias.name) or ""
    if isinstance(imp, cst.Import):
        return target != name
    return target != f"{import_module_name(imp)}.{name}"


class Keras3Analyzer(Walk):
    """Fills a `Keras3Analysis` in one walk (run it through a `MetadataWrapper`).

    Args:
        is_package_init: the module is a package's `__init__.py`, whose imports are kept.
    """

    def __init__(self, is_package_init: bool) -> None:
        super().__init__()
        self.is_package_init = is_package_init
        self.k3 = Keras3Analysis()
        self.imports: List[ImportNode] = []
        self.chains: List[cst.Attribute] = []
        self.calls: List[cst.Call] = []
        self.scopes: Set[Scope] = set()
        self.functions: Dict[str, cst.FunctionDef] = {}
        self.keras_tensors: Set[Tuple[Scope, str]] = set()
        self.handled: Set[cst.CSTNode] = set()  # call functions a call rule decided
        self.refs: Set[cst.CSTNode] = set()  # chain nodes that no longer go through their import
        self.reported_aliases: Set[str] = set()  # names bound by an import already reported
        self.uses_keras = False
        self.blocked: Set[AliasKey] = set()  # imports kept as they are (`_block`)

    # -- the walk: collect
    def visit_Module(self, node: cst.Module) -> None:
        self._add_scope(node)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._add_scope(node.body)
        self.functions.setdefault(node.name.value, node)

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._add_scope(node.body)

    def visit_Import(self, node: cst.Import) -> None:
        self.imports.append(node)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        self.imports.append(node)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        parent = self.parent(node)
        if isinstance(parent, cst.Attribute) and parent.value is node:
            return  # not the whole chain
        if isinstance(parent, (cst.ImportAlias, cst.Import, cst.ImportFrom)):
            return
        self.chains.append(node)

    def visit_Call(self, node: cst.Call) -> None:
        self.calls.append(node)

    def visit_Assign(self, node: cst.Assign) -> None:
        super().visit_Assign(node)
        value = node.value
        if not isinstance(value, cst.Call):
            return
        # `x = Input(...)`, `h = Dense(3)(x)`: a KerasTensor
        target = self._target(value.func)
        if isinstance(value.func, cst.Call) or target in ("keras.Input", "keras.layers.Input"):
            for t in node.targets:
                if isinstance(t.target, cst.Name):
                    scope = self.scope(t.target)
                    if scope is not None:
                        self.keras_tensors.add((scope, t.target.value))

    # -- after the walk: decide
    def leave_Module(self, original_node: cst.Module) -> None:
        for imp in self.imports:
            self._plan_import(imp)
        # A first pass finds the imports some use of which has no Keras 3 home (`K.shape` through
        # `from tensorflow.keras import backend as K`): those imports stay as they are, so the uses left for a
        # fix by hand keep working where they did (tf.keras of TensorFlow >= 2.16 still has them); the second
        # pass decides with that known.
        planned = self.k3  # the imports' plans and reports only, so far
        self.k3 = Keras3Analysis(aliases=dict(planned.aliases), reports=list(planned.reports))
        self._uses()
        aliases = {k: v for k, v in planned.aliases.items() if k not in self.blocked}
        self.k3 = Keras3Analysis(aliases=aliases, reports=list(planned.reports))
        self.handled, self.refs = set(), set()
        self._uses()
        self._unused_imports()
        if self.k3.keras_import and self._binds_keras(original_node):
            self.k3.keras_import = False
        self.k3.anchor = self._anchor(original_node)
        self.k3.reports.sort()

    def _uses(self) -> None:
        for call in self.calls:
            self._call(call)
        for chain in self.chains:
            if chain not in self.handled:
                self._chain(chain)

    def _block(self, root: Optional[cst.Name]) -> None:
        """Keeps the import binding `root` as it is: one of its uses has no Keras 3 home."""
        scope = None if root is None else self.scope(root)
        if root is None or scope is None:
            return
        for assignment in scope[root.value]:
            key = self._alias_key(assignment) if isinstance(assignment, ImportAssignment) else None
            if key is not None:
                self.blocked.add(key)

    # -- helpers: reading
    def _add_scope(self, node: cst.CSTNode) -> None:
        scope = self.scope(node)
        if scope is not None:
            self.scopes.add(scope)

    def _qualified(self, node: cst.CSTNode) -> Optional[str]:
        names = self.resolved(node)
        return next(iter(names)) if names is not None and len(names) == 1 else None

    def _target(self, node: cst.CSTNode) -> Optional[str]:
        """The Keras 3 name `node` refers to, if it refers to a Keras name through an import."""
        q = self._qualified(node)
        return None if q is None else keras3_target(q)

    def _report(self, node: cst.CSTNode, rule: str, why: str) -> None:
        pos = self.get_metadata(PositionProvider, node).start
        self.k3.reports.append((pos.line, pos.column + 1, why, rule))

    def _keras_name_free(self, node: cst.CSTNode) -> bool:
        """Whether `keras` at `node` is, or may become, Keras 3's `keras` (bound nowhere else)."""
        scope = self.scope(node)
        if scope is None:
            return False
        for assignment in scope["keras"]:
            if not isinstance(assignment, ImportAssignment):
                return False
            key = self._alias_key(assignment)
            if key is None or self.k3.aliases.get(key, ("",))[0] != "keras":
                return False
        return True

    def _alias_key(self, assignment: ImportAssignment) -> Optional[AliasKey]:
        imp = assignment.node
        if not isinstance(imp, (cst.Import, cst.ImportFrom)) or isinstance(imp.names, cst.ImportStar):
            return None
        for i, alias in enumerate(imp.names):
            if bound_name(alias) == assignment.name:
                return imp, i
        return None

    def _root_target(self, root: cst.Name) -> Optional[str]:
        """The Keras 3 module the import binding `root` will import, if that import is rewritten."""
        scope = self.scope(root)
        if scope is None:
            return None
        targets = set()
        for assignment in scope[root.value]:
            key = self._alias_key(assignment) if isinstance(assignment, ImportAssignment) else None
            if key is None or key not in self.k3.aliases:
                return None
            targets.add(self.k3.aliases[key][0])
        return targets.pop() if len(targets) == 1 else None

    # -- imports
    def _plan_import(self, imp: ImportNode) -> None:
        if isinstance(imp.names, cst.ImportStar):
            module = import_module_name(imp) if isinstance(imp, cst.ImportFrom) else None
            if module is not None and keras_rest(module) is not None and keras3_target(module) != module:
                home = keras3_target(module) or "their Keras 3 modules"
                self._report(
                    imp,
                    "k3-import",
                    f"`from {module} import *`: a star import of an old Keras module; not rewritten (which names it "
                    f"brings cannot be read). Fix: import the names you use from {home}.",
                )
            return
        module = "" if isinstance(imp, cst.Import) else import_module_name(imp)
        if module is None:
            return
        if self._imports_keras_or_tf(imp):
            self.uses_keras = True
        for i, alias in enumerate(imp.names):
            name = dotted(alias.name) or ""
            qualified = name if isinstance(imp, cst.Import) else f"{module}.{name}"
            if keras_rest(qualified) is None:
                continue
            self.uses_keras = True
            bound = bound_name(alias)
            if isinstance(imp, cst.Import) and alias.asname is None and "." in name:
                continue  # `import keras.models` binds the package: its chains are moved one by one
            target = keras3_target(qualified)
            if target is None:
                self._report_removed(alias, qualified)
                self.reported_aliases.add(bound)
                continue
            if isinstance(imp, cst.Import) and not is_keras3_module(target):
                continue
            self.k3.aliases[(imp, i)] = (target, bound)

    def _report_removed(self, node: cst.CSTNode, qualified: str) -> None:
        rest = keras_rest(qualified) or ""
        if rest.startswith("backend."):
            name = rest.partition(".")[2]
            rule = backend_rule(name)
            self._report(node, rule, message(rule, f"`{code(node)}`", BACKEND_FIXES.get(name, "")))
        else:
            self._report(node, "k3-removed-api", message("k3-removed-api", f"`{qualified}`", removed_fix(qualified)))

    def _removable_line(self, imp: ImportNode) -> Optional[cst.SimpleStatementLine]:
        """The line `imp` stands on, if an import may be removed or split there: at module or function level,
        not in a package's `__init__.py`, and with no comment (a comment stays where it was)."""
        line = self.parent(imp)
        if self.is_package_init or not isinstance(line, cst.SimpleStatementLine):
            return None
        if any(e.comment is not None for e in line.leading_lines) or m.findall(line, m.Comment()):
            return None
        block = self.parent(line)
        if isinstance(block, cst.Module) or (
            isinstance(block, cst.IndentedBlock) and isinstance(self.parent(block), cst.FunctionDef)
        ):
            return line
        return None

    def _unused_imports(self) -> None:
        if not self.refs:
            return
        for imp, i, _ in aliases_used_only_by(self.scopes, self.refs):
            if self._removable_line(imp) is not None:
                self.k3.removed.add((imp, i))

    def _binds_keras(self, module: cst.Module) -> bool:
        """Whether a module-level import binds `keras` to Keras 3's `keras` once rewritten (and stays)."""
        for (imp, i), (target, bound) in self.k3.aliases.items():
            line = self.parent(imp)
            if bound == "keras" and target == "keras" and (imp, i) not in self.k3.removed and line in module.body:
                return True
        return False

    def _anchor(self, module: cst.Module) -> Optional[cst.SimpleStatementLine]:
        """The first module-level line importing Keras or TensorFlow: `import keras` goes after it (after any
        `os.environ["KERAS_BACKEND"] = ...` above it)."""
        for stmt in module.body:
            if isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    if isinstance(small, (cst.Import, cst.ImportFrom)) and self._imports_keras_or_tf(small):
                        return stmt
        return None

    def _imports_keras_or_tf(self, imp: ImportNode) -> bool:
        if isinstance(imp, cst.ImportFrom):
            module = import_module_name(imp) or ""
            return module.partition(".")[0] in ("keras", "tensorflow", "tf_keras")
        return any((dotted(a.name) or "").partition(".")[0] in ("keras", "tensorflow", "tf_keras") for a in imp.names)

    # -- chains: `tf.keras.layers.Dense`, `keras.engine.topology.Layer`
    def _chain(self, node: cst.Attribute) -> None:
        q = self._qualified(node)
        if q is None or keras_rest(q) is None:
            return
        root = root_name(node)
        if root is None:
            return
        self.uses_keras = True
        target = keras3_target(q)
        if target is None:
            self._block(root)
            if root.value not in self.reported_aliases:
                self._report_removed(node, q)
            return
        key = self._root_key(root)
        if key is not None and key in self.blocked:
            return  # its import stays: the chain keeps working through it
        self._move_chain(node, root, target)

    def _root_key(self, root: cst.Name) -> Optional[AliasKey]:
        scope = self.scope(root)
        if scope is None:
            return None
        keys = [self._alias_key(a) for a in scope[root.value] if isinstance(a, ImportAssignment)]
        return keys[0] if len(keys) == 1 else None

    def _move_chain(self, node: cst.CSTNode, root: cst.Name, target: str) -> bool:
        """Writes the chain `node` as `target`: through its own root where its import moves there, else through
        `keras` (then `import keras` is added). False, reported, where `keras` means something else there."""
        bound = self._root_target(root)
        if bound is not None and (target == bound or target.startswith(bound + ".")):
            new = root.value + target[len(bound) :]
        elif self._keras_name_free(node):
            new = target
            self.k3.keras_import = True
            self.refs.update(chain_nodes(node))
        else:
            self._report(
                node,
                "k3-import",
                f"`{code(node)}` is `{target}` in Keras 3, but `keras` is bound to something else here; not rewritten. "
                f"Fix: import Keras 3 as `keras` and write `{target}`.",
            )
            return False
        if new != code(node):
            self.k3.replace[node] = cst.parse_expression(new)
        return True

    # -- calls
    def _call(self, call: cst.Call) -> None:
        func = call.func
        q = self._qualified(func)
        rest = None if q is None else keras_rest(q)
        if q is not None and rest is not None:
            if rest.startswith("backend.") and "." not in rest[8:]:
                self._backend_call(call, rest[8:])
            else:
                target = keras3_target(q)
                if target is not None and is_optimizer_class(target):
                    self._optimizer(call)
                elif target == "keras.layers.Lambda":
                    self._lambda(call)
                if target is not None and target.startswith("keras.layers."):
                    self._layer_weights(call)
            return
        if q is not None and q.startswith("tensorflow."):
            self._tf_op(call, q)
            return
        if isinstance(func, cst.Attribute) and q is None and self.uses_keras:
            self._method(call, func)

    def _backend_call(self, call: cst.Call, name: str) -> None:
        func = call.func
        root = root_name(func)
        if name in OPS:
            op = OPS[name]
            plan = _map_args(call, op.params, op.only or op.params, op.renames)
            if plan is not None and name == "clip" and not _literal_bounds(call):
                plan = None
            if plan is None:
                self._block(root)
                self.handled.add(func)
                fix = f"write `keras.ops.{op.op}(...)` with the arguments of its signature"
                self._report(call, "k3-backend-op", message("k3-backend-op", f"`{code(func)}(...)`", fix))
                return
            if root is None or not self._move_chain(func, root, f"keras.ops.{op.op}"):
                self.handled.add(func)
                return
            self.handled.add(func)
            self.k3.keywords.update(plan)
            given = {a.keyword.value for a in call.args if a.keyword is not None} | set(op.params[: _positional(call)])
            extra = [(op.renames.get(p, p), v) for p, v in op.explicit.items() if p not in given]
            if extra:
                self.k3.appended[call] = extra
        elif name not in KERAS3_NAMES["keras.backend"]:
            self._block(root)
            self.handled.add(func)
            self._report_removed(func, f"keras.backend.{name}")

    def _optimizer(self, call: cst.Call) -> None:
        names = {a.keyword.value for a in call.args if a.keyword is not None}
        for arg in call.args:
            if arg.keyword is None:
                continue
            if arg.keyword.value == "lr" and "learning_rate" not in names:
                self.k3.keywords[arg] = "learning_rate"
            elif arg.keyword.value == "decay":
                self._report(arg, "k3-optimizer-decay", message("k3-optimizer-decay", f"`{code(call.func)}(..., decay=...)`"))

    def _layer_weights(self, call: cst.Call) -> None:
        for arg in call.args:
            if arg.keyword is not None and arg.keyword.value == "weights":
                self._report(arg, "k3-layer-weights", message("k3-layer-weights", f"`{code(call.func)}(..., weights=...)`"))

    def _lambda(self, call: cst.Call) -> None:
        if not call.args:
            return
        body: Optional[cst.CSTNode] = call.args[0].value
        if isinstance(body, cst.Name):
            body = self.functions.get(body.value)
        if body is None:
            return
        for inner in m.findall(body, m.Call()):
            q = self._qualified(inner.func) if isinstance(inner, cst.Call) else None
            if q is not None and q.startswith("tensorflow.") and keras_rest(q) is None:
                self._report(call, "k3-lambda-tf", message("k3-lambda-tf", f"`Lambda` calling `{code(inner.func)}`"))  # type: ignore[attr-defined]
                return

    def _tf_op(self, call: cst.Call, q: str) -> None:
        for arg in call.args:
            value = arg.value
            if isinstance(value, cst.Name):
                scope = self.scope(value)
                if scope is not None and (scope, value.value) in self.keras_tensors:
                    what = f"`{code(call.func)}({value.value}, ...)` on the KerasTensor `{value.value}`"
                    self._report(call, "k3-tf-on-keras-tensor", message("k3-tf-on-keras-tensor", what))
                    return

    def _method(self, call: cst.Call, func: cst.Attribute) -> None:
        name = func.attr.value
        if name in GENERATOR_METHODS:
            self._generator(call, func)
        elif name == "save":
            self._save(call)
        elif name == "add_loss" and not self._in_call_method(call):
            self._report(call, "k3-add-loss", message("k3-add-loss", f"`{code(func)}(...)`"))
        elif name == "add_metric":
            self._report(call, "k3-add-metric", message("k3-add-metric", f"`{code(func)}(...)`"))
        elif name == "reset_states" and not call.args:
            self._report(call, "k3-reset-states", message("k3-reset-states", f"`{code(func)}()`"))

    def _generator(self, call: cst.Call, func: cst.Attribute) -> None:
        new, params, explicit = GENERATOR_METHODS[func.attr.value]
        workers = [a.keyword.value for a in call.args if a.keyword is not None and a.keyword.value in GENERATOR_WORKER_ARGS]
        workers += [
            params[i]
            for i, a in enumerate(call.args)
            if a.keyword is None and i < len(params) and params[i] in GENERATOR_WORKER_ARGS
        ]
        if workers:
            what = f"`{code(func)}(..., {'=..., '.join(workers)}=...)`"
            self._report(call, "k3-generator-workers", message("k3-generator-workers", what))
            return
        plan = _map_args(call, params, params, {"generator": "x"}, name_from=1)
        if plan is None:
            self._report(call, "k3-generator-method", message("k3-generator-method", f"`{code(func)}(...)`"))
            return
        # positional arguments after the generator are passed by name (`fit`'s order differs)
        self.k3.keywords.update(plan)
        self.k3.replace[func.attr] = cst.Name(new)
        given = {a.keyword.value for a in call.args if a.keyword is not None} | set(params[: _positional(call)])
        extra = [(p, v) for p, v in explicit.items() if p not in given]
        if extra:
            self.k3.appended[call] = extra

    def _save(self, call: cst.Call) -> None:
        path_arg = next((a for a in call.args if a.keyword is None or a.keyword.value == "filepath"), None)
        fmt = next((a for a in call.args if a.keyword is not None and a.keyword.value == "save_format"), None)
        path = _string(path_arg.value) if path_arg is not None else None
        if fmt is not None:
            value = _string(fmt.value)
            if value in SAVE_SUFFIXES and path is not None and path.endswith(SAVE_SUFFIXES[value]):
                self.k3.dropped.add(fmt)
                return
            self._report(
                call, "k3-save-path", message("k3-save-path", f"`{code(call.func)}(..., save_format={code(fmt.value)})`")
            )
        elif path is not None and "." not in path.rstrip("/").rpartition("/")[2]:
            self._report(call, "k3-save-path", message("k3-save-path", f"`{code(call.func)}({path!r})`, a folder"))

    def _in_call_method(self, node: cst.CSTNode) -> bool:
        parent = self.parent(node)
        while parent is not None:
            if isinstance(parent, cst.FunctionDef):
                return parent.name.value == "call"
            parent = self.parent(parent)
        return False


def _positional(call: cst.Call) -> int:
    return sum(1 for a in call.args if a.keyword is None and not a.star)


def _map_args(
    call: cst.Call, params: Tuple[str, ...], allowed: Tuple[str, ...], renames: Mapping[str, str], name_from: Optional[int] = None
) -> Optional[Dict[cst.Arg, str]]:
    """The new keyword of each argument of `call` that gets one, None when an argument does not map.

    A keyword argument gets its renamed keyword; a positional one keeps its place (`keras.ops` takes the same
    order) unless its index is `name_from` or more, then it is passed by name. `*args`, `**kwargs`, an
    unknown keyword, one past `params` or one not `allowed` do not map.
    """
    plan: Dict[cst.Arg, str] = {}
    for i, arg in enumerate(call.args):
        if arg.star:
            return None
        if arg.keyword is not None:
            name = arg.keyword.value
        elif i < len(params):
            name = params[i]
        else:
            return None
        if name not in allowed:
            return None
        new = renames.get(name, name)
        if (arg.keyword is not None and new != name) or (arg.keyword is None and name_from is not None and i >= name_from):
            plan[arg] = new
    return plan


def _literal_bounds(call: cst.Call) -> bool:
    """Whether `K.clip`'s bounds are number literals with min <= max (then `keras.ops.clip` is the same)."""
    values = [a.value for a in call.args[1:3]]
    numbers = [_number(v) for v in values]
    return len(numbers) == 2 and None not in numbers and numbers[0] <= numbers[1]  # type: ignore[operator]


def _number(node: cst.BaseExpression) -> Optional[float]:
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        inner = _number(node.expression)
        return None if inner is None else -inner
    if isinstance(node, (cst.Integer, cst.Float)):
        return float(node.evaluated_value)
    return None


def _string(node: cst.BaseExpression) -> Optional[str]:
    if isinstance(node, cst.SimpleString):
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    return None
