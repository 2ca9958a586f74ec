"""`compat-clone migrate --to keras3`: the rule tables against the real releases, the fixtures run, snippets.

The fixture case `keras3_rules` (tests/migrate/migrate_fixtures/keras3_rules, migrated with `--to keras3`
as its `args.txt` says) is checked by tests/migrate/test_migrate.py like every case: before -> after
exactly, after a fixpoint, the reports of `reports.txt`. Here each rewrite fixture runs: its `before`
on the Keras 2 it was written for (tf.keras 2.x / tf_keras, or standalone Keras 2.3), its `after` on
Keras 3, each comparing its `RESULT` with the `EXPECTED` written in the file, so neither environment
needs the other. The table tests read the installed Keras 3 and tf_keras (the developer environment).
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import os
import re
import runpy
from pathlib import Path
from typing import Any, Dict, Optional, Tuple

import numpy as np
import pytest

from compat_clone.tools import migrate as _migrate
from compat_clone.tools.migrate.keras3_api import KERAS3_NAMES, KERAS3_VERSION
from compat_clone.tools.migrate.keras3_rules import (
    _MOVED_MODULES,
    KERAS3_RULES,
    OPS,
    keras3_target,
    render_rules_doc,
    update_rules_doc,
)

CASE = Path(__file__).parent / "migrate_fixtures" / "keras3_rules"
DOCS = Path(__file__).resolve().parents[2] / "docs" / "migrate.md"
# Each rewrite fixture, and the family its `before` runs on (its `after` runs on Keras 3).
RUNS = {
    "imports.py": "tf_keras",
    "backend_ops.py": "tf_keras",
    "save_h5.py": "tf_keras",
    "optimizer_lr.py": "keras2",
    "generators.py": "keras2",
    "internal_paths.py": "keras2",
}
# The rewrite rules, and the fixture that shows each one (the report rules are in reports.txt).
REWRITES = {
    "k3-import": "imports.py",
    "k3-optimizer-lr": "optimizer_lr.py",
    "k3-generator-method": "generators.py",
    "k3-save-format": "save_h5.py",
    "k3-backend-op": "backend_ops.py",
}

_HAS_LIBCST = importlib.util.find_spec("libcst") is not None
needs_libcst = pytest.mark.skipif(
    not _HAS_LIBCST and bool(os.environ.get("COMPAT_CLONE_ENV")),
    reason="libcst is not installed in this matrix environment",
)


def _values(path: Path, tmp_path: Path, monkeypatch: Any) -> Any:
    monkeypatch.chdir(tmp_path)  # save_h5.py writes a file where it runs
    g = runpy.run_path(str(path), run_name="__fixture__")
    return np.asarray(g["RESULT"], dtype="float64"), np.asarray(g["EXPECTED"], dtype="float64")


# ---------------------------------------------------------------------------
# The fixtures run: before on Keras 2, after on Keras 3, the same values


@pytest.mark.keras3
@pytest.mark.parametrize("name", sorted(RUNS))
def test_migrated_fixture_gives_the_expected_values_on_keras3(name: str, tmp_path: Path, monkeypatch: Any) -> None:
    keras = pytest.importorskip("keras")
    if _minor(keras.__version__) < _minor(KERAS3_VERSION):
        # the rule set writes the table's Keras 3 API: keras.ops.dtype, for one, came after 3.2
        pytest.skip(f"the migrated code is written for Keras {KERAS3_VERSION}'s API; this is Keras {keras.__version__}")
    got, expected = _values(CASE / "after" / name, tmp_path, monkeypatch)
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-7)


@pytest.mark.tf_keras
@pytest.mark.parametrize("name", sorted(n for n, family in RUNS.items() if family == "tf_keras"))
def test_old_fixture_gives_the_expected_values_on_tf_keras(name: str, tmp_path: Path, monkeypatch: Any) -> None:
    tf = pytest.importorskip("tensorflow")
    import compat_clone

    family = compat_clone.family_of(tf.keras.Sequential([tf.keras.Input((1,))])).family
    if family != "tf_keras":  # TF >= 2.16 without TF_USE_LEGACY_KERAS: Keras 3 (whose tf.keras.backend keeps K.sum)
        pytest.skip(f"tf.keras is served by {family} here, not tf_keras")
    got, expected = _values(CASE / "before" / name, tmp_path, monkeypatch)
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-7)


@pytest.mark.keras2
@pytest.mark.parametrize("name", sorted(n for n, family in RUNS.items() if family == "keras2"))
def test_old_fixture_gives_the_expected_values_on_keras2(name: str, tmp_path: Path, monkeypatch: Any) -> None:
    keras = pytest.importorskip("keras")
    if not keras.__version__.startswith("2.3"):
        pytest.skip(f"the fixtures are standalone Keras 2.3 code; this is Keras {keras.__version__}")
    keras.backend.clear_session()
    got, expected = _values(CASE / "before" / name, tmp_path, monkeypatch)
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-7)


def test_every_keras3_rule_has_a_fixture() -> None:
    reported = set(re.findall(r"\[(k3-[a-z0-9-]+)\]", (CASE / "reports.txt").read_text()))
    rules = {rule.id: rule.kind for rule in KERAS3_RULES}
    assert set(REWRITES) <= {r for r, kind in rules.items() if kind == "rewrite"}
    assert set(REWRITES) | reported == set(rules)
    for rule, name in REWRITES.items():
        assert (CASE / "before" / name).read_bytes() != (CASE / "after" / name).read_bytes(), rule
    assert set(RUNS) == set(REWRITES.values()) | {"internal_paths.py"}


# ---------------------------------------------------------------------------
# The tables, against the real Keras 3 and tf_keras


def _minor(version: str) -> Tuple[int, int]:
    major, minor = version.split(".")[:2]
    return int(major), int(minor)


def _keras3() -> Any:
    keras = pytest.importorskip("keras")
    if keras.__version__ != KERAS3_VERSION:
        pytest.skip(f"the table is Keras {KERAS3_VERSION}'s; this is Keras {keras.__version__}")
    return keras


def test_keras3_api_table_names_only_what_keras3_has() -> None:
    _keras3()
    for module, names in KERAS3_NAMES.items():
        found = importlib.import_module(module)
        missing = sorted(n for n in names if not hasattr(found, n))
        assert not missing, f"{module}: {missing}"


def test_backend_ops_table_matches_both_signatures() -> None:
    keras = _keras3()
    tf_keras = pytest.importorskip("tf_keras")
    for name, op in OPS.items():
        old = inspect.signature(getattr(tf_keras.backend, name)).parameters
        new = inspect.signature(getattr(keras.ops, op.op)).parameters
        assert tuple(old) == op.params, name
        new_names = list(new)
        for i, param in enumerate(op.only or op.params):
            renamed = op.renames.get(param, param)
            assert new_names[i] == renamed, (name, param)  # the same position: positional arguments stay
            old_default, new_default = old[param].default, new[renamed].default
            if param in op.explicit:
                assert repr(old_default) == op.explicit[param] and new_default != old_default, (name, param)
            elif old_default is not inspect.Parameter.empty:
                assert new_default == old_default, (name, param)
        for param in op.params:
            if param not in (op.only or op.params):
                assert param not in new or old[param].default != new[param].default, (name, param)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("tensorflow.keras.layers.Dense", "keras.layers.Dense"),
        ("tf_keras.optimizers.Adam", "keras.optimizers.Adam"),
        ("tensorflow.keras.layers.experimental.preprocessing.Rescaling", "keras.layers.Rescaling"),
        ("keras.engine.topology.Layer", "keras.layers.Layer"),
        ("keras.engine.topology.InputSpec", "keras.layers.InputSpec"),
        ("keras.engine.training.Model", "keras.models.Model"),
        ("keras.engine.input_layer.Input", "keras.layers.Input"),
        ("keras.layers.merge.concatenate", "keras.layers.concatenate"),
        ("keras.layers.core.Dense", "keras.layers.Dense"),
        ("keras.layers.convolutional.Conv2D", "keras.layers.Conv2D"),
        ("keras.layers.recurrent.LSTM", "keras.layers.LSTM"),
        ("keras.layers.normalization.BatchNormalization", "keras.layers.BatchNormalization"),
        ("keras.layers.pooling.MaxPooling2D", "keras.layers.MaxPooling2D"),
        ("keras.layers.advanced_activations.LeakyReLU", "keras.layers.LeakyReLU"),
        ("keras.layers.noise.GaussianNoise", "keras.layers.GaussianNoise"),
        ("keras.layers.wrappers.Bidirectional", "keras.layers.Bidirectional"),
        ("keras.layers.embeddings.Embedding", "keras.layers.Embedding"),
        ("keras.utils.np_utils.to_categorical", "keras.utils.to_categorical"),
        ("keras.utils.generic_utils.get_custom_objects", "keras.utils.get_custom_objects"),
        ("keras.preprocessing.sequence.pad_sequences", "keras.preprocessing.sequence.pad_sequences"),
        ("tensorflow.keras.layers.Layer.__init__", "keras.layers.Layer.__init__"),
        ("tensorflow.keras.preprocessing.image.ImageDataGenerator", None),
        ("keras.preprocessing.text.Tokenizer", None),
        ("tensorflow.keras.layers.LocallyConnected2D", None),
        ("keras.engine.topology", None),
        ("keras.src.layers.Dense", None),
        ("numpy.sum", None),
    ],
)
def test_old_names_move_to_keras3_names_that_import(old: str, new: Optional[str]) -> None:
    assert keras3_target(old) == new
    if new is not None and _keras3_here():  # and it imports
        found: Any = importlib.import_module("keras")
        for part in new.split(".")[1:]:
            found = getattr(found, part)


def test_every_moved_module_lands_in_a_keras3_module() -> None:
    for homes in _MOVED_MODULES.values():
        assert all(f"keras.{home}" in KERAS3_NAMES for home in homes)


def _keras3_here() -> bool:
    try:
        import keras
    except ImportError:
        return False
    return bool(keras.__version__ == KERAS3_VERSION)


def test_docs_list_every_keras3_rule() -> None:
    text = DOCS.read_text(encoding="utf-8")
    assert update_rules_doc(text) == text, "stale: run python -m compat_clone.tools.migrate.keras3_rules --write docs/migrate.md"
    for rule in KERAS3_RULES:
        assert f"| `{rule.id}` | {rule.kind} |" in render_rules_doc()


# ---------------------------------------------------------------------------
# Snippets: what the rule set keeps (layout, backend order, review marks) and where it holds back

SNIPPETS: Dict[str, tuple[str, str]] = {
    "CRLF and tabs kept": (
        "import tensorflow as tf\r\nif True:\r\n\tm = tf.keras.Sequential()\r\n",
        "import keras\r\nif True:\r\n\tm = keras.Sequential()\r\n",
    ),
    "import keras after the backend is chosen": (
        'import os\nos.environ["KERAS_BACKEND"] = "jax"\nimport tensorflow as tf\nm = tf.keras.Sequential()\n',
        'import os\nos.environ["KERAS_BACKEND"] = "jax"\nimport keras\nm = keras.Sequential()\n',
    ),
    "tf kept while still used": (
        "import tensorflow as tf\nx = tf.constant(1.0)\nm = tf.keras.Sequential()\n",
        "import tensorflow as tf\nimport keras\nx = tf.constant(1.0)\nm = keras.Sequential()\n",
    ),
    "a from-import split": (
        "from tensorflow import keras, nn\nkeras.layers.Dense(1)\n",
        "from tensorflow import nn\nimport keras\nkeras.layers.Dense(1)\n",
    ),
    "a split import keeps its comments": (
        "from tensorflow import (\n    keras,  # the Keras of TF\n    nn,\n)\nkeras.layers.Dense(1)\n",
        "from tensorflow import (\n    nn,\n)\n# the Keras of TF\nimport keras\nkeras.layers.Dense(1)\n",
    ),
    "a moved import keeps its comments": (
        "# the API\nfrom tensorflow import (  # tf.keras\n    keras as k2,  # again\n)\n",
        "# the API\n# tf.keras\n# again\nimport keras as k2\n",
    ),
    "tf_keras aliased": (
        "import tf_keras as tfk\nm = tfk.layers.Dense(1)\n",
        "import keras as tfk\nm = tfk.layers.Dense(1)\n",
    ),
    "an internal path through the package": (
        "import keras\nc = keras.layers.merge.concatenate\n",
        "import keras\nc = keras.layers.concatenate\n",
    ),
    "lr renamed, comments kept": (
        "import keras\nopt = keras.optimizers.Adam(\n    lr=1e-3,  # the paper's rate\n)\n",
        "import keras\nopt = keras.optimizers.Adam(\n    learning_rate=1e-3,  # the paper's rate\n)\n",
    ),
    "K.clip with number literals": (
        "from keras import backend as K\ny = K.clip(x, -1, 1)\n",
        "import keras\ny = keras.ops.clip(x, -1, 1)\n",
    ),
}
REPORTED: Dict[str, tuple[str, str]] = {
    "K.clip with a name for a bound": ("from keras import backend as K\ny = K.clip(x, lo, 1.0)\n", "k3-backend-op"),
    "keras bound to something else": ("import tensorflow as tf\nkeras = None\nm = tf.keras.Sequential()\n", "k3-import"),
    "a star import of an old module": ("from keras.layers.merge import *\n", "k3-import"),
    "K.get_value": ("import keras.backend as K\nv = K.get_value(w)\n", "k3-backend-session"),
}


@needs_libcst
@pytest.mark.parametrize("name", sorted(SNIPPETS))
def test_keras3_snippet_rewrite(name: str) -> None:
    before, after = SNIPPETS[name]
    result = _migrate.migrate_source(before.encode(), "old.py", to="keras3")
    assert result.migrated.decode() == after
    assert [str(r) for r in result.reports] == []
    again = _migrate.migrate_source(result.migrated, "old.py", to="keras3")
    assert not again.changed and again.reports == [], "not idempotent"
    compile(result.migrated, "old.py", "exec")
    assert not _migrate.migrate_source(before.encode(), "old.py").changed, "--to keras3 is opt-in"


@needs_libcst
@pytest.mark.parametrize("name", sorted(REPORTED))
def test_keras3_snippet_reported(name: str) -> None:
    source, rule = REPORTED[name]
    result = _migrate.migrate_source(source, "old.py", to="keras3")
    assert [r.rule for r in result.reports] == [rule], [str(r) for r in result.reports]
    assert not result.changed or rule == "k3-import", result.migrated.decode()


@needs_libcst
def test_a_review_mark_names_a_keras3_rule(tmp_path: Path, capsys: Any) -> None:
    from tests.migrate.test_migrate import run_cli

    (tmp_path / "a.py").write_text("import keras\nmodel.reset_states()  # compat-clone: ok k3-reset-states\n")
    assert run_cli(["--check", "--to", "keras3", str(tmp_path)]) == _migrate.EXIT_OK
    assert "1 marked reviewed" in capsys.readouterr().err
    (tmp_path / "a.py").write_text("import keras\nmodel.reset_states()\n")
    assert run_cli(["--check", "--to", "keras3", str(tmp_path)]) == _migrate.EXIT_CHANGES
    assert "[k3-reset-states]" in capsys.readouterr().err


def test_an_unknown_target_is_refused() -> None:
    with pytest.raises(ValueError, match="Received: to='keras4'"):
        _migrate.migrate_source("x = 1\n", to="keras4")


@needs_libcst
def test_an_import_stays_while_a_use_of_it_has_no_keras3_home() -> None:
    # `K.shape` is reported; moving K's import to Keras 3's `keras.backend` would break it where it works
    # (tf.keras of TensorFlow >= 2.16 keeps it), so the import stays until that use is fixed
    source = "from tensorflow.keras import backend as K\na = K.sum(x)\nb = K.shape(x)\n"
    result = _migrate.migrate_source(source, "old.py", to="keras3")
    assert result.migrated.decode() == (
        "from tensorflow.keras import backend as K\nimport keras\na = keras.ops.sum(x)\nb = K.shape(x)\n"
    )
    assert [r.rule for r in result.reports] == ["k3-backend-op"]
    fixed = result.migrated.decode().replace("K.shape(x)", "keras.ops.shape(x)")
    assert _migrate.migrate_source(fixed, "old.py", to="keras3").migrated.decode() == (
        "from keras import backend as K\nimport keras\na = keras.ops.sum(x)\nb = keras.ops.shape(x)\n"
    )
