"""Matchers for the cloning idioms old codebases use instead of calling `clone_model`.

Pure readings of libcst nodes (no metadata): the analysis asks them whether a
statement is a hard or soft target update, or an expression a hand-rolled
clone, and decides with what it knows of the imports. `docs/migrate.md`
("Idioms old codebases use") lists each form with its rewrite. Imported only
after libcst is known to be installed.
"""

from __future__ import annotations

import dataclasses
import re
from typing import AbstractSet, Dict, List, Optional, Sequence, Set, Tuple

import libcst as cst

from compat_clone.tools.migrate.syntax import code, dotted

__all__ = [
    "SERIALIZED_BY",
    "SoftUpdate",
    "literal_value",
    "names_in",
    "two_names",
    "assigned",
    "bare",
    "blend",
    "find_soft_update",
    "get_weights_of",
    "is_trivial",
    "serialized_model",
    "set_weights_call",
    "single",
]

# `1`, `1.`, `1.0`, ...: the `1` of `(1 - tau)`
_ONE = re.compile(r"^1(\.0*)?$")


def bare(node: cst.CSTNode) -> str:
    """The source of `node` without its outer parentheses and whitespace, for comparisons."""
    if isinstance(node, cst.BaseExpression) and (node.lpar or node.rpar):
        node = node.with_changes(lpar=[], rpar=[])
    return re.sub(r"\s+", "", code(node))


class _Names(cst.CSTVisitor):
    def __init__(self) -> None:
        super().__init__()
        self.found: Set[str] = set()

    def visit_Name(self, node: cst.Name) -> None:
        self.found.add(node.value)

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        node.value.visit(self)  # `a.tau` names `a`, not `tau`
        return False


def names_in(node: cst.CSTNode) -> Set[str]:
    """Every plain name `node` reads (`self.tau * k` -> {"self", "k"})."""
    visitor = _Names()
    node.visit(visitor)
    return visitor.found


def _number(node: cst.CSTNode) -> Optional[float]:
    if isinstance(node, (cst.Integer, cst.Float)) and not node.lpar:
        return float(node.value.replace("_", ""))
    return None


def literal_value(node: cst.CSTNode) -> Optional[float]:
    """The value of a number literal, signed and parenthesized or not (`-0.5`, `(2)`); else None.

    Example:

    >>> literal_value(cst.parse_expression("(-1.5)")), literal_value(cst.parse_expression("tau"))
    (-1.5, None)
    """
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, (cst.Minus, cst.Plus)):
        inner = literal_value(node.expression)
        if inner is None:
            return None
        return -inner if isinstance(node.operator, cst.Minus) else inner
    if isinstance(node, (cst.Integer, cst.Float)):
        return float(node.value.replace("_", ""))
    return None


def _complement(node: cst.CSTNode) -> Optional[cst.BaseExpression]:
    """`E` when `node` is `1 - E` (parenthesized or not), else None."""
    if (
        isinstance(node, cst.BinaryOperation)
        and isinstance(node.operator, cst.Subtract)
        and isinstance(node.left, (cst.Integer, cst.Float))
        and _ONE.match(node.left.value)
    ):
        return node.right
    return None


def _terms(node: cst.CSTNode) -> Optional[List[Tuple[cst.BaseExpression, cst.BaseExpression]]]:
    """[(coefficient, operand), (coefficient, operand)] of `c1 * x + c2 * y`, either side of each `*`."""
    if not (isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add)):
        return None
    out = []
    for term in (node.left, node.right):
        if not (isinstance(term, cst.BinaryOperation) and isinstance(term.operator, cst.Multiply)):
            return None
        out.append((term.left, term.right))
    return out


def blend(node: cst.CSTNode) -> Optional[Dict[str, cst.BaseExpression]]:
    """{operand: its coefficient} when `node` is a convex blend of two operands.

    Accepted: `tau * a + (1 - tau) * b` in any order of terms and factors
    (`tau` any expression, `1` written `1`, `1.` or `1.0`), and two number
    literals that sum to 1 (`0.01 * a + 0.99 * b`). Operands are keyed by
    `bare`; which one is the source is the caller's to say.

    Example:

    >>> sorted(blend(cst.parse_expression("t * (1 - tau) + tau * s")))
    ['s', 't']
    """
    terms = _terms(node)
    if terms is None:
        return None
    for (c1, x1), (c2, x2) in (terms, terms[::-1]):
        for coef_x, x in ((c1, x1), (x1, c1)):
            for coef_y, y in ((c2, x2), (x2, c2)):
                rest = _complement(coef_y)
                if rest is not None and bare(rest) == bare(coef_x):
                    return _keyed(x, coef_x, y, coef_y)
                a, b = _number(coef_x), _number(coef_y)
                if a is not None and b is not None and abs(a + b - 1.0) < 1e-12:
                    return _keyed(x, coef_x, y, coef_y)
    return None


