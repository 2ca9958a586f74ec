"""The node edits of the rewrite: an argument appended, aliases dropped, an import added.

Each keeps the formatting and the comments of what it edits. Imported only
after libcst is known to be installed.
"""

from __future__ import annotations

from typing import Any, List, Optional, Sequence, Set, Tuple

import libcst as cst

from compat_clone.tools.migrate.syntax import import_compat_clone

__all__ = ["append_copy_weights", "append_keyword", "compat_clone_import_line", "drop_aliases", "insert_import"]


def append_copy_weights(call: cst.Call, comment: Optional[cst.Comment] = None) -> Tuple[cst.Call, bool]:
    """`call` with `copy_weights=True` appended (`append_keyword`).

    Args:
        call: a call with at least one argument.
        comment: the comment to end the new argument's line with, if any.

    Returns:
        The new call, and whether `comment` went on the new argument's line.
    """
    return _append(call, "copy_weights", cst.Name("True"), comment)


def append_keyword(call: cst.Call, keyword: str, value: cst.BaseExpression) -> cst.Call:
    """`call` with `keyword=value` appended, laid out like its other arguments.

    Args:
        call: a call with at least one argument.
        keyword: the argument's name.
        value: its value.

    Returns:
        The new call.
    """
    return _append(call, keyword, value, None)[0]


def _append(call: cst.Call, keyword: str, value: cst.BaseExpression, comment: Optional[cst.Comment]) -> Tuple[cst.Call, bool]:
    """`call` with `keyword=value` appended.

    With one argument per line the new argument gets a line of its own, and
    `comment` (the folded `set_weights` line's) goes at its end.

    Args:
        call: a call with at least one argument.
        comment: the comment to end the new argument's line with, if any.

    Returns:
        The new call, and whether `comment` went on the new argument's line.
    """
    args = list(call.args)
    last = args[-1]
    new_arg = cst.Arg(
        keyword=cst.Name(keyword),
        value=value,
        equal=cst.AssignEqual(whitespace_before=_space(""), whitespace_after=_space("")),
    )
    comma = last.comma
    ws = comma.whitespace_after if isinstance(comma, cst.Comma) else last.whitespace_after_arg
    own_line = _own_line(call, ws, comment)
    if isinstance(comma, cst.Comma):
        if own_line is not None:  # one argument per line, trailing comma
            last = last.with_changes(comma=comma.with_changes(whitespace_after=own_line[0]))
            new_arg = new_arg.with_changes(comma=cst.Comma(whitespace_after=own_line[1]))
        else:
            new_arg = new_arg.with_changes(comma=comma)
            last = last.with_changes(comma=cst.Comma(whitespace_after=_space(" ")))
    elif own_line is not None:  # `)` on its own line, no trailing comma
        last = last.with_changes(comma=cst.Comma(whitespace_after=own_line[0]), whitespace_after_arg=_space(""))
        new_arg = new_arg.with_changes(whitespace_after_arg=own_line[1])
    else:
        new_arg = new_arg.with_changes(whitespace_after_arg=last.whitespace_after_arg)
        last = last.with_changes(comma=cst.Comma(whitespace_after=_space(" ")), whitespace_after_arg=_space(""))
    args[-1] = last
    args.append(new_arg)
    return call.with_changes(args=args), own_line is not None and comment is not None


def _own_line(
    call: cst.Call, ws: Any, comment: Optional[cst.Comment]
) -> Optional[Tuple[cst.ParenthesizedWhitespace, cst.ParenthesizedWhitespace]]:
    """For an argument appended on a line of its own: the whitespace before it and after it.

    None unless the arguments are one per line and `ws` (what ends the last
    one) breaks the line. The new argument ends as the last one did, with
    `comment` at the end of its line.
    """
    indent = _arg_indent(call)
    if not isinstance(ws, cst.ParenthesizedWhitespace) or indent is None:
        return None
    before = ws.with_changes(empty_lines=(), indent=indent.indent, last_line=indent.last_line)
    after = cst.ParenthesizedWhitespace(
        first_line=cst.TrailingWhitespace(whitespace=_space("  " if comment is not None else ""), comment=comment),
        empty_lines=ws.empty_lines,
        indent=ws.indent,
        last_line=ws.last_line,
    )
    return before, after


def _arg_indent(call: cst.Call) -> Optional[cst.ParenthesizedWhitespace]:
    """The whitespace that starts the last argument's line, if args are one per line."""
    args = call.args
    ws: Any
    if len(args) >= 2 and isinstance(args[-2].comma, cst.Comma):
        ws = args[-2].comma.whitespace_after
    else:
        ws = call.whitespace_before_args
    return ws if isinstance(ws, cst.ParenthesizedWhitespace) else None


def drop_aliases(node: Any, drop: Set[int]) -> Tuple[Any, List[cst.Comment]]:
    """`node` (an Import or ImportFrom) without the aliases at the indexes `drop`.

    Args:
        node: the import.
        drop: the indexes of the aliases to drop; at least one alias stays.

    Returns:
        The new import, and the comments that ended the dropped aliases' lines.
    """
    names = list(node.names)
    moved: List[cst.Comment] = []
    for i in sorted(drop):
        line_break = _comma_break(names[i])
        if line_break is not None and line_break[1].first_line.comment is not None:
            moved.append(line_break[1].first_line.comment)
    keep = [i for i in range(len(names)) if i not in drop]
    new = [names[i] for i in keep]
    if keep[-1] != len(names) - 1:
        # the old last alias is gone: the new last one takes over its line ending
        new[-1], node = _take_line_end(new[-1], names[-1], node, moved)
    return node.with_changes(names=new), moved


