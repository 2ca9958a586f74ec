"""The Keras 3 half of a training state: the rebuilt model compiled as the source was, its optimizer state set.

`plan_compile` maps a description's `TrainingState` to Keras 3's compile
arguments (the optimizer through `_optimizers`' table, the losses and metrics
by name or class) and names everything it cannot carry; that is the one place
deciding what is carried. `recompile` compiles the Keras 3 model with the
plan, builds the optimizer on its trainable variables and writes each slot
into the optimizer variable of the model variable at the slot's layer path
and index, and the iteration count. `verify_step` takes the source's recorded
training step on the Keras 3 model (then undoes it) and compares every weight
after it, and the loss, with the source's.
"""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any, Dict, List, Mapping, Optional, Tuple

import numpy as np

from compat_clone._walk import walk
from compat_clone.convert._format import Description, TrainingState
from compat_clone.convert._names import keras3_paths
from compat_clone.convert._optimizers import (
    API_KERAS2,
    CLIPNORM,
    DROPPED_KEYS,
    KERAS3_SCALARS,
    KERAS3_SLOTS,
    LOSS_NAMES,
    not_exact,
)
from compat_clone.errors import CompileError, ConversionMismatchError

__all__ = ["CompilePlan", "StepProof", "plan_compile", "recompile", "refusal", "verify_step"]

_APIS = {API_KERAS2: "standalone Keras 2", "optimizer_v2": "tf.keras optimizer_v2", "optimizer": "tf.keras / tf_keras"}


@dataclasses.dataclass
class CompilePlan:
    """Keras 3's compile arguments for a training state, and what the mapping changed or cannot carry."""

    optimizer: Any = None
    compile_args: Dict[str, Any] = dataclasses.field(default_factory=dict)
    changes: List[str] = dataclasses.field(default_factory=list)
    uncarried: List[str] = dataclasses.field(default_factory=list)


@dataclasses.dataclass(frozen=True)
class StepProof:
    """One training step of the Keras 3 model compared with the source's.

    Attributes:
        compared: whether a step was compared (False: `note` says why).
        optimizer: the Keras 3 optimizer's class name.
        iterations: the iteration count the step started from.
        variables: how many weights were compared after the step.
        max_abs: the largest ``|keras3 - source|`` over them.
        max_rel: the largest relative difference (where ``|source| > atol``).
        loss: the loss Keras 3 computed for the step; ``source_loss`` the source's.
        ok: every weight and the loss within ``atol + rtol * |source|``.
        note: why no step was compared ("" when one was).
    """

    compared: bool
    optimizer: str = ""
    iterations: int = 0
    variables: int = 0
    max_abs: float = 0.0
    max_rel: float = 0.0
    loss: float = 0.0
    source_loss: float = 0.0
    ok: bool = True
    rtol: float = 0.0
    atol: float = 0.0
    note: str = ""

    def __str__(self) -> str:
        if not self.compared:
            return f"training step: not compared: {self.note}"
        verdict = "OK" if self.ok else "MISMATCH"
        return (
            f"training step: 1 step of {self.optimizer} from iteration {self.iterations}, {self.variables} weights after "
            f"it, max |Δ| {self.max_abs:.1e}, max rel {self.max_rel:.1e}, loss {self.loss:.6g} (source {self.source_loss:.6g}) "
            f"(rtol {self.rtol:.0e}, atol {self.atol:.0e}): {verdict}"
        )


def plan_compile(state: TrainingState, custom_objects: Optional[Mapping[str, Any]] = None) -> CompilePlan:
    """Keras 3's compile arguments for `state`, and what cannot be carried (`CompilePlan.uncarried`, each said)."""
    import keras

    plan = CompilePlan(uncarried=list(state.uncarried))
    if state.optimizer:
        plan.optimizer = _optimizer(keras, state.optimizer, plan)
    custom = dict(custom_objects or {})
    args: Dict[str, Any] = {"loss": _objects(keras, state.loss, custom, plan, "loss")}
    for key in ("metrics", "weighted_metrics"):
        value = getattr(state, key)
        if value:
            args[key] = _objects(keras, value, custom, plan, "metric")
    if state.loss_weights is not None:
        args["loss_weights"] = state.loss_weights
    plan.compile_args = args
    return plan


