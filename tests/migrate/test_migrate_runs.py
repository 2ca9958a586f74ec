"""The fixtures `compat-clone migrate` migrated (tests/migrate/migrate_fixtures/<case>/after), run with the real Keras.

Each test executes one migrated fixture with the Keras family of the
environment it is marked for; they need no libcst. The codemod that makes
these files is tested in tests/migrate/test_migrate.py.
"""

from __future__ import annotations

import runpy
import sys
from pathlib import Path
from typing import Any, Dict

import numpy as np
import pytest

from tests.support.families import families_under_test

FIXTURES = Path(__file__).parent / "migrate_fixtures"


# ---------------------------------------------------------------------------
# The migrated fixtures run with the real Keras of this environment


def _run_script(path: Path, init_globals: Any = None) -> Dict[str, Any]:
    return runpy.run_path(str(path), init_globals=init_globals, run_name="__fixture__")


def _same_weights(a: Any, b: Any) -> bool:
    wa, wb = a.get_weights(), b.get_weights()
    return len(wa) == len(wb) and all(x.shape == y.shape and np.array_equal(x, y) for x, y in zip(wa, wb))


@pytest.mark.keras3
def test_migrated_keras3_script_runs() -> None:
    import compat_clone

    g = _run_script(FIXTURES / "keras3_script" / "after" / "finetune.py")
    base, student, baseline = g["base"], g["student"], g["baseline"]
    assert compat_clone.family_of(student).family == "keras3"
    assert student is not base
    assert _same_weights(student, base)  # BatchNormalization statistics included
    assert not _same_weights(baseline, base)
    assert [layer.trainable for layer in student.layers if layer.weights] == [False, False, True]


@pytest.mark.keras3
def test_migrated_notebook_runs() -> None:
    import compat_clone

    class _Shell:
        def run_line_magic(self, *args: Any) -> None:
            pass

    g = _run_script(FIXTURES / "notebook" / "after" / "transfer.py", {"get_ipython": lambda: _Shell()})
    assert compat_clone.family_of(g["twin"]).family == "keras3"
    assert _same_weights(g["twin"], g["model"])
    assert tuple(g["wide"].output_shape) == (None, 3)


def test_migrated_tf_script_runs() -> None:
    # tf.keras is Keras 3 (TF >= 2.16) or Keras 2 (TF <= 2.15): never standalone Keras 2
    if not {"keras3", "tf_keras"} & set(families_under_test()):
        pytest.skip("tf.keras serves keras3 or tf_keras, neither tested in this environment")
    tf = pytest.importorskip("tensorflow")
    import compat_clone

    family = compat_clone.family_of(tf.keras.Sequential([tf.keras.Input((1,))])).family
    if family not in families_under_test():
        pytest.skip(f"tf.keras is served by {family}, not tested in this environment")
    g = _run_script(FIXTURES / "tf_script" / "after" / "target_network.py")
    agent, snapshot = g["agent"], g["snapshot"]
    assert compat_clone.family_of(agent.target).family == family
    assert agent.target is not agent.online
    # copied at clone time, so the soft update mixes equal weights
    assert all(np.allclose(x, y) for x, y in zip(agent.target.get_weights(), agent.online.get_weights()))
    assert _same_weights(snapshot, agent.online)
    assert snapshot.trainable is False


@pytest.mark.tf_keras
def test_migrated_tf_keras_package_runs(monkeypatch: Any) -> None:
    pytest.importorskip("tf_keras")
    import compat_clone

    root = FIXTURES / "tf_keras_pkg" / "after"
    monkeypatch.syspath_prepend(str(root))
    for name in [m for m in sys.modules if m == "zoo" or m.startswith("zoo.")]:
        monkeypatch.delitem(sys.modules, name)
    try:
        g = _run_script(root / "run_zoo.py")
        assert sys.modules["zoo"].__file__.startswith(str(root))
    finally:
        for name in [m for m in sys.modules if m == "zoo" or m.startswith("zoo.")]:
            del sys.modules[name]
    base, members = g["base"], g["members"]
    assert compat_clone.family_of(base).family == "tf_keras"
    assert len(members) == 3 and all(_same_weights(m, base) for m in members)
    assert not _same_weights(g["fresh"], base)
    assert g["wide"].layers[1].units == 16
    assert all(np.array_equal(p, g["predictions"][0]) for p in g["predictions"])


@pytest.mark.keras2
def test_migrated_keras2_script_runs() -> None:
    import keras

    import compat_clone

    if not hasattr(keras.utils, "multi_gpu_model"):
        pytest.skip(
            f"keras {keras.__version__} has no keras.utils.multi_gpu_model (2.0.9 brought it): the fixture script imports it"
        )

    g = _run_script(FIXTURES / "keras2_legacy" / "after" / "train_multi_gpu.py")
    assert compat_clone.family_of(g["ema"]).family == "keras2"
    assert _same_weights(g["ema"], g["model"])
