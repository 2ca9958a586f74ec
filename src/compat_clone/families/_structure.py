"""A subclassed model cloned as its structure: a new instance of its class, its attributes rebuilt.

Where `from_config(get_config())` fails, or rebuilds a model that differs
from its source, the clone is made without running the subclass's own
`__init__` again: a new instance of the class (`cls.__new__`), initialized by
Keras's own base class alone (the name and dtype policy of the source), then
given the source's **attributes**, each rebuilt from the source's value. No
constructor argument is guessed: what the constructor made from its
arguments (`self.head = Dense(num_classes)`) is read off the source, whatever
it is named (`self.inner = layer`), and a sub-layer replaced after
construction is the one cloned. The rule for each attribute the user's code
set (not the keys a bare model of the family has, nor those Keras sets when
it compiles, fits or builds: `KERAS_RUNTIME`, `KERAS_RUNTIME_PRIVATE`):

* a layer or model is cloned by the engine, from its own config and class (a
  nested subclassed model structurally in turn); a layer held twice is cloned
  once and held twice;
* a variable the model owns (`self.add_weight`, `keras.Variable`) becomes a
  new variable of the clone, same shape, dtype, `trainable` and name, holding
  the source's value (its initializer is not recorded anywhere);
* a list, tuple or dict is rebuilt with its items handled by these rules;
* an object with `get_config` / `from_config` (a metric, a loss, an
  optimizer, an initializer) is rebuilt from its config: its state is fresh;
* numbers, strings, None, NumPy arrays and containers of them are copied;
  functions, classes and modules are shared; any other object is deep-copied.

What cannot be copied (a variable the model does not own, an object that
cannot be deep-copied or rebuilt) refuses the clone (`Refused`) before
anything is built. `differences` then compares the clone with its source,
path by path: every path of the subclassed-model clone (config round trip,
structural, Keras 3's recorded arguments) is checked by it before it is
returned.
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
from collections import abc as cabc
from typing import Any, Callable, Dict, FrozenSet, Iterable, List, Optional, Tuple

from compat_clone._walk import OWNER_PACKAGES, is_model
from compat_clone.errors import WeightsMismatchError
from compat_clone.families._layer_state import is_weight_handler
from compat_clone.weights import own_variables, tracked_paths

__all__ = [
    "KERAS_RUNTIME",
    "KERAS_RUNTIME_PRIVATE",
    "Parts",
    "Refused",
    "copy_plain_attributes",
    "copy_user_attributes",
    "differences",
    "keras_base",
    "layer_difference",
    "structural_clone",
    "user_attributes",
]

_PLAIN = (type(None), bool, int, float, complex, str, bytes)

#: Public attributes Keras itself sets on a model after its constructor (compile,
#: fit, evaluate, predict, build): never the user's state, even where their value is plain data.
KERAS_RUNTIME = frozenset(
    {
        "built", "optimizer", "loss", "compiled_loss", "compiled_metrics", "history", "stop_training",
        "stop_evaluating", "stop_predicting", "train_function", "test_function", "predict_function",
        "inputs", "outputs", "input_names", "output_names", "metrics_names", "run_eagerly", "jit_compile",
        "steps_per_execution", "compiled",
        # standalone Keras 2.2-2.3 (compile, fit, predict)
        "loss_functions", "loss_weights", "metrics", "metrics_tensors", "metrics_updates", "sample_weight_mode",
        "sample_weight_modes", "sample_weights", "stateful_metric_functions", "stateful_metric_names", "targets",
        "total_loss", "weighted_metrics", "loss_weights_list", "skip_target_indices",
        # standalone Keras 2.0-2.1: a Sequential's graph, made on its first use
        "supports_masking", "input_layers", "input_layers_node_indices", "input_layers_tensor_indices", "output_layers",
        "output_layers_node_indices", "output_layers_tensor_indices",
    }
)  # fmt: skip

#: Private attributes Keras sets after the constructor (read off models compiled, fitted,
#: evaluated and saved in each family: tests/clone/test_structural_clone.py checks the list), and
#: the prefixes of TensorFlow's checkpoint machinery (`_self_...`).
KERAS_RUNTIME_PRIVATE = frozenset(
    {
        "_compile_config", "_compiled_trainable_state", "_eval_epoch_iterator", "_predict_epoch_iterator",
        "_pss_evaluation_shards", "_build_shapes_dict", "_build_input_shape", "_saved_model_inputs_spec",
        "_saved_model_arg_spec", "_compile_loss", "_compile_metrics", "_jit_compile", "_run_eagerly",
        "_steps_per_execution", "_is_compiled", "_training_state", "_compiled_loss", "_compiled_metrics",
        "_auto_config", "_build_config", "_compile_was_called", "_is_graph_network", "_tracker", "torch_params",
        "_train_counter", "_test_counter", "_predict_counter", "_distribution_strategy", "_cluster_coordinator",
        "_inferred_steps", "_layer_call_argspecs", "_thread_local", "_obj_reference_counts_dict",
        "_function_cache", "_losses", "_metrics", "_metrics_lock", "_callable_losses", "_eager_losses",
        "_loss_tracker", "_jax_state", "_jax_state_synced", "_torch_params",
        # standalone Keras 2.2-2.3
        "_collected_trainable_weights", "_feed_input_names", "_feed_input_shapes", "_feed_inputs", "_feed_loss_fns",
        "_feed_output_names", "_feed_output_shapes", "_feed_outputs", "_feed_sample_weight_modes",
        "_feed_sample_weights", "_feed_targets", "_function_kwargs", "_feed_target_names", "_compile_metric_functions",
        "_compile_weighted_metrics", "_per_output_metrics", "_per_output_weighted_metrics", "_loss_weights_list",
        "_training_endpoints", "_target_tensors", "_output_tensor_cache", "_output_shape_cache", "_output_mask_cache",
        "_output_loss_metrics", "_container_nodes", "_nodes_by_depth", "_network_nodes", "_layers_by_depth",
    }
)  # fmt: skip
_RUNTIME_PREFIXES = ("_self_", "_keras_api_", "_checkpoint", "_saved_model")

_BARE_KEYS: Dict[type, FrozenSet[str]] = {}
# Keras's own lists of a layer's sub-layers (named by `layers[i]` where no attribute names them).
_KERAS_LAYER_LISTS = frozenset({"_layers", "_self_tracked_trackables", "_input_layers", "_output_layers", "_modules"})


class Refused(Exception):
    """The structural clone cannot be made; `str(exc)` says why."""


@dataclasses.dataclass(frozen=True)
class Parts:
    """What the structural clone asks of the engine and the family.

    Args:
        clone_layer: clones one layer or model, once (shared layers stay shared).
        is_layer: whether a value is a layer of the model's Keras.
        bare: makes a bare model of the family (its keys are Keras's, never the user's).
        new_variable: ``(new model, source variable) -> variable`` owned by the new model,
            same shape, dtype, `trainable` and name, holding the source's value.
    """

    clone_layer: Callable[[Any], Any]
    is_layer: Callable[[Any], bool]
    bare: Callable[[], Any]
    new_variable: Callable[[Any, Any], Any]


def keras_base(cls: type) -> type:
    """The first class of `cls`'s MRO that Keras itself defines (`keras.Model`, `keras.Sequential`...)."""
    for klass in cls.__mro__:
        if klass.__module__.split(".")[0] in OWNER_PACKAGES:
            return klass
    raise Refused(f"its class {cls.__qualname__} derives from no Keras class")


