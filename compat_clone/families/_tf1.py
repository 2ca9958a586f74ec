"""Standalone Keras 2's TensorFlow 1.x graph mode: devices, graphs, and the grouped weight copy."""

from __future__ import annotations

import contextlib
import re
import threading
from typing import Any, Callable, Dict, List, Optional, Set, Tuple

from compat_clone._compat import add_note
from compat_clone.errors import DeviceNotFoundError, UnsupportedFeatureError, WeightsUnreadableError

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
            f"Expected `device` to be a TensorFlow device string such as "
            f"'/CPU:0' or '/GPU:0'. Received: device={device!r}."
        )
    from tensorflow.python.eager import context
    from tensorflow.python.framework import device_spec

    try:
        spec = device_spec.DeviceSpecV2.from_string(device)
    except (ValueError, TypeError) as exc:
        raise DeviceNotFoundError(
            f"Cannot parse device {device!r}: {exc}. Expected a TensorFlow "
            "device string such as '/CPU:0' or '/GPU:0'."
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
    reuses the op too.
    """
    K = _k().backend
    graphs: Set[Any] = {getattr(v, "graph", None) for pair in pairs for v in pair}
    if K.backend() != "tensorflow" or len(graphs) != 1:
        # Theano / CNTK shared variables, or source and target in different
        # graphs (`K.clear_session()` between them): only the host can carry them.
        _host_copy(K, pairs, tau)
        return
    graph = graphs.pop()
    op, tau_input = _cached_assign_op(graph, pairs, blend=tau != 1.0)
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


def _cached_assign_op(graph: Any, pairs: List[Tuple[Any, Any]], blend: bool = False) -> Tuple[Any, Any]:
    """(grouped op, its `tau` placeholder or None), built once per graph and variable list."""
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
            op, tau_input = _blend_op(pairs) if blend else (_copy_op(pairs), None)
        entry = ([s for s, _ in pairs], [d for _, d in pairs], op, tau_input)
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


def _blend_op(pairs: List[Tuple[Any, Any]]) -> Tuple[Any, Any]:
    """`dst = (1 - tau) * dst + tau * src` for floating-point targets, `dst = src` for others; one op.

    Each floating-point target is updated in place by two fused kernels, one
    after the other (`ApplyGradientDescent`: `var -= alpha * delta`): `dst -=
    tau * dst`, then `dst -= -tau * src`. No temporary tensor is made (an
    expression such as `dst - tau * (dst - src)` allocates two, of the
    variable's size, every step). Where a target is also a source, or this
    TensorFlow has no such kernel, that expression is used instead.
    """
    tf = tf_module()
    tau_input = tf.placeholder(tf.float64, shape=(), name="compat_clone_tau")
    sources = {id(src) for src, _ in pairs}
    in_place = getattr(getattr(tf, "raw_ops", None), "ApplyGradientDescent", None) is not None and not any(
        id(dst) in sources for _, dst in pairs
    )
    if _aliased(pairs):
        return _blend_read_first(tf, pairs, tau_input), tau_input
    alphas: Dict[Any, Any] = {}
    updates = []
    for src, dst in pairs:
        dtype = dst.dtype.base_dtype
        if not (dtype.is_floating or dtype.is_complex):
            updates.append(tf.assign(dst, src))
            continue
        if dtype not in alphas:
            alphas[dtype] = (tf.cast(tau_input, dtype), tf.cast(-tau_input, dtype))
        alpha, minus_alpha = alphas[dtype]
        with tf.device(dst.device) if dst.device else contextlib.nullcontext():  # where the target lives
            if in_place:
                scaled = _apply_descent(tf, dst, alpha, dst)
                with tf.control_dependencies([scaled]):
                    updates.append(_apply_descent(tf, dst, minus_alpha, src))
            else:
                updates.append(tf.assign_sub(dst, alpha * (dst - src)))
    return tf.group(*updates, name="compat_clone_soft_update"), tau_input


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
            (d + tau * (s - d)).astype(d.dtype) if np.issubdtype(d.dtype, np.inexact) else s
            for s, d in zip(values, current)
        ]
    K.batch_set_value([(dst, value) for (_, dst), value in zip(pairs, values)])


def _unreadable_error(exc: BaseException) -> WeightsUnreadableError:
    found = re.search(r"(Could not find variable \S+?|Attempting to use uninitialized value \S+?)\.?(\s|$)", str(exc))
    first = found.group(1) if found else type(exc).__name__
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

