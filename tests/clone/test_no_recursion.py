"""compat_clone's own graph walks are iterative: depth never needs a higher recursion limit.

Keras itself recurses once per graph node when it builds a functional model
(`_build_map_helper` in Keras 3.15 `ops/function.py` and in tf_keras 2.21
`engine/functional.py`), so a chain of ~1000 layers cannot even be *built*
at Python's default limit. Models here are built under a raised limit; then
the limit is back at its default while compat_clone runs, and:

* the number of compat_clone frames on the stack never grows with the model
  (measured with `sys.setprofile` on a short and a long chain, through every
  path: native delegation, our own walk for `call_function`, weight copy);
* `_keras3._walk` handles a chain deeper than the default limit directly
  (`_weights.iter_layers` is checked the same way on nested models);
* where a full clone of such a chain fails at the default limit, the
  `RecursionError` comes from Keras's code, not ours, and the native
  `clone_model` fails the same way.
"""

from __future__ import annotations

import os
import sys
import threading
from typing import Any, Callable, Tuple

import pytest

import compat_clone
from compat_clone import weights as _weights

OURS = os.path.dirname(os.path.abspath(compat_clone.__file__)) + os.sep
DEEP = 1100  # more layers than Python's default recursion limit (1000)
BUILD_LIMIT = 50_000


def _raised(fn: Callable[[], Any]) -> Any:
    """Runs `fn` with a raised recursion limit, in a thread with a big stack."""
    box: dict = {}

    def target() -> None:
        old = sys.getrecursionlimit()
        sys.setrecursionlimit(BUILD_LIMIT)
        try:
            box["value"] = fn()
        except BaseException as exc:  # re-raised in the caller
            box["error"] = exc
        finally:
            sys.setrecursionlimit(old)

    old_size = threading.stack_size(256 * 1024 * 1024)
    try:
        thread = threading.Thread(target=target)
        thread.start()
        thread.join()
    finally:
        threading.stack_size(old_size)
    if "error" in box:
        raise box["error"]
    return box["value"]


_DEEP_CHAINS: dict = {}


def _deep_chain(K: Any) -> Any:
    """One DEEP-layer ReLU chain per Keras module, shared by the tests below."""
    if K.__name__ not in _DEEP_CHAINS:
        _DEEP_CHAINS[K.__name__] = _chain(K, DEEP)
    return _DEEP_CHAINS[K.__name__]


def _relu(K: Any) -> Any:
    """A ReLU layer (`layers.ReLU` came with standalone Keras 2.2.0; an Activation before)."""
    return K.layers.ReLU() if hasattr(K.layers, "ReLU") else K.layers.Activation("relu")


def _chain(K: Any, depth: int, layer: str = "ReLU") -> Any:
    def build() -> Any:
        inputs = x = K.Input((4,))
        for _ in range(depth):
            x = K.layers.Dense(4)(x) if layer == "Dense" else _relu(K)(x)
        return K.models.Model(inputs, x)

    return _raised(build) if depth > 300 else build()


def _max_our_frames(fn: Callable[[], Any]) -> Tuple[int, Any]:
    """Runs `fn`; returns the most compat_clone frames ever on the stack at once."""
    depth = 0
    deepest = 0

    def profile(frame: Any, event: str, arg: Any) -> None:
        nonlocal depth, deepest
        if event == "call" and frame.f_code.co_filename.startswith(OURS):
            depth += 1
            deepest = max(deepest, depth)
        elif event == "return" and frame.f_code.co_filename.startswith(OURS):
            depth -= 1

    sys.setprofile(profile)
    try:
        value = fn()
    finally:
        sys.setprofile(None)
    return deepest, value


def _identity_call(layer: Any, *args: Any, **kwargs: Any) -> Any:
    return layer(*args, **kwargs)


@pytest.mark.parametrize(
    "how",
    ["default", "call_function", "copy_weights"],
)
def test_our_stack_depth_does_not_grow_with_the_model(K: Any, how: str) -> None:
    kwargs: dict = {}
    if how == "call_function":
        kwargs["call_function"] = _identity_call  # our own graph walk in every family
    if how == "copy_weights":
        kwargs["copy_weights"] = True
    layer = "Dense" if how == "copy_weights" else "ReLU"
    short, long_ = _chain(K, 5, layer), _chain(K, 60, layer)
    assert sys.getrecursionlimit() < 2000  # nothing raised it for the clone
    d_short, c_short = _max_our_frames(lambda: compat_clone.clone_model(short, **kwargs))
    d_long, c_long = _max_our_frames(lambda: compat_clone.clone_model(long_, **kwargs))
    assert len(c_long.layers) == len(long_.layers)
    assert d_short > 0, "the profile saw no compat_clone frame: the test is not measuring"
    assert d_long == d_short, (
        f"compat_clone frames on the stack grow with the model: {d_short} for 5 layers, "
        f"{d_long} for 60 layers ({how}). A graph walk recurses."
    )