def user_attributes(model: Any, bare: Callable[[], Any]) -> List[Tuple[str, Any]]:
    """The attributes `model`'s own code set, in the order Keras tracks what they hold.

    Keras 3 on torch keeps a layer attribute among the torch sub-modules
    (`_modules`), not in the instance's `__dict__`: both are read.
    """
    keys = _bare_keys(type(model), bare)
    state = dict(vars(model))
    modules = state.get("_modules")
    if isinstance(modules, dict):
        state.update((name, value) for name, value in modules.items() if name not in state)
    found = [
        (key, value)
        for key, value in state.items()
        if key not in keys and not _keras_runtime(key) and not any(_is_graph_tensor(v) for v in _held(value))
    ]
    rank = {id(layer): i for i, layer in enumerate(_tracked_children(model))}
    # Stable: attributes holding no tracked layer keep their order, ahead of the layers' (no layer comes first).
    return sorted(found, key=lambda item: min((rank[i] for i in _held_ids(item[1]) if i in rank), default=-1))


def structural_clone(model: Any, parts: Parts) -> Any:
    """A new instance of `model`'s class, built from clones of its attributes (its constructor not run).

    Args:
        model: the source, a subclassed model.
        parts: the engine's and the family's operations (`Parts`).

    Returns:
        The new model, unbuilt where its source's layers were built by a call.

    Raises:
        Refused: where an attribute cannot be copied (before anything is built) or Keras's base
            class refuses the new instance.
    """
    cls: Any = type(model)
    base: Any = keras_base(cls)
    attributes = user_attributes(model, parts.bare)
    own = {id(v): v for v in own_variables(model)}
    # Every attribute is planned (and refused) before the first layer is cloned.
    planned = [(key, _plan(key, value, parts, own)) for key, value in attributes]
    try:
        new = cls.__new__(cls)
        base.__init__(new, **_base_arguments(model))
    except Exception as exc:
        raise Refused(f"Keras's {base.__qualname__}.__init__ refused a bare instance ({type(exc).__name__}: {exc})") from exc
    _keep_auto_config(model, new)
    variables = {id(v): parts.new_variable(new, v) for v in own.values()}
    for key, make in planned:
        value = make(variables)
        try:
            setattr(new, key, value)
        except Exception as exc:
            raise Refused(f"attribute `{key}` cannot be set on the new instance ({type(exc).__name__}: {exc})") from exc
    _keep_orphans(model, new, parts)
    _keep_built(model, new)
    return new


