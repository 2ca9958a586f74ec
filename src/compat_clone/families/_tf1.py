"""Standalone Keras 2's TensorFlow 1.x graph mode: devices, graphs, and the grouped weight copy."""

from __future__ import annotations

import contextlib
import re
import threading
from typing import Any, Callable, Dict, List, Optional, Set, Tuple

from compat_clone.errors import DeviceNotFoundError, UnsupportedFeatureError, WeightsUnreadableError, add_note

__all__ = ["check_device", "graph_scope", "assign_locked", "tf_module"]


def _k() -> Any:
    import keras

    return keras


def tf_module() -> Any:
    """The `tensorflow` module Keras' TF backend uses (TF 1.x, or compat.v1)."""
    from keras.backend import tensorflow_backend

    return tensorflow_backend.tf


def check_device(device: Any, backend: str) -> Optional[str]:
    """Validates `device` before anything is built; returns it as a string."""
    if device is None:
        return None
    if backend != "tensorflow":
        raise UnsupportedFeatureError(
            f"`device=` needs the TensorFlow backend of standalone Keras; this "
            f"Keras runs on {backend!r}. Received: device={device!r}. Drop "
            "`device=` (the backend places variables itself)."
        )
    if hasattr(device, "to_string"):  # a tf.DeviceSpec
        device = device.to_string()
    if not isinstance(device, str) or not device:
        raise DeviceNotFoundError(
            f"Expected `device` to be a TensorFlow device string such as '/CPU:0' or '/GPU:0'. Received: device={device!r}."
        )
    from tensorflow.python.eager import context
    from tensorflow.python.framework import device_spec

    try:
        spec = device_spec.DeviceSpecV2.from_string(device)
    except (ValueError, TypeError) as exc:
        raise DeviceNotFoundError(
            f"Cannot parse device {device!r}: {exc}. Expected a TensorFlow device string such as '/CPU:0' or '/GPU:0'."
        ) from None
    available = [dev.name for dev in context.context().list_logical_devices()]
    for name in available:
        parsed = device_spec.DeviceSpecV2.from_string(name)
        if spec.device_type is None or (
            parsed.device_type.upper() == spec.device_type.upper()
            and (spec.device_index is None or parsed.device_index == spec.device_index)
        ):
            return device
    raise DeviceNotFoundError(
        f"Device {device!r} does not exist on this machine. Available: "
        f"{', '.join(available) or 'none'}. Pass one of them, or device=None "
        "to create the clone's variables where the source's are."
    )


def _graph_of(model: Any) -> Any:
    for tensor in list(getattr(model, "outputs", None) or []) + list(getattr(model, "weights", None) or []):
        graph = getattr(tensor, "graph", None)
        if graph is not None:
            return graph
    return None


def graph_scope(flatten: Callable[[Any], List[Any]], model: Any, input_tensors: Any) -> Any:
    """The graph to build the clone in, as a `with` context.

    Native Keras builds the clone in the current default graph (or in the
    graph of `input_tensors`), and so do we. One exception: TensorFlow 2's
    compat.v1 gives every thread its own default graph, so in a worker thread
    the current graph is a fresh, empty one, unknown to the source and to
    Keras's session: there the source's graph is used.
    """
    graph = None
    for tensor in flatten(input_tensors) if input_tensors is not None else []:
        graph = getattr(tensor, "graph", None)
        if graph is not None:
            break
    if graph is None:
        source = _graph_of(model)
        try:
            current = tf_module().get_default_graph()
        except Exception:  # Theano / CNTK backends: no graphs
            current = None
        if source is not None and current is not None and current is not source and not current.get_operations():
            graph = source
    as_default = getattr(graph, "as_default", None)
    return as_default() if as_default is not None else contextlib.nullcontext()


# graph collection "_compat_clone_assign_ops": {(blend, (id(src), id(dst)), ...): (srcs, dsts, op,
# tau placeholder or None)}; the variables are held so ids are not reused while the entry lives
# (it dies with the graph).


