"""The package's exception hierarchy.

Every error raised on purpose by `compat_clone` derives from
`CompatCloneError`, and also from the built-in exception a caller would
expect (`TypeError` for an argument of the wrong kind, `ValueError` for a
value of the right kind that cannot be used), so `except TypeError` keeps
working in code written against the native `clone_model`.
"""

from __future__ import annotations

from typing import Any, List, Set

from compat_clone._walk import OWNER_PACKAGES, sublayers

__all__ = [
    "CompatCloneError",
    "NotAModelError",
    "UnsupportedModelError",
    "InvalidArgumentError",
    "InputTensorsError",
    "CloneFunctionError",
    "WeightsMismatchError",
    "DeviceNotFoundError",
    "UnsupportedFeatureError",
    "WeightsUnreadableError",
    "ConversionError",
    "UnconvertibleLayerError",
    "MissingCustomObjectError",
    "ConversionMismatchError",
    "ProbeInputError",
    "SourceModelError",
    "DescriptionFileError",
    "layer_rebuild_error",
    "layer_rebuild_note",
    "subclassed_rebuild_error",
    "subclassed_rebuild_note",
    "add_note",
    "CompileError",
    "revived_text",
    "with_reason",
]


class CompatCloneError(Exception):
    """Base class of every error `compat_clone` raises on purpose."""


class NotAModelError(CompatCloneError, TypeError):
    """The object passed as a model is not a Keras model of a known family."""


class UnsupportedModelError(CompatCloneError, ValueError):
    """A Keras model that cannot be cloned as it is (e.g. no `get_config`)."""


class InvalidArgumentError(CompatCloneError, ValueError):
    """An argument has an unusable value (unknown keyword, wrong type...)."""


class InputTensorsError(CompatCloneError, ValueError):
    """`input_tensors` does not fit the model (count, structure or family)."""


class CloneFunctionError(CompatCloneError, ValueError):
    """A user `clone_function` / `call_function` returned something unusable.

    An exception the callable *raises* is not turned into this one: it
    reaches the caller unchanged, with a note naming the layer.
    """


class WeightsMismatchError(CompatCloneError, ValueError):
    """Source and target weights differ in count, shape or dtype."""


class DeviceNotFoundError(CompatCloneError, ValueError):
    """The requested device does not exist for the model's backend."""


class UnsupportedFeatureError(CompatCloneError, NotImplementedError):
    """A feature the owning Keras version cannot provide (names the versions that can)."""


class WeightsUnreadableError(CompatCloneError, RuntimeError):
    """The source's weight values cannot be read where the copy runs.

    Standalone Keras 2.3 on a TF 1.x graph keeps one session per thread: a
    model's values live in the session of the thread that initialized them.
    """


class ConversionError(CompatCloneError, ValueError):
    """Base class of the errors of `compat_clone.convert` (Keras 2 to Keras 3)."""


class UnconvertibleLayerError(ConversionError):
    """A layer (or one of its arguments) has no Keras 3 counterpart we can map.

    The message names the layer, what stands in the way (a `Lambda` calling
    TensorFlow, a custom class without `custom_objects`, a layer Keras 3
    dropped) and what to do.
    """


class MissingCustomObjectError(UnconvertibleLayerError):
    """A layer needs a class or function of the user's own that the conversion was not given.

    Attributes:
        name: the name to pass it under (``"Scale"``, ``"<lambda>"``).
        layers: the paths of the layers that need it.
        kind: ``"layer"`` (a custom layer class) or ``"activation"`` (a function).
    """

    def __init__(self, message: str, name: str = "", layers: Any = (), kind: str = "layer") -> None:
        super().__init__(message)
        self.name = name
        self.layers = tuple(layers)
        self.kind = kind


class ConversionMismatchError(ConversionError):
    """The converted model's outputs differ from the source's above tolerance.

    Attributes:
        proof: the `compat_clone.convert.Proof` with the measured differences.
    """

    def __init__(self, message: str, proof: Any = None) -> None:
        super().__init__(message)
        self.proof = proof


class ProbeInputError(ConversionError):
    """The source model computes none of the probe inputs the conversion can make: give some with `probe_inputs`."""


class SourceModelError(ConversionError):
    """What should give the model to convert gives none: an architecture file that is not one, a `--model`
    function that cannot be imported or returns no model, weights that do not fit it. The message names it."""


class DescriptionFileError(ConversionError):
    """A file is not a model description `compat_clone.convert.load` can read."""


class CompileError(CompatCloneError, ValueError):
    """`compile=True`: the source was never compiled, or a compile setting cannot be carried."""


def add_note(exc: BaseException, note: str) -> BaseException:
    """Adds `note` to `exc` (PEP 678) and returns the same object, to re-raise.

    An exception raised by the user's code or by a native Keras call passes
    through `compat_clone` as that same object, its type unchanged, so the
    caller's `except` clauses work as with the native `clone_model`. Python
    3.11+ prints the note under the traceback; older Pythons keep it in
    `exc.__notes__` (the attribute PEP 678 defines), where it does not print.
    """
    adder = getattr(exc, "add_note", None)
    if adder is not None:
        adder(note)
        return exc
    try:
        notes = exc.__dict__.setdefault("__notes__", [])
        if isinstance(notes, list):
            notes.append(note)
    except AttributeError:  # an exception type without a __dict__: left as it is
        pass
    return exc


