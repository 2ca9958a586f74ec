"""`compat-clone migrate` on target updates by NumPy arithmetic and per-variable loops (issue 47).

The fixture `migrate_fixtures/host_updates` holds the forms users wrote:
`np.array(model.get_weights())` arithmetic then `target.set_weights(...)`,
a comprehension over zipped weights with a comment inside, loops of
`K.set_value(t, K.get_value(s))` / `t.assign(s)` / blended `t.assign(...)`
over `zip(T.weights, S.weights)`; and the ones reported by rule (trainable
lists only, a literal `tau` outside (0, 1], a temporary used elsewhere).
`tests/migrate/test_migrate.py` checks its `after/`, `reports.txt` and a second run;
here the snippets, the command line's `--exclude` and unparsable files, the
rule table, and the old and migrated fixture run side by side on the
environment's tf.keras.
"""

from __future__ import annotations

import importlib.util
import os
import re
from pathlib import Path
from types import ModuleType
from typing import Any, List

import numpy as np
import pytest

from compat_clone.tools import migrate as _migrate
from compat_clone.tools.migrate.rules import RULES
from tests.support.families import families_under_test

FIXTURE = Path(__file__).parent / "migrate_fixtures" / "host_updates"
DOCS = Path(__file__).resolve().parents[2] / "docs" / "migrate.md"

needs_libcst = pytest.mark.skipif(
    importlib.util.find_spec("libcst") is None and bool(os.environ.get("COMPAT_CLONE_ENV")),
    reason="libcst is not installed in this matrix environment",
)

_HEAD = "import numpy as np\nfrom keras import backend as K\n"

SNIPPETS = {
    "arrays bound on the lines before": (
        "import numpy as np\ndef f(model, target, tau):\n    mw = np.array(model.get_weights())\n"
        "    tw = np.array(target.get_weights())\n    target.set_weights(tau * mw + (1 - tau) * tw)\n",
        "import compat_clone\ndef f(model, target, tau):\n    compat_clone.copy_weights(model, target, tau=tau)\n",
    ),
    "arrays inline, numpy imported under its own name": (
        "import numpy\nt.set_weights(0.01 * numpy.array(m.get_weights()) + 0.99 * numpy.array(t.get_weights()))\n",
        "import compat_clone\ncompat_clone.copy_weights(m, t, tau=0.01)\n",
    ),
    "hard update of one array": (
        "import numpy as np\nw = np.array(m.get_weights())\nt.set_weights(w)\n",
        "import compat_clone\ncompat_clone.copy_weights(m, t)\n",
    ),
    "K.set_value loop, one line": (
        _HEAD + "for t, s in zip(target.weights, source.weights): K.set_value(t, K.get_value(s))\nprint(np.pi)\n",
        "import numpy as np\nimport compat_clone\ncompat_clone.copy_weights(source, target)\nprint(np.pi)\n",
    ),
    "assign loop over weights, s.numpy()": (
        "for t, s in zip(tgt.weights, src.weights):\n    t.assign(s.numpy())\n",
        "import compat_clone\n\ncompat_clone.copy_weights(src, tgt)\n",
    ),
    "blended assign, source first in the zip, comments kept": (
        "def f(a, b):\n    # soft\n    for s, t in zip(a.weights, b.weights):  # pairs\n"
        "        # blend\n        t.assign(0.005 * s + 0.995 * t)  # polyak\n",
        "import compat_clone\n\n\ndef f(a, b):\n    # soft\n    # pairs\n    # blend\n    # polyak\n"
        "    compat_clone.copy_weights(a, b, tau=0.005)\n",
    ),
    "a multi-line comprehension's comments": (
        "t.set_weights(\n    [\n        tau * w  # online\n        + (1 - tau) * tw  # target\n"
        "        for w, tw in zip(m.get_weights(), t.get_weights())\n    ]\n)  # sync\n",
        "# online\n# target\nimport compat_clone\n\ncompat_clone.copy_weights(m, t, tau=tau)  # sync\n",
    ),
    "a hand-rolled clone's comments": (
        "from keras.models import model_from_config\nc = model_from_config(\n"
        "    {'class_name': m.__class__.__name__,  # the class\n     'config': m.get_config()}\n)\n",
        "import compat_clone\n# the class\nc = compat_clone.clone_model(m)\n",
    ),
    "imports the new call reads stay, those only the loop read go": (
        "from cfg import TAU\nfrom nets import online, target\nimport keras.backend as K\n"
        "for t, s in zip(target.weights, online.weights):\n    K.set_value(t, TAU * K.get_value(s) + (1 - TAU) * K.get_value(t))\n",
        "from cfg import TAU\nfrom nets import online, target\nimport compat_clone\n"
        "compat_clone.copy_weights(online, target, tau=TAU)\n",
    ),
    "CRLF and tabs kept": (
        "def f(target, source):\r\n\tfor t, s in zip(target.weights, source.weights):\r\n\t\tt.assign(s)\r\n",
        "import compat_clone\r\n\r\n\r\ndef f(target, source):\r\n\tcompat_clone.copy_weights(source, target)\r\n",
    ),
}