def _keyed(
    x: cst.BaseExpression, cx: cst.BaseExpression, y: cst.BaseExpression, cy: cst.BaseExpression
) -> Optional[Dict[str, cst.BaseExpression]]:
    if bare(x) == bare(y):
        return None
    return {bare(x): cx, bare(y): cy}


def method_call(node: cst.CSTNode, method: str, nargs: int) -> Optional[Tuple[str, cst.Call]]:
    """(receiver as dotted text, call) when `node` is `a.b.method(<nargs plain args>)`."""
    if not (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)):
        return None
    if node.func.attr.value != method or len(node.args) != nargs:
        return None
    if any(a.keyword is not None or a.star for a in node.args):
        return None
    receiver = dotted(node.func.value)
    return None if receiver is None else (receiver, node)


def get_weights_of(node: cst.CSTNode) -> Optional[str]:
    """`m` when `node` is `m.get_weights()` (`m` a dotted name)."""
    found = method_call(node, "get_weights", 0)
    return None if found is None else found[0]


def set_weights_call(small: cst.CSTNode) -> Optional[Tuple[str, cst.BaseExpression]]:
    """(target, argument) when `small` is the statement `target.set_weights(argument)`."""
    if not isinstance(small, cst.Expr):
        return None
    found = method_call(small.value, "set_weights", 1)
    return None if found is None else (found[0], found[1].args[0].value)


def single(line: cst.CSTNode) -> Optional[cst.BaseSmallStatement]:
    """The one statement of a statement line, else None."""
    if isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1:
        return line.body[0]
    return None


def assigned(small: Optional[cst.CSTNode]) -> Optional[Tuple[str, cst.BaseExpression]]:
    """(name, value) when `small` is `name = value` with one plain name."""
    if isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name):
        return small.targets[0].target.value, small.value
    return None


@dataclasses.dataclass(frozen=True)
class SoftUpdate:
    """A soft target update found on host lists.

    Attributes:
        source: the source model, as dotted text.
        target: the target model.
        tau: the source's coefficient, as written; None for a hard update (a copy).
        first: the index in its block of the first statement of the idiom.
        last: the index of its last statement (the `target.set_weights(...)` line, or the loop).
        temporaries: the names the idiom binds, which go with it.
        rule: the idiom's rule (`rules.RULES`), for the report when it is not rewritten.
        funcs: (function, package) pairs: each function the idiom calls must be that
            package's (`np.array` NumPy's, `K.set_value` a Keras one) for the idiom to be it.
        lists: for a loop over variables, the lists it zips: (target's, source's), such as
            ("weights", "weights").
    """

    source: str
    target: str
    tau: Optional[cst.BaseExpression]
    first: int
    last: int
    temporaries: Tuple[str, ...]
    rule: str = "list-update"
    funcs: Tuple[Tuple[cst.BaseExpression, str], ...] = ()
    lists: Optional[Tuple[str, str]] = None


def _pair_blend(expr: cst.CSTNode, source_key: str, target_key: str) -> Optional[cst.BaseExpression]:
    """The source's coefficient when `expr` blends exactly `source_key` and `target_key`."""
    coefs = blend(expr)
    if coefs is None or set(coefs) != {source_key, target_key}:
        return None
    return coefs[source_key]


def _zip_of_weights(node: cst.CSTNode) -> Optional[Tuple[str, str]]:
    """(a, b) when `node` is `zip(a.get_weights(), b.get_weights())`."""
    if not (isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "zip"):
        return None
    if len(node.args) != 2 or any(a.keyword is not None or a.star for a in node.args):
        return None
    a, b = get_weights_of(node.args[0].value), get_weights_of(node.args[1].value)
    return None if a is None or b is None else (a, b)


