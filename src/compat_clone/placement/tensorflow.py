"""TensorFlow placement (Keras 3 on TF, tf.keras, tf_keras): strategies, devices, variable-to-variable copies and blends."""

from __future__ import annotations

import re
import weakref
from typing import Any, Callable, Dict, List, Optional, Tuple

from compat_clone.errors import InvalidArgumentError
from compat_clone.placement._common import (
    PairCache,
    Pairs,
    Placement,
    device_not_found,
    framework,
    model_variables,
    most_common,
)

__all__ = ["TensorFlowBackend", "assign_tf", "blend_tf"]


class TensorFlowBackend:
    """TensorFlow (Keras 3 on TF, tf.keras, tf_keras): a `PlacementBackend`.

    The clone is built under the source's `tf.distribute` strategy or on its
    variables' device. Copies go variable to variable (`assign_tf`), soft
    updates run in one cached `tf.function` (`blend_tf`); both unwrap each
    Keras 3 variable to its `tf.Variable`.
    """

    def resolve(self, model: Any, device: Any) -> Placement:
        tf = framework("tensorflow")
        if device is None:
            if tf.distribute.has_strategy():
                # The caller entered a strategy scope: its choice governs (the
                # native way to build a clone under a strategy keeps working).
                strategy = tf.distribute.get_strategy()
                return Placement(f"the active {type(strategy).__name__}")
            variables = [_tf_var(tf, v) for v in model_variables(model)]
            strategies = [s for s in (_tf_strategy_of(v) for v in variables) if s is not None]
            if strategies:
                strategy = most_common(strategies)
                return Placement(f"the source's {type(strategy).__name__}", strategy.scope)
            device_name = most_common([v.device for v in variables if getattr(v, "device", "")])
            if device_name:
                return Placement(f"the source's device {device_name}", lambda: tf.device(device_name))
            return Placement("the default device")
        if isinstance(device, tf.distribute.Strategy):
            return Placement(f"the given {type(device).__name__}", device.scope)
        name = _tf_device_name(tf, device)
        return Placement(f"device {name}", lambda: tf.device(name))

    def assign(self, pairs: Pairs) -> None:
        assign_tf(pairs)

    def blend(self, pairs: Pairs, tau: float) -> None:
        blend_tf(pairs, tau)

    def fresh_copier(self) -> Optional[Callable[[Any], Any]]:
        return None  # no prefill on TensorFlow: the clone's variables are created, then assigned


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
        raise device_not_found(device, "TensorFlow", available, hint=" (a string such as '/CPU:0')")
    text = _TF_ALIASES.sub("GPU", device.strip())
    if ":" not in text.rsplit("/", 1)[-1] and "/" not in text:
        text = text + ":0"  # "cpu" -> "cpu:0"
    try:
        spec = tf.DeviceSpec.from_string(text)
    except ValueError:
        raise device_not_found(device, "TensorFlow", available) from None
    if spec.device_type is None:
        raise device_not_found(device, "TensorFlow", available, hint=" (name a device type: '/CPU:0')")
    index = 0 if spec.device_index is None else spec.device_index
    local = {(parsed.device_type, parsed.device_index) for parsed in (tf.DeviceSpec.from_string(name) for name in available)}
    # Only local devices can be checked; a remote job's devices are taken on
    # trust (a cluster lists them only once connected).
    if spec.job in (None, "localhost") and (spec.device_type.upper(), index) not in local:
        raise device_not_found(device, "TensorFlow", available)
    return str(spec.replace(device_type=spec.device_type.upper(), device_index=index).to_string())


def _tf_is_distributed(tf: Any, variable: Any) -> bool:
    return isinstance(variable, tf.distribute.DistributedValues)


def _tf_plan(tf: Any, src: Any, dst: Any) -> List[Tuple[Any, Any]]:
    """(source, target) tf variables to assign, replica by replica when both are distributed."""
    src_dist = _tf_is_distributed(tf, src)
    dst_dist = _tf_is_distributed(tf, dst)
    if src_dist and dst_dist:
        src_parts, dst_parts = list(src.values), list(dst.values)
        if len(src_parts) == len(dst_parts) and all(s.device == d.device for s, d in zip(src_parts, dst_parts)):
            return list(zip(src_parts, dst_parts))
    # A sync-on-read SUM variable refuses a cross-replica assign (TF 2.x):
    # find out now, before any target was written.
    if (
        dst_dist
        and getattr(dst, "synchronization", None) == tf.VariableSynchronization.ON_READ
        and getattr(dst, "aggregation", None) == tf.VariableAggregation.SUM
    ):
        raise InvalidArgumentError(
            f"Cannot copy into the sync-on-read SUM variable {dst.name!r} from a "
            f"variable of another layout ({type(src).__name__} on {src.device!r}). "
            "Nothing was copied. Clone the target under the source's strategy "
            "(compat_clone.clone_model(source) does so by default)."
        )
    return [(src, dst)]


