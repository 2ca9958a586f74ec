"""`clone_model(..., compile=True)`: the clone compiled like its source, in every family.

The clone gets an optimizer of the same class and config with fresh state,
the same losses, loss weights and (new) metric objects, and the family's
other compile settings; the source, its optimizer and its metrics are left
as they were. Values are compared by evaluating both models on the same data
after `copy_weights=True`.
"""

from __future__ import annotations

import inspect
from typing import Any, Dict, List

import numpy as np
import pytest

import compat_clone
from compat_clone import CompileError, InvalidArgumentError
from tests.clone.features import family_name


def _mean(K: Any) -> Any:
    return K.ops.mean if hasattr(K, "ops") else K.backend.mean


def squared_error(K: Any) -> Any:
    """A user loss function (not registered anywhere)."""
    mean = _mean(K)

    def user_squared_error(y_true: Any, y_pred: Any) -> Any:
        return mean((y_true - y_pred) ** 2, axis=-1)

    return user_squared_error


def values(K: Any, variables: List[Any]) -> List[np.ndarray]:
    if hasattr(K, "ops"):  # Keras 3
        return [np.array(K.ops.convert_to_numpy(v)) for v in variables]
    return [np.array(v) for v in K.backend.batch_get_value(list(variables))]


def iterations(K: Any, model: Any) -> int:
    return int(values(K, [model.optimizer.iterations])[0])


def metric_objects(model: Any) -> List[Any]:
    found = getattr(model, "metrics", None) or []
    found = list(found.values()) if isinstance(found, dict) else list(found)  # standalone Keras 2.2: the user's
    return [m for m in found if hasattr(m, "reset_states") or hasattr(m, "reset_state")]


def metric_state(K: Any, model: Any) -> List[np.ndarray]:
    variables = [v for m in metric_objects(model) for v in (getattr(m, "variables", None) or getattr(m, "weights", []))]
    return values(K, variables)


def schedule_or_rate(K: Any) -> Any:
    """A learning-rate schedule where the family has them (standalone Keras 2: a decayed rate)."""
    decay = exponential_decay(K)
    if decay is not None:
        return {"learning_rate": decay(0.05, decay_steps=10, decay_rate=0.9)}
    return {"lr": 0.05, "decay": 0.01}


def exponential_decay(K: Any) -> Any:
    """The family's `ExponentialDecay` schedule class; None in standalone Keras 2."""
    schedules = getattr(K.optimizers, "schedules", None)
    if schedules is None:
        return None
    # tf.keras 2.12's `keras.optimizers.schedules` exports only its submodule
    return getattr(schedules, "ExponentialDecay", None) or schedules.learning_rate_schedule.ExponentialDecay


def two_output_model(K: Any) -> Any:
    x = K.Input((4,), name="x")
    h = K.layers.Dense(6, activation="relu", name="h")(x)
    a = K.layers.Dense(2, name="a")(h)
    b = K.layers.Dense(1, name="b")(h)
    return K.models.Model(x, [a, b], name="two_out")


def data(n: int = 16) -> Dict[str, Any]:
    rng = np.random.RandomState(0)
    return {
        "x": rng.rand(n, 4).astype("float32"),
        "y": [rng.rand(n, 2).astype("float32"), rng.rand(n, 1).astype("float32")],
        "w": [rng.rand(n).astype("float32") + 0.5, rng.rand(n).astype("float32") + 0.5],
    }


def a_metric_object(K: Any, name: str) -> Any:
    """A Metric instance where the family has metric classes, else a metric function."""
    cls = getattr(K.metrics, "MeanAbsoluteError", None)
    return cls(name=name) if cls is not None else K.metrics.mean_absolute_error


def a_loss_object(K: Any) -> Any:
    """A Loss instance with a non-default config where the family has loss classes."""
    cls = getattr(K.losses, "Huber", None)
    return cls(delta=0.5) if cls is not None else K.losses.mean_absolute_error


