"""`copy_weights` remembers the layer pairing of two models (`weights.plan_copy_cached`).

The plan is reused only while both models hold the same variable objects in
the same order. Checked in every family: after a model changes (a layer of a
subclassed target replaced by a new one of the same name, a layer added, a
new model with the same layer names and possibly the same `id`, garbage
collection between calls) the values land in the variables the models hold
now, a mismatch still raises `WeightsMismatchError` with nothing written,
repeated soft updates equal the NumPy reference, and the cache keeps no model
alive.
"""

from __future__ import annotations

import gc
import weakref
from typing import Any, Dict, List

import numpy as np
import pytest

import compat_clone
from compat_clone import WeightsMismatchError
from tests.clone.features import skip_without_subclassed_models
from tests.support._py import zip_strict


def _functional(K: Any, seed: int, units: int = 3, prefix: str = "") -> Any:
    inputs = K.Input((4,))
    h = K.layers.Dense(5, name=prefix + "d1")(inputs)
    h = K.layers.BatchNormalization(name=prefix + "bn")(h)
    model = K.models.Model(inputs, K.layers.Dense(units, name=prefix + "d2")(h))
    _fill(model, seed)
    return model


def _fill(model: Any, seed: int) -> None:
    rng = np.random.default_rng(seed)
    model.set_weights([rng.uniform(-2.0, 2.0, size=np.shape(w)).astype(np.asarray(w).dtype) for w in model.get_weights()])


def _by_layer(model: Any) -> Dict[str, List[np.ndarray]]:
    return {layer.name: [np.asarray(w) for w in layer.get_weights()] for layer in model.layers if layer.weights}


def _assert_same(source: Any, target: Any) -> None:
    want, got = _by_layer(source), _by_layer(target)
    assert sorted(want) == sorted(got)
    for name, values in want.items():
        for a, b in zip_strict(values, got[name]):
            np.testing.assert_array_equal(a, b, err_msg=name)


