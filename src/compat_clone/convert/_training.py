"""The Keras 2 half of a training state: a compiled model's compile configuration and optimizer state as data.

`describe_training` runs where the model was loaded compiled (its own Keras:
standalone Keras 2.x, tf.keras, tf_keras) and returns a `TrainingState`: the
loss, metrics and loss weights as the model's Keras serializes them, the
optimizer's class and hyperparameters, its iteration count, and each slot
variable tied to the model variable it belongs to by that variable's layer
path and index (the identity `WeightRecord` gives the weights, never a flat
order or a name). How each optimizer API keeps its slots is `_optimizers`'
data. Then it takes one training step on a fixed batch (the probes, and
targets drawn for the loss) and records the weights after it: the proof that
the Keras 3 model, given the same state, takes the same step. The model is
left as it was (its weights and optimizer state are put back).

What cannot be described (no optimizer, an optimizer whose state it does
not know) is said in `TrainingState.uncarried`; `_recompile` decides, in one
place, what to do about it.
"""

from __future__ import annotations

import inspect
import json
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from compat_clone._walk import walk
from compat_clone.convert._format import SlotRecord, TrainingState, TrainingStep, WeightRecord
from compat_clone.convert._optimizers import (
    API_KERAS2,
    API_NEW,
    API_V2,
    KERAS2_GROUPS,
    KERAS3_SCALARS,
    KERAS3_SLOTS,
    RANDOM_IN_TRAINING,
    V2_SLOTS,
)

__all__ = ["describe_training", "random_in_training", "step_targets"]

_Reader = Callable[[Sequence[Any]], List[np.ndarray]]


def describe_training(
    model: Any, architecture: Mapping[str, Any], inputs: List[np.ndarray], backend: Optional[Any], seed: int = 1
) -> TrainingState:
    """The training state of the compiled Keras 2 `model`, with one recorded training step.

    Args:
        model: a compiled Functional or Sequential Keras 2 model.
        architecture: its description's architecture (which layers draw random numbers in training).
        inputs: the batch the step trains on (the first probe set's inputs).
        backend: standalone Keras 2's ``keras.backend`` (graph mode: variables read and written in one session
            run each), or None (eager).
        seed: seed of the step's targets.

    Returns:
        A `TrainingState` (``uncarried`` lists what could not be described).
    """
    reader: _Reader = (
        backend.batch_get_value if backend is not None else (lambda variables: [np.asarray(v.numpy()) for v in variables])
    )
    optimizer = getattr(model, "optimizer", None)
    if optimizer is None:
        return TrainingState(
            None,
            None,
            None,
            None,
            {},
            0,
            uncarried=[
                "the model holds no compile configuration: it was saved uncompiled (never compiled, or "
                "`include_optimizer=False`), so there is no training state to carry"
            ],
        )
    args = _compile_args(model)
    state = TrainingState(
        loss=_plain(args.get("loss")),
        metrics=_plain(args.get("metrics")) or None,
        weighted_metrics=_plain(args.get("weighted_metrics")) or None,
        loss_weights=_plain(args.get("loss_weights")),
        optimizer={},
        iterations=0,
    )
    api = _api(optimizer)
    class_name = type(optimizer).__name__
    state.optimizer = {"class_name": class_name, "config": _plain(optimizer.get_config()), "api": api}
    if getattr(model, "sample_weight_mode", None):
        state.uncarried.append(
            f"sample_weight_mode={model.sample_weight_mode!r}: Keras 3 takes no such setting (it reads the shape of the "
            "sample weights given to fit)"
        )
    paths = {id(v): (path, index) for path, layer in walk(model) for index, v in enumerate(layer.weights)}
    {API_KERAS2: _keras2_state, API_V2: _v2_state, API_NEW: _new_state}[api](model, optimizer, state, paths, reader)
    random = random_in_training(architecture)
    if random:
        state.step_note = (
            f"the model draws random numbers in training ({'; '.join(random)}): two runs of one step differ, in "
            "Keras 2 as in Keras 3, so no step is compared"
        )
    elif not state.uncarried:
        writer = backend.batch_set_value if backend is not None else lambda pairs: [v.assign(x) for v, x in pairs]
        state.step = _step(model, optimizer, inputs, state.loss, (reader, writer), paths, seed)
    return state


def _compile_args(model: Any) -> Dict[str, Any]:
    """What `model` was compiled with, as the user passed it (loss, metrics, weighted_metrics, loss_weights)."""
    get = getattr(model, "_get_compile_args", None)  # tf.keras 2.2+ / tf_keras
    if get is not None:
        kwargs = {"user_metrics": True} if "user_metrics" in inspect.signature(get).parameters else {}
        return dict(get(**kwargs))
    return {  # standalone Keras 2: compile() keeps its arguments (2.3: `_compile_metrics`; 2.2: `metrics`)
        "loss": model.loss,
        "metrics": getattr(model, "_compile_metrics", None) or getattr(model, "metrics", None),
        "weighted_metrics": getattr(model, "_compile_weighted_metrics", None) or getattr(model, "weighted_metrics", None),
        "loss_weights": getattr(model, "loss_weights", None),
    }


