"""Concurrency: threads and pytest-xdist workers clone side by side.

* 8 threads cloning different models at once all succeed, and every clone
  computes what its source computes.
* A clone writes no file and changes no global Keras setting, so pytest-xdist
  workers (separate processes sharing one checkout and one home folder) can
  clone without stepping on each other.
"""

from __future__ import annotations

import os
import sys
import threading
from typing import Any, Callable, Dict, List, Tuple

import numpy as np
import pytest

import compat_clone
from tests.clone.model_state import fill_weights, predict, rich_input, rich_model
from tests.clone.threads import per_thread_session, run_in_threads

THREADS = 8
ROUNDS = 3


def _sequential(K: Any, i: int) -> Any:
    model = K.models.Sequential(
        [
            K.layers.Dense(8, activation="relu", input_shape=(6,), name=f"seq{i}_a"),
            K.layers.BatchNormalization(name=f"seq{i}_bn"),
            K.layers.Dense(3, name=f"seq{i}_b"),
        ],
        name=f"seq{i}",
    )
    return fill_weights(model, seed=i)


def _with_lambda(K: Any, i: int) -> Any:
    inputs = K.Input((6,), name=f"lam{i}_x")
    h = K.layers.Dense(5, name=f"lam{i}_d")(inputs)
    h = K.layers.Lambda(lambda t: t * 2.0 + 1.0, name=f"lam{i}_fn")(h)
    return fill_weights(K.models.Model(inputs, K.layers.Dense(3, name=f"lam{i}_out")(h), name=f"lam{i}"), seed=i)


def _two_inputs(K: Any, i: int) -> Any:
    a = K.Input((6,), name=f"two{i}_a")
    b = K.Input((6,), name=f"two{i}_b")
    h = K.layers.Concatenate(name=f"two{i}_cat")([K.layers.Dense(4)(a), b])
    model = K.models.Model([a, b], K.layers.Dense(3, name=f"two{i}_out")(h), name=f"two{i}")
    return fill_weights(model, seed=i)


BUILDERS: List[Callable[[Any, int], Any]] = [
    lambda K, i: rich_model(K, name=f"rich{i}"),
    _sequential,
    _with_lambda,
    _two_inputs,
]


def _inputs_for(model: Any) -> Any:
    x = rich_input()
    return [x, x] if len(model.inputs) == 2 else x


def test_eight_threads_clone_different_models(K: Any) -> None:
    sources = [BUILDERS[i % len(BUILDERS)](K, i) for i in range(THREADS)]
    expected = [predict(m, _inputs_for(m)) for m in sources]
    results: Dict[int, List[Any]] = {i: [] for i in range(THREADS)}

    def work(i: int) -> None:
        for _ in range(ROUNDS):
            results[i].append(compat_clone.clone_model(sources[i], copy_weights=True))

    run_in_threads(K, THREADS, work, name="cloner")
    for i, clones in results.items():
        assert len(clones) == ROUNDS
        for clone in clones:
            assert clone is not sources[i]
            np.testing.assert_array_equal(predict(clone, _inputs_for(clone)), expected[i])


# -- no files -----------------------------------------------------------------

_WRITE_EVENTS = (
    "os.mkdir",
    "os.rename",
    "os.remove",
    "os.rmdir",
    "shutil.rmtree",
    "os.truncate",
    "shutil.copyfile",
    "shutil.move",
    "os.symlink",
    "os.link",
)
_RECORDING = threading.Event()
_SEEN: List[Tuple[str, Any]] = []
_HOOKED = []


def _audit(event: str, args: Any) -> None:
    if not _RECORDING.is_set():
        return
    if event == "open":
        path, mode = args[0], args[1]
        flags = args[2] if len(args) > 2 else 0
        import os

        writes = isinstance(mode, str) and any(c in mode for c in "wax+")
        writes = writes or (isinstance(flags, int) and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT))
        if writes and not isinstance(path, int):
            _SEEN.append((event, path))
    elif event in _WRITE_EVENTS:
        _SEEN.append((event, args[0] if args else None))


