"""`compat-clone migrate` on the cloning idioms of old code, and the rewritten code run.

The fixture `migrate_fixtures/rl_agents` is written the way Keras 2 era
reinforcement-learning libraries wrote it: a `util.py` of clone and
target-update helpers, a DQN agent in tf.keras / Keras 3 eager style, a DDPG
agent in Keras 2 graph style. `tests/test_migrate.py` checks what the codemod
makes of it (`after/`, `reports.txt`, a second run). Here the old and the
migrated code are imported side by side with the environment's real Keras,
started from the same weights and driven through the same updates: every
update must leave the same weights (exactly for copies; to float32 rounding
for blends, which `copy_weights` computes on the device in another order).
The last tests pin the differences the codemod's notes and docs/migrate.md
state: `copy_weights` refuses two models whose layers differ where
`set_weights` poured the weights in by order, and copies non-float variables
exactly where the host-list blend truncated them.

The snippet tests need libcst; the run tests need no libcst.
"""

from __future__ import annotations

import copy
import importlib
import importlib.util
import os
import shutil
import sys
from pathlib import Path
from types import ModuleType
from typing import Any, Dict, List, Tuple

import numpy as np
import pytest

from compat_clone.tools import migrate as _migrate
from conftest import families_under_test

FIXTURE = Path(__file__).parent / "migrate_fixtures" / "rl_agents"
_MODULES = ("util", "dqn", "ddpg_keras2")

needs_libcst = pytest.mark.skipif(
    importlib.util.find_spec("libcst") is None and bool(os.environ.get("COMPAT_CLONE_ENV")),
    reason="libcst is not installed in this matrix environment",
)


# ---------------------------------------------------------------------------
# Snippets: one idiom each


