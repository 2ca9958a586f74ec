"""Keras 3 safe mode: cloning Python-function `Lambda` layers relaxes nothing.

Since Keras 3.9 (hardened in 3.15.1) `Lambda.from_config` refuses a
serialized `lambda` unless safe mode is off. compat_clone clones a `Lambda`
from its live function, and rebuilds a wrapper holding one under
`SafeModeScope(False)` for that one call in that one thread. An untrusted
`.keras` file with a lambda must therefore stay refused by
`keras.saving.load_model` (default `safe_mode=True`) while clones run in
other threads, in the cloning thread right after a clone, and after all
clones finish.
"""

from __future__ import annotations

import threading
from typing import Any, List

import numpy as np
import pytest

import compat_clone

pytestmark = pytest.mark.keras3

LOADS = 6


def _lambda_models(keras: Any) -> List[Any]:
    inputs = keras.Input((3, 4))
    plain = keras.layers.Lambda(lambda t: t * 3.0, name="plain_lambda")(inputs)
    wrapped = keras.layers.TimeDistributed(keras.layers.Lambda(lambda t: t + 1.0), name="wrapped_lambda")(plain)
    both = keras.Model(inputs, wrapped)
    seq = keras.Sequential([keras.Input((4,)), keras.layers.Lambda(lambda t: -t), keras.layers.Dense(2)])
    return [both, seq]


@pytest.fixture
def untrusted_file(tmp_path: Any) -> str:
    import keras

    inputs = keras.Input((4,))
    outputs = keras.layers.Lambda(lambda t: t * 2.0)(inputs)  # serialized as bytecode
    path = str(tmp_path / "untrusted.keras")
    keras.Model(inputs, outputs).save(path)
    return path


def _assert_refused(path: str) -> None:
    import keras

    with pytest.raises(ValueError, match="(?i)lambda"):
        keras.saving.load_model(path)


def _in_safe_mode() -> Any:
    from keras.src.saving import serialization_lib

    return serialization_lib.in_safe_mode()


def test_untrusted_file_is_refused_to_begin_with(untrusted_file: str) -> None:
    # The premise: without compat_clone involved, this load is refused.
    _assert_refused(untrusted_file)


def test_clone_of_lambda_models_works_and_keeps_safe_mode() -> None:
    import keras

    for model in _lambda_models(keras):
        before = _in_safe_mode()
        clone = compat_clone.clone_model(model, copy_weights=True)
        assert _in_safe_mode() == before
        shape = (2, 3, 4) if len(model.inputs[0].shape) == 3 else (2, 4)
        x = np.random.default_rng(0).standard_normal(shape).astype("float32")
        np.testing.assert_array_equal(keras.ops.convert_to_numpy(clone(x)), keras.ops.convert_to_numpy(model(x)))


def test_load_in_the_cloning_thread_right_after_a_clone_is_refused(untrusted_file: str) -> None:
    import keras

    for model in _lambda_models(keras):
        compat_clone.clone_model(model)
        _assert_refused(untrusted_file)


def test_loads_in_other_threads_while_clones_run_are_refused(untrusted_file: str) -> None:
    import keras

    stop = threading.Event()
    cloning = threading.Event()
    clone_errors: List[BaseException] = []
    clone_counts: List[int] = []
    load_results: List[Any] = []

    def cloner() -> None:
        models = _lambda_models(keras)
        count = 0
        try:
            while not stop.is_set():
                for model in models:
                    compat_clone.clone_model(model)
                    count += 1
                    cloning.set()
        except BaseException as exc:
            clone_errors.append(exc)
            cloning.set()
        clone_counts.append(count)

    def loader() -> None:
        cloning.wait(timeout=120)
        for _ in range(LOADS):
            try:
                keras.saving.load_model(untrusted_file)
                load_results.append("LOADED")  # safe mode was relaxed: the bug this guards
            except ValueError as exc:
                load_results.append("refused" if "lambda" in str(exc).lower() else repr(exc))
            except BaseException as exc:
                load_results.append(repr(exc))

    cloners = [threading.Thread(target=cloner, name=f"cloner-{i}") for i in range(3)]
    loaders = [threading.Thread(target=loader, name=f"loader-{i}") for i in range(2)]
    for t in cloners + loaders:
        t.start()
    for t in loaders:
        t.join(timeout=300)
    stop.set()
    for t in cloners:
        t.join(timeout=300)

    assert not clone_errors, f"a clone failed: {clone_errors[0]!r}"
    assert sum(clone_counts) > 0
    assert load_results == ["refused"] * (LOADS * len(loaders)), load_results
    # and after every clone has finished, here and now:
    _assert_refused(untrusted_file)
    assert _in_safe_mode() is not False


def test_no_global_unsafe_deserialization_after_clones(untrusted_file: str) -> None:
    import keras

    def work() -> None:
        for model in _lambda_models(keras):
            compat_clone.clone_model(model)

    threads = [threading.Thread(target=work) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    work()
    assert _in_safe_mode() is not False
    _assert_refused(untrusted_file)


def test_the_check_can_fail(untrusted_file: str) -> None:
    # With safe mode really off in this thread the same load succeeds, so the
    # tests above would notice a clone that turned it off.
    from keras.src.saving import serialization_lib

    with serialization_lib.SafeModeScope(False):
        import keras

        model = keras.saving.load_model(untrusted_file)
    assert model is not None
    _assert_refused(untrusted_file)