def _optimizer(keras: Any, spec: Mapping[str, Any], plan: CompilePlan) -> Any:
    """The Keras 3 optimizer of `spec` (`TrainingState.optimizer`), or None with the reason in ``plan.uncarried``."""
    name, api = str(spec["class_name"]), str(spec.get("api"))
    config = dict(spec.get("config") or {})
    label = f"the optimizer {name} ({_APIS.get(api, api)})"
    cls = getattr(keras.optimizers, name, None) if name in KERAS3_SLOTS else None
    if cls is None:
        plan.uncarried.append(f"{label}: no Keras 3 optimizer updates as it does (compat_clone maps {', '.join(KERAS3_SLOTS)})")
        return None
    reason = not_exact(api, name, config)
    if reason:
        plan.uncarried.append(f"{label}: {reason}")
        return None
    if "lr" in config:
        config["learning_rate"] = config.pop("lr")
    for key in DROPPED_KEYS:
        config.pop(key, None)
    if config.get("clipnorm") is not None and CLIPNORM.get(api, "clipnorm") != "clipnorm":
        config[CLIPNORM[api]] = config.pop("clipnorm")
        plan.changes.append(
            f"{label}: clipnorm={config[CLIPNORM[api]]} clips all gradients' norm together: Keras 3's global_clipnorm"
        )
    rate: Any = config.get("learning_rate")
    if isinstance(rate, dict):
        try:
            config["learning_rate"] = keras.optimizers.schedules.deserialize(rate)
        except Exception as e:
            plan.uncarried.append(
                f"{label}: its learning rate schedule {rate.get('class_name')!r} has no Keras 3 counterpart ({e})"
            )
            return None
    decay = config.pop("decay", 0.0) or 0.0
    if decay:
        if isinstance(rate, dict):
            plan.uncarried.append(f"{label}: decay={decay} on top of a learning rate schedule, which Keras 3 has no form of")
            return None
        # Keras 2: lr / (1 + decay * iterations), iterations before the step: InverseTimeDecay with decay_steps=1
        config["learning_rate"] = keras.optimizers.schedules.InverseTimeDecay(float(rate), decay_steps=1, decay_rate=float(decay))
        plan.changes.append(
            f"{label}: decay={np.float32(decay)!s} as learning_rate=InverseTimeDecay({np.float32(rate)!s}, decay_steps=1, "
            f"decay_rate={np.float32(decay)!s})"  # float32 values, in their shortest form
        )
    params = inspect.signature(cls).parameters
    for key in [k for k in config if k not in params]:
        plan.uncarried.append(f"{label}: {key}={config[key]!r}, which Keras 3's {name} takes no argument for")
    if any(k not in params for k in config):
        return None
    try:
        return cls(**config)
    except Exception as e:
        plan.uncarried.append(f"{label}: Keras {keras.__version__}'s {name} refuses its config ({type(e).__name__}: {e})")
        return None


