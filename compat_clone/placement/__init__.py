"""Where a clone's variables live, and how weights move: device to device.

Two concerns, one public entry each, one small private helper per backend
(the `array_api_compat.device()` / `to_device()` pattern):

* `scope(model, device, info)` wraps the whole clone build. It resolves the
  placement first (an unknown device raises `DeviceNotFoundError` before a
  single layer is built), then creates the clone's variables there:

  - TensorFlow (Keras 3 on TF, tf.keras, tf_keras): the source's
    `tf.distribute` strategy (`MirroredStrategy`, `MultiWorkerMirroredStrategy`,
    `OneDeviceStrategy`..., read off the source *variables*, since
    `tf.distribute.get_strategy()` only knows the scope active now) entered with
    `strategy.scope()`, else `tf.device(<the source variables' device>)` (the
    most common one, if a model spreads its variables by hand: TensorFlow
    cannot move a variable once made). A strategy scope the caller entered
    around the call governs instead (the native idiom keeps working);
  - JAX: `jax.default_device(...)` during the build, then `Placement.finish`
    puts each clone variable on its source variable's sharding (and keeps its
    `keras.distribution` layout), so `ModelParallel` / `DataParallel` /
    `jax.device_put` placements are reproduced;
  - torch: Keras's torch device scope, then `finish` moves any variable whose
    source sits on another device.

  The scope yields a `Placement`; adapters that can pair variables call
  `placement.finish(clone, layer_map)` inside it (a no-op where the scope
  alone places everything).

* `assign_keras3(pairs)` / `assign_tf(pairs)` copy already-checked
  (source variable, target variable) pairs without a host round trip:
  `dst.assign(src)` variable to variable on TensorFlow (replica by replica for
  distributed variables), one batched `jax.device_put(..., may_alias=False)`
  on JAX, in-place `copy_` under `no_grad` on torch. Each runs in two phases:
  *prepare* (everything that can fail: reading, cross-device staging,
  device checks) writes nothing; *commit* only swaps or copies into buffers
  of the exact shape, dtype and device. An error in prepare leaves every
  target untouched.

JAX arrays are immutable, so sharing the source's array would be free, but it
is not safe: Keras's JAX trainer jits `train_step`, `test_step` and
`predict_step` with `donate_argnums=0` (Keras 3.0-3.15.1), so the first
`clone.fit()` / `predict()` would delete the source's (shared) buffers
("Array has been deleted"). We copy on the device instead: the cost of a raw
device copy of the same bytes.

Nothing here imports a framework: a model object exists, so its framework is
in `sys.modules` already.
"""

from __future__ import annotations

import collections
import contextlib
import re
import sys
from typing import Any, Callable, ContextManager, Dict, Iterator, List, Optional, Sequence, Tuple

from compat_clone.errors import DeviceNotFoundError, InvalidArgumentError

__all__ = ["Placement", "scope", "assign_keras3", "assign_tf"]

Pairs = List[Tuple[Any, Any]]

# -- shared helpers ---------------------------------------------------------


def _fw(name: str) -> Any:
    """A framework already imported by the caller's model (never imported here)."""
    module = sys.modules.get(name)
    if module is None:  # pragma: no cover - a live model implies its framework
        raise InvalidArgumentError(
            f"`{name}` is not imported, but the model needs it. Import "
            f"`{name}` (the model's framework) before calling compat_clone."
        )
    return module


def _most_common(values: Sequence[Any]) -> Any:
    """The most frequent value (first seen wins a tie), or None when empty."""
    if not values:
        return None
    counts = collections.Counter(values)
    best = max(counts.values())
    for value in values:
        if counts[value] == best:
            return value
    return None  # pragma: no cover


def _not_found(device: Any, backend: str, available: Sequence[str], hint: str = "") -> DeviceNotFoundError:
    return DeviceNotFoundError(
        f"Device {device!r} does not exist for the {backend} backend. Available "
        f"devices: {list(available)}. Pass one of them{hint}, or device=None to "
        "create the clone where the source is."
    )


def _model_variables(model: Any) -> List[Any]:
    variables = list(getattr(model, "weights", None) or [])
    if not variables:
        variables = list(getattr(model, "variables", None) or [])
    return variables