def _take_line_end(
    kept: cst.ImportAlias, old_last: cst.ImportAlias, node: Any, moved: List[cst.Comment]
) -> Tuple[cst.ImportAlias, Any]:
    """`kept`, now last, ending as `old_last` did; `node` with its `)` adjusted to match.

    The comment after `old_last` (before the `)`) is added to `moved`.
    """
    kept_break = _comma_break(kept)
    if isinstance(old_last.comma, cst.Comma):
        old_break = _comma_break(old_last)
        if kept_break is not None and old_break is not None:
            ending = old_break[1]
        else:
            return kept.with_changes(comma=old_last.comma), node
    else:
        rpar = getattr(node, "rpar", None)
        rws = rpar.whitespace_before if rpar is not None else None
        if isinstance(rws, cst.ParenthesizedWhitespace) and rws.first_line.comment:
            moved.append(rws.first_line.comment)  # `name  # comment` then `)`
        if rpar is None or kept_break is None or not isinstance(rws, cst.ParenthesizedWhitespace):
            return kept.with_changes(comma=cst.MaybeSentinel.DEFAULT), node
        ending = rws
        node = node.with_changes(rpar=rpar.with_changes(whitespace_before=_space("")))
    comma, kws = kept_break
    kws = kws.with_changes(indent=ending.indent, last_line=ending.last_line)
    return kept.with_changes(comma=comma.with_changes(whitespace_after=kws)), node


def _comma_break(
    alias: cst.ImportAlias,
) -> Optional[Tuple[cst.Comma, cst.ParenthesizedWhitespace]]:
    """The comma after `alias` and the line break after that comma, if it has both."""
    comma = alias.comma
    if isinstance(comma, cst.Comma) and isinstance(comma.whitespace_after, cst.ParenthesizedWhitespace):
        return comma, comma.whitespace_after
    return None


def compat_clone_import_line(aliases: Sequence[cst.ImportAlias], comments: Sequence[cst.Comment]) -> cst.SimpleStatementLine:
    """`from compat_clone import <aliases>`, ending with the first of `comments`."""
    new_aliases = [cst.ImportAlias(name=alias.name, asname=alias.asname) for alias in aliases]
    for k in range(len(new_aliases) - 1):
        new_aliases[k] = new_aliases[k].with_changes(comma=cst.Comma(whitespace_after=_space(" ")))
    return cst.SimpleStatementLine(
        body=[cst.ImportFrom(module=cst.Name("compat_clone"), names=new_aliases)],
        trailing_whitespace=cst.TrailingWhitespace(
            whitespace=_space("  " if comments else ""),
            comment=cst.Comment(comments[0].value) if comments else None,
        ),
    )


def insert_import(
    body: List[cst.BaseStatement], extra: Sequence[cst.BaseStatement] = (), compat_clone: bool = True
) -> List[cst.BaseStatement]:
    """`body` with `import compat_clone` (then `extra`) after the module's leading imports.

    The leading block is the docstring, the imports, and `try:` blocks of
    imports, up to the first other statement. Importing compat_clone imports
    no framework, so it may sit before code that sets `KERAS_BACKEND`.

    Args:
        body: a module's statements.
        extra: more import lines to add after it.
        compat_clone: whether to add `import compat_clone` (else only `extra`).

    Returns:
        The new statements.
    """
    at = 0
    for k, stmt in enumerate(body):
        if (k == 0 and _is_docstring(stmt)) or _is_import_line(stmt) or _is_import_try(stmt):
            at = k + 1
        else:
            break
    lines: List[Any] = [cst.SimpleStatementLine(body=[import_compat_clone()])] if compat_clone else []
    lines += list(extra)
    if not lines:
        return body
    if at == 0 and body:
        # the first statement's leading comments (e.g. `# In[1]:`) go above the import,
        # then a blank line (two before a def or class)
        first: Any = body[0]
        lines[0] = lines[0].with_changes(leading_lines=first.leading_lines)
        blank = 2 if isinstance(first, (cst.FunctionDef, cst.ClassDef)) else 1
        body = [first.with_changes(leading_lines=[cst.EmptyLine()] * blank), *body[1:]]
    return [*body[:at], *lines, *body[at:]]


def _is_docstring(stmt: cst.CSTNode) -> bool:
    return (
        isinstance(stmt, cst.SimpleStatementLine)
        and len(stmt.body) == 1
        and isinstance(stmt.body[0], cst.Expr)
        and isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def _is_import_line(stmt: cst.CSTNode) -> bool:
    return isinstance(stmt, cst.SimpleStatementLine) and all(isinstance(s, (cst.Import, cst.ImportFrom)) for s in stmt.body)


def _is_import_try(stmt: cst.CSTNode) -> bool:
    return isinstance(stmt, cst.Try) and all(_is_import_line(s) for s in stmt.body.body)


def _space(value: str) -> cst.SimpleWhitespace:
    return cst.SimpleWhitespace(value)