def assign_locked(pairs: List[Tuple[Any, Any]], tau: float = 1.0) -> None:
    """Variable to variable in one session run: one grouped assign op, cached.

    No host round trip and no per-variable `session.run` (native
    `set_weights` / `batch_set_value` feed numpy arrays through placeholders).
    Repeated copies between the same variables reuse the op, so the graph
    does not grow. With `tau < 1`, a soft update: one grouped op sets every
    floating-point target to `tau * src + (1 - tau) * dst` (others are copied
    exactly), `tau` fed through a placeholder, so every value of `tau`
    reuses the op too (two ops are built at once, see `_blend_op`: one for
    `tau <= 0.5`, one for any `tau`).
    """
    K = _k().backend
    graphs: Set[Any] = {getattr(v, "graph", None) for pair in pairs for v in pair}
    if K.backend() != "tensorflow" or len(graphs) != 1:
        # Theano / CNTK shared variables, or source and target in different
        # graphs (`K.clear_session()` between them): only the host can carry them.
        _host_copy(K, pairs, tau)
        return
    graph = graphs.pop()
    (small_tau_op, any_tau_op), tau_input = _cached_assign_op(graph, pairs, blend=tau != 1.0)
    op = small_tau_op if tau <= _ONE_PASS_MAX_TAU else any_tau_op
    # An exact copy writes every target whole, so it initializes them: Keras
    # is told not to run their initializers first (a clone with weights would
    # otherwise fill every variable twice, and hold the initializers' constant
    # tensors in the session). A blend reads its targets: they are initialized.
    skipped = [dst for _, dst in pairs if not getattr(dst, "_keras_initialized", False)] if tau == 1.0 else []
    flags = [(v, getattr(v, "__dict__", {}).get("_keras_initialized", _ABSENT)) for v in skipped]
    for variable in skipped:
        variable._keras_initialized = True  # read by Keras' `get_session` (2.0-2.3)
    session = None
    try:
        with graph.as_default():  # the session Keras keeps for this graph
            session = K.get_session()  # initializes the variables no session has seen (sources too)
        if session.graph is not graph:
            # The variables live in a graph no session of Keras runs (built
            # under another `graph.as_default()`): carry the values by the host.
            _host_copy(K, pairs, tau)
            return
        try:
            session.run(op, feed_dict=None if tau_input is None else {tau_input: tau})
        except tf_module().errors.FailedPreconditionError as exc:
            raise _unreadable_error(exc) from exc
    except BaseException as exc:
        # Not copied: the next `get_session` initializes them, as before the call.
        for variable, flag in flags:
            if flag is _ABSENT:
                del variable._keras_initialized
            else:
                variable._keras_initialized = flag
        if session is not None and skipped and session.graph is graph:
            _undo_partial_copy(graph, session, skipped, exc)
        raise


_ABSENT = object()


def _undo_partial_copy(graph: Any, session: Any, variables: List[Any], exc: BaseException) -> None:
    """Variables a failed grouped copy wrote before it stopped hold their initializer's value again.

    The grouped op runs its assigns independently: one failing at run time
    (a source whose value no longer has its declared shape) does not stop
    the others. Those targets had never been initialized; left as written,
    Keras' next `get_session` would find them initialized and keep values
    copied from the source.
    """
    tf = tf_module()
    try:
        with graph.as_default():
            written = session.run([tf.is_variable_initialized(v) for v in variables])
            again = [v.initializer for v, flag in zip(variables, written) if flag]
            if again:
                session.run(again)
    except Exception as undo:  # the copy's own error is the one raised
        add_note(exc, f"compat_clone: could not re-initialize the targets the failed copy wrote: {undo!r}")