def _pair_variables(model: Any, clone: Any, layer_map: Optional[Dict[int, Tuple[Any, Any]]]) -> Pairs:
    """(source variable, clone variable) pairs, for placement.

    Layer by layer from the clone's layer map; what that leaves (a subclassed
    model rebuilt from its config has no map) by position over the models'
    variables. Lenient, since this places and does not copy: pairs whose
    shapes differ are skipped; a clone variable is paired once.
    """
    pairs: Pairs = []
    seen = set()

    def add(src_vars: Sequence[Any], dst_vars: Sequence[Any]) -> None:
        for src, dst in zip(src_vars, dst_vars):
            if id(dst) in seen or tuple(src.shape) != tuple(dst.shape):
                continue
            seen.add(id(dst))
            pairs.append((src, dst))

    for src_layer, dst_layer in (layer_map or {}).values():
        add(list(getattr(src_layer, "weights", None) or []), list(getattr(dst_layer, "weights", None) or []))
    src_all, dst_all = _model_variables(model), _model_variables(clone)
    if len(src_all) == len(dst_all) and any(id(v) not in seen for v in dst_all):
        add(src_all, dst_all)
    return pairs


class Placement:
    """Where one clone's variables go.

    Attributes:
        description: where, in words (for errors and `repr`).
    """

    def __init__(
        self,
        description: str,
        enter: Optional[Callable[[], ContextManager[Any]]] = None,
        finish: Optional[Callable[[Any, Any], None]] = None,
    ) -> None:
        self.description = description
        self._enter = enter
        self._finish = finish

    def context(self) -> ContextManager[Any]:
        return self._enter() if self._enter is not None else contextlib.nullcontext()

    def finish(self, clone: Any, layer_map: Any = None) -> None:
        """Moves what the creation scope could not place (JAX shardings, torch strays)."""
        if self._finish is not None:
            self._finish(clone, layer_map)

    def __repr__(self) -> str:
        return f"Placement({self.description})"


def _backend(info: Any) -> Optional[str]:
    family = getattr(info, "family", None)
    if family == "tf_keras":
        return "tensorflow"
    if family == "keras3":
        return getattr(info, "backend", None) or "tensorflow"
    return None  # standalone Keras 2 places its own variables (compat_clone.families.keras2)


@contextlib.contextmanager
def scope(model: Any, device: Any, info: Any) -> Iterator[Placement]:
    """Creates the clone's variables where the source's are, or on `device`.

    Args:
        model: the source model.
        device: None (the source's placement), a device string of the
            backend, a framework device object, or (TensorFlow) a
            `tf.distribute.Strategy`, (JAX) a `jax.sharding.Sharding`,
            (Keras 3) a `keras.distribution.Distribution`.
        info: the model's `FamilyInfo`.

    Yields:
        The resolved `Placement`; call its `finish(clone, layer_map)` before
        leaving the scope.

    Raises:
        DeviceNotFoundError: `device` does not exist; raised before anything
            is built.
    """
    backend = _backend(info)
    resolve = _RESOLVERS.get(backend or "")
    if resolve is None:
        placement = Placement("unchanged")
    else:
        placement = resolve(model, device, info)
    with placement.context():
        yield placement


# -- TensorFlow (Keras 3 on TF, tf.keras, tf_keras) --------------------------


def _tf_var(tf: Any, variable: Any) -> Any:
    """The `tf.Variable` behind a Keras 3 variable (or the variable itself)."""
    if isinstance(variable, tf.Variable):
        return variable
    inner = getattr(variable, "_value", None)  # Keras 3 TF backend: a tf.Variable
    return inner if isinstance(inner, tf.Variable) else variable


def _tf_strategy_of(variable: Any) -> Any:
    # Distributed variables (Mirrored, SyncOnRead, MultiWorker's) and the plain
    # variables a OneDeviceStrategy creates both keep the strategy that made
    # them in `_distribute_strategy` (TF 2.2-2.21); `distribute_strategy` is
    # the public spelling on DistributedVariable.
    strategy = getattr(variable, "_distribute_strategy", None)
    if strategy is None:
        strategy = getattr(variable, "distribute_strategy", None)
    return strategy


_TF_ALIASES = re.compile(r"(?i)\b(cuda|gpu)\b")