def _wrap(module: Any, name: str, event: str) -> None:
    """Python 3.7 has no audit hooks: the functions that raise these events report to `_audit` first."""
    original = getattr(module, name)

    def reporting(*args: Any, **kwargs: Any) -> Any:
        if event == "open" and module is os:  # os.open(path, flags, mode)
            _audit(event, (args[0], None, args[1] if len(args) > 1 else kwargs.get("flags", 0)))
        elif event == "open":  # open(file, mode="r", ...)
            _audit(event, (args[0], args[1] if len(args) > 1 else kwargs.get("mode", "r"), 0))
        else:
            _audit(event, args)
        return original(*args, **kwargs)

    setattr(module, name, reporting)


def _install_hook() -> None:
    # Audit hooks cannot be removed; ours records only while _RECORDING is set.
    if not _HOOKED:
        if hasattr(sys, "addaudithook"):  # Python >= 3.8
            sys.addaudithook(_audit)
        else:
            import builtins
            import io
            import shutil

            _wrap(builtins, "open", "open")
            _wrap(io, "open", "open")
            _wrap(os, "open", "open")
            for event in _WRITE_EVENTS:
                module_name, _, name = event.partition(".")
                _wrap(os if module_name == "os" else shutil, name, event)
            _wrap(os, "replace", "os.rename")
            _wrap(os, "unlink", "os.remove")
            _wrap(os, "makedirs", "os.mkdir")
        _HOOKED.append(True)


def test_clone_writes_no_files(K: Any) -> None:
    _install_hook()
    sources = [BUILDERS[i](K, 100 + i) for i in range(len(BUILDERS))]

    def clones() -> None:
        for source in sources:
            compat_clone.clone_model(source, copy_weights=True)
            compat_clone.clone_model(source, recursive=True, name="again")
            compat_clone.copy_weights(source, compat_clone.clone_model(source))

    # Warm up with the same calls: a module imported lazily is compiled on its first import, and Python
    # writes its bytecode (the matrix gives each environment a bytecode folder): the import's, not the clone's.
    clones()
    del _SEEN[:]
    _RECORDING.set()
    try:
        clones()
    finally:
        _RECORDING.clear()
    assert not _SEEN, f"cloning touched the file system: {_SEEN[:5]}"


def test_audit_hook_sees_writes(tmp_path: Any) -> None:
    # The check above can fail: a write in the recorded window is seen.
    _install_hook()
    del _SEEN[:]
    _RECORDING.set()
    try:
        (tmp_path / "written.txt").write_text("x")
    finally:
        _RECORDING.clear()
    assert any("written.txt" in str(path) for _, path in _SEEN)


# -- no global settings -------------------------------------------------------


def global_settings(K: Any) -> Dict[str, Any]:
    """Every process-wide (or thread-wide) Keras setting a clone could touch."""
    settings: Dict[str, Any] = {}
    backend = K.backend
    for getter in ("floatx", "epsilon", "image_data_format", "backend"):
        fn = getattr(backend, getter, None)
        if callable(fn):
            settings[f"backend.{getter}"] = fn()
    config = getattr(K, "config", None)
    for getter in dir(config) if config is not None else ():
        if getter.startswith(("is_", "floatx", "epsilon", "image_data_format", "backend", "max_")):
            fn = getattr(config, getter)
            if callable(fn):
                settings[f"config.{getter}"] = fn()
    if config is not None and hasattr(config, "dtype_policy"):
        settings["config.dtype_policy"] = str(config.dtype_policy().name)
    mp = getattr(K, "mixed_precision", None)
    if mp is not None and hasattr(mp, "global_policy"):
        settings["mixed_precision.global_policy"] = str(mp.global_policy().name)
    for modname in ("keras.src.saving.serialization_lib", "tf_keras.src.saving.serialization_lib"):
        module = sys.modules.get(modname)
        if module is not None and hasattr(module, "in_safe_mode"):
            settings[f"{modname}.in_safe_mode"] = module.in_safe_mode()
    state = sys.modules.get("keras.src.backend.common.global_state")
    if state is not None:
        for key, value in vars(state.GLOBAL_STATE_TRACKER).items():
            if key == "object_name_uids":  # automatic-name counters: not a setting
                continue
            settings[f"global_state.{key}"] = repr(value)
        settings["global_settings"] = repr(vars(state.GLOBAL_SETTINGS_TRACKER))
    tf = sys.modules.get("tensorflow")
    if tf is not None:
        settings["tf.executing_eagerly"] = tf.executing_eagerly()
        if hasattr(tf.config, "functions_run_eagerly"):  # TF 2.3+
            settings["tf.functions_run_eagerly"] = tf.config.functions_run_eagerly()
    return settings