def _cached_assign_op(graph: Any, pairs: List[Tuple[Any, Any]], blend: bool = False) -> Tuple[Tuple[Any, Any], Any]:
    """((op for `tau <= 0.5`, op for any `tau`), the `tau` placeholder or None), once per graph and variable list."""
    # The cache lives on the graph itself (tf.Graph has __slots__: a graph
    # collection holds it), so it dies with the graph.
    key = (blend, tuple((id(s), id(d)) for s, d in pairs))
    holder = graph.get_collection_ref("_compat_clone_assign_ops")
    if not holder:
        holder.append({})
    per_graph: Dict[Any, Any] = holder[0]
    entry = per_graph.get(key)
    if entry is None or not all(a is s and b is d for a, b, (s, d) in zip(entry[0], entry[1], pairs)):
        with graph.as_default():
            if blend:
                ops, tau_input = _blend_op(pairs)
            else:
                copy = _copy_op(pairs)
                ops, tau_input = (copy, copy), None
        entry = ([s for s, _ in pairs], [d for _, d in pairs], ops, tau_input)
        per_graph[key] = entry
    return entry[2], entry[3]


def _copy_op(pairs: List[Tuple[Any, Any]]) -> Any:
    tf = tf_module()
    if not _aliased(pairs):
        return tf.group(*[tf.assign(dst, src) for src, dst in pairs], name="compat_clone_copy_weights")
    # A target that is also a source: every value read (copied) before any is written.
    values = [_snapshot(tf, src) for src, _ in pairs]
    with tf.control_dependencies(values):
        updates = [tf.assign(dst, value) for (_, dst), value in zip(pairs, values)]
    return tf.group(*updates, name="compat_clone_copy_weights")


def _aliased(pairs: List[Tuple[Any, Any]]) -> bool:
    """Whether a variable is written by one pair and read by another (the ops then read all first)."""
    reads = {id(src) for src, _ in pairs}
    return any(id(dst) in reads and src is not dst for src, dst in pairs)


def _snapshot(tf: Any, variable: Any) -> Any:
    """The variable's value now, in a buffer of its own (a reference variable's read aliases its buffer)."""
    snapshot = getattr(getattr(tf, "raw_ops", None), "Snapshot", None)
    return snapshot(input=variable) if snapshot is not None else tf.identity(variable) + 0


# The one-pass blend is used up to this `tau`: its kernel adds `tau / (1 - tau) * src`
# to the target before it scales the sum down, which could overflow for `tau` near 1.
_ONE_PASS_MAX_TAU = 0.5
# Rows of one target per one-pass kernel: its loop is single-threaded, and pieces of
# a large target run side by side on the session's inter-op threads.
_PIECE_BYTES = 16 * 2**20