def _tf_device_name(tf: Any, device: Any) -> str:
    if hasattr(device, "to_string"):  # tf.DeviceSpec
        device = device.to_string()
    elif hasattr(device, "device_type") and hasattr(device, "name"):  # Logical/PhysicalDevice
        device = device.name
    available = [d.name for d in tf.config.list_logical_devices()]
    if not isinstance(device, str) or not device.strip():
        raise _not_found(device, "TensorFlow", available, hint=" (a string such as '/CPU:0')")
    text = _TF_ALIASES.sub("GPU", device.strip())
    if ":" not in text.rsplit("/", 1)[-1] and "/" not in text:
        text = text + ":0"  # "cpu" -> "cpu:0"
    try:
        spec = tf.DeviceSpec.from_string(text)
    except ValueError:
        raise _not_found(device, "TensorFlow", available) from None
    if spec.device_type is None:
        raise _not_found(device, "TensorFlow", available, hint=" (name a device type: '/CPU:0')")
    index = 0 if spec.device_index is None else spec.device_index
    local = {
        (parsed.device_type, parsed.device_index)
        for parsed in (tf.DeviceSpec.from_string(name) for name in available)
    }
    # Only local devices can be checked; a remote job's devices are taken on
    # trust (a cluster lists them only once connected).
    if spec.job in (None, "localhost") and (spec.device_type.upper(), index) not in local:
        raise _not_found(device, "TensorFlow", available)
    return str(spec.replace(device_type=spec.device_type.upper(), device_index=index).to_string())


def _resolve_tf(model: Any, device: Any, info: Any) -> Placement:
    tf = _fw("tensorflow")
    if device is None:
        if tf.distribute.has_strategy():
            # The caller entered a strategy scope: its choice governs (the
            # native way to build a clone under a strategy keeps working).
            strategy = tf.distribute.get_strategy()
            return Placement(f"the active {type(strategy).__name__}")
        variables = [_tf_var(tf, v) for v in _model_variables(model)]
        strategies = [s for s in (_tf_strategy_of(v) for v in variables) if s is not None]
        if strategies:
            strategy = _most_common(strategies)
            return Placement(f"the source's {type(strategy).__name__}", strategy.scope)
        device_name = _most_common([v.device for v in variables if getattr(v, "device", "")])
        if device_name:
            return Placement(f"the source's device {device_name}", lambda: tf.device(device_name))
        return Placement("the default device")
    if isinstance(device, tf.distribute.Strategy):
        return Placement(f"the given {type(device).__name__}", device.scope)
    name = _tf_device_name(tf, device)
    return Placement(f"device {name}", lambda: tf.device(name))


def _tf_is_distributed(tf: Any, variable: Any) -> bool:
    return isinstance(variable, tf.distribute.DistributedValues)


def _tf_plan(tf: Any, src: Any, dst: Any) -> List[Tuple[Any, Any]]:
    """(source, target) tf variables to assign, replica by replica when both are distributed."""
    src_dist = _tf_is_distributed(tf, src)
    dst_dist = _tf_is_distributed(tf, dst)
    if src_dist and dst_dist:
        src_parts, dst_parts = list(src.values), list(dst.values)
        if len(src_parts) == len(dst_parts) and all(
            s.device == d.device for s, d in zip(src_parts, dst_parts)
        ):
            return list(zip(src_parts, dst_parts))
    if dst_dist:
        # A sync-on-read SUM variable refuses a cross-replica assign (TF 2.x):
        # find out now, before any target was written.
        if (
            getattr(dst, "synchronization", None) == tf.VariableSynchronization.ON_READ
            and getattr(dst, "aggregation", None) == tf.VariableAggregation.SUM
        ):
            raise InvalidArgumentError(
                f"Cannot copy into the sync-on-read SUM variable {dst.name!r} from a "
                f"variable of another layout ({type(src).__name__} on {src.device!r}). "
                "Nothing was copied. Clone the target under the source's strategy "
                "(compat_clone.clone_model(source) does so by default)."
            )
    return [(src, dst)]