REPORTED = {
    "a loop over trainable weights only": (
        "for t, s in zip(target.trainable_weights, source.trainable_weights):\n    t.assign(s)\n",
        "variable-copy",
        "not the same operation",
    ),
    "variables: the seed state too in Keras 3": (
        "for t, s in zip(target.variables, source.variables):\n    t.assign(s)\n",
        "variable-copy",
        "`seed_generator_state`",
    ),
    "lists that differ": (
        "for t, s in zip(target.weights, source.trainable_weights):\n    t.assign(0.1 * s + 0.9 * t)\n",
        "assign-update",
        "`zip(target.weights, source.trainable_weights)`",
    ),
    "tau = 0": (
        "t.set_weights([0 * a + (1 - 0) * b for a, b in zip(m.get_weights(), t.get_weights())])\n",
        "tau-range",
        "`tau=0`",
    ),
    "negative tau, K.set_value": (
        _HEAD + "for t, s in zip(target.weights, source.weights):\n"
        "    K.set_value(t, -0.5 * K.get_value(s) + (1 - -0.5) * K.get_value(t))\n",
        "tau-range",
        "`tau=-0.5`",
    ),
    "an array used after the update": (
        "import numpy as np\nw = np.array(m.get_weights())\nt.set_weights(w)\nprint(w)\n",
        "array-update",
        "`w` (which the update binds) is used elsewhere",
    ),
}

UNCHANGED = {
    "np is not NumPy": "import mylib as np\nt.set_weights(np.array(m.get_weights()))\n",
    "K is not Keras's": (
        "from mylib import K\nfor t, s in zip(target.weights, source.weights):\n    K.set_value(t, K.get_value(s))\n"
    ),
    "a loop that does more": "for t, s in zip(target.weights, source.weights):\n    t.assign(s)\n    print(t)\n",
    "layers, not models": "for t, s in zip(layer_a.weights, layer_b.weights):\n    t.assign(s)\n",
}


@needs_libcst
@pytest.mark.parametrize("name", sorted(SNIPPETS))
def test_update_snippet(name: str) -> None:
    before, after = SNIPPETS[name]
    result = _migrate.migrate_source(before.encode(), "old.py")
    assert result.error is None
    assert result.migrated.decode() == after
    assert [str(r) for r in result.reports if not r.note] == []
    again = _migrate.migrate_source(result.migrated, "old.py")
    assert not again.changed and again.reports == [], "not idempotent"
    compile(result.migrated, "old.py", "exec")


@needs_libcst
@pytest.mark.parametrize("name", sorted(REPORTED))
def test_update_reported_by_rule(name: str) -> None:
    source, rule, fragment = REPORTED[name]
    result = _migrate.migrate_source(source, "old.py")
    assert not result.changed, result.migrated.decode()
    assert [r.rule for r in result.reports] == [rule], [str(r) for r in result.reports]
    assert fragment in result.reports[0].why
    assert str(result.reports[0]).endswith(f"[{rule}]")


@needs_libcst
@pytest.mark.parametrize("name", sorted(UNCHANGED))
def test_update_left_alone(name: str) -> None:
    result = _migrate.migrate_source(UNCHANGED[name], "old.py")
    assert not result.changed, result.migrated.decode()
    assert result.reports == []


def test_every_rule_is_in_the_docs_rule_table() -> None:
    table = re.findall(r"^\| `([a-z-]+)` \|", DOCS.read_text(), flags=re.M)
    assert table == list(RULES)


# ---------------------------------------------------------------------------
# The command line: --exclude, files that do not parse


def test_is_excluded_matches_names_and_paths() -> None:
    assert _migrate.is_excluded("src/legacy/py2", ["legacy/py2"])
    assert _migrate.is_excluded("./src/legacy/py2/", ["src/legacy/py2"])
    assert _migrate.is_excluded("src/legacy", ["legacy"])
    assert _migrate.is_excluded("src/a_py2.py", ["*_py2.py"])
    assert _migrate.is_excluded("src/legacy/py2/a.py", ["*/py2/*"])
    assert not _migrate.is_excluded("src/legacy2", ["legacy"])
    assert not _migrate.is_excluded("src/mylegacy/py2", ["legacy/py2"])


@needs_libcst
def test_check_passes_on_a_legacy_tree_once_python2_files_are_excluded(tmp_path: Path, capsys: Any) -> None:
    from test_migrate import run_cli

    (tmp_path / "legacy" / "py2").mkdir(parents=True)
    (tmp_path / "legacy" / "py2" / "train.py").write_text('print "training"\n')
    (tmp_path / "legacy" / "old_py2.py").write_text("exec 'x = 1'\n")
    (tmp_path / "app.py").write_text("import compat_clone\ncompat_clone.copy_weights(m, t)\n")
    assert run_cli(["--check", str(tmp_path)]) == _migrate.EXIT_ERROR
    err = capsys.readouterr().err
    assert "train.py:1:1: does not parse, skipped (Missing parentheses in call to 'print'" in err
    assert "2 file(s) do not parse" in err and "--exclude GLOB" in err
    assert run_cli(["--check", str(tmp_path), "--exclude", "py2", "--exclude", "*_py2.py"]) == _migrate.EXIT_OK
    assert "does not parse" not in capsys.readouterr().err
    assert run_cli(["--check", str(tmp_path), "--exclude", "legacy/py2"]) == _migrate.EXIT_ERROR
    err = capsys.readouterr().err
    assert "1 file(s) do not parse" in err and "old_py2.py" in err
    assert list(_migrate.iter_python_files([str(tmp_path)], ["legacy"])) == [str(tmp_path / "app.py")]


