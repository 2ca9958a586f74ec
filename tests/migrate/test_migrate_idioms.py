"""`compat-clone migrate` on the cloning idioms of old code, and the rewritten code run.

The fixture `migrate_fixtures/rl_agents` is written the way Keras 2 era
reinforcement-learning libraries wrote it: a `util.py` of clone and
target-update helpers, a DQN agent in tf.keras / Keras 3 eager style, a DDPG
agent in Keras 2 graph style. `tests/migrate/test_migrate.py` checks what the codemod
makes of it (`after/`, `reports.txt`, a second run). Here the old and the
migrated code are imported side by side with the environment's real Keras,
started from the same weights and driven through the same updates: every
update must leave the same weights (exactly for copies; to float32 rounding
for blends, which `copy_weights` computes on the device in another order).
The last tests pin the differences the codemod's notes and docs/migrate.md
state: `copy_weights` refuses two models whose layers differ where
`set_weights` poured the weights in by order, and copies non-float variables
exactly where the host-list blend truncated them.

What the codemod writes for each idiom is in `tests/migrate/test_migrate_idiom_rewrites.py`
(those tests need libcst); these need no libcst.
"""

from __future__ import annotations

import copy
import importlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any, List, Tuple

import numpy as np
import pytest

from tests.support.families import families_under_test

FIXTURE = Path(__file__).parent / "migrate_fixtures" / "rl_agents"
_MODULES = ("util", "dqn", "ddpg_keras2")


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
        pytest.skip(
            f"the agent script writes `keras.Sequential`, which keras {keras.__version__} does not export "
            "(standalone Keras 2.0: keras.models.Sequential only)"
        )
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
        ("update_target_variables", ()),
        ("update_target_hard", ()),
    ]
    tf = sys.modules.get("tensorflow")  # Keras 3 on JAX / torch runs without TensorFlow
    if tf is not None and not tf.executing_eagerly():
        # graph mode: the old `t.assign(...)` loop builds ops nothing runs (it never worked)
        steps.remove(("update_target_variables", ()))
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

    model = keras.models.Sequential([keras.layers.Dense(3, activation=scaled_tanh, input_shape=(2,)), keras.layers.Dense(1)])
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

    source = keras.models.Sequential([keras.layers.Dense(4, use_bias=False, input_shape=(4,)), keras.layers.Dense(4)])
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
            self.steps = self.add_weight(name="steps", shape=(), dtype="int32", initializer=_int_zeros, trainable=False)
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
            [np.array(steps if "steps" in w.name else scale, v.dtype) for w, v in zip(model.weights, model.get_weights())]
        )

    def read(model: Any) -> Tuple[Any, Any]:
        values = {("steps" if "steps" in w.name else "scale"): v for w, v in zip(model.weights, model.get_weights())}
        return values["steps"], values["scale"]

    source, old_target, new_target = build(), build(), build()
    put(source, 7, 3.0)
    for target in (old_target, new_target):
        put(target, 0, 1.0)
    tau = 0.5
    old_target.set_weights([tau * s + (1 - tau) * t for s, t in zip(source.get_weights(), old_target.get_weights())])
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