def assign_tf(pairs: Pairs) -> None:
    """Copies tf variable pairs variable to variable (`dst.assign(src)`), on the device.

    No value goes through host memory. Distributed variables of the same
    layout are copied replica by replica (each a local assign). Every pair is
    planned (and refused, if it cannot be assigned) before the first write.
    """
    if not pairs:
        return
    tf = _fw("tensorflow")
    plan: List[Tuple[Any, Any]] = []
    for src, dst in pairs:
        plan.extend(_tf_plan(tf, _tf_var(tf, src), _tf_var(tf, dst)))
    from tensorflow.python.ops import gen_resource_variable_ops as gen
    from tensorflow.python.ops import resource_variable_ops as rvo

    # Local, non-distributed resource variables (no mirrored / sync-on-read wrapper).
    plain = (rvo.ResourceVariable, rvo.UninitializedVariable)
    if tf.executing_eagerly() and all(type(src) in plain and type(dst) in plain for src, dst in plan):
        # The two kernels `dst.assign(src)` runs, without its Python layers
        # (conversion, dispatch, handle-data checks: 3x the time on CPU);
        # shapes and dtypes were checked by the plan.
        for src, dst in plan:
            gen.assign_variable_op(dst.handle, gen.read_variable_op(src.handle, src.dtype.base_dtype))
        return
    for src, dst in plan:
        dst.assign(src, read_value=False)


# -- JAX ---------------------------------------------------------------------


def _jax_device(jax: Any, device: Any) -> Any:
    if isinstance(device, jax.Device):
        return device
    try:
        everything = list(jax.devices())
    except RuntimeError:  # pragma: no cover
        everything = []
    if not any(d.platform == "cpu" for d in everything):
        everything += list(jax.devices("cpu"))
    available = [f"{d.platform}:{d.id}" for d in everything]
    if not isinstance(device, str) or not device.strip():
        raise _not_found(device, "JAX", available, hint=" (a string such as 'cpu:0' or a jax.Device)")
    text = device.strip().lower().lstrip("/")
    text = text.rsplit("device:", 1)[-1]
    kind, _, index = text.partition(":")
    kind = {"cuda": "gpu", "rocm": "gpu"}.get(kind, kind)
    if not re.fullmatch(r"[a-z]+", kind) or not re.fullmatch(r"\d*", index):
        raise _not_found(device, "JAX", available)
    try:
        candidates = list(jax.devices(kind))
    except RuntimeError:  # that platform is not present
        raise _not_found(device, "JAX", available) from None
    wanted = int(index) if index else None
    for dev in candidates:
        if wanted is None or dev.id == wanted:
            return dev
    raise _not_found(device, "JAX", available)


def _jax_single_device(jax: Any, sharding: Any) -> Any:
    devices = list(sharding.device_set)
    if len(devices) == 1 and sharding.is_fully_replicated:
        return devices[0]
    return None


def _jax_put(jax: Any, values: List[Any], shardings: List[Any]) -> List[Any]:
    """Device-to-device copies onto `shardings`: a new buffer even where placement agrees."""
    if not values:
        return []
    try:
        return list(jax.device_put(values, shardings, may_alias=False))
    except TypeError:  # jax < 0.4.31 has no `may_alias`: copy explicitly
        jnp = _fw("jax.numpy")
        return list(jax.device_put([jnp.array(v, copy=True) for v in values], shardings))


def _jax_relayout(jax: Any, pairs: Pairs, layout_from_source: bool) -> None:
    """Puts each clone variable on its target sharding (batched), keeping layouts."""
    moves: List[Tuple[Any, Any, Any]] = []  # (variable, sharding, layout)
    for target, variable in pairs:
        value = getattr(variable, "_value", None)
        if value is None or not hasattr(value, "sharding"):
            continue  # not initialized (deferred): placed when it is
        if isinstance(target, jax.sharding.Sharding):
            sharding, layout = target, None
            if getattr(variable, "_layout", None) is not None:
                variable._layout = None  # an explicit device overrides a global layout
        else:
            source_value = getattr(target, "_value", None)
            if source_value is None or not hasattr(source_value, "sharding"):
                continue
            sharding = source_value.sharding
            layout = getattr(target, "_layout", None) if layout_from_source else None
        if layout is not None:
            variable._layout = layout
        if value.sharding != sharding:
            moves.append((variable, sharding, layout))
    if not moves:
        return
    # device_put never copies through the host; one call for every variable.
    moved = jax.device_put([v._value for v, _, _ in moves], [s for _, s, _ in moves])
    for (variable, _, _), new in zip(moves, moved):
        variable._direct_assign(new)