def _comprehension_blend(node: cst.CSTNode, target: str) -> Optional[Tuple[str, cst.BaseExpression]]:
    """(source, tau) when `node` is `[blend(s, t) for s, t in zip(S.get_weights(), T.get_weights())]`."""
    if not isinstance(node, cst.ListComp):
        return None
    comp = node.for_in
    if comp.inner_for_in is not None or comp.ifs or comp.asynchronous is not None:
        return None
    names = two_names(comp.target)
    models = _zip_of_weights(comp.iter)
    if names is None or models is None:
        return None
    by_model = dict(zip(models, names))
    if len(by_model) != 2 or target not in by_model:
        return None
    (source,) = [m for m in models if m != target]
    tau = _pair_blend(node.elt, by_model[source], by_model[target])
    if tau is None or names_in(tau) & set(names):
        return None
    return source, tau


def two_names(node: cst.CSTNode) -> Optional[Tuple[str, str]]:
    if isinstance(node, cst.Tuple) and len(node.elements) == 2:
        a, b = (e.value for e in node.elements)
        if isinstance(a, cst.Name) and isinstance(b, cst.Name) and a.value != b.value:
            return a.value, b.value
    return None


def find_soft_update(body: Sequence[cst.BaseStatement], last: int) -> Optional[SoftUpdate]:
    """The soft update on host lists that ends at `body[last]` (a `T.set_weights(...)` line).

    The forms (`S`, `T` dotted names, `tau` any expression):

    * `T.set_weights([blend for s, t in zip(S.get_weights(), T.get_weights())])`;
    * `new = [that comprehension]` then `T.set_weights(new)`;
    * `new = []`, `for s, t in zip(...): new.append(blend)`, `T.set_weights(new)`;
    * `w = S.get_weights()`, `tw = T.get_weights()` (either order),
      `for i in range(len(tw)): tw[i] = blend(w[i], tw[i])`, `T.set_weights(tw)`.

    The caller checks that the temporaries are used nowhere else.
    """
    found = set_weights_call(single(body[last]) or cst.Pass())
    if found is None:
        return None
    target, arg = found
    found_update = _soft_update_at(body, last, target, arg)
    if found_update is None or names_in(found_update.tau or cst.Pass()) & set(found_update.temporaries):
        return None  # `tau` names something the idiom binds: it would be gone
    return found_update


def _soft_update_at(body: Sequence[cst.BaseStatement], last: int, target: str, arg: cst.BaseExpression) -> Optional[SoftUpdate]:
    """`find_soft_update`'s forms, tried in turn."""
    direct = _comprehension_blend(arg, target)
    if direct is not None:
        return SoftUpdate(direct[0], target, direct[1], last, last, ())
    if not isinstance(arg, cst.Name) or last == 0:
        return None
    name = arg.value
    prev = assigned(single(body[last - 1]))
    if prev is not None and prev[0] == name:
        named = _comprehension_blend(prev[1], target)
        if named is not None:
            return SoftUpdate(named[0], target, named[1], last - 1, last, (name,))
    loop = body[last - 1]
    if not isinstance(loop, cst.For) or loop.orelse is not None or loop.asynchronous is not None:
        return None
    inner = list(loop.body.body) if isinstance(loop.body, cst.IndentedBlock) else []
    if len(inner) != 1:
        return None
    step = single(inner[0])
    return _append_loop(body, last, name, target, loop, step) or _index_loop(body, last, name, target, loop, step)


def _append_loop(
    body: Sequence[cst.BaseStatement],
    last: int,
    name: str,
    target: str,
    loop: cst.For,
    step: Optional[cst.BaseSmallStatement],
) -> Optional[SoftUpdate]:
    """`new = []`, `for s, t in zip(...): new.append(blend)`, `T.set_weights(new)`."""
    if last < 2:
        return None
    start = assigned(single(body[last - 2]))
    if start is None or start[0] != name or not (isinstance(start[1], cst.List) and not start[1].elements):
        return None
    names = two_names(loop.target)
    models = _zip_of_weights(loop.iter)
    if names is None or models is None or not isinstance(step, cst.Expr):
        return None
    appended = method_call(step.value, "append", 1)
    if appended is None or appended[0] != name:
        return None
    by_model = dict(zip(models, names))
    if len(by_model) != 2 or target not in by_model:
        return None
    (source,) = [m for m in models if m != target]
    tau = _pair_blend(appended[1].args[0].value, by_model[source], by_model[target])
    if tau is None:
        return None
    return SoftUpdate(source, target, tau, last - 2, last, (name, *names))