def _objects(keras: Any, spec: Any, custom: Dict[str, Any], plan: CompilePlan, kind: str) -> Any:
    """A loss or metric spec (a name, a class config, or a list / dict of them) as Keras 3 objects or names."""
    if spec is None:
        return None
    if isinstance(spec, list):
        return [_objects(keras, s, custom, plan, kind) for s in spec]
    if isinstance(spec, dict) and "class_name" not in spec:
        return {k: _objects(keras, v, custom, plan, kind) for k, v in spec.items()}
    module = keras.losses if kind == "loss" else keras.metrics
    if isinstance(spec, str):
        if spec in custom:
            return custom[spec]
        if kind == "metric" and spec.lower() in ("acc", "accuracy", "ce", "crossentropy"):
            return spec  # Keras 3's compile picks the accuracy / crossentropy for the loss, as Keras 2's did
        name = LOSS_NAMES.get(spec, spec) if kind == "loss" else spec
        try:
            module.get(name)
        except Exception:
            plan.uncarried.append(
                f"the {kind} {spec!r}: no Keras 3 {kind} has that name (a function of the source's own, saved by its name "
                f"without its code): give it as custom_objects={{{spec!r}: fn}}"
            )
            return None
        if name != spec:
            plan.changes.append(f"the {kind} {spec!r} is Keras 3's {name!r}")
        return name
    class_name, config = str(spec["class_name"]), dict(spec.get("config") or {})
    if config.get("reduction") == "auto":
        config["reduction"] = "sum_over_batch_size"
    fn = config.pop("fn", None)
    if class_name in ("MeanMetricWrapper", "LossFunctionWrapper") and isinstance(fn, str):
        function = custom.get(fn) or getattr(module, LOSS_NAMES.get(fn, fn), None)
        if callable(function) and not isinstance(function, type):
            if kind == "loss":
                return function
            return keras.metrics.MeanMetricWrapper(fn=function, name=config.get("name"), dtype=config.get("dtype"))
    cls = custom.get(class_name) or getattr(module, class_name, None)
    if not isinstance(cls, type):
        plan.uncarried.append(
            f"the {kind} {class_name} ({config.get('name', '?')!r}): no Keras 3 {kind} class has that name: give it as "
            f"custom_objects={{{class_name!r}: cls}}"
        )
        return None
    params = inspect.signature(cls).parameters
    kwargs = {k: v for k, v in config.items() if k in params}
    dropped = sorted(k for k, v in config.items() if k not in params and v is not None)
    try:
        made = cls(**kwargs)
    except Exception as e:
        plan.uncarried.append(f"the {kind} {class_name}: Keras {keras.__version__} refuses its config {kwargs} ({e})")
        return None
    if dropped:
        plan.uncarried.append(
            f"the {kind} {class_name}: {', '.join(dropped)}, which Keras 3's {class_name} takes no argument for"
        )
    return made


def refusal(uncarried: List[str]) -> CompileError:
    """The error that names what of a training state cannot be carried."""
    return CompileError(
        f"The training state cannot be carried to Keras 3: {'; '.join(uncarried)}. Nothing was returned. Convert "
        "without it (compile=False), or pass what it names."
    )


def recompile(model: Any, description: Description, custom_objects: Optional[Mapping[str, Any]] = None) -> List[str]:
    """Compiles the rebuilt Keras 3 `model` with the description's training state, the optimizer's state set.

    Returns:
        What the mapping changed on purpose, one line each.

    Raises:
        CompileError: part of the state cannot be carried (each part named).
    """
    state = description.training
    if state is None:
        raise CompileError(
            "The description holds no training state: describe the model with compile=True (on the command line: --compile)."
        )
    plan = plan_compile(state, custom_objects)
    if plan.uncarried:
        raise refusal(plan.uncarried)
    model.compile(optimizer=plan.optimizer, **plan.compile_args)
    optimizer = model.optimizer
    optimizer.build(model.trainable_variables)
    variables = _variables(model, description)
    name = type(optimizer).__name__
    roles = KERAS3_SLOTS[name]
    trainable = {id(v) for v in model.trainable_variables}
    unset = {
        (id(v), role)
        for role, attribute in roles.items()
        if getattr(optimizer, attribute, None)
        for v in model.trainable_variables
    }
    for slot in state.slots:
        variable = variables.get((slot.layer, slot.index))
        held = getattr(optimizer, roles.get(slot.role, ""), None)
        if variable is not None and slot.role in roles and not held:
            continue  # a slot this config never reads: tf_keras's SGD keeps momentums with momentum=0 (Keras 3 none)
        if variable is None or id(variable) not in trainable or not held:
            raise refusal(
                [
                    f"the {slot.role} slot of weight {slot.index} of layer {slot.layer!r}: "
                    + (
                        "Keras 3's model has no trainable variable there"
                        if variable is None or id(variable) not in trainable
                        else f"Keras 3's {name} keeps no {slot.role} with this config"
                    )
                ]
            )
        held[optimizer._get_variable_index(variable)].assign(slot.value)
        unset.discard((id(variable), slot.role))
    if unset and state.iterations:
        raise refusal(
            [f"{len(unset)} slot(s) of Keras 3's {name} get no value from the source, which trained {state.iterations} steps"]
        )
    for role, value in state.scalars.items():
        getattr(optimizer, KERAS3_SCALARS[name][role]).assign(value)
    optimizer.iterations.assign(state.iterations)
    return plan.changes