# Keras 3 keeps its state in thread-locals that are filled with these
# defaults on first use: a key missing on one side and at its default on the
# other is the same setting.
_EMPTY = ("None", "[]", "{}", "()")
_LAZY_DEFAULTS = {"global_state.tracking_on": "True"}


def assert_same_settings(before: Dict[str, Any], after: Dict[str, Any], where: str = "") -> None:
    keys = set(before) | set(after)
    missing = object()
    changed = {}
    for key in sorted(keys):
        old, new = before.get(key, missing), after.get(key, missing)
        if key.startswith("global_state.") and (old is missing or new is missing):
            value = new if old is missing else old
            if value in _EMPTY or _LAZY_DEFAULTS.get(key) == value:
                continue
        if old != new:
            changed[key] = (old, new)
    assert not changed, f"a clone changed global settings{where}: {changed}"


def test_thread_without_the_models_session_gets_a_clear_error(K: Any) -> None:
    # Keras 2.3 (TF 1.x graph): a worker thread gets a fresh session that has
    # never seen the source's values. Native Keras fails there with a raw
    # FailedPreconditionError; we say why and what to do, and the source is
    # untouched. Elsewhere the same call simply works.
    source = BUILDERS[0](K, 400)
    expected = predict(source, _inputs_for(source))
    outcome: List[Any] = []
    native: List[Any] = []

    def work() -> None:
        try:
            outcome.append(compat_clone.clone_model(source, copy_weights=True))
        except BaseException as exc:
            outcome.append(exc)

    def native_work() -> None:
        try:
            clone = K.models.clone_model(source)
            clone.set_weights(source.get_weights())
            native.append(clone)
        except BaseException as exc:
            native.append(exc)

    for target in (work, native_work) if per_thread_session(K) else (work,):
        thread = threading.Thread(target=target)
        thread.start()
        thread.join(timeout=300)
    assert len(outcome) == 1
    if per_thread_session(K):
        # native: a raw TensorFlow error from deep inside the session
        assert len(native) == 1 and isinstance(native[0], Exception), native
        assert not isinstance(native[0], compat_clone.CompatCloneError)
        error = outcome[0]
        assert isinstance(error, compat_clone.WeightsUnreadableError), repr(error)
        assert "session" in str(error) and "as_default" in str(error)
        assert "Could not find variable" in str(error) or "uninitialized" in str(error)
    else:
        assert not isinstance(outcome[0], BaseException), repr(outcome[0])
        np.testing.assert_allclose(predict(outcome[0], _inputs_for(source)), expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(predict(source, _inputs_for(source)), expected, rtol=1e-6, atol=1e-7)


def test_clone_changes_no_global_setting(K: Any) -> None:
    sources = [BUILDERS[i](K, 200 + i) for i in range(len(BUILDERS))]
    before = global_settings(K)
    assert before, "no settings were read"
    for source in sources:
        compat_clone.clone_model(source, copy_weights=True)
        compat_clone.clone_model(source, recursive=True)
    assert_same_settings(before, global_settings(K))


def test_settings_check_can_fail(K: Any) -> None:
    before = global_settings(K)
    K.backend.set_epsilon(before["backend.epsilon"] * 10)
    try:
        with pytest.raises(AssertionError, match="epsilon"):
            assert_same_settings(before, global_settings(K))
    finally:
        K.backend.set_epsilon(before["backend.epsilon"])


def test_clone_changes_no_global_setting_in_other_threads(K: Any) -> None:
    sources = [BUILDERS[i](K, 300 + i) for i in range(len(BUILDERS))]
    before = global_settings(K)
    seen: Dict[int, Any] = {}

    def work(i: int) -> None:
        own = global_settings(K)
        compat_clone.clone_model(sources[i], copy_weights=True)
        seen[i] = (own, global_settings(K))

    run_in_threads(K, len(sources), work, name="settings")
    assert_same_settings(before, global_settings(K))
    assert len(seen) == len(sources)
    for i, (own_before, own_after) in seen.items():
        assert_same_settings(own_before, own_after, f" in thread {i}")