def _blend_op(pairs: List[Tuple[Any, Any]]) -> Tuple[Tuple[Any, Any], Any]:
    """`dst = (1 - tau) * dst + tau * src` for floating-point targets, `dst = src` for others.

    Returns `((op for tau <= 0.5, op for any tau), tau placeholder)`: both
    are built at once, so no later value of `tau` grows the graph. Each op
    updates every target in place, with no temporary of the target's size
    (an expression such as `dst - tau * (dst - src)` allocates two, and
    assigning it copies a third time):

    * any `tau`: two fused kernels one after the other
      (`ApplyGradientDescent`, `var -= alpha * delta`): `dst -= tau * dst`,
      then `dst -= -tau * src`. Two passes over the target's memory.
    * `tau <= 0.5`, float32 / float64 targets held on the CPU: one pass,
      `SparseApplyProximalGradientDescent` over every row: for each row,
      `v -= lr * src_row` then `v /= 1 + l2 * lr` while the row is in cache.
      With `lr = -tau / (1 - tau)` and `l2 = -1` that is `((1 - tau) * v +
      tau * src_row)`: the target read once and written once, the source
      read once, the least memory traffic of a blend in place (BENCHMARKS.md
      measures it against that floor). The sum `v + tau / (1 - tau) * src`
      stays finite for `tau <= 0.5` unless the values exceed half the
      dtype's largest. The kernel is CPU-only: a target placed elsewhere, or
      with no device where TensorFlow sees an accelerator, keeps the two
      passes (a CPU-only kernel reading a variable would move it to the CPU).

    Where a target is also a source, or this TensorFlow has no such kernel,
    the expression is used instead.
    """
    tf = tf_module()
    tau_input = tf.placeholder(tf.float64, shape=(), name="compat_clone_tau")
    sources = {id(src) for src, _ in pairs}
    raw_ops = getattr(tf, "raw_ops", None)
    in_place = getattr(raw_ops, "ApplyGradientDescent", None) is not None and not any(id(dst) in sources for _, dst in pairs)
    if _aliased(pairs):
        op = _blend_read_first(tf, pairs, tau_input)
        return (op, op), tau_input
    one_pass_ok = in_place and getattr(raw_ops, "SparseApplyProximalGradientDescent", None) is not None
    one_pass_ok = one_pass_ok and _host_only(tf, [v for pair in pairs for v in pair])
    coefficients: Dict[Any, Dict[str, Any]] = {}
    small: List[Any] = []  # the updates for tau <= 0.5
    general: List[Any] = []  # for any tau
    for src, dst in pairs:
        dtype = dst.dtype.base_dtype
        if not (dtype.is_floating or dtype.is_complex):
            copy = tf.assign(dst, src)
            small.append(copy)
            general.append(copy)
            continue
        if dtype not in coefficients:
            coefficients[dtype] = {"alpha": tf.cast(tau_input, dtype), "minus_alpha": tf.cast(-tau_input, dtype)}
        c = coefficients[dtype]
        with tf.device(dst.device) if dst.device else contextlib.nullcontext():  # where the target lives
            if in_place:
                scaled = _apply_descent(tf, dst, c["alpha"], dst)
                with tf.control_dependencies([scaled]):
                    general.append(_apply_descent(tf, dst, c["minus_alpha"], src))
            else:
                general.append(tf.assign_sub(dst, c["alpha"] * (dst - src)))
            if one_pass_ok and dtype in (tf.float32, tf.float64) and _has_rows(dst):
                if "lr" not in c:
                    c["lr"] = tf.cast(-tau_input / (1.0 - tau_input), dtype)
                    c["l1"], c["l2"] = tf.constant(0, dtype), tf.constant(-1, dtype)
                small += _blend_one_pass(tf, src, dst, c["lr"], c["l1"], c["l2"])
            else:
                small.append(general[-1])
    any_tau = tf.group(*general, name="compat_clone_soft_update")
    if not one_pass_ok:
        return (any_tau, any_tau), tau_input
    return (tf.group(*small, name="compat_clone_soft_update_one_pass"), any_tau), tau_input