def _resolve_jax(model: Any, device: Any, info: Any) -> Placement:
    jax = _fw("jax")
    keras_distribution = _keras_distribution_class()
    if keras_distribution is not None and isinstance(device, keras_distribution):
        given: Any = device
        return Placement(f"the given {type(given).__name__}", given.scope)
    if device is None:
        sources = [v for v in _model_variables(model) if hasattr(getattr(v, "_value", None), "sharding")]
        singles = [_jax_single_device(jax, v._value.sharding) for v in sources]
        home = _most_common([d for d in singles if d is not None])

        def finish_like_source(clone: Any, layer_map: Any) -> None:
            _jax_relayout(jax, _pair_variables(model, clone, layer_map), layout_from_source=True)

        where = f"the source's placement ({home})" if home is not None else "the source's placement"
        enter = (lambda: jax.default_device(home)) if home is not None else None
        return Placement(where, enter, finish_like_source)
    if isinstance(device, jax.sharding.Sharding):
        sharding = device
        first = sorted(sharding.device_set, key=lambda d: d.id)[0]
    else:
        first = _jax_device(jax, device)
        sharding = jax.sharding.SingleDeviceSharding(first)

    def finish_on(clone: Any, layer_map: Any) -> None:
        _jax_relayout(jax, [(sharding, v) for v in _model_variables(clone)], layout_from_source=False)

    return Placement(f"{sharding}", lambda: jax.default_device(first), finish_on)


def _keras_distribution_class() -> Optional[type]:
    module = sys.modules.get("keras.src.distribution.distribution_lib")
    return getattr(module, "Distribution", None) if module is not None else None


# -- torch -------------------------------------------------------------------


def _torch_available(torch: Any) -> List[str]:
    names = ["cpu"]
    if torch.cuda.is_available():
        names += [f"cuda:{i}" for i in range(torch.cuda.device_count())]
    mps = getattr(getattr(torch, "backends", None), "mps", None)
    if mps is not None and mps.is_available():
        names.append("mps")
    xpu = getattr(torch, "xpu", None)
    if xpu is not None and xpu.is_available():
        names += [f"xpu:{i}" for i in range(xpu.device_count())]
    return names


def _torch_device(torch: Any, device: Any) -> str:
    available = _torch_available(torch)
    if isinstance(device, torch.device):
        text = str(device)
    elif isinstance(device, str) and device.strip():
        text = device.strip().lower().lstrip("/")
        text = text.rsplit("device:", 1)[-1]
        text = re.sub(r"^gpu\b", "cuda", text)
    else:
        raise _not_found(device, "torch", available, hint=" (a string such as 'cpu' or 'cuda:0')")
    try:
        parsed = torch.device(text)
    except RuntimeError:
        raise _not_found(device, "torch", available) from None
    if parsed.type == "cpu":
        if parsed.index not in (None, 0):
            raise _not_found(device, "torch", available)
        return "cpu"
    name = f"{parsed.type}:{parsed.index or 0}"
    if name not in available and not (parsed.type == "mps" and "mps" in available):
        raise _not_found(device, "torch", available)
    return "mps" if parsed.type == "mps" else name


def _keras_device_scope(name: str) -> ContextManager[Any]:
    # The torch backend's `device_scope(name)` sets the device its variables
    # are created on (Keras 3.0-3.15.1; `keras.device` fronts it since 3.1).
    core = sys.modules.get("keras.src.backend.torch.core")
    scope_fn: Any = getattr(core, "device_scope", None) or getattr(_fw("keras"), "device")
    return scope_fn(name)  # type: ignore[no-any-return]


def _torch_move(pairs: List[Tuple[Any, Any]]) -> None:
    """Moves clone variables to a torch device (only strays; device to device)."""
    torch = _fw("torch")
    with torch.no_grad():
        for target, variable in pairs:
            param = getattr(variable, "_value", None)
            if param is None or not hasattr(param, "device"):
                continue
            dev = target if isinstance(target, torch.device) else getattr(getattr(target, "_value", None), "device", None)
            if dev is not None and param.device != dev:
                param.data = param.data.to(dev)


