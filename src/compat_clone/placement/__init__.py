"""Where a clone's variables live, and how weights move: device to device.

Two concerns, one public entry each, and one object per Keras backend behind
them: a `PlacementBackend` (`_common.py`) that resolves a placement, copies
and blends, implemented by `TensorFlowBackend`, `JaxBackend`, `TorchBackend`
and `NumpyBackend`, each in its backend's module and chosen by the backend's
name in one function here (`_backend_for`):

* `scope(model, device, backend)` wraps the whole clone build. It resolves the
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

from compat_clone.placement._common import Pairs, Placement, PlacementBackend
from compat_clone.placement.jax import JaxBackend
from compat_clone.placement.numpy import NumpyBackend
from compat_clone.placement.tensorflow import TensorFlowBackend, assign_tf
from compat_clone.placement.torch import TorchBackend

__all__ = ["Placement", "scope", "assign_keras3", "assign_tf", "fresh_copy_keras3"]


# -- which backend ---------------------------------------------------------------

_BACKENDS: Dict[str, Callable[[], PlacementBackend]] = {
    "tensorflow": TensorFlowBackend,
    "jax": JaxBackend,
    "torch": TorchBackend,
    "numpy": NumpyBackend,
}


def _backend_for(name: Optional[str]) -> Optional[PlacementBackend]:
    """The placement backend of the Keras backend `name`, or None where placement has none.

    The one place a backend is chosen. Choosing imports no framework: a
    backend finds its framework in `sys.modules` when it is used.
    """
    make = _BACKENDS.get(name or "")
    return None if make is None else make()


@contextlib.contextmanager
def scope(model: Any, device: Any, backend: Optional[str]) -> Iterator[Placement]:
    """Creates the clone's variables where the source's are, or on `device`.

    Args:
        model: the source model.
        device: None (the source's placement), a device string of the
            backend, a framework device object, or (TensorFlow) a
            `tf.distribute.Strategy`, (JAX) a `jax.sharding.Sharding`,
            (Keras 3) a `keras.distribution.Distribution`.
        backend: the name of the placement backend (the family registry's
            `placement_backend`), or None where the family places its own
            variables (standalone Keras 2).

    Yields:
        The resolved `Placement`; call its `finish(clone, layer_map)` before
        leaving the scope.

    Raises:
        DeviceNotFoundError: `device` does not exist; raised before anything
            is built.
    """
    chosen = _backend_for(backend)
    placement = Placement("unchanged") if chosen is None else chosen.resolve(model, device)
    with placement.context():
        yield placement


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
    # Another Keras 3 backend (none of the four): the generic copy through
    # each target's `assign`, as on NumPy.
    backend = _backend_for(_keras3_backend(pairs[0][1])) or NumpyBackend()
    if tau != 1.0:
        backend.blend(pairs, tau)
        return
    backend.assign(pairs)


def fresh_copy_keras3(backend: Optional[str]) -> Optional[Callable[[Any], Any]]:
    """`fn(variable)`: a new buffer holding the variable's value where it lives (JAX, torch), else None."""
    chosen = _backend_for(backend)
    return None if chosen is None else chosen.fresh_copier()