def compile_two_output(K: Any, model: Any, losses: str = "dict") -> None:
    if losses == "dict":
        loss: Any = {"a": a_loss_object(K), "b": squared_error(K)}
        loss_weights: Any = {"a": 1.0, "b": 0.25}
        metrics: Any = {"a": ["mae", a_metric_object(K, "a_mae_obj")], "b": [squared_error(K)]}
        weighted: Any = {"a": ["mse"], "b": ["mae"]}
    else:
        loss = ["mse", squared_error(K)]
        loss_weights = [0.5, 2.0]
        metrics = {"a": ["mae"], "b": ["mse"]}  # Keras 2.2 takes no list per output, Keras 3 no flat list
        weighted = {"a": ["mse"], "b": ["mae"]}
    model.compile(
        optimizer=K.optimizers.Adam(**schedule_or_rate(K)),
        loss=loss,
        loss_weights=loss_weights,
        metrics=metrics,
        weighted_metrics=weighted,
    )


def evaluate(model: Any, d: Dict[str, Any]) -> List[float]:
    out = model.evaluate(d["x"], d["y"], sample_weight=d["w"], batch_size=16, verbose=0)
    return [float(v) for v in (out if isinstance(out, (list, tuple)) else [out])]


def trained(K: Any, losses: str = "dict") -> Any:
    model = two_output_model(K)
    compile_two_output(K, model, losses)
    d = data()
    model.fit(d["x"], d["y"], sample_weight=d["w"], batch_size=8, epochs=1, verbose=0)
    return model


# -- the optimizer ---------------------------------------------------------------


def test_optimizer_same_class_and_config_fresh_state(K: Any) -> None:
    source = trained(K)
    steps = iterations(K, source)
    assert steps == 2
    config = source.optimizer.get_config()
    opt_vars = values(K, list(source.optimizer.weights if hasattr(source.optimizer, "weights") else source.optimizer.variables))
    clone = compat_clone.clone_model(source, compile=True)
    assert clone.optimizer is not source.optimizer
    assert type(clone.optimizer) is type(source.optimizer)
    assert clone.optimizer.get_config() == config
    assert iterations(K, clone) == 0
    # the source's optimizer is untouched: same object, config, step count and slots
    assert source.optimizer.get_config() == config and iterations(K, source) == steps
    after = values(K, list(source.optimizer.weights if hasattr(source.optimizer, "weights") else source.optimizer.variables))
    assert len(after) == len(opt_vars)
    for u, v in zip(opt_vars, after):
        np.testing.assert_array_equal(u, v)


def test_learning_rate_schedule_kept(K: Any) -> None:
    decay = exponential_decay(K)
    model = two_output_model(K)
    compile_two_output(K, model)
    clone = compat_clone.clone_model(model, compile=True)
    if decay is None:  # standalone Keras 2: the decay is the optimizer's own setting
        assert clone.optimizer.get_config()["decay"] == pytest.approx(0.01)
        return
    rate = schedule_of(clone.optimizer)
    assert isinstance(rate, decay), type(rate)
    assert rate is not schedule_of(model.optimizer)
    assert rate.get_config() == schedule_of(model.optimizer).get_config()


def schedule_of(optimizer: Any) -> Any:
    """The learning-rate schedule an optimizer holds (legacy tf.keras optimizers: in `_hyper`)."""
    rate = getattr(optimizer, "_learning_rate", None)
    if rate is None and hasattr(optimizer, "_hyper"):
        rate = optimizer._hyper.get("learning_rate")
    return rate


# -- losses and metrics --------------------------------------------------------------


@pytest.mark.parametrize("losses", ["dict", "list"])
def test_losses_and_metrics_give_the_same_values(K: Any, losses: str) -> None:
    source = trained(K, losses)
    d = data()
    expected = evaluate(source, d)
    clone = compat_clone.clone_model(source, compile=True, copy_weights=True)
    got = evaluate(clone, d)
    assert len(got) == len(expected) > 3, (got, expected)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    names = getattr(clone, "metrics_names", None)
    assert names == source.metrics_names


