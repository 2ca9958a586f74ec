"""Matchers for target updates written on NumPy arrays or one variable at a time.

Two more spellings of the hard and soft target updates `idioms` reads on host
lists (docs/migrate.md, "Idioms old codebases use"):

* NumPy arithmetic on the weight lists: `mw = np.array(S.get_weights())`,
  `tw = np.array(T.get_weights())`, `T.set_weights(tau * mw + (1 - tau) * tw)`
  (or `T.set_weights(mw)`, or the arrays written inline);
* a loop over zipped variable lists: `for t, s in zip(T.weights, S.weights):`
  with `K.set_value(t, K.get_value(s))`, `t.assign(s)`, or a blend
  `t.assign(tau * s + (1 - tau) * t)`.

Pure readings of libcst nodes, like `idioms`: the analysis checks that the
functions are NumPy's and Keras's, which lists are zipped, and what else uses
the temporaries. Imported only after libcst is known to be installed.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple

import libcst as cst
import libcst.matchers as m

from compat_clone.tools.migrate.idioms import (
    SoftUpdate,
    assigned,
    bare,
    blend,
    get_weights_of,
    names_in,
    set_weights_call,
    single,
    two_names,
)
from compat_clone.tools.migrate.syntax import dotted, last_name

__all__ = ["WHOLE_LISTS", "VARIABLE_LISTS", "find_array_update", "find_variable_loop"]

# The variable lists of a Keras model a loop may zip, and the one that holds what `copy_weights` copies:
# a loop over `trainable_weights` does less; one over `variables` more in Keras 3, where it also holds
# each layer's random-seed state (Dropout's `seed_generator_state`), which `copy_weights` leaves alone.
VARIABLE_LISTS = frozenset(
    {
        "weights",
        "variables",
        "trainable_weights",
        "trainable_variables",
        "non_trainable_weights",
        "non_trainable_variables",
    }
)
WHOLE_LISTS = frozenset({"weights"})

# `s.numpy()`, `s.value()`, `s.read_value()`: the value of variable `s`, as `s` itself gives it
_READS = frozenset({"numpy", "value", "read_value"})


def _array_of(node: cst.CSTNode) -> Optional[Tuple[str, cst.BaseExpression]]:
    """(model, function) when `node` is `np.array(M.get_weights())` (or `asarray`, `dtype=` allowed)."""
    if not isinstance(node, cst.Call) or last_name(node.func) not in ("array", "asarray") or dotted(node.func) is None:
        return None
    if any(a.star or (a.keyword is not None and a.keyword.value != "dtype") for a in node.args):
        return None
    positional = [a for a in node.args if a.keyword is None]
    if len(positional) != 1:
        return None
    model = get_weights_of(positional[0].value)
    return None if model is None else (model, node.func)


def find_array_update(body: Sequence[cst.BaseStatement], last: int) -> Optional[SoftUpdate]:
    """The update on NumPy arrays that ends at `body[last]` (a `T.set_weights(...)` line).

    `T.set_weights(A)` (a hard update) or `T.set_weights(tau * A + (1 - tau) * B)`,
    where `A` and `B` are `np.array(M.get_weights())` written inline or bound to a
    name on the one or two lines just before. The caller checks that `np` is
    NumPy (`SoftUpdate.funcs`) and that the names are used nowhere else.
    """
    found = set_weights_call(single(body[last]) or cst.Pass())
    if found is None:
        return None
    target, arg = found
    used = names_in(arg)
    bound: Dict[str, Tuple[str, cst.BaseExpression]] = {}
    first = last
    while first > 0 and last - first < 2:
        got = assigned(single(body[first - 1]))
        array = None if got is None else _array_of(got[1])
        if got is None or array is None or got[0] not in used or got[0] in bound:
            break
        bound[got[0]] = array
        first -= 1

    def operand(node: cst.CSTNode) -> Optional[Tuple[str, cst.BaseExpression]]:
        if isinstance(node, cst.Name) and node.value in bound:
            return bound[node.value]
        return _array_of(node)

    funcs = [array[1] for array in bound.values()]
    funcs += [c.func for c in m.findall(arg, m.Call()) if isinstance(c, cst.Call) and _array_of(c) is not None]
    whole = operand(arg)
    tau: Optional[cst.BaseExpression] = None
    if whole is not None:
        source = whole[0]
    else:
        coefs = blend(arg)
        if coefs is None:
            return None
        models: Dict[str, str] = {}
        for key in coefs:
            op = operand(cst.parse_expression(key))
            if op is None:
                return None
            models[op[0]] = key
        if len(models) != 2 or target not in models:
            return None
        (source,) = [model for model in models if model != target]
        tau = coefs[models[source]]
    if source == target:
        return None
    return SoftUpdate(
        source, target, tau, first, last, tuple(bound), rule="array-update", funcs=tuple((f, "numpy") for f in funcs)
    )


def _zip_of_lists(node: cst.CSTNode) -> Optional[List[Tuple[str, str]]]:
    """[(model, list), (model, list)] when `node` is `zip(A.weights, B.trainable_weights)` (any `VARIABLE_LISTS`)."""
    if not (isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "zip"):
        return None
    if len(node.args) != 2 or any(a.keyword is not None or a.star for a in node.args):
        return None
    out = []
    for arg in node.args:
        value = arg.value
        if not isinstance(value, cst.Attribute) or value.attr.value not in VARIABLE_LISTS:
            return None
        model = dotted(value.value)
        if model is None:
            return None
        out.append((model, value.attr.value))
    return out


def _only_statement(loop: cst.For) -> Optional[cst.BaseSmallStatement]:
    """The one statement a loop's body holds, else None."""
    body = loop.body
    if isinstance(body, cst.SimpleStatementSuite):
        return body.body[0] if len(body.body) == 1 else None
    if isinstance(body, cst.IndentedBlock) and len(body.body) == 1:
        return single(body.body[0])
    return None


