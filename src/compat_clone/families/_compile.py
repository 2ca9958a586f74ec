"""`clone_model(..., compile=True)`: the clone compiled like its source, the same in every family.

A family reads what `model.compile` received, in its own spelling
(`Family.compile_settings`); everything else is written once, here:

* `read` runs before anything is cloned: a source never compiled, or a
  setting that cannot be carried, is refused there, with the source untouched;
* `apply` runs inside the family's placement (a `tf.distribute` strategy, the
  source's TF 1.x graph), once the clone is built: a new optimizer of the same
  class from its config (fresh state: no slots, `iterations` at 0; a
  learning-rate schedule is part of the config), new loss and metric objects
  from their configs (never sharing state with the source's), functions and
  names passed by reference, every other compile keyword as recorded.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Dict

from compat_clone.errors import CompatCloneError, CompileError

if TYPE_CHECKING:
    from compat_clone.families._core import Family

__all__ = ["CompileSettings", "read", "apply"]

#: the compile keywords whose values are structures of losses or metrics
_RENEWED = ("loss", "metrics", "weighted_metrics")


@dataclasses.dataclass(frozen=True)
class CompileSettings:
    """What the source's `compile` received, read by its family (live objects, not yet renewed).

    Attributes:
        optimizer: the source's optimizer object.
        arguments: every other `compile` keyword, as the family records it.
    """

    optimizer: Any
    arguments: Dict[str, Any]


def read(family: "Family", model: Any) -> CompileSettings:
    """The source's compile settings, checked before anything is cloned.

    Raises:
        CompileError: `model` was never compiled, or its optimizer, a loss or
            a metric cannot be re-created (the message names it).
    """
    settings = family.compile_settings(model)
    if settings is None:
        raise CompileError(
            f"Expected a compiled model with `compile=True`; model {getattr(model, 'name', '?')!r} "
            f"({type(model).__name__}) was never compiled. Call `model.compile(...)` first, or "
            "pass `compile=False` and compile the clone yourself. Nothing was cloned."
        )
    _check_recreatable(settings.optimizer, "optimizer")
    for key in _RENEWED:
        for leaf in _leaves(settings.arguments.get(key)):
            if _is_object(leaf):
                _check_recreatable(leaf, key)
    return settings


def apply(family: "Family", clone: Any, settings: CompileSettings) -> None:
    """Compiles `clone` like the source: new optimizer, losses and metrics, the same settings."""
    arguments = dict(settings.arguments)
    for key in _RENEWED:
        if key in arguments:
            arguments[key] = _renew_structure(arguments[key], key)
    optimizer = _recreate(settings.optimizer, "optimizer")
    try:
        family.compile_clone(clone, optimizer, arguments)
    except CompatCloneError:
        raise
    except Exception as exc:
        raise CompileError(
            f"Compiling the clone like its source failed with {type(exc).__name__}: {exc}\n"
            f"The settings read from the source: optimizer={type(settings.optimizer).__name__}, "
            f"{_describe(settings.arguments)}. Pass `compile=False` and call `clone.compile(...)` "
            "yourself. The source is untouched."
        ) from exc


def unprefix_metric_names(clone: Any, arguments: Dict[str, Any]) -> None:
    """Gives re-created metric objects back the names their user gave them (Keras 2 lines).

    Standalone Keras 2.3, tf.keras and tf_keras rename a metric object given
    for one output of several to `<output>_<name>` when they compile: the
    source's object carries that name, so does its re-created copy, and the
    clone's compile would prefix it again. The copies (ours, not the user's)
    lose the prefix before the clone is compiled.
    """
    names = list(getattr(clone, "output_names", None) or [])
    if len(names) < 2:
        return
    for key in ("metrics", "weighted_metrics"):
        value = arguments.get(key)
        if isinstance(value, dict):
            per_output: Any = value.items()
        elif isinstance(value, list) and len(value) == len(names):
            per_output = zip(names, value)
        else:
            continue
        for output, metrics in per_output:
            for metric in metrics if isinstance(metrics, list) else [metrics]:
                name = getattr(metric, "name", None)
                if _is_object(metric) and isinstance(name, str) and name.startswith(f"{output}_"):
                    _rename(metric, name[len(output) + 1 :])


def _rename(metric: Any, name: str) -> None:
    try:
        metric.name = name  # standalone Keras 2.3: a settable attribute
    except AttributeError:  # tf.keras / tf_keras: a read-only property over `_name`
        metric._name = name


# -- one object --------------------------------------------------------------------


def _is_object(value: Any) -> bool:
    """Whether `value` is a loss / metric object with state of its own (not a name or a function)."""
    if value is None or isinstance(value, (str, bytes, int, float, bool)):
        return False
    if inspect.isfunction(value) or inspect.isbuiltin(value) or inspect.ismethod(value):
        return False
    return hasattr(value, "get_config")


def _check_recreatable(value: Any, key: str) -> None:
    cls = type(value)
    if not callable(getattr(value, "get_config", None)) or not callable(getattr(cls, "from_config", None)):
        raise CompileError(
            f"Cannot compile the clone like its source: its {key} {_name(value)} has no "
            "`get_config()` / `from_config()` to re-create it from. Give the class both (returning "
            "its constructor's arguments), or pass `compile=False` and call `clone.compile(...)` "
            "yourself. Nothing was cloned."
        )


def _recreate(value: Any, key: str) -> Any:
    """A new object of `value`'s class from its config; a function it wraps kept by reference."""
    cls = type(value)
    config: Any = None
    try:
        config = value.get_config()
        return _same_function_arguments(value, cls.from_config(config))
    except CompatCloneError:
        raise
    except Exception as exc:
        rebuilt = _with_live_function(value, config)
        if rebuilt is not None:
            return rebuilt
        raise CompileError(
            f"Cannot compile the clone like its source: its {key} {_name(value)} cannot be "
            f"re-created from its config: {type(exc).__name__}: {exc}\nMake "
            f"`{cls.__qualname__}.get_config()` return every constructor argument (and register "
            "the custom functions it names), or pass `compile=False` and call `clone.compile(...)` "
            "yourself. The source is untouched."
        ) from exc