# ---------------------------------------------------------------------------
# The old and the migrated fixture, run side by side


def _tf_keras() -> Any:
    """`tf.keras`, where the family it serves is the one this environment tests (never TensorFlow 1's)."""
    tf = pytest.importorskip("tensorflow")
    if int(tf.__version__.split(".")[0]) < 2:
        pytest.skip(f"TensorFlow {tf.__version__}'s tf.keras is no family compat_clone serves")
    try:
        keras = tf.keras
        backend = keras.backend
    except ImportError as e:
        # TensorFlow 2.13-2.15 load tf.keras from the `keras` package (keras.api); standalone Keras 2.2 installed
        # under that name beside it has none, so tf.keras does not import there at all.
        pytest.skip(f"tf.keras of TensorFlow {tf.__version__} does not import here: {type(e).__name__}: {e}")
    if not hasattr(backend, "set_value"):
        pytest.skip("this tf.keras has no backend.set_value")
    import compat_clone

    family = compat_clone.family_of(keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)])).family
    if family not in families_under_test():
        pytest.skip(f"tf.keras is {family} here, not tested in this environment")
    return keras


def _load(side: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"host_updates_{side}", FIXTURE / side / "updates.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _pair(keras: Any, rng: Any) -> List[Any]:
    models = []
    for _ in range(2):
        model = keras.Sequential(
            [keras.Input((3,)), keras.layers.Dense(4), keras.layers.BatchNormalization(), keras.layers.Dense(2)]
        )
        model.set_weights([rng.uniform(0.5, 1.5, w.shape).astype(w.dtype) for w in model.get_weights()])
        models.append(model)
    return models


@pytest.mark.parametrize(
    "name, order, tau",
    [
        ("soft_update_arrays", "model, target, tau", 0.25),
        ("hard_update_array", "model, target", 1.0),
        ("soft_update_comprehension", "model, target, tau", 0.25),
        ("hard_update_set_value", "target, source", 1.0),
        ("soft_update_assign", "target, source, tau", 0.25),
        ("soft_update_set_value", "target, source, tau", 0.25),
    ],
)
def test_rewritten_updates_leave_the_same_weights(name: str, order: str, tau: float) -> None:
    """Each rewritten update, old and migrated, on two models of the same builder from the same weights: the
    migrated one leaves `tau * source + (1 - tau) * target` (float32 rounding), and so does the old one where it
    runs (Keras 3's legacy `K.set_value` fails on its own variables: `x.dtype.name` of a str)."""
    keras = _tf_keras()
    results = {}
    for side in ("before", "after"):
        source, target = _pair(keras, np.random.default_rng(7))
        start = target.get_weights()
        args = {"model": source, "source": source, "target": target, "tau": tau}
        try:
            getattr(_load(side), name)(*(args[a.strip()] for a in order.split(",")))
        except AttributeError as exc:
            assert side == "before" and "set_value" in name and "name" in str(exc), exc
            continue
        results[side] = target.get_weights()
        expected = [tau * s + (1 - tau) * t for s, t in zip(source.get_weights(), start)]
        for got, want in zip(results[side], expected):
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    assert "after" in results


def test_keras3_variables_hold_the_seed_state_copy_weights_leaves_alone() -> None:
    """Why a loop over `variables` is reported, not rewritten: in Keras 3 it also copies Dropout's seed state."""
    keras = pytest.importorskip("keras")
    if keras.__version__.startswith("2."):
        pytest.skip("Keras 2: `variables` and `weights` are the same list")
    import compat_clone

    def build() -> Any:
        return keras.Sequential([keras.Input((3,)), keras.layers.Dense(4), keras.layers.Dropout(0.5)])

    source, by_loop, by_copy = build(), build(), build()
    source(np.ones((2, 3), dtype="float32"), training=True)  # the seed state moves
    weight_ids = {id(w) for w in source.weights}
    assert [v.path.rpartition("/")[2] for v in source.variables if id(v) not in weight_ids] == ["seed_generator_state"]
    for t, s in zip(by_loop.variables, source.variables):
        t.assign(s)
    compat_clone.copy_weights(source, by_copy)
    seeds = [np.asarray(m.variables[-1]) for m in (source, by_loop, by_copy)]
    assert np.array_equal(seeds[0], seeds[1]) and not np.array_equal(seeds[0], seeds[2])