def _read_of(node: cst.CSTNode, variable: str) -> Optional[List[cst.BaseExpression]]:
    """The functions to check when `node` reads `variable`'s value: `s` ([]), `K.get_value(s)`
    ([`K.get_value`]), `s.numpy()` ([]); None when it reads something else."""
    if bare(node) == variable:
        return []
    if not isinstance(node, cst.Call):
        return None
    func = node.func
    if isinstance(func, cst.Attribute) and func.attr.value in _READS and not node.args and bare(func.value) == variable:
        return []
    if last_name(func) == "get_value" and dotted(func) is not None and len(node.args) == 1:
        arg = node.args[0]
        if arg.keyword is None and not arg.star and bare(arg.value) == variable:
            return [func]
    return None


def find_variable_loop(loop: cst.BaseStatement, at: int) -> Optional[SoftUpdate]:
    """The per-variable update `loop` (at index `at` of its block) is, if it is one.

    `for t, s in zip(T.<list>, S.<list>):` (either order, any `VARIABLE_LISTS`)
    whose body is the one statement `t.assign(s)`, `K.set_value(t, K.get_value(s))`
    (hard; `s.numpy()` also reads `s`), or either with a blend of `s` and `t`
    (`t.assign(tau * s + (1 - tau) * t)`). The caller checks the lists, that
    `K.set_value` is Keras's, and that the loop variables are not used after.
    """
    if not isinstance(loop, cst.For) or loop.orelse is not None or loop.asynchronous is not None:
        return None
    names = two_names(loop.target)
    lists = _zip_of_lists(loop.iter)
    step = _only_statement(loop)
    if names is None or lists is None or not isinstance(step, cst.Expr) or not isinstance(step.value, cst.Call):
        return None
    call = step.value
    args = call.args
    if any(a.keyword is not None or a.star for a in args):
        return None
    funcs: List[cst.BaseExpression] = []
    if isinstance(call.func, cst.Attribute) and call.func.attr.value == "assign" and len(args) == 1:
        written, value, rule = bare(call.func.value), args[0].value, "assign-update"
    elif last_name(call.func) == "set_value" and dotted(call.func) is not None and len(args) == 2:
        written, value, rule = bare(args[0].value), args[1].value, "assign-update"
        funcs.append(call.func)
    else:
        return None
    by_name = dict(zip(names, lists))
    if written not in by_name:
        return None
    (read,) = [n for n in names if n != written]
    tau: Optional[cst.BaseExpression] = None
    copied = _read_of(value, read)
    if copied is not None:
        funcs += copied
        rule = "variable-copy"
    else:
        coefs = blend(value)
        if coefs is None:
            return None
        roles: Dict[str, str] = {}
        for key in coefs:
            node = cst.parse_expression(key)
            for name in names:
                reads = _read_of(node, name)
                if reads is not None:
                    roles[name] = key
        if set(roles) != set(names) or len(set(roles.values())) != 2:
            return None
        tau = coefs[roles[read]]
        if names_in(tau) & set(names):
            return None
        for c in m.findall(value, m.Call()):
            if isinstance(c, cst.Call) and last_name(c.func) == "get_value":
                funcs.append(c.func)
    (target, target_list), (source, source_list) = by_name[written], by_name[read]
    if source == target:
        return None
    return SoftUpdate(
        source,
        target,
        tau,
        at,
        at,
        names,
        rule=rule,
        funcs=tuple((f, "keras") for f in funcs),
        lists=(target_list, source_list),
    )