def _subclassed(K: Any) -> Any:
    """A subclassed model whose layers are attributes, so one can be swapped in place."""
    skip_without_subclassed_models(K)

    class Net(K.models.Model):  # type: ignore[name-defined,misc]
        def __init__(self, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.first = K.layers.Dense(5, name="first")
            self.last = K.layers.Dense(3, name="last")

        def call(self, x: Any) -> Any:
            return self.last(self.first(x))

    return Net


def _built(K: Any, model: Any) -> Any:
    model.predict(np.zeros((2, 4), np.float32))  # builds every layer, in every family
    return model


def _rebuild_layer(K: Any, model: Any, attr: str, units: int, seed: int) -> Any:
    """Replaces `model.<attr>` by a new Dense of the same name, builds it; returns the old layer."""
    old = getattr(model, attr)
    new = K.layers.Dense(units, name=old.name)
    new.build((None, int(old.kernel.shape[0])))
    rng = np.random.default_rng(seed)
    new.set_weights([rng.uniform(-2.0, 2.0, size=np.shape(w)).astype("float32") for w in new.get_weights()])
    _swap(model, attr, new)
    return old


def _swap(model: Any, attr: str, new: Any) -> None:
    """`model.<attr> = new` after the model was built, the old layer no longer tracked."""
    old = getattr(model, attr, None)
    tracker = getattr(model, "_tracker", None)  # Keras 3 locks a built layer's state
    if tracker is None:
        setattr(model, attr, new)
    else:
        locked = tracker.locked
        tracker.locked = False
        if old is not None:
            tracker.untrack(old)
        setattr(model, attr, new)
        tracker.locked = locked
    held = getattr(model, "_layers", None)  # standalone Keras 2 appends, keeping the old one
    if old is not None and isinstance(held, list) and any(layer is old for layer in held):
        held[:] = [layer for layer in held if layer is not old]
    assert not any(layer is old for layer in model.layers) and any(layer is new for layer in model.layers)


def test_replaced_layer_gets_the_values(K: Any) -> None:
    Net = _subclassed(K)
    source, target = _built(K, Net()), _built(K, Net())
    _fill(source, 1)
    _fill(target, 2)
    compat_clone.copy_weights(source, target)  # the plan is made and remembered
    for a, b in zip_strict(source.get_weights(), target.get_weights()):
        np.testing.assert_array_equal(a, b)
    old = _rebuild_layer(K, target, "last", 3, seed=3)  # held: its variables stay alive
    old_values = old.get_weights()
    assert [id(v) for v in target.weights] != [id(v) for v in source.weights]
    _fill(source, 4)
    compat_clone.copy_weights(source, target)
    _assert_same(source, target)  # the new layer's variables, not the replaced ones
    for a, b in zip_strict(old.get_weights(), old_values):
        np.testing.assert_array_equal(a, b)  # a replaced layer is no longer written


def test_replaced_source_layer_is_read(K: Any) -> None:
    Net = _subclassed(K)
    source, target = _built(K, Net()), _built(K, Net())
    _fill(source, 1)
    compat_clone.copy_weights(source, target)
    old = _rebuild_layer(K, source, "first", 5, seed=9)
    compat_clone.copy_weights(source, target)
    np.testing.assert_array_equal(target.first.get_weights()[0], source.first.get_weights()[0])
    assert not np.array_equal(target.first.get_weights()[0], old.get_weights()[0])


def test_layer_changed_to_a_mismatch_raises_and_writes_nothing(K: Any) -> None:
    Net = _subclassed(K)
    source, target = _built(K, Net()), _built(K, Net())
    _fill(source, 1)
    compat_clone.copy_weights(source, target)
    _rebuild_layer(K, target, "last", 7, seed=5)  # (5, 7) where the source has (5, 3)
    _fill(source, 6)
    before = target.get_weights()
    with pytest.raises(WeightsMismatchError):
        compat_clone.copy_weights(source, target)
    for a, b in zip_strict(before, target.get_weights()):
        np.testing.assert_array_equal(a, b)  # nothing written, the first layer included
    _rebuild_layer(K, target, "last", 3, seed=7)  # matching again: copied
    compat_clone.copy_weights(source, target)
    for a, b in zip_strict(source.get_weights(), target.get_weights()):
        np.testing.assert_array_equal(a, b)


def test_layer_added_to_a_subclassed_target(K: Any) -> None:
    Net = _subclassed(K)

    class Longer(Net):  # type: ignore[misc,valid-type]
        def __init__(self, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.extra: Any = None

        def call(self, x: Any) -> Any:
            h = super().call(x)
            return self.extra(h) if self.extra is not None else h

    source, target = _built(K, Longer()), _built(K, Longer())
    _fill(source, 1)
    compat_clone.copy_weights(source, target)  # the plan is made and remembered
    extra = K.layers.Dense(2, name="extra")
    extra.build((None, 3))
    _swap(target, "extra", extra)
    extra_before = extra.get_weights()
    _fill(source, 2)
    compat_clone.copy_weights(source, target)  # a layer the source lacks: left alone (pairing by name)
    for name, values in _by_layer(source).items():
        for a, b in zip_strict(values, _by_layer(target)[name]):
            np.testing.assert_array_equal(a, b, err_msg=name)
    for a, b in zip_strict(extra.get_weights(), extra_before):
        np.testing.assert_array_equal(a, b)
    wrong = K.layers.Dense(4, name="extra")  # the source's own `extra`, of another shape
    wrong.build((None, 3))
    _swap(source, "extra", wrong)
    before = _by_layer(target)
    with pytest.raises(WeightsMismatchError):
        compat_clone.copy_weights(source, target)
    _assert_equal_maps(before, _by_layer(target))  # nothing written
    right = K.layers.Dense(2, name="extra")
    right.build((None, 3))
    _swap(source, "extra", right)
    _fill(source, 3)
    compat_clone.copy_weights(source, target)
    _assert_same(source, target)


def _assert_equal_maps(want: Dict[str, List[np.ndarray]], got: Dict[str, List[np.ndarray]]) -> None:
    assert sorted(want) == sorted(got)
    for name, values in want.items():
        for a, b in zip_strict(values, got[name]):
            np.testing.assert_array_equal(a, b, err_msg=name)


def test_new_models_with_the_same_names_and_ids(K: Any) -> None:
    """Models dropped and rebuilt between calls (their ids are often reused): never a stale plan."""
    target = _functional(K, 0)
    seen_ids = set()
    reused = 0
    for step in range(6):
        source = _functional(K, 10 + step, prefix="s")  # same layer names every time
        reused += id(source) in seen_ids
        seen_ids.add(id(source))
        compat_clone.copy_weights(source, target)
        for a, b in zip_strict(source.get_weights(), target.get_weights()):
            np.testing.assert_array_equal(a, b)
        del source
        gc.collect()
    # Then a target rebuilt the same way, into the same id where CPython reuses it.
    source = _functional(K, 99)
    for step in range(4):
        target = _functional(K, 20 + step)
        compat_clone.copy_weights(source, target)
        for a, b in zip_strict(source.get_weights(), target.get_weights()):
            np.testing.assert_array_equal(a, b)
        del target
        gc.collect()


def test_same_id_different_shapes_raise(K: Any) -> None:
    """A source replaced by one with the same layer names but other shapes: checked again, nothing written."""
    target = _functional(K, 0)
    for _ in range(3):
        source = _functional(K, 1)
        compat_clone.copy_weights(source, target)
        del source
        gc.collect()
        wrong = _functional(K, 2, units=4)  # d2 is (5, 4): a mismatch
        before = target.get_weights()
        with pytest.raises(WeightsMismatchError):
            compat_clone.copy_weights(wrong, target)
        for a, b in zip_strict(before, target.get_weights()):
            np.testing.assert_array_equal(a, b)
        del wrong
        gc.collect()


def _blend(source: List[np.ndarray], target: List[np.ndarray], tau: float) -> List[np.ndarray]:
    return [tau * s.astype(np.float64) + (1.0 - tau) * t.astype(np.float64) for s, t in zip_strict(source, target)]


def test_repeated_soft_updates_match_numpy(K: Any) -> None:
    Net = _subclassed(K)
    source, target = _built(K, Net()), _built(K, Net())
    _fill(source, 1)
    _fill(target, 2)
    want = {k: [w.astype(np.float64) for w in v] for k, v in _by_layer(target).items()}
    for step in range(8):
        tau = (0.05, 0.3, 0.9)[step % 3]
        if step == 4:  # a layer replaced between two updates: the next one blends into it
            _rebuild_layer(K, target, "first", 5, seed=11)
            want = {k: [w.astype(np.float64) for w in v] for k, v in _by_layer(target).items()}
        want = {k: _blend(v, want[k], tau) for k, v in _by_layer(source).items()}
        compat_clone.copy_weights(source, target, tau=tau)
        got = _by_layer(target)
        for name, expected in want.items():
            for g, e in zip_strict(got[name], expected):
                np.testing.assert_allclose(g.astype(np.float64), e, rtol=1e-5, atol=1e-5, err_msg=name)


def test_cache_keeps_no_model_alive(K: Any) -> None:
    refs: Dict[str, Any] = {}

    def run() -> None:
        source, target = _functional(K, 1), _functional(K, 2)
        compat_clone.copy_weights(source, target)
        compat_clone.copy_weights(source, target, tau=0.5)  # the remembered plan, used
        refs["source"], refs["target"] = weakref.ref(source), weakref.ref(target)

    run()
    gc.collect()
    assert refs["source"]() is None, "the source model outlived every reference to it"
    assert refs["target"]() is None, "the target model outlived every reference to it"
