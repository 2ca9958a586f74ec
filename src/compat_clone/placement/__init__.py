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

* `assign_keras3(pairs, tau)` / `assign_tf(pairs, tau)` copy already-checked
  (source variable, target variable) pairs without a host round trip:
  `dst.assign(src)` variable to variable on TensorFlow (replica by replica for
  distributed variables), one batched `jax.device_put(..., may_alias=False)`
  on JAX (from the second copy between the same models: one jitted copy into
  the target arrays' donated buffers, where nothing but their variable holds
  them), in-place `copy_` under `no_grad` on torch. Each runs in two phases:
  *prepare* (everything that can fail: reading, cross-device staging,
  device checks) writes nothing; *commit* only swaps or copies into buffers
  of the exact shape, dtype and device. An error in prepare leaves every
  target untouched. With `tau < 1` they blend instead (a soft update,
  `tau * src + (1 - tau) * dst` for floating-point targets, exact copies of
  the others) in one fused operation per backend: a `tf.function` traced
  once per list of pairs (`PairCache`, weak references) with `tau` as a
  tensor argument, one `jax.jit` per device set (the targets' buffers
  donated where nothing else holds them: written in place),
  `torch._foreach_lerp_` per device and dtype.

JAX arrays are immutable, so sharing the source's array would be free, but it
is not safe: Keras's JAX trainer jits `train_step`, `test_step` and
`predict_step` with `donate_argnums=0` (Keras 3.0-3.15.1), so the first
`clone.fit()` / `predict()` would delete the source's (shared) buffers
("Array has been deleted"). We copy on the device instead: the cost of a raw
device copy of the same bytes. For the same reason only the *target's* arrays
are ever donated, and only those no one else holds (`placement.jax._owned`).

Nothing here imports a framework: a model object exists, so its framework is
in `sys.modules` already.
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Dict, Iterator, Optional

from compat_clone.placement._common import Pairs, Placement, _fw, _not_found
from compat_clone.placement.jax import _assign_jax, _blend_jax, _fresh_copy_jax, _resolve_jax
from compat_clone.placement.tensorflow import _resolve_tf, assign_tf, blend_tf
from compat_clone.placement.torch import _assign_torch, _blend_torch, _fresh_copy_torch, _resolve_torch

__all__ = ["Placement", "scope", "assign_keras3", "assign_tf", "fresh_copy_keras3"]


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
        if module.startswith("tensorflow."):  # a plain tf.Variable (a TFSMLayer's, Keras 3.0-3.2)
            return "tensorflow"
    return "other"


def _assign_tf_keras3(pairs: Pairs) -> None:
    assign_tf(pairs)  # unwraps each Keras variable to its tf.Variable


def _assign_generic(pairs: Pairs) -> None:
    values = [src.value for src, _ in pairs]
    for (_, dst), value in zip(pairs, values):
        dst.assign(value)


def _blend_generic(pairs: Pairs, tau: float) -> None:
    np = _fw("numpy")
    values = []
    for src, dst in pairs:  # host memory already (Keras 3's numpy backend)
        s, d = np.asarray(src.value), np.asarray(dst.value)
        values.append((d + tau * (s - d)).astype(d.dtype) if np.issubdtype(d.dtype, np.inexact) else np.array(s))
    for (_, dst), value in zip(pairs, values):
        dst.assign(value)


_KERAS3_ASSIGN: Dict[str, Callable[[Pairs], None]] = {
    "tensorflow": _assign_tf_keras3,
    "jax": _assign_jax,
    "torch": _assign_torch,
}

_KERAS3_BLEND: Dict[str, Callable[[Pairs, float], None]] = {
    "tensorflow": blend_tf,  # unwraps each Keras variable to its tf.Variable
    "jax": _blend_jax,
    "torch": _blend_torch,
}


def assign_keras3(pairs: Pairs, tau: float = 1.0) -> None:
    """Copies Keras 3 variable pairs on the device, per backend.

    TensorFlow: variable to variable. JAX: one batched device-to-device
    `device_put` onto each target's sharding (a fresh buffer: sharing would
    be undone by buffer donation in `fit`/`predict`); a repeated copy of the
    same pairs writes into the targets' donated buffers instead. torch:
    in-place `copy_` under `no_grad`, sources on another device staged first.

    With `tau < 1`, a soft update: every floating-point target becomes
    `tau * src + (1 - tau) * dst`, in one fused operation per backend (a
    cached `tf.function`, one `jax.jit`, `torch._foreach_lerp_`); other
    targets (counters, seed states) are copied exactly.
    """
    if not pairs:
        return
    backend = _keras3_backend(pairs[0][1])
    if tau != 1.0:
        _KERAS3_BLEND.get(backend, _blend_generic)(pairs, tau)
        return
    _KERAS3_ASSIGN.get(backend, _assign_generic)(pairs)


_KERAS3_FRESH_COPY: Dict[str, Callable[[Any], Any]] = {
    "jax": _fresh_copy_jax,
    "torch": _fresh_copy_torch,
}


def fresh_copy_keras3(backend: Optional[str]) -> Optional[Callable[[Any], Any]]:
    """`fn(variable)`: a new buffer holding the variable's value where it lives (JAX, torch), else None."""
    return _KERAS3_FRESH_COPY.get(backend or "")
