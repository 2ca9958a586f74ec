"""A subclassed model its config cannot carry, cloned structurally: a new instance of its own class.

Where `from_config(get_config())` fails (no usable `get_config`, layers passed
to the constructor, a class Keras 3 cannot find by name), the clone is made
the way its author made the source: the class's own constructor, called with
what the source received. The arguments come from what the family recorded
(Keras 3's `_auto_config`, when every argument was serializable), else from
the model's attributes named like the constructor's parameters
(``def __init__(self, encoder, head)`` storing ``self.encoder``, ``self.head``,
or ``self._encoder``), each value cloned:

* a layer or model is cloned (a model by the same engine, so nested
  subclassed models are cloned structurally in turn), fresh variables;
* a list, tuple or dict is rebuilt with its items cloned;
* a variable is refused: the clone would share it;
* plain data (numbers, strings, None, containers of them, NumPy arrays) is
  copied; any other object is deep-copied, or refused where it cannot be.

After the constructor, the source's **plain-data attributes** that are the
user's (not Keras's, and not set by the constructor to another value by
design) are copied onto the clone (`copy_plain_attributes`): a
``model.temperature = 4.0`` set after construction reaches the clone. Every
other attribute is the one the constructor made (metrics, loss objects).

Everything that can be checked is checked before the constructor runs: a
parameter without a default and without an attribute to take it from
refuses the clone (`Refused`, with the reason), and nothing was built. The
caller re-raises the native call's own exception with that reason as a note
(`native-exception-type`).
"""

from __future__ import annotations

import copy
import inspect
from collections import abc as cabc
from typing import Any, Callable, Dict, FrozenSet, List

__all__ = ["Refused", "structural_clone", "copy_plain_attributes"]

_PLAIN = (type(None), bool, int, float, complex, str, bytes)

# Public attributes Keras itself sets on a model after its constructor (compile,
# fit, build): never the user's state, even where their value is plain data.
_KERAS_RUNTIME = frozenset(
    {
        "built", "optimizer", "loss", "compiled_loss", "compiled_metrics", "history", "stop_training",
        "train_function", "test_function", "predict_function", "inputs", "outputs", "input_names",
        "output_names", "metrics_names", "run_eagerly", "jit_compile", "steps_per_execution",
    }
)  # fmt: skip

_BARE_KEYS: Dict[type, FrozenSet[str]] = {}


class Refused(Exception):
    """The structural clone cannot be made; `str(exc)` says why (nothing was built)."""


def structural_clone(
    model: Any, clone_value: Callable[[Any], Any], is_layer: Callable[[Any], bool], bare: Callable[[], Any]
) -> Any:
    """A new instance of `model`'s class, from its constructor arguments with layers cloned.

    Args:
        model: the source (a subclassed model).
        clone_value: clones one layer or model (the engine's `clone_layer` / `clone_model`).
        is_layer: whether a value is a layer of the model's Keras.
        bare: makes a bare model of the family (the attributes Keras itself sets are never arguments).

    Returns:
        The new, unbuilt model.

    Raises:
        Refused: where its arguments cannot be found or copied (before anything is built).
    """
    cls = type(model)
    arguments = constructor_arguments(model, _bare_keys(cls, bare))
    # Every argument is planned (and refused) before the first layer is cloned.
    planned = {name: _plan(name, value, is_layer, clone_value) for name, value in arguments.items()}
    values = {name: make() for name, make in planned.items()}
    try:
        new = cls(**values)
    except Exception as exc:  # the class's own constructor refused what it received
        raise Refused(
            f"its constructor, called with {sorted(values)} taken from the model's attributes, raised {type(exc).__name__}: {exc}"
        ) from exc
    return new