def _resolve_torch(model: Any, device: Any, info: Any) -> Placement:
    torch = _fw("torch")
    if device is None:
        devices = [
            str(v._value.device) for v in _model_variables(model) if hasattr(getattr(v, "_value", None), "device")
        ]
        home = _most_common(devices)

        def finish_like_source(clone: Any, layer_map: Any) -> None:
            _torch_move(_pair_variables(model, clone, layer_map))

        enter = (lambda: _keras_device_scope(home)) if home else None
        return Placement(f"the source's device ({home})", enter, finish_like_source)
    name = _torch_device(torch, device)
    target = torch.device(name)

    def finish_on(clone: Any, layer_map: Any) -> None:
        _torch_move([(target, v) for v in _model_variables(clone)])

    return Placement(f"device {name}", lambda: _keras_device_scope(name), finish_on)


# -- numpy (Keras 3's reference backend: host memory only) -----------------------


def _resolve_numpy(model: Any, device: Any, info: Any) -> Placement:
    if device is None or (isinstance(device, str) and device.strip().lower().lstrip("/") in ("cpu", "cpu:0")):
        return Placement("host memory")
    raise _not_found(device, "numpy", ["cpu"])


_RESOLVERS: Dict[str, Callable[[Any, Any, Any], Placement]] = {
    "tensorflow": _resolve_tf,
    "jax": _resolve_jax,
    "torch": _resolve_torch,
    "numpy": _resolve_numpy,
}


# -- Keras 3 copies ------------------------------------------------------------


def _keras3_backend(variable: Any) -> str:
    # `keras.src.backend.Variable` subclasses the backend's own class, defined
    # in `keras.src.backend.<name>.core` (Keras 3.0-3.15.1): read the MRO.
    for klass in type(variable).__mro__:
        module = getattr(klass, "__module__", "") or ""
        for name in ("tensorflow", "jax", "torch", "numpy"):
            if f".backend.{name}" in module:
                return name
    return "other"


def _assign_jax(pairs: Pairs) -> None:
    jax = _fw("jax")
    values = [src.value for src, _ in pairs]
    shardings = [dst.value.sharding for _, dst in pairs]
    # Prepare: every copy lands in a new buffer with the target's sharding. A
    # failure here (memory, a vanished device) has written nothing.
    copies = _jax_put(jax, values, shardings)
    # Commit: rebinding arrays of the exact shape, dtype and sharding.
    for (_, dst), value in zip(pairs, copies):
        dst.assign(value)


def _assign_torch(pairs: Pairs) -> None:
    torch = _fw("torch")
    dsts: List[Any] = []
    srcs: List[Any] = []
    with torch.no_grad():
        # Prepare: stage cross-device sources on the target device (direct
        # device-to-device transfer). Nothing is written to a target yet.
        for src, dst in pairs:
            s, d = src.value, dst.value
            if s.device != d.device:
                s = s.detach().to(d.device)
            dsts.append(d)
            srcs.append(s.detach())
        # Commit: same-device copies into buffers of the same shape and dtype.
        foreach_copy = getattr(torch, "_foreach_copy_", None)  # torch 2.1+
        if foreach_copy is not None:
            by_device: Dict[Any, Tuple[List[Any], List[Any]]] = {}
            for d, s in zip(dsts, srcs):
                group = by_device.setdefault(d.device, ([], []))
                group[0].append(d)
                group[1].append(s)
            for group_dsts, group_srcs in by_device.values():
                foreach_copy(group_dsts, group_srcs)
        else:  # pragma: no cover
            for d, s in zip(dsts, srcs):
                d.copy_(s)


def _assign_tf_keras3(pairs: Pairs) -> None:
    assign_tf(pairs)  # unwraps each Keras variable to its tf.Variable


def _assign_generic(pairs: Pairs) -> None:
    values = [src.value for src, _ in pairs]
    for (_, dst), value in zip(pairs, values):
        dst.assign(value)


_KERAS3_ASSIGN: Dict[str, Callable[[Pairs], None]] = {
    "tensorflow": _assign_tf_keras3,
    "jax": _assign_jax,
    "torch": _assign_torch,
}


def assign_keras3(pairs: Pairs) -> None:
    """Copies Keras 3 variable pairs on the device, per backend.

    TensorFlow: variable to variable. JAX: one batched device-to-device
    `device_put` onto each target's sharding (a fresh buffer: sharing would
    be undone by buffer donation in `fit`/`predict`). torch: in-place
    `copy_` under `no_grad`, sources on another device staged first.
    """
    if not pairs:
        return
    backend = _keras3_backend(pairs[0][1])
    _KERAS3_ASSIGN.get(backend, _assign_generic)(pairs)
