"""TensorFlow placement (Keras 3 on TF, tf.keras, tf_keras): strategies, devices, variable-to-variable copies."""

from __future__ import annotations

import re
from typing import Any, List, Tuple

from compat_clone.errors import InvalidArgumentError
from compat_clone.placement._common import Pairs, Placement, _fw, _model_variables, _most_common, _not_found

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