def constructor_arguments(model: Any, keras_keys: FrozenSet[str] = frozenset()) -> Dict[str, Any]:
    """What `model`'s constructor received: the family's record, completed from its attributes by name.

    Keras 3 records the arguments where all were serializable (3.0 records
    what it could and drops the rest): a parameter the record lacks is taken
    from the attribute of its name.
    """
    recorded = getattr(getattr(model, "_auto_config", None), "config", None)
    found: Dict[str, Any] = dict(recorded) if isinstance(recorded, dict) else {}
    try:
        parameters = list(inspect.signature(type(model).__init__).parameters.values())[1:]
    except (TypeError, ValueError) as exc:
        raise Refused(f"its constructor's signature cannot be read ({exc})") from exc
    state = dict(vars(model))
    modules = state.get("_modules")  # Keras 3 on torch: a layer attribute is a torch sub-module
    if isinstance(modules, dict):
        state.update((name, value) for name, value in modules.items() if name not in state)
    for param in parameters:
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD) or param.name in found:
            continue
        for attribute in (param.name, "_" + param.name):
            if attribute in state and attribute not in keras_keys:
                found[param.name] = state[attribute]
                break
        else:
            if param.default is param.empty:
                raise Refused(
                    f"its constructor takes `{param.name}`, and the model holds no attribute "
                    f"`{param.name}` or `_{param.name}` to take it from"
                )
            continue
        if param.kind is param.POSITIONAL_ONLY:
            raise Refused(f"its constructor takes `{param.name}` by position only")
    return found


def _plan(name: str, value: Any, is_layer: Callable[[Any], bool], clone: Callable[[Any], Any]) -> Callable[[], Any]:
    """How argument `name` is copied (called later); raises `Refused` now for what cannot be."""
    if is_layer(value):
        return lambda: clone(value)
    if hasattr(value, "assign") and hasattr(value, "shape"):
        raise Refused(f"argument `{name}` is a variable ({getattr(value, 'name', '?')}): the clone would share it")
    if isinstance(value, cabc.Mapping) and not isinstance(value, (str, bytes)):
        items = {key: _plan(f"{name}[{key!r}]", item, is_layer, clone) for key, item in value.items()}
        return lambda: {key: make() for key, make in items.items()}
    if _is_sequence(value):
        makers = [_plan(f"{name}[{i}]", item, is_layer, clone) for i, item in enumerate(value)]
        as_tuple = isinstance(value, tuple)
        return lambda: (tuple if as_tuple else list)(make() for make in makers)
    if _is_plain(value) or inspect.isroutine(value) or inspect.isclass(value) or inspect.ismodule(value):
        return lambda: copy.deepcopy(value) if _is_plain(value) else value
    try:
        copied = copy.deepcopy(value)
    except Exception as exc:
        raise Refused(f"argument `{name}` ({type(value).__name__}) cannot be copied: {exc}") from exc
    return lambda: copied


def _is_sequence(value: Any) -> bool:
    return isinstance(value, cabc.Sequence) and not isinstance(value, (str, bytes))


def _is_plain(value: Any) -> bool:
    """Numbers, strings, None, NumPy arrays and scalars, and lists / tuples / dicts of them."""
    if isinstance(value, _PLAIN):
        return True
    if type(value).__module__ == "numpy":
        return True
    if isinstance(value, (list, tuple)):
        return all(_is_plain(item) for item in value)
    if isinstance(value, dict):
        return all(isinstance(key, _PLAIN) and _is_plain(item) for key, item in value.items())
    return False


def copy_plain_attributes(source: Any, new: Any, bare: Callable[[], Any]) -> List[str]:
    """Copies the user's plain-data attributes of `source` onto `new`; returns their names.

    (`subclass-plain-attribute-lost`: the native clone loses them silently.)

    An attribute is the user's where a bare model of the family (`bare()`,
    made once per class) has no such key, Keras does not set it at compile,
    fit or build time (`_KERAS_RUNTIME`), and, for a private name, the
    constructor set it too (Keras's own private state appears later).
    """
    keys = _bare_keys(type(new), bare)
    fresh = vars(new)
    copied = []
    for key, value in list(vars(source).items()):
        if key in keys or key in _KERAS_RUNTIME or (key.startswith("_") and key not in fresh):
            continue
        if not _is_plain(value) or _equal(fresh.get(key, _MISSING), value):
            continue
        setattr(new, key, copy.deepcopy(value))
        copied.append(key)
    return copied


_MISSING = object()


def _equal(a: Any, b: Any) -> bool:
    try:
        return bool(type(a) is type(b) and a == b)
    except Exception:  # NumPy arrays: an elementwise answer
        return False


def _bare_keys(cls: type, bare: Callable[[], Any]) -> FrozenSet[str]:
    # Keras's own Model class (one bare model per Keras), never a user class that happens to be named Model.
    keras = ("keras", "tf_keras", "tensorflow")
    base = next((k for k in cls.__mro__ if k.__name__ == "Model" and k.__module__.split(".")[0] in keras), cls)
    keys = _BARE_KEYS.get(base)
    if keys is None:
        keys = _BARE_KEYS[base] = frozenset(vars(bare()))
    return keys