def _variables(model: Any, description: Description) -> Dict[Tuple[str, int], Any]:
    """The Keras 3 model's variables by their source layer path and index (as `WeightRecord` names them)."""
    paths = {new: old for old, new in keras3_paths(description.architecture).items()}
    return {(paths.get(path, path), k): v for path, layer in walk(model) for k, v in enumerate(layer.weights)}


def verify_step(description: Description, model: Any, *, rtol: float = 1e-5, atol: float = 1e-6) -> StepProof:
    """Takes the source's recorded training step on the compiled Keras 3 `model` and compares (then undoes it).

    Returns:
        A `StepProof` (``compared=False`` where the source recorded no step, saying why).

    Raises:
        ConversionMismatchError: a weight after the step, or the loss, differs above tolerance.
    """
    import keras

    state = description.training
    optimizer = getattr(model, "optimizer", None)
    if state is None or optimizer is None:
        raise CompileError("Expected a model compiled with the description's training state (`rebuild(..., compile=True)`).")
    if state.step is None:
        return StepProof(compared=False, note=state.step_note or "the source recorded no training step")
    step = state.step
    variables = _variables(model, description)
    kept = list(model.variables) + list(optimizer.variables)
    before = [keras.ops.convert_to_numpy(v) for v in kept]
    x: Any = step.inputs if len(step.inputs) > 1 else step.inputs[0]
    y: Any = step.targets if len(step.targets) > 1 else step.targets[0]
    try:
        result = model.train_on_batch(x, y)
        loss = float(np.asarray(result[0] if isinstance(result, (list, tuple)) else result))
        worst_abs, worst_rel, ok = 0.0, 0.0, True
        for record in step.weights:
            got = keras.ops.convert_to_numpy(variables[(record.layer, record.index)])
            a, r, fits = _diff(got, record.value, rtol, atol)
            worst_abs, worst_rel, ok = max(worst_abs, a), max(worst_rel, r), ok and fits
        _, _, loss_ok = _diff(np.asarray(loss), np.asarray(step.loss), rtol, atol)
    finally:
        for variable, value in zip(kept, before):
            variable.assign(value)
    proof = StepProof(
        compared=True,
        optimizer=type(optimizer).__name__,
        iterations=state.iterations,
        variables=len(step.weights),
        max_abs=worst_abs,
        max_rel=worst_rel,
        loss=loss,
        source_loss=step.loss,
        ok=ok and loss_ok,
        rtol=float(rtol),
        atol=float(atol),
    )
    if not proof.ok:
        sparse = keras.backend.backend() == "tensorflow" and any(type(layer).__name__ == "Embedding" for _, layer in walk(model))
        known = (
            " Known: Keras 3 on TensorFlow updates an optimizer's second moments of an Embedding from a sparse "
            "gradient with repeated ids as if each repeat were a gradient of its own (measured for Adam, Keras "
            "3.15.1); on jax or torch it does not: convert with --backend jax or torch."
            if sparse
            else ""
        )
        raise ConversionMismatchError(
            f"The converted model does not train as the source did: {proof}. Nothing was returned. The optimizer, "
            "the loss or a layer's training computation differs in Keras 3; convert without the training state "
            f"(compile=False) to keep the model.{known}",
        )
    return proof


def _diff(got: np.ndarray, want: np.ndarray, rtol: float, atol: float) -> Tuple[float, float, bool]:
    got, want = np.asarray(got, dtype="float64"), np.asarray(want, dtype="float64")
    if got.shape != want.shape:
        return float("inf"), float("inf"), False
    gap = np.abs(got - want)
    big = np.abs(want) > atol
    rel = float((gap[big] / np.abs(want[big])).max()) if big.any() else 0.0
    return float(gap.max(initial=0.0)), rel, bool(np.all(gap <= atol + rtol * np.abs(want)))
