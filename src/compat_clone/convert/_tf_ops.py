"""TensorFlow functions a Keras 2 graph called on Keras tensors, in `keras.ops`.

`tf.keras` 2.4+ and `tf_keras` record ``x + 3.0``, ``tf.nn.relu(x)`` or
``x[:, :3]`` on a Keras tensor as a `TFOpLambda` (`SlicingOpLambda` for
slicing) layer that names the TensorFlow function (``"__operators__.add"``)
and keeps its other arguments, by name, in the graph's node. Keras 3 has no
such layer, and `keras.applications` models use them (MobileNetV3's hard
swish, RegNet's residual adds). `OPS` says, per TensorFlow name, how
`keras.ops` computes the same thing; a converted model holds a
`compat_clone>TensorFlowOp` layer per call, registered with Keras 3 like the
Keras 2 formulas of `_functions`. A name missing here, or an argument the
function given here does not take, is refused with the name, never guessed;
the conversion's proof checks the rest.

Importing this module imports no framework.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable, Dict, List, Optional

from compat_clone.convert._functions import PACKAGE
from compat_clone.errors import UnconvertibleLayerError

__all__ = ["OPS", "LAYER_NAME", "PendingOp", "check_call", "describe_use", "op_layer_class"]

#: the registered name of the Keras 3 layer (``compat_clone>TensorFlowOp``)
LAYER_NAME = "TensorFlowOp"


def _index(spec: Any, path: str = "") -> Any:
    """A Keras 2 slice spec (dicts for slices, ints, None) as a Python index."""
    if isinstance(spec, dict) and set(spec) <= {"start", "stop", "step"}:
        return slice(spec.get("start"), spec.get("stop"), spec.get("step"))
    if spec is None or (isinstance(spec, int) and not isinstance(spec, bool)):
        return spec
    if isinstance(spec, list):
        return tuple(_index(s, path) for s in spec)
    raise UnconvertibleLayerError(
        f"Layer {path!r} slices with {spec!r}, which the conversion does not read "
        "(slices, integers and None are). Rewrite the slice with `keras.ops` in the source."
    )


def _getitem(o: Any, tensor: Any, slice_spec: Any, var: Any = None) -> Any:
    index = _index(slice_spec)
    return tensor[index]


def _matmul(o: Any, a: Any, b: Any, transpose_a: bool = False, transpose_b: bool = False, name: Any = None) -> Any:
    if transpose_a:
        a = o.swapaxes(a, -1, -2)
    if transpose_b:
        b = o.swapaxes(b, -1, -2)
    return o.matmul(a, b)


def _binary(op: str) -> Callable[..., Any]:
    def call(o: Any, x: Any, y: Any, name: Any = None) -> Any:
        return getattr(o, op)(x, y)

    call.__name__ = op
    return call


def _unary(op: str) -> Callable[..., Any]:
    def call(o: Any, x: Any, name: Any = None) -> Any:
        return getattr(o, op)(x)

    call.__name__ = op
    return call


def _reduce(op: str) -> Callable[..., Any]:
    def call(o: Any, input_tensor: Any, axis: Any = None, keepdims: bool = False, name: Any = None) -> Any:
        return getattr(o, op)(input_tensor, axis=_axis(axis), keepdims=keepdims)

    call.__name__ = op
    return call


def _axis(axis: Any) -> Any:
    return tuple(axis) if isinstance(axis, list) else axis


def _transpose(o: Any, a: Any, perm: Any = None, conjugate: bool = False, name: Any = None) -> Any:
    if conjugate:
        raise UnconvertibleLayerError("tf.transpose(conjugate=True) has no keras.ops counterpart")
    return o.transpose(a, axes=None if perm is None else tuple(perm))


def _softmax(o: Any, logits: Any, axis: Any = None, name: Any = None) -> Any:
    return o.softmax(logits, axis=-1 if axis is None else axis)


def _clip(o: Any, t: Any, clip_value_min: Any, clip_value_max: Any, name: Any = None) -> Any:
    return o.clip(t, clip_value_min, clip_value_max)


#: TensorFlow function name (as `TFOpLambda` records it) -> the same maths in
#: `keras.ops`: ``f(ops, first_argument, **other_arguments)``.
OPS: Dict[str, Callable[..., Any]] = {
    "__operators__.add": _binary("add"),
    "math.add": _binary("add"),
    "math.subtract": _binary("subtract"),
    "math.multiply": _binary("multiply"),
    "math.truediv": _binary("true_divide"),
    "math.divide": _binary("true_divide"),
    "math.floordiv": _binary("floor_divide"),
    "math.pow": _binary("power"),
    "math.maximum": _binary("maximum"),
    "math.minimum": _binary("minimum"),
    "math.greater": _binary("greater"),
    "math.greater_equal": _binary("greater_equal"),
    "math.less": _binary("less"),
    "math.less_equal": _binary("less_equal"),
    "math.equal": _binary("equal"),
    "math.not_equal": _binary("not_equal"),
    "math.negative": _unary("negative"),
    "math.abs": _unary("abs"),
    "math.exp": _unary("exp"),
    "math.log": _unary("log"),
    "math.sqrt": _unary("sqrt"),
    "math.rsqrt": _unary("rsqrt"),
    "math.square": _unary("square"),
    "math.tanh": _unary("tanh"),
    "math.sigmoid": _unary("sigmoid"),
    "nn.relu": _unary("relu"),
    "nn.relu6": _unary("relu6"),
    "nn.silu": _unary("silu"),
    "nn.softmax": _softmax,
    "math.reduce_mean": _reduce("mean"),
    "math.reduce_sum": _reduce("sum"),
    "math.reduce_max": _reduce("max"),
    "math.reduce_min": _reduce("min"),
    "reshape": lambda o, tensor, shape, name=None: o.reshape(tensor, tuple(shape)),
    "concat": lambda o, values, axis, name=None: o.concatenate(list(values), axis=axis),
    "stack": lambda o, values, axis=0, name=None: o.stack(list(values), axis=axis),
    "expand_dims": lambda o, input, axis, name=None: o.expand_dims(input, axis),
    "squeeze": lambda o, input, axis=None, name=None: o.squeeze(input, axis=_axis(axis)),
    "compat.v1.transpose": _transpose,
    "transpose": _transpose,
    "linalg.matmul": _matmul,
    "cast": lambda o, x, dtype, name=None: o.cast(x, dtype),
    "clip_by_value": _clip,
    "__operators__.getitem": _getitem,
}


def check_call(function: str, path: str, arguments: Dict[str, Any]) -> None:
    """Refuses a call `OPS` cannot compute, before anything is built.

    Args:
        function: the TensorFlow name the layer recorded.
        path: the layer's path, for messages.
        arguments: the call's keyword arguments (tensors included).

    Raises:
        UnconvertibleLayerError: the function is not in `OPS`, or it was
            called with an argument the `keras.ops` form does not take.
    """
    fn = OPS.get(function)
    if fn is None:
        raise UnconvertibleLayerError(
            f"Layer {path!r} calls the TensorFlow function `tf.{function}` on Keras tensors; the "
            f"conversion computes {len(OPS)} such functions with `keras.ops` "
            f"({', '.join('tf.' + k for k in sorted(OPS)[:6])}, ...), not this one. Rewrite that "
            "step with a Keras layer or `keras.ops` in the source model, or pass a Keras 3 layer "
            f"for it as `custom_objects={{{path.rsplit('/', 1)[-1]!r}: ...}}`."
        )
    try:
        inspect.signature(fn).bind(None, None, **arguments)
    except TypeError as exc:
        raise UnconvertibleLayerError(
            f"Layer {path!r} calls `tf.{function}` with arguments {sorted(arguments)}; its "
            f"`keras.ops` form does not take them all ({exc}). Rewrite that step with "
            "`keras.ops` in the source model."
        ) from None
    if function == "__operators__.getitem":
        _index(arguments.get("slice_spec"), path)


_layer_class: List[Any] = []


def op_layer_class() -> Any:
    """The Keras 3 layer computing one `OPS` entry, registered with Keras 3 (once).

    Returns:
        The class ``compat_clone>TensorFlowOp``:
        ``TensorFlowOp(function, arguments)`` holds the TensorFlow name and
        the call's constant arguments (``{"y": 3.0}``); it is called with the
        call's first argument and a dict of its tensor arguments
        (``layer(x, {"y": other})``; Keras 3 does not let one call argument
        mix tensors and constants).
    """
    if _layer_class:
        return _layer_class[0]
    import keras

    @keras.saving.register_keras_serializable(package=PACKAGE, name=LAYER_NAME)
    class TensorFlowOp(keras.layers.Layer):  # type: ignore[misc]
        """One TensorFlow function of a Keras 2 graph, computed with `keras.ops`."""

        def __init__(self, function: str, arguments: Optional[Dict[str, Any]] = None, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            if function not in OPS:
                raise ValueError(f"Unknown TensorFlow function {function!r}; known: {sorted(OPS)}.")
            self.function = function
            self.arguments = dict(arguments or {})
            # Inputs keep their dtypes: the TensorFlow function did not cast them.
            if hasattr(self, "_convert_input_args"):
                self._convert_input_args = False
            if hasattr(self, "_allow_non_tensor_positional_args"):
                self._allow_non_tensor_positional_args = True

        def call(self, inputs: Any, tensors: Optional[Dict[str, Any]] = None) -> Any:
            return OPS[self.function](keras.ops, inputs, **self.arguments, **(tensors or {}))

        def get_config(self) -> Dict[str, Any]:
            config: Dict[str, Any] = super().get_config()
            config.update(function=self.function, arguments=self.arguments)
            return config

    _layer_class.append(TensorFlowOp)
    return TensorFlowOp


def describe_use(counts: Dict[str, int]) -> Optional[str]:
    """One line for the conversion's changes: which functions, how many layers."""
    if not counts:
        return None
    uses = ", ".join(f"tf.{k} x{v}" for k, v in sorted(counts.items()))
    return (
        f"TensorFlow functions called on Keras tensors ({uses}) computed with `keras.ops` in "
        f"`{PACKAGE}>{LAYER_NAME}` layers (load the saved file with "
        "custom_objects=compat_clone.convert.custom_objects())"
    )


class PendingOp:
    """A TensorFlow function's layer, made at its first call (it needs the call's constants)."""

    def __init__(self, function: str, name: str, path: str) -> None:
        self.function = function
        self.name = name
        self.path = path
        self.layer: Any = None
