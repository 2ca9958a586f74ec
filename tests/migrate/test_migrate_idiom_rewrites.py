"""`compat-clone migrate` on the cloning idioms of old code: what the codemod writes, reports and checks.

One snippet per idiom (rewritten, left alone, or reported with its note), then
the `migrate_fixtures/rl_agents` fixture through the command line: its diff,
its reports, `--check` and `--write`, and a migrated tree whose remaining sites
are marked reviewed. `tests/migrate/test_migrate_idioms.py` runs the old and the
migrated fixture side by side.

These tests need libcst.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import shutil
from pathlib import Path
from typing import Any, Dict, Tuple

import pytest

from compat_clone.tools import migrate as _migrate

FIXTURE = Path(__file__).parent / "migrate_fixtures" / "rl_agents"

needs_libcst = pytest.mark.skipif(
    importlib.util.find_spec("libcst") is None and bool(os.environ.get("COMPAT_CLONE_ENV")),
    reason="libcst is not installed in this matrix environment",
)


# ---------------------------------------------------------------------------
# Snippets: one idiom each


SNIPPETS = {
    "hard update anywhere": (
        "def sync(target, source):\n    target.set_weights(source.get_weights())  # hard\n",
        "import compat_clone\n\n\ndef sync(target, source):\n    compat_clone.copy_weights(source, target)  # hard\n",
    ),
    "soft update: comprehension, zip in the other order, factors swapped": (
        "m2.set_weights([t * (1.0 - tau) + s * tau for t, s in zip(m2.get_weights(), m1.get_weights())])\n",
        "import compat_clone\n\ncompat_clone.copy_weights(m1, m2, tau=tau)\n",
    ),
    "soft update: comprehension bound to a name first": (
        "new = [tau * a + (1 - tau) * b for a, b in zip(src.get_weights(), dst.get_weights())]\ndst.set_weights(new)\n",
        "import compat_clone\n\ncompat_clone.copy_weights(src, dst, tau=tau)\n",
    ),
    "soft update: number literals summing to 1": (
        "new = []\nfor a, b in zip(src.get_weights(), dst.get_weights()):\n"
        "    new.append(0.001 * a + 0.999 * b)\ndst.set_weights(new)\n",
        "import compat_clone\n\ncompat_clone.copy_weights(src, dst, tau=0.001)\n",
    ),
    "soft update: index loop, comments kept": (
        "import numpy as np\n# blend\nw = src.get_weights()  # online\ntw = dst.get_weights()\n"
        "for i in range(len(w)):\n    tw[i] = TAU * w[i] + (1 - TAU) * tw[i]\ndst.set_weights(tw)\n",
        "import numpy as np\nimport compat_clone\n# blend\n# online\ncompat_clone.copy_weights(src, dst, tau=TAU)\n",
    ),
    "model_from_json(m.to_json()) then set_weights: one clone": (
        "from keras.models import model_from_json\nc = model_from_json(m.to_json())\nc.set_weights(m.get_weights())\n",
        "import compat_clone\nc = compat_clone.clone_model(m, copy_weights=True)\n",
    ),
    "model_from_config with the dict inline, type(m).__name__": (
        "import tensorflow as tf\n"
        "c = tf.keras.models.model_from_config({'config': m.get_config(), 'class_name': type(m).__name__})\n",
        "import compat_clone\nc = compat_clone.clone_model(m)\n",
    ),
    "Model.from_config(m.get_config()), custom_objects=None dropped": (
        "from tf_keras import Model\nc = Model.from_config(m.get_config(), custom_objects=None)\n",
        "import compat_clone\nc = compat_clone.clone_model(m)\n",
    ),
    "config bound the line before goes with the clone": (
        "from keras.models import Sequential\ndef twin(m):\n    cfg = m.get_config()\n    return Sequential.from_config(cfg)\n",
        "import compat_clone\ndef twin(m):\n    return compat_clone.clone_model(m)\n",
    ),
    "custom_objects: the clone runs in custom_object_scope": (
        "import tensorflow as tf\ndef clone(m, objs):\n"
        "    c = tf.keras.models.model_from_json(m.to_json(), custom_objects=objs)\n"
        "    c.set_weights(m.get_weights())\n    return c\n",
        "import compat_clone\nfrom tensorflow.keras.utils import custom_object_scope\n"
        "def clone(m, objs):\n    with custom_object_scope(objs or {}):\n"
        "        c = compat_clone.clone_model(m, copy_weights=True)\n    return c\n",
    ),
}

UNCHANGED = {
    "a helper named clone_model imported from the user's own module": (
        "from util import clone_model\nfrom agents.util import clone_model as cm\nt = clone_model(m)\nu = cm(m)\n"
    ),
    "set_weights between layers (copy_weights takes models)": ("dense_layer.set_weights(other_layer.get_weights())\n"),
    "set_weights of a model onto itself": "m.set_weights(m.get_weights())\n",
    "layer.__class__.from_config (a clone_function clones a layer)": (
        "def f(layer):\n    return layer.__class__.from_config(layer.get_config())\n"
    ),
    "from_config of the user's own class": ("from mylib import Model\nc = Model.from_config(m.get_config())\n"),
    "tau names a loop variable": (
        "new = []\nfor s, t in zip(a.get_weights(), b.get_weights()):\n"
        "    new.append(s.mean() * s + (1 - s.mean()) * t)\nb.set_weights(new)\n"
    ),
    "a blend of other things": "x.set_weights([a * 2 + b for a, b in zip(x.get_weights(), y.get_weights())])\n",
    "model_from_json of another model's JSON, kept in a variable used twice": (
        "from keras.models import model_from_json\nj = m.to_json()\na = model_from_json(j)\nb = model_from_json(j)\n"
    ),
    "deepcopy of something that is not named like a model": ("import copy\nconfig = copy.deepcopy(settings)\n"),
    "deepcopy of a plain dict named like a model's": (
        "import copy\ntarget_params = {'tau': 0.01}\nsaved = copy.deepcopy(target_params)\n"
    ),
    "deepcopy of an attribute its class binds to a dict only": (
        "import copy\nclass Agent:\n    def __init__(self):\n        self.target_params = {'tau': 0.01}\n"
        "    def reset(self):\n        self.target_params = dict(tau=0.02)\n"
        "    def snapshot(self):\n        return copy.deepcopy(self.target_params)\n"
    ),
    "deepcopy of containers, NumPy arrays and annotated parameters": (
        "import copy\nfrom collections import OrderedDict\nfrom typing import Dict\nimport numpy as np\n"
        "target_net_weights = [w for w in range(3)]\npolicy_table = OrderedDict()\nmodel_input = np.zeros(3)\n"
        "def f(model_cfg: Dict[str, int]):\n    return copy.deepcopy(model_cfg)\n"
        "a, b, c = copy.deepcopy(target_net_weights), copy.deepcopy(policy_table), copy.deepcopy(model_input)\n"
    ),
}

REPORTED: Dict[str, Tuple[str, Tuple[int, int, str]]] = {
    "graph-op pairs for K.function(updates=...)": (
        "import keras.backend as K\n"
        "ups = [(t, tau * s + (1 - tau) * t) for s, t in zip(a.weights, b.weights)]\n"
        "f = K.function([], [], updates=ups)\n",
        (2, 9, "soft target update built as graph ops"),
    ),
    "K.update": (
        "from keras import backend as K\nop = K.update(t, (1 - tau) * t + tau * s)\n",
        (2, 6, "soft target update built as graph ops"),
    ),
    "tf.assign": (
        "import tensorflow as tf\nop = tf.compat.v1.assign(t, tau * s + (1 - tau) * t)\n",
        (2, 6, "soft target update built as graph ops"),
    ),
    "variable.assign in an eager loop over lists it cannot follow": (
        "for t, s in zip(a_vars, b_vars):\n    t.assign(tau * s + (1 - tau) * t)\n",
        (2, 5, "soft target update by variable assignment"),
    ),
    "the temporary list is used afterwards": (
        "new = [tau * a + (1 - tau) * b for a, b in zip(s.get_weights(), t.get_weights())]\nt.set_weights(new)\nprint(new)\n",
        (2, 1, "`new` (which the update binds) is used elsewhere"),
    ),
    "copy.deepcopy of a model": (
        "from copy import deepcopy\ntarget_net = deepcopy(q_net)\n",
        (2, 14, "`compat_clone.clone_model(q_net, copy_weights=True)`"),
    ),
    "custom_objects where the clone is not a statement of its own": (
        "from keras.models import model_from_json\nprint(model_from_json(m.to_json(), custom_objects=objs))\n",
        (2, 7, "with `custom_objects=objs`, which `compat_clone.clone_model` does not take"),
    ),
}


@needs_libcst
@pytest.mark.parametrize("name", sorted(SNIPPETS))
def test_idiom_snippet(name: str) -> None:
    before, after = SNIPPETS[name]
    result = _migrate.migrate_source(before, "old.py")
    assert result.error is None
    assert result.migrated.decode() == after
    assert [r for r in result.reports if not r.note] == []
    again = _migrate.migrate_source(result.migrated, "old.py")
    assert not again.changed and again.reports == [], "not idempotent"
    compile(result.migrated, "old.py", "exec")


@needs_libcst
@pytest.mark.parametrize("name", sorted(UNCHANGED))
def test_idiom_left_alone(name: str) -> None:
    result = _migrate.migrate_source(UNCHANGED[name], "old.py")
    assert not result.changed, result.migrated.decode()
    assert result.reports == []


@needs_libcst
@pytest.mark.parametrize("name", sorted(REPORTED))
def test_idiom_reported(name: str) -> None:
    source, (line, column, fragment) = REPORTED[name]
    result = _migrate.migrate_source(source, "old.py")
    assert not result.changed, result.migrated.decode()
    assert len(result.reports) == 1, result.reports
    report = result.reports[0]
    assert (report.line, report.column, report.note) == (line, column, False), str(report)
    assert fragment in report.why


@needs_libcst
def test_notes_say_when_nothing_shows_the_models_alike() -> None:
    source = (
        "import keras\nclass Agent:\n    def __init__(self):\n"
        "        self.model = build()\n        self.target = build()\n"
        "        self.twin = keras.models.clone_model(self.model)\n"
        "    def sync(self, other):\n"
        "        self.target.set_weights(self.model.get_weights())\n"
        "        self.twin.set_weights(self.model.get_weights())\n"
        "        other.set_weights(self.model.get_weights())\n"
    )
    result = _migrate.migrate_source(source, "agent.py")
    assert [(r.line, r.note) for r in result.reports] == [(10, True)]
    assert str(result.reports[0]).startswith("agent.py:10:9: note: rewritten to `compat_clone.copy_weights(self.model, other)`")
    assert "WeightsMismatchError" in result.reports[0].why


@needs_libcst
def test_check_passes_with_notes_only(tmp_path: Path, capsys: Any) -> None:
    import argparse

    path = tmp_path / "done.py"
    path.write_text("def sync(t, s):\n    t.set_weights(s.get_weights())\n")
    parser = argparse.ArgumentParser()
    _migrate.add_arguments(parser)
    assert _migrate.run(parser.parse_args(["--check", str(path)])) == _migrate.EXIT_CHANGES
    assert ": note: rewritten to" in capsys.readouterr().err
    assert _migrate.run(parser.parse_args(["--write", str(path)])) == _migrate.EXIT_OK
    assert _migrate.run(parser.parse_args(["--check", str(path)])) == _migrate.EXIT_OK
    assert capsys.readouterr().err.count("note:") == 1  # the --write run's, not the last --check's


@needs_libcst
def test_fixture_diff_reports_and_exit_status(tmp_path: Path, capsys: Any) -> None:
    from test_migrate import apply_unified_diff, run_cli

    root = tmp_path / "rl_agents"
    shutil.copytree(FIXTURE / "before", root)
    assert run_cli(["--check", str(root)]) == _migrate.EXIT_CHANGES
    err = capsys.readouterr().err
    assert "3 file(s) would be migrated, 1 use(s) need a fix by hand, 1 site(s) to review" in err  # notes not counted
    assert err.count(": note: ") == 2
    assert run_cli([str(root)]) == _migrate.EXIT_OK  # the diff, on stdout
    out = capsys.readouterr().out
    for name in ("util.py", "dqn.py", "ddpg_keras2.py"):
        path = root / name
        hunks = out.split(f"--- a/{path}\n")[1].split("--- a/")[0]
        new = apply_unified_diff(path.read_text(), hunks)
        assert new == (FIXTURE / "after" / name).read_text(), name
        compile(new, name, "exec")
    assert "-        self.target_model.set_weights(self.model.get_weights())\n" in out
    assert "+        compat_clone.copy_weights(self.model, self.target_model)\n" in out
    assert run_cli(["--write", str(root)]) == _migrate.EXIT_OK
    capsys.readouterr()
    # migrated: only the uses to fix by hand are left, and they still fail --check
    assert run_cli(["--check", str(root)]) == _migrate.EXIT_CHANGES
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "0 file(s) would be migrated, 1 use(s) need a fix by hand, 1 site(s) to review" in captured.err
    assert ": note: " not in captured.err


@needs_libcst
def test_check_passes_a_migrated_tree_whose_sites_are_marked_reviewed(tmp_path: Path, capsys: Any) -> None:
    """`migrate --check` as a CI gate: a site to review alone exits 3 (EXIT_REVIEW), a use to fix by hand 1; a
    `# compat-clone: ok RULE` comment naming the site's rule marks it reviewed, and the gate passes."""
    from test_migrate import run_cli

    root = tmp_path / "rl_agents"
    shutil.copytree(FIXTURE / "after", root)
    dqn, util = root / "dqn.py", root / "util.py"
    assert run_cli(["--check", str(root)]) == _migrate.EXIT_CHANGES  # the graph-op update to fix by hand

    def mark(path: Path, needle: str, comment: str, above: bool = False) -> None:
        lines = path.read_text().splitlines(keepends=True)
        (i,) = [i for i, line in enumerate(lines) if needle in line]
        if above:  # a comment line of its own marks the line below
            lines[i:i] = [lines[i][: len(lines[i]) - len(lines[i].lstrip())] + comment + "\n"]
        else:
            lines[i] = lines[i].rstrip("\n") + "  " + comment + "\n"
        path.write_text("".join(lines))

    mark(util, "updates.append((tw, tau", "# compat-clone: ok graph-update")
    mark(dqn, "copy.deepcopy(self.model)", "# compat-clone: ok graph-update", above=True)  # another rule's name
    capsys.readouterr()
    assert run_cli(["--check", str(root)]) == _migrate.EXIT_REVIEW  # the deepcopy alone is left: its own status
    err = capsys.readouterr().err
    assert "0 file(s) would be migrated, 0 use(s) need a fix by hand, 1 site(s) to review" in err
    assert "1 marked reviewed" in err and "[deepcopy]" in err and "[graph-update]" not in err
    dqn.write_text(dqn.read_text().replace("# compat-clone: ok graph-update", "# compat-clone: ok deepcopy"))
    assert run_cli(["--check", str(root)]) == _migrate.EXIT_OK
    assert "2 marked reviewed" in capsys.readouterr().err