def test_iter_layers_depth_does_not_grow_with_nesting(K: Any) -> None:
    def nested(levels: int) -> Any:
        inputs = K.Input((3,))
        model = K.models.Model(inputs, K.layers.Dense(3)(inputs))
        for _ in range(levels):
            inputs = K.Input((3,))
            model = K.models.Model(inputs, model(inputs))
        return model

    shallow, deep = nested(1), nested(25)
    d_shallow, leaves_shallow = _max_our_frames(lambda: list(_weights.iter_layers(shallow)))
    d_deep, leaves_deep = _max_our_frames(lambda: list(_weights.iter_layers(deep)))
    assert [type(x).__name__ for x in leaves_deep].count("Dense") == 1
    assert d_deep == d_shallow


@pytest.mark.keras3
def test_core_walk_handles_a_chain_deeper_than_the_limit() -> None:
    import keras

    from compat_clone.families._cloner import Cloner
    from compat_clone.families._driver import new_family
    from compat_clone.families._types import CloneRequest

    model = _deep_chain(keras)
    inputs = keras.Input((4,))
    cloned = []

    def clone_layer(layer: Any) -> Any:
        new = layer.__class__.from_config(layer.get_config())
        cloned.append(new)
        return new

    assert sys.getrecursionlimit() < DEEP
    family = new_family(compat_clone.family_of(model))
    cloner = Cloner(family, CloneRequest(clone_function=clone_layer, call_function=_identity_call))
    outputs = cloner.walk(model, [inputs])
    assert len(cloned) == DEEP
    assert len(outputs) == 1 and tuple(outputs[0].shape) == (None, 4)


def _our_frames(exc: BaseException) -> int:
    tb = exc.__traceback__
    count = 0
    while tb is not None:
        if tb.tb_frame.f_code.co_filename.startswith(OURS):
            count += 1
        tb = tb.tb_next
    return count


@pytest.mark.soak
def test_a_deep_clone_fails_only_where_native_fails(K: Any) -> None:
    """At the default limit: if compat_clone hits RecursionError, Keras recursed, not us."""
    model = _deep_chain(K)
    assert sys.getrecursionlimit() < DEEP
    try:
        clone = compat_clone.clone_model(model)
    except RecursionError as exc:
        ours = _our_frames(exc)
        assert ours < 15, f"{ours} compat_clone frames in the RecursionError traceback: our code recursed"
        with pytest.raises(RecursionError):  # native needs the higher limit too
            K.models.clone_model(model)
    else:
        assert len(clone.layers) == len(model.layers)


# -- the public name rebound to compat_clone (`native-alias-rebound`) ---------------


def _subclassed(K: Any) -> Any:
    class Sub(K.models.Model):
        def __init__(self, units: int = 2, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.units = units
            self.dense = K.layers.Dense(units)

        def call(self, x: Any) -> Any:
            return self.dense(x)

        def get_config(self) -> dict:
            return {"units": self.units, "name": self.name}

    model = Sub()
    model(K.ops.ones((1, 3)) if hasattr(K, "ops") else np_ones((1, 3)))
    return model


def np_ones(shape: Tuple[int, int]) -> Any:
    import numpy as np

    return np.ones(shape, "float32")


@pytest.mark.parametrize("kind", ["functional", "sequential", "clone_function", "subclassed"])
def test_public_name_rebound_by_hand_never_recurses(K: Any, kind: str, monkeypatch: Any) -> None:
    """`keras.models.clone_model = compat_clone.clone_model` (the obvious way to route a library).

    compat_clone reaches the native function in its defining module, so the
    rebinding routes callers without making compat_clone call itself.
    """
    inputs = K.Input((3,))
    keras2 = compat_clone.family_of(K.models.Model(inputs, K.layers.Dense(1)(inputs))).family == "keras2"
    if kind == "sequential":
        model = K.models.Sequential([K.layers.Dense(2, input_shape=(3,))])
    elif kind == "subclassed" and keras2:
        pytest.skip("standalone Keras 2 keeps no graph for a subclassed model: refused by design (test_keras2)")
    elif kind == "subclassed":
        model = _subclassed(K)
    else:
        model = K.models.Model(inputs, K.layers.Dense(2)(inputs))
    kwargs: dict = {}
    if kind == "clone_function":
        kwargs["clone_function"] = lambda layer: layer.__class__.from_config(layer.get_config())
    monkeypatch.setattr(K.models, "clone_model", compat_clone.clone_model)
    tf = sys.modules.get("tensorflow")
    # `tf.keras` too where it is this family's (not beside standalone Keras 2, whose TF has its own)
    tf_models = getattr(getattr(tf, "keras", None), "models", None) if tf is not None and not keras2 else None
    if tf_models is not None and getattr(tf_models, "clone_model", None) is not None:
        monkeypatch.setattr(tf_models, "clone_model", compat_clone.clone_model)
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(min(old, 1000))
    try:
        clone = K.models.clone_model(model, **kwargs)
    finally:
        sys.setrecursionlimit(old)
    assert clone is not model and type(clone).__name__ == type(model).__name__