def _blend_one_pass(tf: Any, src: Any, dst: Any, lr: Any, l1: Any, l2: Any) -> List[Any]:
    """`dst = (1 - tau) * dst + tau * src` row by row, in pieces of at most `_PIECE_BYTES` (see `_blend_op`)."""
    shape = [int(d) for d in dst.shape]
    rows, row_bytes = shape[0], dst.dtype.base_dtype.size
    for d in shape[1:]:
        row_bytes *= d
    pieces = max(1, min(rows, -(-rows * row_bytes // _PIECE_BYTES)))
    bounds = [rows * i // pieces for i in range(pieces + 1)]
    index_dtype = tf.int32 if rows < 2**31 else tf.int64
    updates = []
    for start, stop in zip(bounds, bounds[1:]):
        # One piece is the source itself; a slice along the first axis is a view of its buffer, not a copy.
        grad = src if pieces == 1 else tf.strided_slice(src, [start] + [0] * (len(shape) - 1), [stop] + shape[1:])
        rows_ = tf.range(start, stop, dtype=index_dtype)
        if dst.dtype._is_ref_dtype:  # TF 1.x variables, and compat.v1 without resource variables
            updates.append(
                tf.raw_ops.SparseApplyProximalGradientDescent(var=dst, alpha=lr, l1=l1, l2=l2, grad=grad, indices=rows_)
            )
        else:
            updates.append(
                tf.raw_ops.ResourceSparseApplyProximalGradientDescent(
                    var=dst.handle, alpha=lr, l1=l1, l2=l2, grad=grad, indices=rows_
                )
            )
    return updates


def _has_rows(variable: Any) -> bool:
    """Whether the variable has a first axis and a fully known shape (what the one-pass kernel walks)."""
    shape = variable.get_shape()
    return bool(shape.ndims) and shape.is_fully_defined()


def _host_only(tf: Any, variables: List[Any]) -> bool:
    """Whether every variable is held on the CPU, so that a CPU-only kernel beside it moves nothing.

    A variable placed on no device goes where TensorFlow's placer puts it:
    the CPU only when TensorFlow sees no other device. A TensorFlow that
    cannot list its devices (before 1.14) answers False.
    """
    config = getattr(tf, "config", None)
    lister = getattr(config, "list_physical_devices", None) or getattr(
        getattr(config, "experimental", None), "list_physical_devices", None
    )
    if lister is None:
        return False
    try:
        host_only = all(d.device_type == "CPU" for d in lister())
    except Exception:  # no device list here: the portable kernels
        return False
    for variable in variables:
        kind = tf.DeviceSpec.from_string(variable.device or "").device_type
        if kind is not None and kind.upper() != "CPU":
            return False
        if kind is None and not host_only:
            return False
    return True


def _blend_read_first(tf: Any, pairs: List[Tuple[Any, Any]], tau_input: Any) -> Any:
    """The blend where a target is another pair's source: every new value computed before any write."""
    values = []
    for src, dst in pairs:
        dtype = dst.dtype.base_dtype
        if not (dtype.is_floating or dtype.is_complex):
            values.append(_snapshot(tf, src))
            continue
        with tf.device(dst.device) if dst.device else contextlib.nullcontext():  # where the target lives
            old, new = _snapshot(tf, dst), _snapshot(tf, src)
            values.append(old - tf.cast(tau_input, dtype) * (old - new))
    with tf.control_dependencies(values):
        updates = [tf.assign(dst, value) for (_, dst), value in zip(pairs, values)]
    return tf.group(*updates, name="compat_clone_soft_update")


def _apply_descent(tf: Any, variable: Any, alpha: Any, delta: Any) -> Any:
    """`variable -= alpha * delta` in place, one kernel (reference or resource variable)."""
    if variable.dtype._is_ref_dtype:  # TF 1.x variables, and compat.v1 without resource variables
        return tf.raw_ops.ApplyGradientDescent(var=variable, alpha=alpha, delta=delta)
    return tf.raw_ops.ResourceApplyGradientDescent(var=variable.handle, alpha=alpha, delta=delta)


def _host_copy(K: Any, pairs: List[Tuple[Any, Any]], tau: float = 1.0) -> None:
    """Every value read into host memory, then written: where no graph op can copy."""
    values = K.batch_get_value([src for src, _ in pairs])
    if tau != 1.0:
        import numpy as np

        current = K.batch_get_value([dst for _, dst in pairs])
        values = [
            (d + tau * (s - d)).astype(d.dtype) if np.issubdtype(d.dtype, np.inexact) else s for s, d in zip(values, current)
        ]
    K.batch_set_value([(dst, value) for (_, dst), value in zip(pairs, values)])


def _unreadable_error(exc: BaseException) -> WeightsUnreadableError:
    found = re.search(r"(Could not find variable \S+?|Attempting to use uninitialized value \S+?)\.?(\s|$)", str(exc))
    # TF 1.15's resource variables (Keras 2.3): "Error while reading resource variable X from Container: ..."
    resource = re.search(r"Error while reading resource variable (\S+) from", str(exc))
    if found:
        first = found.group(1)
    elif resource:
        first = f"resource variable {resource.group(1)} is uninitialized in it"
    else:
        first = type(exc).__name__
    thread = threading.current_thread().name
    return WeightsUnreadableError(
        "Cannot read the source's weights in the "
        f"TensorFlow session Keras uses in thread {thread!r}: {first}. Keras 2.3 on a TF 1.x "
        "graph keeps one session per thread, and the model's values live in the session of "
        "the thread that built or trained it; this thread's session has never seen them. "
        "Capture that session where the model lives (`session = keras.backend.get_session()`) "
        "and clone inside `with session.as_default():` in the other thread. The source "
        "model is unchanged."
    )