def test_metrics_not_shared_and_source_untouched_by_training_the_clone(K: Any) -> None:
    source = trained(K)
    d = data()
    evaluate(source, d)  # metric objects hold the results of this evaluation now
    weights = [np.array(w) for w in source.get_weights()]
    states = metric_state(K, source)
    steps = iterations(K, source)
    clone = compat_clone.clone_model(source, compile=True, copy_weights=True)
    shared = {id(m) for m in metric_objects(clone)} & {id(m) for m in metric_objects(source)}
    assert not shared
    clone.fit(d["x"], [y + 1.0 for y in d["y"]], sample_weight=d["w"], batch_size=4, epochs=2, verbose=0)
    evaluate(clone, {**d, "y": [y * 3.0 for y in d["y"]]})
    for u, v in zip(weights, source.get_weights()):
        np.testing.assert_array_equal(u, v)
    after = metric_state(K, source)
    assert len(after) == len(states)
    for u, v in zip(states, after):
        np.testing.assert_array_equal(u, v)
    assert iterations(K, source) == steps and iterations(K, clone) == 8


def test_loss_and_metric_objects_recreated_functions_by_reference(K: Any) -> None:
    source = two_output_model(K)
    compile_two_output(K, source)
    clone = compat_clone.clone_model(source, compile=True)
    src_loss, new_loss = user_losses(source), user_losses(clone)
    assert new_loss["b"] is src_loss["b"]  # a user function: by reference
    if inspect.isfunction(src_loss["a"]):  # standalone Keras 2.2: no loss classes
        assert new_loss["a"] is src_loss["a"]
    else:
        assert new_loss["a"] is not src_loss["a"] and type(new_loss["a"]) is type(src_loss["a"])
        assert new_loss["a"].get_config() == src_loss["a"].get_config()
    src_metric, new_metric = user_metrics(source)["a"][1], user_metrics(clone)["a"][1]
    if inspect.isfunction(src_metric):
        assert new_metric is src_metric
    else:
        # the name aside: the Keras 2 lines prefix the source's with its output's when compiling
        assert new_metric is not src_metric and type(new_metric) is type(src_metric)
        assert without_name(new_metric.get_config()) == without_name(src_metric.get_config())


def without_name(config: Dict[str, Any]) -> Dict[str, Any]:
    return {k: v for k, v in config.items() if k != "name"}


def user_losses(model: Any) -> Any:
    recorded = getattr(getattr(model, "_compile_config", None), "config", None)
    if family_name_of(model) == "keras3":
        return recorded["loss"]
    if hasattr(model, "compiled_loss"):
        return model.compiled_loss._user_losses
    return model.loss


def user_metrics(model: Any) -> Any:
    if family_name_of(model) == "keras3":
        return model._compile_config.config["metrics"]
    if hasattr(model, "compiled_metrics"):
        return model.compiled_metrics._user_metrics
    return getattr(model, "_compile_metrics", None) or model.metrics


def family_name_of(model: Any) -> str:
    return compat_clone.family_of(model).family


def test_sequential(K: Any) -> None:
    source = K.models.Sequential([K.layers.Dense(5, input_shape=(4,), name="s1"), K.layers.Dense(2, name="s2")])
    source.compile(
        optimizer=K.optimizers.SGD(0.1, momentum=0.5), loss=squared_error(K), metrics=["mae", a_metric_object(K, "obj")]
    )
    rng = np.random.RandomState(1)
    x, y = rng.rand(12, 4).astype("float32"), rng.rand(12, 2).astype("float32")
    source.fit(x, y, batch_size=4, epochs=1, verbose=0)
    clone = compat_clone.clone_model(source, compile=True, copy_weights=True)
    assert type(clone).__name__ == "Sequential"
    assert type(clone.optimizer) is type(source.optimizer) and clone.optimizer.get_config() == source.optimizer.get_config()
    assert iterations(K, clone) == 0 and iterations(K, source) == 3
    np.testing.assert_allclose(
        clone.evaluate(x, y, batch_size=12, verbose=0), source.evaluate(x, y, batch_size=12, verbose=0), rtol=1e-5, atol=1e-6
    )


# -- the other compile settings -----------------------------------------------------------


SETTINGS = [
    {"run_eagerly": True, "steps_per_execution": 3, "jit_compile": False},
    {"run_eagerly": False, "steps_per_execution": 2, "jit_compile": True},
]


