"""`clone_and_build_model(...)` → `compat_clone.clone_model(..., compile=True)`.

`clone_and_build_model` (tf.keras 2.x, tf_keras) clones a model with
`clone_model` (no weights copied), then compiles the clone with a new
optimizer from the source's optimizer config and the source's losses and
(re-created) metrics: what `compat_clone.clone_model(model, compile=True)`
does. Its arguments map as:

* `model`, `input_tensors`: kept, positional or keyword, as given;
* `compile_clone`: left out, `True`: `compile=True`; `False`: no `compile`;
  another expression: `compile=<it>`;
* `target_tensors`, `custom_objects`, `optimizer_iterations`,
  `optimizer_config` left out or `None`, `in_place_reset` left out, `None` or
  `False`: dropped (they ask nothing); any other value has no equivalent:
  the call is left as it is and reported with the fix by hand.

Imported only after libcst is known to be installed.
"""

from __future__ import annotations

import dataclasses
from typing import Dict, List, Optional, Union

import libcst as cst

from compat_clone.tools.migrate.edits import append_keyword
from compat_clone.tools.migrate.rules import CLONE_AND_BUILD_PARAMS, clone_and_build_why

__all__ = ["BuildCall", "plan", "rewrite"]


@dataclasses.dataclass(frozen=True)
class BuildCall:
    """How one `clone_and_build_model` call is rewritten.

    Attributes:
        kept: its `model` and `input_tensors` arguments, as written.
        compile_value: the value of `compile=`, or None for none.
    """

    kept: List[cst.Arg]
    compile_value: Optional[cst.BaseExpression]


def plan(call: cst.Call) -> Union[BuildCall, str]:
    """The rewrite of `call`, or why it is left as it is (the report's text).

    Args:
        call: a call of Keras's `clone_and_build_model`.

    Returns:
        A `BuildCall`, or the message for the report.
    """
    given: Dict[str, cst.Arg] = {}
    for i, arg in enumerate(call.args):
        if arg.star:  # `*args` / `**kwargs`: which parameters they fill is unknown
            return (
                "`clone_and_build_model(*args / **kwargs)`: the arguments cannot be read; not "
                "rewritten. Call `compat_clone.clone_model(model, input_tensors, compile=True)`."
            )
        if arg.keyword is not None:
            name = arg.keyword.value
        elif i < len(CLONE_AND_BUILD_PARAMS):
            name = CLONE_AND_BUILD_PARAMS[i]
        else:
            return "`clone_and_build_model(...)` with more positional arguments than it takes; not rewritten."
        if name not in CLONE_AND_BUILD_PARAMS:
            return f"`clone_and_build_model(..., {name}=...)`: not one of its arguments; not rewritten."
        given[name] = arg
    for name in ("target_tensors", "custom_objects", "in_place_reset", "optimizer_iterations", "optimizer_config"):
        value = given.get(name)
        if value is not None and not _is_name(value.value, "None", *(("False",) if name == "in_place_reset" else ())):
            return clone_and_build_why(name)
    if "model" not in given:
        return "`clone_and_build_model()` without a model; not rewritten."
    kept = [given[name] for name in ("model", "input_tensors") if name in given]
    flag = given.get("compile_clone")
    if flag is None or _is_name(flag.value, "True"):
        compile_value: Optional[cst.BaseExpression] = cst.Name("True")
    elif _is_name(flag.value, "False"):
        compile_value = None
    else:
        compile_value = flag.value
    return BuildCall(kept, compile_value)


def rewrite(original: cst.Call, updated: cst.Call, build: BuildCall) -> cst.Call:
    """`updated` with only the kept arguments, then `compile=...` (the function is renamed elsewhere).

    Args:
        original: the call `build` was planned on.
        updated: the same call as the transformer has it now (same arguments, in order).
        build: its plan.

    Returns:
        The new call.
    """
    kept = [new for old, new in zip(original.args, updated.args) if any(old is k for k in build.kept)]
    if kept and kept[-1] is not updated.args[-1]:
        # the old last argument went: the new last one ends as it did (its line break, `,`)
        last = updated.args[-1]
        kept[-1] = kept[-1].with_changes(comma=last.comma, whitespace_after_arg=last.whitespace_after_arg)
    new = updated.with_changes(args=kept)
    if build.compile_value is not None:
        new = append_keyword(new, "compile", build.compile_value)
    return new


def _is_name(node: cst.BaseExpression, *names: str) -> bool:
    return isinstance(node, cst.Name) and node.value in names