def _api(optimizer: Any) -> str:
    """Which optimizer API `optimizer` is, by what it has (the class names are the same in all three)."""
    if hasattr(optimizer, "_var_key") and hasattr(optimizer, "_index_dict"):
        return API_NEW  # tf.keras 2.11+ / tf_keras: one list per slot kind, indexed by `_index_dict`
    if hasattr(optimizer, "get_slot"):
        return API_V2
    return API_KERAS2


def _keras2_state(model: Any, optimizer: Any, state: TrainingState, paths: Dict[int, Tuple[str, int]], read: _Reader) -> None:
    """Standalone Keras 2: ``optimizer.weights`` = ``[iterations]`` + one group per role, in the order of the params."""
    name = state.optimizer["class_name"]
    groups = KERAS2_GROUPS.get(name)
    params = list(getattr(model, "_collected_trainable_weights", None) or model.trainable_weights)
    values = read(list(optimizer.weights))
    if groups is None:
        state.uncarried.append(f"the optimizer {name!r}: compat_clone does not know how Keras 2 keeps its state")
        return
    n = len(params)
    if len(values) == 1 + len(groups) * n:
        state.iterations, values = int(values[0]), values[1:]
    elif len(values) == len(groups) * n:  # Keras 2.2's RMSprop, Adagrad, Adadelta keep no iterations among them
        state.iterations = int(read([optimizer.iterations])[0])
    elif not values:  # compiled, never trained: no state yet
        state.iterations = int(read([optimizer.iterations])[0])
        return
    else:
        state.uncarried.append(
            f"the optimizer {name!r} holds {len(values)} variables; Keras 2's {name} with {n} trainable weights "
            f"holds 1 + {len(groups)} x {n}: its state is not laid out as compat_clone knows"
        )
        return
    for g, role in enumerate(groups):
        if role == "velocity_hat" and not state.optimizer["config"].get("amsgrad"):
            continue  # 1-element placeholders
        for k, param in enumerate(params):
            _add_slot(state, paths, param, role, np.asarray(values[g * n + k]))


def _v2_state(model: Any, optimizer: Any, state: TrainingState, paths: Dict[int, Tuple[str, int]], read: _Reader) -> None:
    """optimizer_v2: ``get_slot(variable, name)``."""
    name = state.optimizer["class_name"]
    roles = V2_SLOTS.get(name)
    state.iterations = int(read([optimizer.iterations])[0])
    if roles is None:
        state.uncarried.append(f"the optimizer {name!r}: compat_clone does not know how tf.keras keeps its state")
        return
    for slot in optimizer.get_slot_names():
        if slot not in roles:
            state.uncarried.append(f"the optimizer {name!r} has a slot {slot!r} that Keras 3's {name} has no counterpart of")
            continue
        for variable in model.trainable_weights:
            try:
                value = optimizer.get_slot(variable, slot)
            except KeyError:  # never applied to this variable: no state
                continue
            _add_slot(state, paths, variable, roles[slot], read([value])[0])


def _new_state(model: Any, optimizer: Any, state: TrainingState, paths: Dict[int, Tuple[str, int]], read: _Reader) -> None:
    """The optimizer of tf.keras 2.11+ / tf_keras: one list per role, indexed by `_index_dict` (as Keras 3)."""
    name = state.optimizer["class_name"]
    roles = KERAS3_SLOTS.get(name)
    state.iterations = int(read([optimizer.iterations])[0])
    if roles is None:
        state.uncarried.append(f"the optimizer {name!r}: compat_clone does not know how tf_keras keeps its state")
        return
    if state.optimizer["config"].get("use_ema"):
        state.uncarried.append(f"the optimizer {name!r} keeps moving averages of the weights (use_ema=True): not carried")
    index = getattr(optimizer, "_index_dict", None) or {}
    for role, attribute in roles.items():
        held = list(getattr(optimizer, attribute, None) or [])
        for variable in model.trainable_weights if held else ():
            k = index.get(optimizer._var_key(variable))
            if k is not None:
                _add_slot(state, paths, variable, role, read([held[k]])[0])
    for role, attribute in KERAS3_SCALARS.get(name, {}).items():
        if hasattr(optimizer, attribute):
            state.scalars[role] = float(read([getattr(optimizer, attribute)])[0])


def _add_slot(state: TrainingState, paths: Dict[int, Tuple[str, int]], variable: Any, role: str, value: np.ndarray) -> None:
    where = paths.get(id(variable))
    if where is None:
        state.uncarried.append(f"a {role} slot of {variable.name!r}, a variable of no layer of the model")
        return
    if tuple(value.shape) != tuple(int(d) for d in variable.shape):
        state.uncarried.append(f"the {role} slot of {variable.name!r} has shape {value.shape}, the variable {variable.shape}")
        return
    state.slots.append(SlotRecord(where[0], where[1], role, np.asarray(value)))


def _optimizer_variables(optimizer: Any) -> List[Any]:
    variables = getattr(optimizer, "variables", None)
    if variables is not None and hasattr(optimizer, "_index_dict"):
        return list(variables() if callable(variables) else variables)
    return list(optimizer.weights)