def assign_tf(pairs: Pairs, tau: float = 1.0) -> None:
    """Copies tf variable pairs variable to variable (`dst.assign(src)`), on the device.

    No value goes through host memory. Distributed variables of the same
    layout are copied replica by replica (each a local assign). Every pair is
    planned (and refused, if it cannot be assigned) before the first write.
    With `tau < 1` every floating-point target becomes
    `tau * src + (1 - tau) * dst` instead (`blend_tf`).
    """
    if not pairs:
        return
    if tau != 1.0:
        blend_tf(pairs, tau)
        return
    tf = framework("tensorflow")
    plan: List[Tuple[Any, Any]] = []
    for src, dst in pairs:
        plan.extend(_tf_plan(tf, _tf_var(tf, src), _tf_var(tf, dst)))
    from tensorflow.python.ops import gen_resource_variable_ops as gen

    plain = _plain_types()
    # `copy-shared-variable`: a source that is also a target (two models
    # sharing a layer, pairs by order) is read before anything is written.
    early = {i: tf.identity(plan[i][0]) for i in _aliased_sources(plan)}
    if tf.executing_eagerly() and all(type(src) in plain and type(dst) in plain for src, dst in plan):
        # The two kernels `dst.assign(src)` runs, without its Python layers
        # (conversion, dispatch, handle-data checks: 3x the time on CPU);
        # shapes and dtypes were checked by the plan.
        for i, (src, dst) in enumerate(plan):
            value = early[i] if i in early else gen.read_variable_op(src.handle, src.dtype.base_dtype)
            gen.assign_variable_op(dst.handle, value)
        return
    for i, (src, dst) in enumerate(plan):
        dst.assign(early.get(i, src), read_value=False)


def _aliased_sources(plan: List[Tuple[Any, Any]]) -> List[int]:
    """Indexes of the pairs whose source is also a target of the plan (by variable identity)."""
    targets = {id(dst) for _, dst in plan}
    return [i for i, (src, _) in enumerate(plan) if id(src) in targets]


def _plain_types() -> Tuple[type, ...]:
    """Local, non-distributed resource variables (no mirrored / sync-on-read wrapper)."""
    from tensorflow.python.ops import resource_variable_ops as rvo

    return (rvo.ResourceVariable, rvo.UninitializedVariable)


# -- soft updates: tau * source + (1 - tau) * target --------------------------------

_BLENDS = PairCache()


def blend_tf(pairs: Pairs, tau: float) -> None:
    """Soft update in one `tf.function` call: `dst = tau * src + (1 - tau) * dst`.

    Floating-point (and complex) targets are blended on the target's device,
    every other target (step counters, seed states) is copied exactly. The
    function is traced once per list of pairs and reused for every `tau`
    (a float64 tensor argument); it holds the variables weakly. Every pair is
    planned (and refused, if it cannot be assigned) before anything runs.
    """
    tf = framework("tensorflow")
    blend = _BLENDS.get(pairs, lambda: _TfBlend(tf, pairs))
    blend(tf.constant(tau, tf.float64))