def _index_loop(
    body: Sequence[cst.BaseStatement],
    last: int,
    name: str,
    target: str,
    loop: cst.For,
    step: Optional[cst.BaseSmallStatement],
) -> Optional[SoftUpdate]:
    """`w = S.get_weights()`, `tw = T.get_weights()`, `for i in range(len(..)): tw[i] = blend`."""
    if last < 3 or not isinstance(loop.target, cst.Name):
        return None
    i = loop.target.value
    lists: Dict[str, str] = {}  # list name -> model
    for k in (last - 3, last - 2):
        got = assigned(single(body[k]))
        model = None if got is None else get_weights_of(got[1])
        if got is None or model is None:
            return None
        lists[got[0]] = model
    if len(lists) != 2 or lists.get(name) != target or target not in lists.values():
        return None
    (source_list,) = [n for n in lists if n != name]
    source = lists[source_list]
    if source == target or not _is_range_len(loop.iter, set(lists)):
        return None
    if not (isinstance(step, cst.Assign) and len(step.targets) == 1 and bare(step.targets[0].target) == f"{name}[{i}]"):
        return None
    tau = _pair_blend(step.value, f"{source_list}[{i}]", f"{name}[{i}]")
    if tau is None:
        return None
    return SoftUpdate(source, target, tau, last - 3, last, (name, source_list, i))


def _is_range_len(node: cst.CSTNode, names: AbstractSet[str]) -> bool:
    """Whether `node` is `range(len(x))` with `x` one of `names`."""
    text = bare(node)
    return any(text == f"range(len({n}))" for n in names)


# -- hand-rolled clones: what each Keras function takes, and how it is written


def _model_of_call(node: cst.CSTNode, method: str) -> Optional[cst.BaseExpression]:
    """`m` when `node` is `m.<method>()` (keyword arguments allowed, e.g. `to_json(indent=2)`)."""
    if not (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)):
        return None
    if node.func.attr.value != method or any(a.keyword is None or a.star for a in node.args):
        return None
    model = node.func.value
    return model if dotted(model) is not None else None


def _class_name_of(node: cst.CSTNode) -> Optional[str]:
    """`m` when `node` is `m.__class__.__name__` or `type(m).__name__`."""
    if not (isinstance(node, cst.Attribute) and node.attr.value == "__name__"):
        return None
    owner = node.value
    if isinstance(owner, cst.Attribute) and owner.attr.value == "__class__":
        return dotted(owner.value)
    if isinstance(owner, cst.Call) and isinstance(owner.func, cst.Name) and owner.func.value == "type" and len(owner.args) == 1:
        return dotted(owner.args[0].value)
    return None


def config_dict_model(node: cst.CSTNode) -> Optional[cst.BaseExpression]:
    """`m` when `node` is `{'class_name': m.__class__.__name__, 'config': m.get_config()}`.

    `type(m).__name__` is accepted for the class name; the two keys in either order.
    """
    if not isinstance(node, cst.Dict) or len(node.elements) != 2:
        return None
    entries: Dict[str, cst.BaseExpression] = {}
    for element in node.elements:
        if not isinstance(element, cst.DictElement) or not isinstance(element.key, cst.SimpleString):
            return None
        entries[str(element.key.evaluated_value)] = element.value
    if set(entries) != {"class_name", "config"}:
        return None
    model = _model_of_call(entries["config"], "get_config")
    if model is None or _class_name_of(entries["class_name"]) != dotted(model):
        return None
    return model


# what each hand-rolled clone function deserializes: the method its argument comes from
SERIALIZED_BY = {
    "model_from_config": "get_config",
    "from_config": "get_config",
    "model_from_json": "to_json",
    "model_from_yaml": "to_yaml",
}


def serialized_model(function: str, node: cst.CSTNode) -> Optional[cst.BaseExpression]:
    """The model whose serialization `node` is, as `function` (a `SERIALIZED_BY` key) takes it."""
    if function == "model_from_config":
        return config_dict_model(node)
    return _model_of_call(node, SERIALIZED_BY[function])


def is_trivial(node: Optional[cst.BaseExpression]) -> bool:
    """Whether an optional argument asks nothing: absent, `None`, `{}` or `dict()`."""
    if node is None:
        return True
    if isinstance(node, cst.Name) and node.value == "None":
        return True
    if isinstance(node, cst.Dict) and not node.elements:
        return True
    return bare(node) == "dict()"