def _step(
    model: Any,
    optimizer: Any,
    inputs: List[np.ndarray],
    loss: Any,
    access: Tuple[_Reader, Callable[[List[Tuple[Any, Any]]], Any]],
    paths: Dict[int, Tuple[str, int]],
    seed: int,
) -> TrainingStep:
    """One `train_on_batch` on (`inputs`, targets drawn for `loss`), the weights after it recorded; then undone
    (`access`: how variables are read and written)."""
    read, write = access
    targets = step_targets(loss, [tuple(int(d) for d in o.shape[1:]) for o in _output_shapes(model)], len(inputs[0]), seed)
    names = list(getattr(model, "output_names", None) or [])
    variables = [v for _, layer in walk(model) for v in layer.weights]
    state = _optimizer_variables(optimizer)
    before, before_state = read(variables), read(state)
    x: Any = inputs if len(inputs) > 1 else inputs[0]
    y: Any = targets if len(targets) > 1 else targets[0]
    if len(targets) > 1 and names and isinstance(getattr(model, "output", None), dict):
        y = dict(zip(names, targets))
    result = model.train_on_batch(x, y)
    after = read(variables)
    weights = []
    for variable, value in zip(variables, after):
        path, index = paths[id(variable)]
        weights.append(WeightRecord(path, index, str(variable.name), np.asarray(value)))
    write(list(zip(variables, before)) + list(zip(state, before_state)))
    value = result[0] if isinstance(result, (list, tuple)) else result
    return TrainingStep(inputs=list(inputs), targets=targets, loss=float(value), weights=weights)


def _output_shapes(model: Any) -> List[Any]:
    shapes = []
    for tensor in model.outputs:
        shape = tensor.shape
        shapes.append(np.empty([1] + [d or 1 for d in (shape.as_list() if hasattr(shape, "as_list") else list(shape))[1:]]))
    return shapes


def _loss_name(loss: Any) -> str:
    if isinstance(loss, dict) and "class_name" in loss:
        config = loss.get("config") or {}
        return str(config.get("fn") or loss["class_name"]).lower()
    return str(loss).lower()


def step_targets(loss: Any, shapes: List[Tuple[int, ...]], samples: int, seed: int) -> List[np.ndarray]:
    """Targets of one training step for outputs of `shapes`: valid for each output's loss.

    Class ids for a sparse categorical loss, one-hot rows for a categorical
    one, 0/1 for a binary one, values in [0, 1) for any other.
    """
    rng = np.random.default_rng(seed)
    losses = loss if isinstance(loss, list) else [loss] * len(shapes)
    targets = []
    for k, shape in enumerate(shapes):
        entry = losses[k] if k < len(losses) else loss
        if isinstance(loss, dict) and "class_name" not in loss:
            entry = list(loss.values())[k] if k < len(loss) else None
        name = _loss_name(entry).replace("_", "")
        classes = shape[-1] if shape else 1
        if "sparsecategorical" in name:
            targets.append(rng.integers(0, classes, size=(samples, *shape[:-1])).astype("int32"))
        elif "categorical" in name or "kl" in name or "kullback" in name:
            targets.append(np.eye(classes, dtype="float32")[rng.integers(0, classes, size=(samples, *shape[:-1]))])
        elif "binary" in name or "hinge" in name:
            targets.append(rng.integers(0, 2, size=(samples, *shape)).astype("float32"))
        else:
            targets.append(rng.uniform(0.0, 1.0, size=(samples, *shape)).astype("float32"))
    return targets


def random_in_training(architecture: Mapping[str, Any]) -> List[str]:
    """The layers of an architecture that draw random numbers in training, each said (``"layer 'drop' (Dropout rate=0.5)"``)."""
    found: List[str] = []

    def visit(entry: Any) -> None:
        if isinstance(entry, list):
            for item in entry:
                visit(item)
            return
        if not isinstance(entry, dict):
            return
        class_name, config = entry.get("class_name"), entry.get("config")
        if isinstance(class_name, str) and isinstance(config, dict) and "name" in config:  # a layer, not an initializer
            short = class_name.rpartition(">")[2]
            for key, classes in RANDOM_IN_TRAINING:
                value = config.get(key)
                if (classes is None or short in classes) and isinstance(value, (int, float)) and value > 0:
                    found.append(f"layer {config.get('name', '?')!r} ({short} {key}={value})")
            if short.startswith("Random"):
                found.append(f"layer {config.get('name', '?')!r} ({short})")
        for value in entry.values():
            visit(value)

    visit(architecture)
    return list(dict.fromkeys(found))


def _plain(value: Any) -> Any:
    """`value` as JSON-able data: NumPy scalars as numbers, functions by name, Keras objects as their config."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if hasattr(value, "numpy") and not hasattr(value, "get_config"):  # a scalar variable or tensor
        return _plain(np.asarray(value.numpy()))
    if hasattr(value, "get_config") and not inspect.isfunction(value):
        return {"class_name": type(value).__name__, "config": _plain(value.get_config())}
    name = getattr(value, "__name__", None)
    if name is not None:
        return str(name)
    return json.loads(json.dumps(str(value)))
