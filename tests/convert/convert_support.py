"""What the compat_clone.convert tests share: the Keras 2 family under test, whether Keras 3 shares its
process, the two skip markers, and the fixture's body.

Used by tests/convert/test_convert.py, tests/convert/test_convert_describe.py and tests/convert/test_convert_inprocess.py.
"""

from __future__ import annotations

import importlib
import os
from typing import Any, Iterator, List

import numpy as np
import pytest

from tests.support.families import WIDE, families_under_test, keras_module

__all__ = [
    "IN_PROCESS",
    "IN_PROCESS_HOST",
    "KERAS2_FAMILY",
    "fresh_keras2",
    "needs_both",
    "needs_keras2",
    "predict_outputs",
    "weights_snapshot",
]


def _keras2_family() -> str | None:
    for family in families_under_test():
        if family in ("tf_keras", "keras2"):
            return family
    return None


def _keras3_alongside() -> bool:
    """Whether Keras 3 imports in this process next to the Keras 2 family under test."""
    family = _keras2_family()
    if family != "tf_keras":
        return False
    try:
        importlib.import_module("tf_keras")
        keras = importlib.import_module("keras")
    except ImportError:
        return False
    return str(keras.__version__).startswith("3.")


KERAS2_FAMILY = _keras2_family()
# The in-process conversions (tf_keras next to Keras 3) run in one tf_keras environment of `make test`, the
# newest: tf_keras-2.16 would repeat them for about 3 minutes. `make test-wide` (COMPAT_CLONE_WIDE=1) runs
# them in every tf_keras environment, and outside the matrix they run wherever both import.
IN_PROCESS_HOST = "tf_keras-2.21"
IN_PROCESS = _keras3_alongside() and (os.environ.get("COMPAT_CLONE_ENV") in (None, IN_PROCESS_HOST) or WIDE)

needs_keras2 = pytest.mark.skipif(KERAS2_FAMILY is None, reason="no Keras 2 family tested here")
needs_both = pytest.mark.skipif(
    not IN_PROCESS,
    reason="Keras 3 cannot share this process with the Keras 2 family under test"
    if not _keras3_alongside()
    else f"converted in {IN_PROCESS_HOST} in make test (every tf_keras in make test-wide)",
)


def fresh_keras2() -> Iterator[Any]:
    """The Keras 2 module under test; standalone Keras 2 gets a fresh TF1 graph per test.

    The body of each convert test module's `K2` fixture (``yield from fresh_keras2()``).
    Standalone Keras 2 builds every model into one default graph, which the
    other tests of this worker have grown: a MobileNetV2 described there
    takes minutes instead of seconds.
    """
    assert KERAS2_FAMILY is not None
    K = keras_module(KERAS2_FAMILY)
    if KERAS2_FAMILY == "keras2":
        K.backend.clear_session()
    yield K
    if KERAS2_FAMILY == "keras2":
        K.backend.clear_session()


def predict_outputs(model: Any, inputs: List[np.ndarray]) -> List[np.ndarray]:
    out = model.predict(inputs if len(inputs) > 1 else inputs[0], verbose=0)
    if isinstance(out, dict):  # dict_outputs: the flattened outputs' order, sorted keys
        return [np.asarray(out[k]) for k in sorted(out)]
    return [np.asarray(o) for o in (out if isinstance(out, list) else [out])]


def weights_snapshot(model: Any) -> List[np.ndarray]:
    return [np.array(w) for w in model.get_weights()]
