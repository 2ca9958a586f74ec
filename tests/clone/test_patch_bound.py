"""`compat_clone.patch()` reaches a library's own names for the native `clone_model`.

A stand-in library (a module written to tmp_path) binds the native function
every way a library does: `from ... import clone_model`, `... as cm`, a
module it reaches attributes of, a class attribute (a `staticmethod`), a
method's and a function's defaults, and `tensorflow.keras`'s where TensorFlow
is loaded. Imported before `patch()` or while patched, its calls clone through
`compat_clone` (`name=` and `copy_weights=` are arguments only compat_clone
takes) and every name holds the native function again after `unpatch()`;
nothing else of the module changes. Nested handles and threads as in
test_patch.py.
"""

from __future__ import annotations

import importlib
import itertools
import sys
import threading
from typing import Any, Callable, Dict, Iterator, List, Optional

import pytest

import compat_clone
from compat_clone._bound import bound_names
from compat_clone._native import is_ours
from compat_clone._patch import routed_modules

_LIBRARY = """\
from {models} import clone_model
from {models} import clone_model as cm
import {models} as km
{tensorflow_line}
OTHER = object()


def helper(x=1, *, y=OTHER):
    return x


class Cloner:
    clone = staticmethod(clone_model)

    def run(self, model, clone=clone_model, *, also=clone_model):
        return clone(model, copy_weights=True, name="via_method_default")


def clone_with(model, clone=clone_model):
    return clone(model, copy_weights=True, name="via_function_default")


def call(model):
    return clone_model(model, copy_weights=True, name="via_global")
"""

_counter = itertools.count()


def _tensorflow_keras_models() -> Optional[Any]:
    """`tensorflow.keras.models` where TensorFlow is loaded already (never imported on a guess)."""
    if "tensorflow" not in sys.modules:
        return None
    try:
        return importlib.import_module("tensorflow.keras.models")
    except Exception:  # no tf.keras in this TensorFlow (Keras 3 without TF_USE_LEGACY_KERAS on an old TF, ...)
        return None


@pytest.fixture
def library(tmp_path: Any, monkeypatch: Any, K: Any) -> Iterator[Callable[[], Any]]:
    """Writes and imports a fresh stand-in library bound to `K`'s `clone_model`."""
    monkeypatch.syspath_prepend(str(tmp_path))
    tf_models = _tensorflow_keras_models()
    tensorflow_line = "from tensorflow.keras.models import clone_model as tf_cm" if tf_models is not None else ""
    made: List[str] = []

    def make() -> Any:
        name = f"stand_in_library_{next(_counter)}"
        source = _LIBRARY.format(models=K.models.__name__, tensorflow_line=tensorflow_line)
        (tmp_path / f"{name}.py").write_text(source, encoding="utf-8")
        importlib.invalidate_caches()
        made.append(name)
        return importlib.import_module(name)

    yield make
    for name in made:
        sys.modules.pop(name, None)


@pytest.fixture(autouse=True)
def _nothing_left_patched(K: Any) -> Iterator[None]:
    yield
    assert not routed_modules(), "a test left compat_clone.patch() active"
    assert not bound_names(), "a test left a library's name rebound"


def _model(K: Any) -> Any:
    inputs = K.Input((4,))
    x = K.layers.Dense(3, name="d1")(inputs)
    return K.models.Model(inputs, K.layers.Dense(2, name="d2")(x), name="src")


def _slots(lib: Any) -> Dict[str, Any]:
    """Every place the stand-in library holds a clone function: where -> the object there."""
    slots = {
        "clone_model": lib.clone_model,
        "cm": lib.cm,
        "Cloner.clone": vars(lib.Cloner)["clone"].__func__,
        "Cloner.run default": lib.Cloner.run.__defaults__[0],
        "Cloner.run kwdefault": lib.Cloner.run.__kwdefaults__["also"],
        "clone_with default": lib.clone_with.__defaults__[0],
    }
    if hasattr(lib, "tf_cm"):
        slots["tf_cm"] = lib.tf_cm
    return slots