SNIPPETS = {
    "hard update anywhere": (
        "def sync(target, source):\n    target.set_weights(source.get_weights())  # hard\n",
        "import compat_clone\n\n\ndef sync(target, source):\n"
        "    compat_clone.copy_weights(source, target)  # hard\n",
    ),
    "soft update: comprehension, zip in the other order, factors swapped": (
        "m2.set_weights([t * (1.0 - tau) + s * tau for t, s in zip(m2.get_weights(), m1.get_weights())])\n",
        "import compat_clone\n\ncompat_clone.copy_weights(m1, m2, tau=tau)\n",
    ),
    "soft update: comprehension bound to a name first": (
        "new = [tau * a + (1 - tau) * b for a, b in zip(src.get_weights(), dst.get_weights())]\n"
        "dst.set_weights(new)\n",
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
        "import numpy as np\nimport compat_clone\n# blend\n# online\n"
        "compat_clone.copy_weights(src, dst, tau=TAU)\n",
    ),
    "model_from_json(m.to_json()) then set_weights: one clone": (
        "from keras.models import model_from_json\nc = model_from_json(m.to_json())\n"
        "c.set_weights(m.get_weights())\n",
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
        "from keras.models import Sequential\ndef twin(m):\n    cfg = m.get_config()\n"
        "    return Sequential.from_config(cfg)\n",
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
        "from util import clone_model\nfrom agents.util import clone_model as cm\n"
        "t = clone_model(m)\nu = cm(m)\n"
    ),
    "set_weights between layers (copy_weights takes models)": (
        "dense_layer.set_weights(other_layer.get_weights())\n"
    ),
    "set_weights of a model onto itself": "m.set_weights(m.get_weights())\n",
    "layer.__class__.from_config (a clone_function clones a layer)": (
        "def f(layer):\n    return layer.__class__.from_config(layer.get_config())\n"
    ),
    "from_config of the user's own class": (
        "from mylib import Model\nc = Model.from_config(m.get_config())\n"
    ),
    "tau names a loop variable": (
        "new = []\nfor s, t in zip(a.get_weights(), b.get_weights()):\n"
        "    new.append(s.mean() * s + (1 - s.mean()) * t)\nb.set_weights(new)\n"
    ),
    "a blend of other things": "x.set_weights([a * 2 + b for a, b in zip(x.get_weights(), y.get_weights())])\n",
    "the temporary list is used afterwards": (
        "new = [tau * a + (1 - tau) * b for a, b in zip(s.get_weights(), t.get_weights())]\n"
        "t.set_weights(new)\nprint(new)\n"
    ),
    "model_from_json of another model's JSON, kept in a variable used twice": (
        "from keras.models import model_from_json\nj = m.to_json()\na = model_from_json(j)\n"
        "b = model_from_json(j)\n"
    ),
    "deepcopy of something that is not named like a model": (
        "import copy\nconfig = copy.deepcopy(settings)\n"
    ),
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
    "variable.assign in an eager loop": (
        "for t, s in zip(a.variables, b.variables):\n    t.assign(tau * s + (1 - tau) * t)\n",
        (2, 5, "soft target update by variable assignment"),
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
    assert str(result.reports[0]).startswith(
        "agent.py:10:9: note: rewritten to `compat_clone.copy_weights(self.model, other)`"
    )
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
    from test_migrate import _apply_unified_diff, _cli

    root = tmp_path / "rl_agents"
    shutil.copytree(FIXTURE / "before", root)
    assert _cli(["--check", str(root)]) == _migrate.EXIT_CHANGES
    err = capsys.readouterr().err
    assert "3 file(s) would be migrated, 2 use(s) need a fix by hand, 1 site(s) to review" in err  # notes not counted
    assert err.count(": note: ") == 2
    assert _cli([str(root)]) == _migrate.EXIT_OK  # the diff, on stdout
    out = capsys.readouterr().out
    for name in ("util.py", "dqn.py", "ddpg_keras2.py"):
        path = root / name
        hunks = out.split(f"--- a/{path}\n")[1].split("--- a/")[0]
        new = _apply_unified_diff(path.read_text(), hunks)
        assert new == (FIXTURE / "after" / name).read_text(), name
        compile(new, name, "exec")
    assert "-        self.target_model.set_weights(self.model.get_weights())\n" in out
    assert "+        compat_clone.copy_weights(self.model, self.target_model)\n" in out
    assert _cli(["--write", str(root)]) == _migrate.EXIT_OK
    capsys.readouterr()
    # migrated: only the uses to fix by hand are left, and they still fail --check
    assert _cli(["--check", str(root)]) == _migrate.EXIT_CHANGES
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "0 file(s) would be migrated, 2 use(s) need a fix by hand, 1 site(s) to review" in captured.err
    assert ": note: " not in captured.err


@needs_libcst
def test_check_passes_a_migrated_tree_whose_sites_are_marked_reviewed(tmp_path: Path, capsys: Any) -> None:
    """`migrate --check` as a CI gate: a site to review alone exits 3 (EXIT_REVIEW), a use to fix by hand 1; a
    `# compat-clone: ok RULE` comment naming the site's rule marks it reviewed, and the gate passes."""
    from test_migrate import _cli

    root = tmp_path / "rl_agents"
    shutil.copytree(FIXTURE / "after", root)
    dqn, util = root / "dqn.py", root / "util.py"
    assert _cli(["--check", str(root)]) == _migrate.EXIT_CHANGES  # the two updates to fix by hand

    def mark(path: Path, needle: str, comment: str, above: bool = False) -> None:
        lines = path.read_text().splitlines(keepends=True)
        (i,) = [i for i, line in enumerate(lines) if needle in line]
        if above:  # a comment line of its own marks the line below
            lines[i:i] = [lines[i][: len(lines[i]) - len(lines[i].lstrip())] + comment + "\n"]
        else:
            lines[i] = lines[i].rstrip("\n") + "  " + comment + "\n"
        path.write_text("".join(lines))

    mark(dqn, "t.assign(self.tau", "# compat-clone: ok assign-update")
    mark(util, "updates.append((tw, tau", "# compat-clone: ok graph-update")
    mark(dqn, "copy.deepcopy(self.model)", "# compat-clone: ok graph-update", above=True)  # another rule's name
    capsys.readouterr()
    assert _cli(["--check", str(root)]) == _migrate.EXIT_REVIEW  # the deepcopy alone is left: its own status
    err = capsys.readouterr().err
    assert "0 file(s) would be migrated, 0 use(s) need a fix by hand, 1 site(s) to review" in err
    assert "2 marked reviewed" in err and "[deepcopy]" in err and "[graph-update]" not in err
    dqn.write_text(dqn.read_text().replace("# compat-clone: ok graph-update", "# compat-clone: ok deepcopy"))
    assert _cli(["--check", str(root)]) == _migrate.EXIT_OK
    assert "3 marked reviewed" in capsys.readouterr().err


# ---------------------------------------------------------------------------
# The fixture, old and migrated, run side by side


def _keras() -> Any:
    """The `keras` package, when the family it serves is tested in this environment."""
    keras = pytest.importorskip("keras")
    from compat_clone.families.registry import family_for

    family = family_for("keras", keras.__version__)
    if family not in families_under_test():
        pytest.skip(f"`keras` is {family} here, not tested in this environment")
    return keras


def _tf_major() -> int:
    import tensorflow as tf

    return int(tf.__version__.split(".")[0])


def _is_keras2(keras: Any) -> bool:
    return bool(keras.__version__.startswith("2."))


def _load(side: str, name: str) -> ModuleType:
    """Imports `name` from `rl_agents/<side>` as a fresh module (with its own `util`)."""
    root = str(FIXTURE / side)
    saved = {m: sys.modules.pop(m) for m in _MODULES if m in sys.modules}
    sys.path.insert(0, root)
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(root)
        for m in _MODULES:
            sys.modules.pop(m, None)
        sys.modules.update(saved)


def _random_weights(model: Any, rng: Any) -> List[Any]:
    return [rng.uniform(0.5, 1.5, w.shape).astype(w.dtype) for w in model.get_weights()]


def _assert_same(old: Any, new: Any, exact: bool) -> None:
    a, b = old.get_weights(), new.get_weights()
    assert [w.shape for w in a] == [w.shape for w in b]
    for x, y in zip(a, b):
        if exact:
            np.testing.assert_array_equal(x, y)
        else:  # float32 blends: the same up to rounding (the order of operations differs)
            np.testing.assert_allclose(x, y, rtol=1e-6, atol=1e-7)


def _moved(before: List[Any], model: Any) -> bool:
    return any(not np.array_equal(x, y) for x, y in zip(before, model.get_weights()))


def test_dqn_updates_leave_the_same_weights() -> None:
    keras = _keras()
    if not hasattr(keras, "Sequential"):
        pytest.skip(f"the agent script writes `keras.Sequential`, which keras {keras.__version__} does not export "
                    "(standalone Keras 2.0: keras.models.Sequential only)")
    old, new = _load("before", "dqn"), _load("after", "dqn")
    rng = np.random.default_rng(0)
    agents = old.DQNAgent(), new.DQNAgent()
    online, target = _random_weights(agents[0].model, rng), _random_weights(agents[0].target_model, rng)
    for agent in agents:
        agent.model.set_weights(online)
        agent.target_model.set_weights(target)
    steps: List[Tuple[str, Tuple[Any, ...]]] = [
        ("update_target_soft", ()),
        ("update_target_by_index", (0.3,)),
        ("update_target_hard", ()),
    ]
    for method, args in steps:
        start = agents[0].target_model.get_weights()
        for agent in agents:
            getattr(agent, method)(*args)
        assert _moved(start, agents[0].target_model), method
        _assert_same(agents[0].target_model, agents[1].target_model, exact=method == "update_target_hard")
    _assert_same(agents[1].target_model, agents[1].model, exact=True)
    # the first soft update, by hand: tau * online + (1 - tau) * target
    tau = agents[1].tau
    fresh = new.DQNAgent()
    fresh.model.set_weights(online)
    fresh.target_model.set_weights(target)
    fresh.update_target_soft()
    for got, s, t in zip(fresh.target_model.get_weights(), online, target):
        np.testing.assert_allclose(got, tau * s + (1 - tau) * t, rtol=1e-6)
    snapshots = [agent.snapshot() for agent in agents]
    assert type(snapshots[1]) is type(snapshots[0])
    _assert_same(snapshots[0], snapshots[1], exact=True)
    _assert_same(snapshots[1], agents[1].model, exact=True)
    for agent in agents:  # `clone_architecture`: the same layers, fresh weights
        assert [w.shape for w in agent.fresh.get_weights()] == [w.shape for w in online]
        assert _moved(online, agent.fresh)


def test_util_clone_helper_keeps_working(tmp_path: Path) -> None:
    keras = _keras()
    old, new = _load("before", "util"), _load("after", "util")

    def scaled_tanh(x: Any) -> Any:
        return 2 * keras.activations.tanh(x)

    model = keras.models.Sequential(
        [keras.layers.Dense(3, activation=scaled_tanh, input_shape=(2,)), keras.layers.Dense(1)]
    )
    custom = {"scaled_tanh": scaled_tanh}
    clone = new.clone_model(model, custom_objects=custom)
    assert clone is not model and type(clone) is type(model)
    _assert_same(clone, model, exact=True)
    x = np.ones((1, 2), dtype="float32")
    np.testing.assert_allclose(clone.predict(x), model.predict(x), rtol=1e-6)
    assert new.clone_model(keras.models.Sequential([keras.layers.Dense(2, input_shape=(2,))])) is not None
    if _is_keras2(keras):
        _assert_same(old.clone_model(model, custom_objects=custom), clone, exact=True)
    else:  # Keras 3 has no keras.models.model_from_config: the old helper fails, ours works
        with pytest.raises(AttributeError, match="model_from_config"):
            old.clone_model(model, custom_objects=custom)


def test_util_update_helpers_leave_the_same_weights() -> None:
    keras = _keras()
    old, new = _load("before", "util"), _load("after", "util")
    rng = np.random.default_rng(1)

    def build() -> Any:
        return keras.models.Sequential([keras.layers.Dense(4, input_shape=(3,)), keras.layers.Dense(2)])

    source, targets = build(), (build(), build())
    source.set_weights(_random_weights(source, rng))
    start = _random_weights(source, rng)
    for target in targets:
        target.set_weights(start)
    old.soft_update(targets[0], source, 0.25)
    new.soft_update(targets[1], source, 0.25)
    assert _moved(start, targets[1])
    _assert_same(targets[0], targets[1], exact=False)
    old.hard_update(targets[0], source)
    new.hard_update(targets[1], source)
    _assert_same(targets[0], targets[1], exact=True)
    _assert_same(targets[1], source, exact=True)


def test_ddpg_keras2_graph_agent_leaves_the_same_weights() -> None:
    keras = _keras()
    if not _is_keras2(keras):
        pytest.skip("the DDPG agent is Keras 2 code (K.function(updates=...))")
    old, new = _load("before", "ddpg_keras2"), _load("after", "ddpg_keras2")
    rng = np.random.default_rng(2)
    agents = old.DDPGAgent(), new.DDPGAgent()
    for agent in agents:  # the clones were made with the weights
        _assert_same(agent.target_critic, agent.critic, exact=True)
        _assert_same(agent.target_actor, agent.actor, exact=True)
    names = ("actor", "target_actor", "critic", "target_critic")
    weights = {name: _random_weights(getattr(agents[0], name), rng) for name in names}
    for agent in agents:
        for name in names:
            getattr(agent, name).set_weights(weights[name])
    steps: List[Tuple[str, Tuple[Any, ...]]] = [
        ("update_target_critic", ()),
        ("soften_targets", (0.2,)),
        ("sync_targets", ()),
    ]
    try:
        agents[0].compile()  # graph ops: reported, left as they were
    except (IndexError, ValueError) as exc:
        # Keras 2.3 and tf.keras on TensorFlow 2 refuse `(variable, value)` pairs in
        # `K.function(updates=...)` outside a graph: the migrated code alike; the other
        # updates still run
        assert not keras.__version__.startswith("2.2.")
        with pytest.raises(type(exc)):
            agents[1].compile()
    else:
        agents[1].compile()
        steps.insert(0, ("update_target_actor", ()))
    for method, args in steps:
        start = {name: getattr(agents[0], name).get_weights() for name in names}
        for agent in agents:
            getattr(agent, method)(*args)
        assert any(_moved(start[n], getattr(agents[0], n)) for n in ("target_actor", "target_critic")), method
        for name in ("target_actor", "target_critic"):
            _assert_same(getattr(agents[0], name), getattr(agents[1], name), exact=method == "sync_targets")


# ---------------------------------------------------------------------------
# What the notes and docs/migrate.md say differs, shown


def test_copy_weights_refuses_layers_that_only_line_up_by_order() -> None:
    keras = _keras()
    import compat_clone

    source = keras.models.Sequential(
        [keras.layers.Dense(4, use_bias=False, input_shape=(4,)), keras.layers.Dense(4)]
    )
    target = keras.models.Sequential([keras.layers.SimpleRNN(4, input_shape=(2, 4))])
    # kernel (4, 4), kernel (4, 4), bias (4): the RNN's kernel, recurrent kernel, bias
    assert [w.shape for w in source.get_weights()] == [w.shape for w in target.get_weights()]
    start = target.get_weights()
    with pytest.raises(compat_clone.WeightsMismatchError, match="Cannot pair the layers"):
        compat_clone.copy_weights(source, target)
    assert not _moved(start, target)
    target.set_weights(source.get_weights())  # the old code: poured in by order
    _assert_same(target, source, exact=True)


def _int_zeros(shape: Any, dtype: Any = None) -> Any:
    # standalone Keras 2.2's "zeros" makes a float32 value whatever the variable's dtype
    return np.zeros(shape, "int32")


def test_soft_update_copies_non_float_variables_exactly() -> None:
    keras = _keras()
    import compat_clone

    class Counted(keras.layers.Layer):  # type: ignore[misc,name-defined]
        def build(self, input_shape: Any) -> None:
            self.steps = self.add_weight(
                name="steps", shape=(), dtype="int32", initializer=_int_zeros, trainable=False
            )
            self.scale = self.add_weight(name="scale", shape=(), initializer="ones")
            super().build(input_shape)

        def call(self, inputs: Any) -> Any:
            return inputs * self.scale

        def compute_output_shape(self, input_shape: Any) -> Any:
            return input_shape

    def build() -> Any:
        return keras.models.Sequential([Counted(input_shape=(2,))])

    def put(model: Any, steps: int, scale: float) -> None:  # in `model.weights` order
        model.set_weights(
            [
                np.array(steps if "steps" in w.name else scale, v.dtype)
                for w, v in zip(model.weights, model.get_weights())
            ]
        )

    def read(model: Any) -> Tuple[Any, Any]:
        values = {("steps" if "steps" in w.name else "scale"): v for w, v in zip(model.weights, model.get_weights())}
        return values["steps"], values["scale"]

    source, old_target, new_target = build(), build(), build()
    put(source, 7, 3.0)
    for target in (old_target, new_target):
        put(target, 0, 1.0)
    tau = 0.5
    old_target.set_weights(
        [tau * s + (1 - tau) * t for s, t in zip(source.get_weights(), old_target.get_weights())]
    )
    compat_clone.copy_weights(source, new_target, tau=tau)
    old_steps, old_scale = read(old_target)
    new_steps, new_scale = read(new_target)
    assert old_scale == new_scale == 2.0  # floats: the same blend
    assert (int(old_steps), int(new_steps)) == (3, 7)  # 3.5 truncated by set_weights; copied exactly


def test_deepcopy_of_a_model_as_the_report_says() -> None:
    keras = _keras()
    from packaging.specifiers import SpecifierSet

    from compat_clone.tools.migrate.rules import DEEPCOPY_VERSIONS_FAILING

    inputs = keras.layers.Input((2,))
    model = keras.models.Model(inputs, keras.layers.Dense(3)(inputs))
    if keras.__version__ in SpecifierSet("<2.2") and keras.backend.backend() == "tensorflow" and _tf_major() == 1:
        # standalone Keras 2.0-2.1 on TensorFlow 1.x: its graph tensors hold locks (DEEPCOPY_WHY says so;
        # 2.2.4 and 2.3.1 on TF 1.15 copy)
        with pytest.raises(TypeError, match="pickle"):
            copy.deepcopy(model)
    elif keras.__version__ in SpecifierSet(DEEPCOPY_VERSIONS_FAILING):
        # 3.0 and 3.2: ValueError "cannot add new elements of state"; 3.1: TypeError (DTypePolicy.__new__).
        with pytest.raises((ValueError, TypeError), match="cannot add new elements of state|DTypePolicy"):
            copy.deepcopy(model)
    else:
        twin = copy.deepcopy(model)
        assert twin is not model
        _assert_same(twin, model, exact=True)
