"""Finding `c = clone_model(m)` followed by `c.set_weights(m.get_weights())`.

Such a pair is folded into `c = clone_model(m, copy_weights=True)`; this
module only finds the pairs (`find_folds`), `transform` rewrites them.
Imported only after libcst is known to be installed.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Dict, Mapping, Optional, Sequence, Set, Tuple

import libcst as cst

from compat_clone.tools.migrate.syntax import dotted

__all__ = ["Folds", "find_folds"]


@dataclasses.dataclass
class Folds:
    """The clone calls that take `copy_weights=True`, and what goes with them.

    Attributes:
        calls: the clone calls to append `copy_weights=True` to.
        comments: call -> the trailing comment of its `set_weights` line.
        line_pairs: clone line -> the `set_weights` line that follows it.
        removed_lines: the `set_weights` lines that go.
        removed_small: the `set_weights` statements that go from a line
            (`c = clone_model(m); c.set_weights(m.get_weights())`).
    """

    calls: Set[cst.Call] = dataclasses.field(default_factory=set)
    comments: Dict[cst.Call, cst.Comment] = dataclasses.field(default_factory=dict)
    line_pairs: Dict[cst.SimpleStatementLine, cst.SimpleStatementLine] = dataclasses.field(default_factory=dict)
    removed_lines: Set[cst.SimpleStatementLine] = dataclasses.field(default_factory=set)
    removed_small: Set[cst.BaseSmallStatement] = dataclasses.field(default_factory=set)


def find_folds(
    bodies: Sequence[Sequence[cst.BaseStatement]],
    foldable: Set[cst.Call],
    sources: Optional[Mapping[cst.Call, cst.BaseExpression]] = None,
) -> Folds:
    """The folds in each block of statements.

    Args:
        bodies: the statements of every block (module, function, class...).
        foldable: the clone calls that are rewritten to `compat_clone`'s,
            which takes `copy_weights`.
        sources: the model each hand-rolled clone clones, where its
            arguments do not say it (`model_from_json(m.to_json())`).

    Returns:
        The `Folds` found: on one line separated by `;`, or on two
        consecutive lines of one statement each.
    """
    folds = Folds()
    sources = sources or {}
    for body in bodies:
        for i, line in enumerate(body):
            if not isinstance(line, cst.SimpleStatementLine):
                continue
            # `c = clone(m); c.set_weights(m.get_weights())` on one line
            for small, after in zip(line.body, line.body[1:]):
                call = _folded_call(small, after, foldable, sources)
                if call is not None:
                    folds.calls.add(call)
                    folds.removed_small.add(after)
            # ... or on two consecutive lines
            if i + 1 >= len(body) or line in folds.removed_lines:
                continue
            nxt = body[i + 1]
            if len(line.body) != 1 or not isinstance(nxt, cst.SimpleStatementLine):
                continue
            if len(nxt.body) != 1:
                continue
            call = _folded_call(line.body[0], nxt.body[0], foldable, sources)
            if call is not None:
                folds.calls.add(call)
                folds.line_pairs[line] = nxt
                if nxt.trailing_whitespace.comment is not None:
                    folds.comments[call] = nxt.trailing_whitespace.comment
                folds.removed_lines.add(nxt)
    return folds


def _folded_call(
    assign: cst.BaseSmallStatement,
    after: cst.BaseSmallStatement,
    foldable: Set[cst.Call],
    sources: Mapping[cst.Call, cst.BaseExpression],
) -> Optional[cst.Call]:
    """The clone call of `assign` if `after` copies the weights it would take."""
    found = _clone_assignment(assign, foldable, sources)
    if found is None or not _is_set_weights(after, *found[1:]):
        return None
    return found[0]


def _clone_assignment(
    assign: cst.BaseSmallStatement, foldable: Set[cst.Call], sources: Mapping[cst.Call, cst.BaseExpression]
) -> Optional[Tuple[cst.Call, str, str]]:
    """(call, target, source) if `assign` is `target = <foldable call>(source, ...)`."""
    target: Any
    if isinstance(assign, cst.Assign):
        if len(assign.targets) != 1:
            return None
        target = assign.targets[0].target
    elif isinstance(assign, cst.AnnAssign) and assign.value is not None:
        target = assign.target
    else:
        return None
    call = assign.value
    if not isinstance(call, cst.Call) or call not in foldable:
        return None
    source = sources[call] if call in sources else _source_model(call.args)
    t, s = dotted(target), dotted(source)
    if t is None or s is None:
        return None
    # `m = clone_model(m)` rebinds the source (so does `m = clone_model(m.sub)`):
    # the set_weights after it copies the clone onto itself, a no-op.
    if s == t or s.startswith(t + "."):
        return None
    return call, t, s


def _source_model(args: Sequence[cst.Arg]) -> Optional[cst.BaseExpression]:
    """The model a clone call clones; None with `*args` or `copy_weights` given."""
    source = None
    for arg in args:
        if arg.star:
            return None
        if (arg.keyword is None and source is None) or (arg.keyword is not None and arg.keyword.value == "model"):
            source = arg.value
        elif arg.keyword is not None and arg.keyword.value == "copy_weights":
            return None
    return source


def _is_set_weights(small: cst.BaseSmallStatement, target: str, source: str) -> bool:
    """Whether `small` is `<target>.set_weights(<source>.get_weights())`."""
    if not isinstance(small, cst.Expr) or not isinstance(small.value, cst.Call):
        return False
    call = small.value
    func = call.func
    if not (isinstance(func, cst.Attribute) and func.attr.value == "set_weights"):
        return False
    if dotted(func.value) != target or len(call.args) != 1:
        return False
    arg = call.args[0]
    if arg.keyword is not None or arg.star:
        return False
    inner = arg.value
    return (
        isinstance(inner, cst.Call)
        and not inner.args
        and isinstance(inner.func, cst.Attribute)
        and inner.func.attr.value == "get_weights"
        and dotted(inner.func.value) == source
    )