def _assert_routed(lib: Any, natives: Dict[str, Any], K: Any) -> None:
    tf_models = _tensorflow_keras_models()
    for where, now in _slots(lib).items():
        if where == "tf_cm" and not (tf_models is not None and is_ours(vars(tf_models).get("clone_model"))):
            # patch() routes tf.keras where it routes that Keras (TensorFlow's own API
            # module of a TF it knows); a native it does not route is not a native it knows
            continue
        assert is_ours(now) and now.__wrapped__ is natives[where], where
    assert lib.km is K.models and is_ours(lib.km.clone_model)  # attribute access: the routed module


def _assert_calls_go_through_compat_clone(lib: Any, K: Any) -> None:
    model = _model(K)
    assert lib.call(model).name == "via_global"
    assert lib.Cloner().run(model).name == "via_method_default"
    assert lib.clone_with(model).name == "via_function_default"
    assert lib.Cloner.clone(model, name="via_class_attribute").name == "via_class_attribute"


def test_a_library_imported_before_patch_is_routed_and_restored(K: Any, library: Any) -> None:
    lib = library()
    natives = _slots(lib)
    assert all(not is_ours(fn) for fn in natives.values())
    untouched = dict(vars(lib))
    helper_defaults = (lib.helper.__defaults__, lib.helper.__kwdefaults__)
    with compat_clone.patch():
        _assert_routed(lib, natives, K)
        _assert_calls_go_through_compat_clone(lib, K)
        changed = {k for k, v in vars(lib).items() if untouched.get(k) is not v}
        assert changed <= {"clone_model", "cm", "tf_cm"}, changed  # only the slots that held the native
        assert (lib.helper.__defaults__, lib.helper.__kwdefaults__) == helper_defaults
    assert _slots(lib) == natives and all(_slots(lib)[k] is fn for k, fn in natives.items())
    assert all(vars(lib)[k] is v for k, v in untouched.items()) and set(vars(lib)) == set(untouched)


def test_a_library_imported_while_patched_gets_the_native_back(K: Any, library: Any) -> None:
    reference = library()  # the natives, as a library imported without the patch binds them
    natives = _slots(reference)
    with compat_clone.patch():
        lib = library()
        _assert_routed(lib, natives, K)
        _assert_calls_go_through_compat_clone(lib, K)
    assert all(_slots(lib)[k] is fn for k, fn in natives.items())


def test_nested_handles_restore_with_the_last(K: Any, library: Any) -> None:
    lib = library()
    native = lib.cm
    first = compat_clone.patch()
    second = compat_clone.patch()
    assert is_ours(lib.cm) and lib.cm.__wrapped__ is native  # routed once, not wrapped twice
    first.unpatch()
    assert is_ours(lib.cm)  # the other handle still holds it
    second.unpatch()
    assert lib.cm is native


def test_a_library_name_rebound_by_someone_else_stays_theirs(K: Any, library: Any) -> None:
    def theirs(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("not called")

    lib = library()
    native = lib.clone_model
    with compat_clone.patch():
        lib.cm = theirs
    assert lib.cm is theirs and lib.clone_model is native


def test_a_library_patched_from_several_threads(K: Any, library: Any) -> None:
    lib = library()
    native = lib.cm
    model = _model(K)
    errors: List[BaseException] = []

    def work() -> None:
        try:
            barrier.wait()
            for _ in range(3):
                with compat_clone.patched():
                    assert is_ours(lib.cm) and lib.cm.__wrapped__ is native
                    assert lib.call(model).name == "via_global"
        except BaseException as exc:  # reported below
            errors.append(exc)

    # Standalone Keras 2: one TF1 graph per thread (as in test_patch.py).
    work_threads = 1 if compat_clone.family_of(model).family == "keras2" else 4
    barrier = threading.Barrier(work_threads)
    threads = [threading.Thread(target=work) for _ in range(work_threads)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    assert lib.cm is native