def _keep_orphans(model: Any, new: Any, parts: Parts) -> None:
    """Layers the source still tracks that no attribute holds, tracked by the clone too, in the same places.

    Keras 3 (and standalone Keras 2.2-2.3) keep tracking a layer whose attribute was given another layer
    (`model.head = Dense(7)` after the constructor made one): the old layer
    stays among `model.layers` and its variables among `model.weights`, so
    `get_weights()` lists them. The clone tracks a clone of it where the
    source does (built as the source's was), so both list the same weights.
    """
    source_children, store = _tracked_children(model), vars(new).get("_layers")
    tracker = vars(new).get("_tracker")  # Keras 3; standalone Keras 2 tracks in `_layers` alone (it keeps them too)
    if not isinstance(store, list) or len(store) >= len(source_children):
        return
    expected = [parts.clone_layer(child) for child in source_children]
    held = {id(layer) for layer in store}
    for source, clone in zip(source_children, expected):
        if id(clone) in held:
            continue
        config = source.get_build_config() if getattr(source, "built", False) else None
        if config and not getattr(clone, "built", False):
            clone.build_from_config(config)
        if tracker is not None:
            tracker.track(clone)
        else:
            store.append(clone)
    order = {id(layer): i for i, layer in enumerate(expected)}
    store[:] = sorted(store, key=lambda layer: order.get(id(layer), len(order)))


def _keep_built(model: Any, new: Any) -> None:
    """A built source's clone is marked built: what its `build()` made is among the attributes copied.

    Running the class's `build()` again would make those layers and
    variables a second time; the sub-layers are built by the family's call
    (`Family.build_like`). The shapes the source was built with go along
    (Keras 3's `_build_shapes_dict`, tf.keras's `_build_input_shape`), for a
    later clone of the clone.
    """
    if not getattr(model, "built", False):
        return
    for key in ("_build_shapes_dict", "_build_input_shape"):
        if key in vars(model):
            value = vars(model)[key]  # shapes, read and never written by Keras: copied where plain, else shared
            setattr(new, key, copy.deepcopy(value) if _is_plain(value) else value)
    new.built = True


def copy_user_attributes(model: Any, new: Any, parts: Parts) -> List[str]:
    """Gives `new` (made by Keras's base class from `model`'s layers) the attributes `model`'s own code set.

    For a Sequential subclass re-classed after the native clone: the
    attributes its constructor set besides the layers. Returns their names.

    Raises:
        Refused: as `structural_clone`.
    """
    present = set(vars(new)) | set(vars(new).get("_modules") or ())
    attributes = [(key, value) for key, value in user_attributes(model, parts.bare) if key not in present]
    planned = [(key, _plan(key, value, parts, {})) for key, value in attributes]
    for key, make in planned:
        setattr(new, key, make({}))
    return [key for key, _ in planned]


Make = Callable[[Dict[int, Any]], Any]