@pytest.mark.parametrize("settings", SETTINGS, ids=["eager", "jit"])
def test_run_eagerly_jit_compile_steps_per_execution(K: Any, settings: Dict[str, Any]) -> None:
    source = two_output_model(K)
    params = inspect.signature(source.compile).parameters
    given = {k: v for k, v in settings.items() if k in params}
    if family_name(K) == "keras2":
        # graph-mode Keras has none of them: the setting it has is `sample_weight_mode`
        assert not given
        x = K.Input((3, 4))
        source = K.models.Model(x, K.layers.Dense(2)(x))
        given = {"sample_weight_mode": "temporal"}
    source.compile(optimizer="sgd", loss="mse", **given)
    clone = compat_clone.clone_model(source, compile=True)
    if family_name(K) == "keras2":
        assert clone.sample_weight_mode == "temporal"
        return
    assert clone.run_eagerly == source.run_eagerly == settings["run_eagerly"]
    assert clone.jit_compile == source.jit_compile
    assert steps_per_execution(clone) == steps_per_execution(source) == settings["steps_per_execution"]


def steps_per_execution(model: Any) -> int:
    value = getattr(model, "_steps_per_execution", None)
    if value is not None and hasattr(value, "numpy"):  # tf.keras / tf_keras: a variable
        return int(value.numpy())
    return int(model.steps_per_execution)


def test_keras3_auto_scale_loss_false_kept(K: Any) -> None:
    if family_name(K) != "keras3":  # no such compile argument outside Keras 3
        assert "auto_scale_loss" not in inspect.signature(two_output_model(K).compile).parameters
        return
    previous = K.mixed_precision.global_policy()
    K.mixed_precision.set_global_policy("mixed_float16")
    try:  # a model whose own policy is mixed_float16
        x = K.Input((4,))
        source = K.models.Model(x, K.layers.Dense(2)(x))
    finally:
        K.mixed_precision.set_global_policy(previous)
    assert source.dtype_policy.name == "mixed_float16"
    source.compile(optimizer="adam", loss="mse", auto_scale_loss=False)
    unwrapped = compat_clone.clone_model(source, compile=True)
    assert type(unwrapped.optimizer) is type(source.optimizer)
    source.compile(optimizer="adam", loss="mse")
    wrapped = compat_clone.clone_model(source, compile=True)
    assert type(wrapped.optimizer).__name__ == type(source.optimizer).__name__ == "LossScaleOptimizer"


# -- errors --------------------------------------------------------------------------


def test_uncompiled_source_refused_before_cloning(K: Any) -> None:
    source = two_output_model(K)
    weights = [np.array(w) for w in source.get_weights()]
    seen: List[str] = []

    def recorder(layer: Any) -> Any:
        seen.append(layer.name)
        return layer.__class__.from_config(layer.get_config())

    with pytest.raises(CompileError) as info:
        compat_clone.clone_model(source, clone_function=recorder, compile=True)
    message = str(info.value)
    assert "never compiled" in message and "two_out" in message and "model.compile(" in message
    assert isinstance(info.value, ValueError)
    assert seen == []  # nothing was cloned
    assert getattr(source, "optimizer", None) is None
    for u, v in zip(weights, source.get_weights()):
        np.testing.assert_array_equal(u, v)


@pytest.mark.parametrize("value", ["yes", 1, None, [True]], ids=["str", "int", "None", "list"])
def test_compile_wrong_type(K: Any, value: Any) -> None:
    source = two_output_model(K)
    source.compile(optimizer="sgd", loss="mse")
    with pytest.raises(InvalidArgumentError, match=r"Expected `compile` to be True or False. Received: compile="):
        compat_clone.clone_model(source, compile=value)


def test_optimizer_without_a_round_tripping_config(K: Any) -> None:
    class Tagged(K.optimizers.SGD):  # type: ignore[misc,name-defined]
        def __init__(self, tag: str, **kwargs: Any) -> None:  # `tag` missing from get_config
            super().__init__(**kwargs)
            self.tag = tag

    source = two_output_model(K)
    optimizer = Tagged("t")
    source.compile(optimizer=optimizer, loss="mse")
    with pytest.raises(CompileError) as info:
        compat_clone.clone_model(source, compile=True)
    message = str(info.value)
    assert "optimizer" in message and "Tagged" in message and "compile=False" in message
    assert source.optimizer is optimizer and iterations(K, source) == 0
    clone = compat_clone.clone_model(source)  # without compile=True it clones
    assert clone is not source
