"""`compat_clone.patch()`: every Keras `clone_model` alias routed, and put back exactly.

Run in every family: the public name (`K.models.clone_model`, and
`tf.keras.models.clone_model` where TensorFlow is loaded) clones through
`compat_clone`; the defining module keeps the native function; `unpatch`
restores the very objects that were there; handles are reference-counted,
usable as context managers and safe from several threads; a Keras imported
after the call is routed as it loads (checked in a fresh interpreter, which
also shows `patch()` imports no framework).
"""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys
import textwrap
import threading
import types
from typing import Any, Dict

import numpy as np
import pytest

import compat_clone
from compat_clone._bound import bound_names
from compat_clone._native import is_ours
from compat_clone._patch import routed_modules

ROOTS = ("keras", "tf_keras", "tensorflow")


def _keras_aliases() -> Dict[str, Any]:
    """Every loaded Keras module holding a Keras `clone_model`: name -> the object there."""
    found = {}
    for name, module in list(sys.modules.items()):
        if name.partition(".")[0] not in ROOTS or not isinstance(module, types.ModuleType):
            continue
        fn = vars(module).get("clone_model")
        if callable(fn) and getattr(fn, "__name__", None) == "clone_model":
            found[name] = fn
    return found


def _model(K: Any) -> Any:
    inputs = K.Input((4,))
    x = K.layers.Dense(3, name="d1")(inputs)
    return K.models.Model(inputs, K.layers.Dense(2, name="d2")(x), name="src")


@pytest.fixture(autouse=True)
def _nothing_left_patched(K: Any) -> Any:
    before = _keras_aliases()
    yield
    assert not routed_modules(), "a test left compat_clone.patch() active"
    assert _keras_aliases() == before, "a test left a Keras module rebound"
    assert not bound_names(), "a test left a name of another module rebound"


def test_patch_routes_every_alias_and_unpatch_restores_them(K: Any) -> None:
    model = _model(K)
    before = _keras_aliases()
    handle = compat_clone.patch()
    try:
        after = _keras_aliases()
        assert K.models.__name__ in handle.modules
        for name, original in before.items():
            now = after[name]
            if name in handle.modules:
                assert is_ours(now) and now.__wrapped__ is original, name
            else:  # only the module that defines it keeps the native function
                assert now is original and getattr(original, "__module__", None) == name, name
        # the public name clones through compat_clone: an argument only compat_clone has
        clone = K.models.clone_model(model, copy_weights=True, name="routed")
        assert clone.name == "routed"
        x = np.ones((2, 4), "float32")
        np.testing.assert_allclose(clone.predict(x, verbose=0), model.predict(x, verbose=0), rtol=1e-6)
    finally:
        handle.unpatch()
    assert not handle.active
    restored = _keras_aliases()
    assert all(restored[name] is fn for name, fn in before.items())
    handle.unpatch()  # a second undo does nothing


def test_patch_is_idempotent_and_reference_counted(K: Any) -> None:
    original = K.models.clone_model
    first = compat_clone.patch()
    router = K.models.clone_model
    second = compat_clone.patch()
    assert K.models.clone_model is router  # routed once, not wrapped twice
    first.unpatch()
    assert K.models.clone_model is router  # the other handle still holds it
    second.unpatch()
    assert K.models.clone_model is original


def test_patched_context_manager(K: Any) -> None:
    original = K.models.clone_model
    with compat_clone.patched() as handle:
        assert handle.active and K.models.clone_model.__wrapped__ is original
        with compat_clone.patched():
            pass
        assert K.models.clone_model.__wrapped__ is original
    assert K.models.clone_model is original