def _same_function_arguments(value: Any, new: Any) -> Any:
    """`new` with the function keyword arguments of `value`, where its config dropped them.

    A loss / metric wrapping a function keeps that function's keyword
    arguments in `_fn_kwargs`; some `get_config`s leave them out (Keras 3's
    `Huber` its `delta`), which would silently change the clone's loss.
    """
    kwargs = getattr(value, "_fn_kwargs", None)
    if isinstance(kwargs, dict) and getattr(new, "_fn_kwargs", None) != kwargs:
        new._fn_kwargs = dict(kwargs)
    return new


def _with_live_function(value: Any, config: Any) -> Any:
    """A function wrapper rebuilt around its live function; None where that fails.

    `MeanMetricWrapper` / `LossFunctionWrapper` of a user function: in several
    releases their config lacks the function (or names one the registry does
    not know), so `from_config` fails; the function is passed by reference.
    """
    fn = getattr(value, "_fn", None) or getattr(value, "fn", None)
    if not callable(fn) or not isinstance(config, Mapping):
        return None
    try:
        return _same_function_arguments(value, type(value)(fn, **{k: v for k, v in config.items() if k != "fn"}))
    except Exception:  # the caller reports the config round trip's own error
        return None


def _renew_structure(value: Any, key: str) -> Any:
    """`value` (a loss / metric, or a dict / list of them) with every object re-created."""
    if isinstance(value, Mapping):
        return {k: _renew_structure(v, key) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_renew_structure(v, key) for v in value]  # tracking wrappers become plain lists
    return _recreate(value, key) if _is_object(value) else value


def _leaves(value: Any) -> Any:
    if isinstance(value, Mapping):
        for v in value.values():
            yield from _leaves(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _leaves(v)
    else:
        yield value


def _name(value: Any) -> str:
    cls = type(value)
    name = getattr(value, "name", None)
    shown = f" named {name!r}" if isinstance(name, str) else ""
    return f"{cls.__module__}.{cls.__qualname__}{shown}"


def _describe(arguments: Dict[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}"[:120] for k, v in sorted(arguments.items()))