def _plan(path: str, value: Any, parts: Parts, own: Dict[int, Any]) -> Make:
    """How the value at `path` is copied (called with the new variables later); raises `Refused` now."""
    if parts.is_layer(value):
        return lambda variables: parts.clone_layer(value)
    if _is_variable(value):
        if id(value) not in own:
            raise Refused(
                f"attribute `{path}` holds the variable {getattr(value, 'name', '?')!r}, which the model does not own "
                "(another layer's): the clone would share it"
            )
        return lambda variables: variables[id(value)]
    if _is_plain(value):
        return lambda variables: copy.deepcopy(value)
    if isinstance(value, cabc.Mapping):
        items = [(key, _plan(f"{path}[{key!r}]", item, parts, own)) for key, item in value.items()]
        return lambda variables: {key: make(variables) for key, make in items}
    if isinstance(value, (list, tuple)) or (isinstance(value, cabc.Sequence) and not isinstance(value, (str, bytes))):
        makers = [_plan(f"{path}[{i}]", item, parts, own) for i, item in enumerate(value)]
        as_tuple = isinstance(value, tuple)
        return lambda variables: (tuple if as_tuple else list)(make(variables) for make in makers)
    if inspect.isroutine(value) or inspect.isclass(value) or inspect.ismodule(value):
        return lambda variables: value
    if callable(getattr(value, "get_config", None)) and callable(getattr(type(value), "from_config", None)):
        try:
            config = value.get_config()
        except Exception as exc:
            raise Refused(f"attribute `{path}` ({type(value).__name__}) has no usable config: {exc}") from exc
        return lambda variables: type(value).from_config(config)
    try:
        copied = copy.deepcopy(value)
    except Exception as exc:
        raise Refused(f"attribute `{path}` ({type(value).__name__}) cannot be copied: {exc}") from exc
    return lambda variables: copied


def differences(
    source: Any, new: Any, is_layer: Callable[[Any], bool], layers: Optional[List[Tuple[str, Any, Any]]] = None
) -> Optional[str]:
    """The first way `new` differs from `source`, path by path; None where it is the source's structure.

    Compared: each sub-layer's class and config (its name aside), each
    variable's shape, dtype and `trainable` flag, each layer's `trainable`
    flag, sharing. A path names the attributes from the model down
    (``classifier.head``), else the layers' names. `layers` is the two
    models' `tracked_paths` where the caller walked them already.
    """
    if layers is None:
        try:
            layers = tracked_paths(source, new)[0]
        except WeightsMismatchError as exc:
            return str(exc)
    names = _attribute_paths(source, is_layer)
    for path, src, dst in layers:
        where = names.get(id(src), path)
        found = layer_difference(where, src, dst, whole=src is source or is_model(src))
        if found is not None:
            return found
    return None


def layer_difference(where: str, src: Any, dst: Any, whole: bool) -> Optional[str]:
    """How layer `dst` differs from `src` at `where`: `trainable`, config (not for a model: `whole`), own variables."""
    if getattr(src, "trainable", None) != getattr(dst, "trainable", None):
        return f"`{where}`: trainable is {src.trainable!r} in the source, {dst.trainable!r} in the clone"
    a, b = (None, None) if whole else (_strip(_config(src)), _strip(_config(dst)))
    if a is not None and b is not None:
        skipped = _SKIPPED_KEYS | (_LAMBDA_KEYS if any(k.__name__ == "Lambda" for k in type(src).__mro__) else frozenset())
        for key in sorted(set(a) | set(b), key=str):
            if key in skipped or _same(a.get(key, _MISSING), b.get(key, _MISSING)):
                continue
            return (
                f"`{where}` ({type(src).__name__}): its config's {key!r} is {_show(a.get(key, _MISSING))} in the source, "
                f"{_show(b.get(key, _MISSING))} in the clone"
            )
    for src_var, dst_var in zip(own_variables(src), own_variables(dst)):
        if is_weight_handler(src_var) or is_weight_handler(dst_var):
            # tf_keras's lookup layers list a `VocabWeightHandler` among their weights: a table, not a variable
            if type(src_var) is not type(dst_var):
                return f"`{where}`: it holds a {type(src_var).__name__} in the source, a {type(dst_var).__name__} in the clone"
            continue
        pairs = [
            ("shape", _shape(src_var), _shape(dst_var)),
            ("dtype", _dtype(src_var), _dtype(dst_var)),
            ("trainable", getattr(src_var, "trainable", None), getattr(dst_var, "trainable", None)),
        ]
        for what, a_value, b_value in pairs:
            if a_value != b_value:
                name = str(getattr(src_var, "name", "?")).split("/")[-1].split(":")[0]
                return f"`{where}` variable {name!r}: {what} {a_value!r} in the source, {b_value!r} in the clone"
    return None