class _TfBlend:
    """The soft update of one list of pairs: a `tf.function`, XLA-compiled where it can be.

    Where every variable is a plain resource variable on one device, XLA
    fuses each read-lerp-write into one loop (memory traffic of the blend
    itself: no temporaries). Elsewhere (distributed variables, variables
    on several devices, XLA unavailable or refusing an op) a graph function
    of TensorFlow kernels: `dst -= tau * (dst - src)` with the in-place
    `ResourceApplyGradientDescent`, replica by replica for distributed
    variables of the same layout.
    """

    def __init__(self, tf: Any, pairs: Pairs) -> None:
        plan: List[Tuple[Any, Any]] = []
        for src, dst in pairs:
            plan.extend(_tf_plan(tf, _tf_var(tf, src), _tf_var(tf, dst)))
        plain = _plain_types()
        # Weak references: the traced function must not keep a model alive
        # (a tf.function itself holds the variables it captures weakly).
        self._steps: List[Tuple[Callable[[], Any], Callable[[], Any], bool]] = [
            (weakref.ref(src), weakref.ref(dst), type(src) in plain and type(dst) in plain) for src, dst in plan
        ]
        self._tf = tf
        # `copy-shared-variable`: sources that are also targets, read first.
        self._early = set(_aliased_sources(plan))
        signature = [tf.TensorSpec([], tf.float64)]
        self.fn = tf.function(self._kernels, input_signature=signature, autograph=False)
        self._xla_first = False
        one_device = len({v.device for pair in plan for v in pair}) == 1
        if one_device and all(raw for _, _, raw in self._steps):
            try:
                self.fn = tf.function(self._fused, input_signature=signature, autograph=False, jit_compile=True)
                self._xla_first = True
            except TypeError:  # TF < 2.5: no `jit_compile`
                pass

    def __call__(self, tau: Any) -> None:
        if not self._xla_first:
            self.fn(tau)
            return
        try:
            self.fn(tau)  # traced and compiled now; XLA writes nothing when it fails
        except self._tf.errors.OpError:  # XLA cannot compile an op or dtype here
            self.fn = self._tf.function(
                self._kernels, input_signature=[self._tf.TensorSpec([], self._tf.float64)], autograph=False
            )
            self.fn(tau)
        self._xla_first = False

    def _early_reads(self) -> Dict[int, Any]:
        """The aliased sources' values, read in program order before any write."""
        return {i: self._steps[i][0]().read_value() for i in sorted(self._early)}

    def _fused(self, tau: Any) -> None:
        alphas: Dict[Any, Any] = {}
        early = self._early_reads()
        for i, (src_ref, dst_ref, _) in enumerate(self._steps):
            src, dst = src_ref(), dst_ref()  # alive: traced once, on the first call
            source = early[i] if i in early else src.read_value()
            alpha = _alpha(self._tf, alphas, tau, dst)
            if alpha is None:
                dst.assign(source, read_value=False)
            else:
                value = dst.read_value()
                dst.assign(value + alpha * (source - value), read_value=False)

    def _kernels(self, tau: Any) -> None:
        tf = self._tf
        alphas: Dict[Any, Any] = {}
        early = self._early_reads()
        for i, (src_ref, dst_ref, raw) in enumerate(self._steps):
            src, dst = src_ref(), dst_ref()  # alive: traced once, on the first call
            alpha = _alpha(tf, alphas, tau, dst)
            if raw:
                _blend_raw(tf, src, dst, alpha, early.get(i))
            elif alpha is not None:
                value = dst.read_value()
                source = early[i] if i in early else src.read_value()
                dst.assign(value - alpha * (value - source), read_value=False)
            else:
                dst.assign(early[i] if i in early else src.read_value(), read_value=False)


def _alpha(tf: Any, alphas: Dict[Any, Any], tau: Any, dst: Any) -> Any:
    """`tau` in the target's dtype, once per dtype; None for a target that is not floating point."""
    dtype = dst.dtype.base_dtype
    if not (dtype.is_floating or dtype.is_complex):
        return None
    if dtype not in alphas:
        alphas[dtype] = tf.cast(tau, dtype)
    return alphas[dtype]


def _blend_raw(tf: Any, src: Any, dst: Any, alpha: Any, value: Any = None) -> None:
    """One pair of plain resource variables, as kernels: no Python variable layers in the graph.

    `value`: the source's value where it was read already (`copy-shared-variable`).
    """
    ops = tf.raw_ops
    if value is None:
        value = ops.ReadVariableOp(resource=src.handle, dtype=src.dtype.base_dtype)
    with tf.device(dst.device):
        if alpha is None:  # not floating point: an exact copy
            ops.AssignVariableOp(resource=dst.handle, value=value)
            return
        # dst -= tau * (dst - src), in place: one fused kernel after the difference.
        delta = ops.ReadVariableOp(resource=dst.handle, dtype=dst.dtype.base_dtype) - value
        ops.ResourceApplyGradientDescent(var=dst.handle, alpha=alpha, delta=delta)
