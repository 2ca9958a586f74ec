"""A pytest plugin that runs an installed Keras test module through compat_clone.

`tests/clone/test_upstream_keras3.py` runs Keras's own `cloning_test.py` (from
the installed wheel, never copied) in a subprocess, twice, with this plugin
loaded by ``-p upstream_plugin``. The environment variables it reads:

* ``COMPAT_CLONE_UPSTREAM_SIDE``    ``native`` or ``compat``;
* ``COMPAT_CLONE_UPSTREAM_REPORT``  a JSON file it writes at the end of the
  session: ``{"outcomes": {test: [outcome, detail]}, "calls": {test: n}}``.

On the ``compat`` side every name under which the test module, `keras.models`
or `keras.src.models.cloning` offers the native `clone_model` is replaced by
a stand-in that calls `compat_clone.clone_model`, before the first test runs.
compat_clone's Keras 3 adapter itself calls the native function through those
same names, so the stand-in hands a call made while compat_clone is already
running (on the same thread) to the native function: the user-facing calls
go through compat_clone, the adapter's own calls reach Keras.

On the native side only the test module's own name is wrapped, by a stand-in
that calls the native function. On both sides each test's calls of `clone_model` made by the test itself (not
by compat_clone) are counted, so the runner can prove the substitution was
reached: a test that called the native function 3 times must call compat_clone
too.

The test ids written are ``Class::test_name`` (the file part of the node id is
dropped), with one outcome: ``passed``, ``failed`` (a failure in setup,
call or teardown), ``skipped`` or ``xfailed`` / ``xpassed``.
"""

from __future__ import annotations

import functools
import json
import os
import sys
import threading
import traceback
from typing import Any, Dict, List, Tuple

import pytest

SIDE = os.environ.get("COMPAT_CLONE_UPSTREAM_SIDE", "native")
REPORT = os.environ.get("COMPAT_CLONE_UPSTREAM_REPORT")

_state = threading.local()
_outcomes: Dict[str, Tuple[str, str]] = {}
_calls: Dict[str, int] = {}
_current: List[str] = []
_patched: List[str] = []


def _depth() -> int:
    return getattr(_state, "depth", 0)


def _count() -> None:
    if _current and _depth() == 0:
        _calls[_current[-1]] = _calls.get(_current[-1], 0) + 1


def _stand_in(native: Any) -> Any:
    """`native`'s signature, `compat_clone.clone_model`'s behaviour (or the native one on `native`)."""
    import compat_clone

    @functools.wraps(native)
    def clone_model(*args: Any, **kwargs: Any) -> Any:
        _count()
        if SIDE == "native" or _depth() > 0:
            # the native side, or compat_clone's own call of the native function
            return native(*args, **kwargs)
        _state.depth = _depth() + 1
        try:
            return compat_clone.clone_model(*args, **kwargs)
        finally:
            _state.depth -= 1

    clone_model.__compat_clone_stand_in__ = True  # type: ignore[attr-defined]
    return clone_model


def _test_id(nodeid: str) -> str:
    return nodeid.split(".py::", 1)[-1]


def pytest_configure(config: Any) -> None:
    # Markers of Keras's own conftest.py, which the wheel does not ship.
    for marker in ("requires_trainable_backend", "skip_if_backend", "requires_tf_backend"):
        config.addinivalue_line("markers", f"{marker}: Keras's own test marker")


def _patch(items: List[Any]) -> None:
    from keras.src.models import cloning

    native = cloning.clone_model
    if getattr(native, "__compat_clone_stand_in__", False):
        return
    stand_in = _stand_in(native)
    holders: Dict[str, Any] = {}
    if SIDE == "compat":
        # Natively only the test module's own name is wrapped (to count calls).
        holders["keras.src.models.cloning"] = cloning
        for name in ("keras.models", "keras.src.models", "keras.src.models.model"):
            module = sys.modules.get(name)
            if module is not None:
                holders[name] = module
    for item in items:
        module = getattr(item, "module", None)
        if module is not None:
            holders[module.__name__] = module
    for name, module in holders.items():
        for attr, value in list(vars(module).items()):
            if value is native:
                setattr(module, attr, stand_in)
                _patched.append(f"{name}.{attr}")


def pytest_collection_modifyitems(session: Any, config: Any, items: List[Any]) -> None:
    """Replaces the native `clone_model` before the first test runs (counting on both sides)."""
    _patch(items)
    # Keras's conftest.py skips `requires_trainable_backend` tests on the numpy backend.
    import keras

    if keras.backend.backend() == "numpy":
        for item in items:
            if item.get_closest_marker("requires_trainable_backend"):
                item.add_marker(pytest.mark.skip(reason="Trainer not implemented for the numpy backend"))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: Any) -> Any:
    _current.append(_test_id(item.nodeid))
    try:
        yield
    finally:
        _current.pop()


def pytest_runtest_logreport(report: Any) -> None:
    test = _test_id(report.nodeid)
    previous = _outcomes.get(test, ("passed", ""))
    if previous[0] == "failed":
        return
    if hasattr(report, "wasxfail"):
        outcome = "xfailed" if report.skipped else "xpassed"
        _outcomes[test] = (outcome, str(report.wasxfail))
        return
    if report.failed:
        detail = getattr(report, "longreprtext", "") or str(report.longrepr)
        lines = [line[1:].strip() for line in detail.splitlines() if line.startswith("E ")]
        _outcomes[test] = ("failed", f"{report.when}: " + " | ".join(lines[-3:] or detail.splitlines()[-1:]))
    elif report.skipped:
        reason = report.longrepr[-1] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        _outcomes[test] = ("skipped", str(reason))
    elif report.when == "call" or test not in _outcomes:
        _outcomes[test] = ("passed", "")


def pytest_sessionfinish(session: Any, exitstatus: int) -> None:
    if not REPORT:
        return
    data = {
        "side": SIDE,
        "exitstatus": int(exitstatus),
        "outcomes": {k: list(v) for k, v in _outcomes.items()},
        "calls": _calls,
        "patched": _patched,
    }
    try:
        import keras

        data["keras"] = keras.__version__
        data["backend"] = keras.backend.backend()
    except Exception:
        data["keras_error"] = traceback.format_exc(limit=1)
    with open(REPORT, "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=1, sort_keys=True)