def copy_plain_attributes(source: Any, new: Any, bare: Callable[[], Any]) -> List[str]:
    """Copies the user's plain-data attributes of `source` onto `new` (made by its constructor); returns their names.

    (`subclass-plain-attribute-lost`: the native clone loses them silently.)

    An attribute is the user's where a bare model of the family (`bare()`,
    made once per class) has no such key, Keras does not set it at compile,
    fit or build time (`KERAS_RUNTIME`), and, for a private name, the
    constructor set it too (Keras's own private state appears later).
    """
    keys = _bare_keys(type(new), bare)
    fresh = vars(new)
    copied = []
    for key, value in list(vars(source).items()):
        if key in keys or key in KERAS_RUNTIME or (key.startswith("_") and key not in fresh):
            continue
        if not _is_plain(value) or _same(fresh.get(key, _MISSING), value):
            continue
        setattr(new, key, copy.deepcopy(value))
        copied.append(key)
    return copied


# -- helpers -----------------------------------------------------------------------

_MISSING = object()


def _keras_runtime(key: str) -> bool:
    return key in KERAS_RUNTIME or key in KERAS_RUNTIME_PRIVATE or key.startswith(_RUNTIME_PREFIXES)


def _base_arguments(model: Any) -> Dict[str, Any]:
    """What Keras's base class receives: the source's name, and its dtype policy where the family has one."""
    arguments: Dict[str, Any] = {"name": model.name}
    policy = getattr(model, "dtype_policy", None)
    if policy is not None:
        arguments["dtype"] = policy
    return arguments


def _keep_auto_config(model: Any, new: Any) -> None:
    """Keras 3: the arguments recorded for the source describe the clone too (a later clone of it reads them)."""
    if "_auto_config" in vars(model):
        recorded = model._auto_config
        try:
            new._auto_config = copy.deepcopy(recorded)
        except Exception:  # objects in it that cannot be copied: the record is read, never written
            new._auto_config = recorded


def _tracked_children(model: Any) -> List[Any]:
    flatten = getattr(model, "_flatten_layers", None)
    if callable(flatten):
        return list(flatten(include_self=False, recursive=False))
    return list(getattr(model, "_layers", None) or [])


def _held_ids(value: Any) -> Iterable[int]:
    """Ids of the objects a value holds, containers walked into (for the tracking order)."""
    return (id(item) for item in _held(value))


def _held(value: Any) -> Iterable[Any]:
    """A value and the objects it holds, lists, tuples and dicts walked into."""
    stack = [value]
    while stack:
        item = stack.pop()
        yield item
        if isinstance(item, cabc.Mapping):
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)


def _is_graph_tensor(value: Any) -> bool:
    """A tensor of a graph (standalone Keras 2's placeholders, a symbolic Keras tensor): the source's graph
    bookkeeping, never copied (the clone makes its own when it is built). An eager tensor has no `op`."""
    if hasattr(value, "assign") or callable(getattr(value, "add_weight", None)):
        return False
    kind = type(value)
    if kind.__name__ in ("KerasTensor", "Node") and kind.__module__.split(".")[0] in OWNER_PACKAGES:
        return True  # a symbolic tensor, or a node of the layer graph (standalone Keras 2's `_nodes_by_depth`)
    try:
        return hasattr(value, "op") and hasattr(value, "graph")
    except Exception:
        return False


def _attribute_paths(model: Any, is_layer: Callable[[Any], bool]) -> Dict[int, str]:
    """id(layer) -> its attribute path from `model` (``classifier.backbone.layers[0]``): first path met."""
    top = str(getattr(model, "name", "model"))
    paths: Dict[int, str] = {id(model): top}
    stack: List[Tuple[str, Any]] = [(top, model)]
    while stack:
        prefix, owner = stack.pop()
        state = dict(vars(owner))
        modules = state.get("_modules")
        if isinstance(modules, dict):
            state.update(modules)
        # Public names first, then the user's private ones: the first path met names a layer.
        ordered = sorted(state.items(), key=lambda item: item[0].startswith("_"))
        for key, value in ordered:
            if _keras_runtime(key) or key in _KERAS_LAYER_LISTS:
                continue
            for suffix, item in _items(value):
                if is_layer(item) and id(item) not in paths:
                    paths[id(item)] = f"{prefix}.{key}{suffix}"
                    stack.append((paths[id(item)], item))
        for i, layer in enumerate(getattr(owner, "layers", None) or [] if is_model(owner) else []):
            if is_layer(layer) and id(layer) not in paths:
                paths[id(layer)] = f"{prefix}.layers[{i}]"
                stack.append((paths[id(layer)], layer))
    return paths