def test_a_name_rebound_by_someone_else_stays_theirs(K: Any, monkeypatch: Any) -> None:
    def theirs(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("not called")

    original = K.models.clone_model
    handle = compat_clone.patch()
    try:
        K.models.clone_model = theirs  # rebound after patch(): not ours to undo
    finally:
        handle.unpatch()
    assert K.models.clone_model is theirs
    K.models.clone_model = original
    monkeypatch.setattr(K.models, "clone_model", theirs)  # rebound before patch(): not touched
    with compat_clone.patched() as handle:
        assert K.models.clone_model is theirs and K.models.__name__ not in handle.modules


def test_a_module_of_another_package_gets_only_its_native_names_routed(K: Any, monkeypatch: Any) -> None:
    native = K.models.clone_model
    library = types.ModuleType("some_library.cloning")
    library.clone_model = native  # a library's own `from keras.models import clone_model`
    library.other = object()
    monkeypatch.setitem(sys.modules, "some_library.cloning", library)
    with compat_clone.patched() as handle:
        assert is_ours(library.clone_model) and library.clone_model.__wrapped__ is native
        assert "some_library.cloning" not in handle.modules  # a Keras module list; the library is not one
        assert set(vars(library)) == {"__name__", "__doc__", "__package__", "__loader__", "__spec__", "clone_model", "other"}
    assert library.clone_model is native


def _outcome(fn: Any) -> Any:
    try:
        return ("returned", repr(fn()))
    except Exception as exc:
        return ("raised", type(exc))


def test_routed_name_gives_native_outcome_for_what_is_not_a_model(K: Any) -> None:
    # Whatever the native call does with a non-model (Keras 3.15 returns the
    # string back; others raise), the routed name does the same.
    native = _outcome(lambda: K.models.clone_model("not a model"))
    with compat_clone.patched():
        assert _outcome(lambda: K.models.clone_model("not a model")) == native


def test_routed_name_lets_the_users_exception_through(K: Any) -> None:
    error = RuntimeError("library's own")

    def refuse(layer: Any) -> Any:
        raise error

    model = _model(K)
    if "clone_function" in inspect.signature(K.models.clone_model).parameters:  # not Keras 2.0-2.2
        with pytest.raises(RuntimeError) as native:
            K.models.clone_model(model, clone_function=refuse)
        assert native.value is error
    with compat_clone.patched(), pytest.raises(RuntimeError) as routed:
        K.models.clone_model(model, clone_function=refuse)
    assert routed.value is error


def test_patch_and_clone_from_several_threads(K: Any) -> None:
    original = K.models.clone_model
    model = _model(K)
    errors = []

    def work() -> None:
        try:
            barrier.wait()
            for _ in range(5):
                with compat_clone.patched():
                    clone = K.models.clone_model(model, name="threaded")
                    assert clone.name == "threaded"
        except BaseException as exc:  # reported below
            errors.append(exc)

    # Standalone Keras 2: one TF1 graph per thread; the lock is tested elsewhere.
    work_threads = 1 if compat_clone.family_of(model).family == "keras2" else 4
    barrier = threading.Barrier(work_threads)
    threads = [threading.Thread(target=work) for _ in range(work_threads)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    assert K.models.clone_model is original


_FRESH = r"""
import json, sys
import compat_clone
handle = compat_clone.patch()
frameworks = sorted(m for m in ("tensorflow", "keras", "tf_keras", "torch", "jax") if m in sys.modules)
import importlib
K = importlib.import_module(sys.argv[1])
routed = list(handle.modules)
public = K.models.clone_model
inputs = K.Input((3,))
model = K.models.Model(inputs, K.layers.Dense(2)(inputs))
clone = K.models.clone_model(model, name="fresh")
native = public.__wrapped__
public_is_ours = bool(getattr(public, "__compat_clone__", False))
handle.unpatch()
print(json.dumps({
    "frameworks_before_import": frameworks,
    "routed": routed,
    "public_is_ours": public_is_ours,
    # a global of __main__ that took the routed name while patched: the native one again
    "global_restored": public is native,
    "clone_name": clone.name,
    "restored": K.models.clone_model is native,
    "native_module": native.__module__,
}))
"""


@pytest.mark.per_claim  # a fresh interpreter: 20-45 s per environment under load
def test_a_keras_imported_after_patch_is_routed(K: Any) -> None:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (os.getcwd(), env.get("PYTHONPATH", "")) if p)
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_FRESH), K.__name__],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-6000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["frameworks_before_import"] == []  # patch() imported no framework
    assert K.models.__name__ in report["routed"]
    assert report["public_is_ours"] and report["clone_name"] == "fresh"
    assert report["restored"] and report["global_restored"]
    assert report["native_module"] == K.models.clone_model.__module__