def with_reason(exc: BaseException, reason: str) -> BaseException:
    """`exc` with `reason` in its own message (`str(exc)`); the same object, to re-raise.

    A native exception whose message is empty, or says only what Keras
    tried, would otherwise print without compat_clone's reason (notes do not
    print before Python 3.11, and many tools print `str(exc)` alone). Where
    the message is the exception's one argument, the reason is appended to
    it; an exception with structured arguments keeps them, and gets the
    reason as a note.
    """
    args = getattr(exc, "args", ())
    if len(args) <= 1 and all(isinstance(arg, str) for arg in args):
        head = str(args[0]).rstrip() if args else ""
        exc.args = (f"{head}\n\n{reason}" if head else reason,)
        if reason in str(exc):
            return exc
    return add_note(exc, reason)


def subclassed_rebuild_error(model: object, exc: BaseException) -> UnsupportedModelError:
    """The error for a subclassed model whose config round trip failed in
    compat_clone's own work (a family whose native `clone_model` refuses
    subclassed models: `native-exception-type`)."""
    return UnsupportedModelError(_subclassed_rebuild_text(model, exc))


def subclassed_rebuild_note(model: object, exc: BaseException) -> BaseException:
    """`exc`, raised by the native clone of a subclassed model, with the advice as a note.

    The same object is returned, to re-raise: its type stays the one the native
    call lets through (`native-exception-type`).
    """
    return add_note(exc, "compat_clone: " + _subclassed_rebuild_text(model, exc))


def _subclassed_rebuild_text(model: object, exc: BaseException) -> str:
    what = f"the subclassed model {getattr(model, 'name', '?')!r} of type {type(model).__name__}"
    if isinstance(exc, NotImplementedError):
        problem = f"Cannot clone {what}: it has no usable `get_config()` ({exc}). "
        fix = "Implement `get_config()` (and `from_config()` if its constructor needs more)"
    else:  # TypeError (missing constructor arguments), ValueError, KeyError...
        problem = f"Cannot rebuild {what} from its config: {type(exc).__name__}: {exc}\n"
        fix = "Implement `get_config()` returning the constructor's arguments (and `from_config()` for objects in it)"
    return f"{problem}{fix}, or build the model functionally and use `clone_function`."


def revived_text(layer: object) -> str:
    """Why a layer revived from a SavedModel without its class cannot be cloned (`tf-keras-revived-layer`)."""
    cls = type(layer)
    return (
        f"Cannot clone layer {getattr(layer, 'name', '?')!r}: it was revived from a SavedModel loaded "
        f"without its class ({cls.__qualname__}), so its config cannot rebuild its computation and a "
        "clone would compute something else. Load the model with its class, e.g. "
        f"`load_model(path, custom_objects={{{cls.__name__!r}: {cls.__name__}}})`, then clone it."
    )


def layer_rebuild_error(layer: object, exc: BaseException, register_hint: str) -> UnsupportedModelError:
    """The error for a layer whose clone failed in compat_clone's own work.

    Raised where the failing step is one the native `clone_model` does not
    make (e.g. a `Lambda` rebuilt from its live function); where the failing
    call is the native default itself, `layer.__class__.from_config(
    layer.get_config())`, the original exception passes through instead, with
    the same advice as a note (`layer_rebuild_note`, `native-exception-type`).
    `register_hint` is the family's way to register a class, as the message
    shows it, e.g. ``"`@keras.saving.register_keras_serializable()`"``.
    """
    return UnsupportedModelError(_layer_rebuild_text(layer, exc, register_hint))


def layer_rebuild_note(layer: object, exc: BaseException, register_hint: str) -> BaseException:
    """`exc`, raised by a layer's config round trip, with the advice as a note.

    The same object is returned, to re-raise: the native `clone_model` makes
    the same call and lets its exception through, so a caller's `except
    TypeError` works as natively (`native-exception-type`).
    """
    return add_note(exc, "compat_clone: " + _layer_rebuild_text(layer, exc, register_hint))


def _layer_rebuild_text(layer: object, exc: BaseException, register_hint: str) -> str:
    """The advice for a layer that could not be rebuilt, the same in every family."""
    cls = type(layer)
    name = getattr(layer, "name", "?")
    nested = " pass `recursive=True` to clone this nested model layer by layer;" if hasattr(layer, "layers") else ""
    custom = _custom_classes_inside(layer)
    names = f" ({', '.join(custom)})" if custom else ""
    return (
        f"Cannot clone layer {name!r} of class {cls.__module__}.{cls.__qualname__}: "
        f"rebuilding it from its config failed with {type(exc).__name__}: {exc}\n"
        f"To fix it: make `{cls.__qualname__}.get_config()` return every argument "
        f"of its constructor; register the custom classes its config names{names} "
        f"with {register_hint};{nested} or pass a `clone_function` that builds "
        "this layer."
    )


def _custom_classes_inside(layer: object) -> List[str]:
    """Names of the non-Keras layer classes held by a wrapper or nested model."""
    found: List[str] = []
    stack: List[Any] = [getattr(layer, "layer", None)] + list(sublayers(layer))
    seen: Set[int] = set()
    while stack:
        sub = stack.pop()
        if sub is None or id(sub) in seen:
            continue
        seen.add(id(sub))
        klass = type(sub)
        root = klass.__module__.partition(".")[0]
        if root not in OWNER_PACKAGES and klass.__name__ not in found:
            found.append(klass.__name__)
        stack.append(getattr(sub, "layer", None))
        stack.extend(sublayers(sub))  # the one "is a model" rule (`_walk`)
    return found