def _items(value: Any) -> List[Tuple[str, Any]]:
    if isinstance(value, cabc.Mapping):
        return [(f"[{k!r}]", v) for k, v in value.items()]
    if isinstance(value, (list, tuple)):
        return [(f"[{i}]", v) for i, v in enumerate(value)]
    return [("", value)]


def _config(layer: Any) -> Optional[Dict[str, Any]]:
    try:
        config = layer.get_config()
    except Exception:  # no usable config: the class, variables and flags are compared
        return None
    return config if isinstance(config, dict) else None


_SKIPPED_KEYS = frozenset({"name", "trainable"})
#: A `Lambda`'s functions, serialized: a function cloned from the same code serializes with other bytes
#: (tf.keras marshals the code object); the class, the other settings and the outputs are compared.
_LAMBDA_KEYS = frozenset(
    {"function", "function_type", "module", "output_shape", "output_shape_type", "output_shape_module", "mask", "mask_type"}
)

#: What a config records of a layer's life, not of its structure: a nested layer's build and compile settings
#: (a built source has them, a clone not yet called does not).
_LIFE_KEYS = frozenset({"build_config", "compile_config"})


def _strip(config: Any) -> Any:
    """A config without the `_LIFE_KEYS`, nested configs included."""
    if isinstance(config, dict):
        return {key: _strip(value) for key, value in config.items() if key not in _LIFE_KEYS}
    if isinstance(config, (list, tuple)):  # tracking wrappers (tf_keras's ListWrapper) become plain lists
        return (tuple if isinstance(config, tuple) else list)(_strip(value) for value in config)
    return config


def _shape(variable: Any) -> Tuple[Optional[int], ...]:
    """A variable's shape as ints (TensorFlow 1's `Dimension`s read by their value)."""
    return tuple(getattr(d, "value", d) for d in variable.shape)


def _dtype(variable: Any) -> str:
    dtype = getattr(variable, "dtype", None)
    return str(getattr(dtype, "name", dtype))


def _same(a: Any, b: Any) -> bool:
    """Equal values, NumPy arrays and nested containers included."""
    if type(a) is not type(b) and not (isinstance(a, (int, float)) and isinstance(b, (int, float))):
        if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
            return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
        return False
    if isinstance(a, dict):
        return set(a) == set(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    try:
        result = a == b
        return bool(result) if isinstance(result, bool) or not hasattr(result, "all") else bool(result.all())
    except Exception:
        return repr(a) == repr(b)


def _show(value: Any) -> str:
    return "missing" if value is _MISSING else repr(value)[:200]


def _is_variable(value: Any) -> bool:
    return hasattr(value, "assign") and hasattr(value, "shape") and not callable(getattr(value, "add_weight", None))


def _is_plain(value: Any) -> bool:
    """Numbers, strings, None, NumPy arrays and scalars, and lists / tuples / dicts of them."""
    if isinstance(value, _PLAIN):
        return True
    if type(value).__module__ == "numpy":
        return True
    if type(value) in (list, tuple):
        return all(_is_plain(item) for item in value)
    if type(value) is dict:
        return all(isinstance(key, _PLAIN) and _is_plain(item) for key, item in value.items())
    return False


def _bare_keys(cls: type, bare: Callable[[], Any]) -> FrozenSet[str]:
    """The keys a bare instance of `cls`'s Keras base has (one per Keras class): never the user's.

    A Model subclass reads a bare model (`bare()`); a Sequential subclass a
    bare Sequential. Keras 3 on torch keeps its own sub-modules in `_modules`:
    their names count too.
    """
    base = keras_base(cls)
    keys = _BARE_KEYS.get(base)
    if keys is None:
        try:
            instance = base() if base.__name__ != "Model" else bare()
        except Exception:  # a Keras class that needs arguments (Functional): a bare model's keys
            instance = bare()
        state = vars(instance)
        modules = state.get("_modules")
        keys = _BARE_KEYS[base] = frozenset(state) | frozenset(modules if isinstance(modules, dict) else ())
    return keys
