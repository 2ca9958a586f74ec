"""The table of TensorFlow functions the conversion computes with `keras.ops` (`compat_clone.convert._tf_ops.OPS`),
checked op by op: each entry, called as TensorFlow's function is called (positional and keyword arguments, TensorFlow's
own parameter names), gives what that function gives.

Both sides run in one process where Keras 3 runs on TensorFlow (keras-3.15-tf in `make test`): TensorFlow's function,
found in `tf` by the name the table gives it, and the entry on `keras.ops`. A `TFOpLambda` of an old graph and a `Lambda`
body calling TensorFlow (tests/convert/test_convert_cli.py) are converted with these entries.
"""

from __future__ import annotations

from typing import Any, Dict, Tuple

import numpy as np
import pytest

from compat_clone.convert._tf_ops import OPS
from tests.convert.convert_envs import only_in

_X = np.linspace(0.25, 2.0, 24, dtype="float32").reshape(2, 3, 4)
_Y = np.linspace(-1.0, 1.5, 24, dtype="float32").reshape(2, 3, 4)

# name -> (positional arguments, keyword arguments), as the TensorFlow function takes them
_CALLS: Dict[str, Tuple[Tuple[Any, ...], Dict[str, Any]]] = {
    "reshape": ((_X, [2, 12]), {}),
    "concat": (([_X, _Y],), {"axis": 1}),
    "stack": (([_X, _Y],), {"axis": -1}),
    "expand_dims": ((_X, 1), {}),
    "squeeze": ((_X[:, :1],), {"axis": [1]}),
    "compat.v1.transpose": ((_X,), {"perm": [0, 2, 1]}),
    "transpose": ((_X, [2, 0, 1]), {}),
    "linalg.matmul": ((_X, _Y), {"transpose_b": True}),
    "cast": ((_X, "int32"), {}),
    "clip_by_value": ((_Y, -0.5, 0.5), {}),
    "nn.softmax": ((_Y,), {"axis": 1}),
    "__operators__.getitem": ((_X, [{"start": None, "stop": None, "step": None}, 1, {"start": 1, "stop": None, "step": 2}]), {}),
}
_REDUCE = {"math.reduce_mean", "math.reduce_sum", "math.reduce_max", "math.reduce_min"}
_UNARY_POSITIVE = {"math.log", "math.sqrt", "math.rsqrt"}  # defined on positive numbers: called on _X


def _call(name: str) -> Tuple[Tuple[Any, ...], Dict[str, Any]]:
    if name in _CALLS:
        return _CALLS[name]
    if name in _REDUCE:
        return (_Y, [0, 2]), {"keepdims": True}
    arity = OPS[name].__code__.co_argcount - 1  # after the `keras.ops` module
    if arity >= 2 and OPS[name].__code__.co_varnames[2] != "name":
        return (_X, _Y), {}
    return ((_X if name in _UNARY_POSITIVE else _Y),), {}


def _tensorflow_function(tf: Any, name: str) -> Any:
    target = tf
    for part in name.split("."):
        target = getattr(target, part)
    return target


@only_in("keras-3.15-tf")
@pytest.mark.parametrize("name", sorted(OPS))
def test_each_entry_computes_what_tensorflow_computes(name: str) -> None:
    tf = pytest.importorskip("tensorflow")
    import keras

    if keras.backend.backend() != "tensorflow":
        pytest.skip("both sides run where Keras 3 runs on TensorFlow")
    args, kwargs = _call(name)
    tensorflow_args = (args[0], _slice(args[1])) if name == "__operators__.getitem" else args
    tensorflow_args = tuple(_tensors(tf, a) for a in tensorflow_args)  # `tf.__operators__` takes tensors only
    expected = np.asarray(_tensorflow_function(tf, name)(*tensorflow_args, **kwargs))
    got = np.asarray(keras.ops.convert_to_numpy(OPS[name](keras.ops, *args, **kwargs)))
    assert got.shape == expected.shape, (name, got.shape, expected.shape)
    assert got.dtype == expected.dtype, (name, got.dtype, expected.dtype)
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6, err_msg=name)


def _tensors(tf: Any, value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return tf.constant(value)
    if isinstance(value, list) and any(isinstance(v, np.ndarray) for v in value):
        return [_tensors(tf, v) for v in value]
    return value


def _slice(spec: Any) -> Any:
    """TensorFlow's `__operators__.getitem` takes a Python index, where the Keras 2 graph records a slice spec."""
    return tuple(slice(s["start"], s["stop"], s["step"]) if isinstance(s, dict) else s for s in spec)
