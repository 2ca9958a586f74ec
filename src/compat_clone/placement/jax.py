"""JAX placement: default device during the build, then each variable on its source's sharding; batched device copies."""

from __future__ import annotations

import re
import sys
from typing import Any, Callable, Dict, List, Optional, Tuple

from compat_clone.placement._common import (Pairs, Placement, _fw, _model_variables, _most_common, _not_found,
                                            _pair_variables, rebind, stored)

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
        # Entered only where it changes something: JAX keys its jit caches on
        # the default device, so entering the one in force already would
        # compile again every op the clone's build runs.
        enter = (lambda: jax.default_device(home)) if home is not None and home != _default_device(jax) else None
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


def _default_device(jax: Any) -> Any:
    """The device JAX puts new arrays on now (`jax.default_device` / its config, else the first device)."""
    configured = getattr(jax.config, "jax_default_device", None)
    if configured is not None:
        return configured
    devices = list(jax.devices())
    return devices[0] if devices else None


def _keras_distribution_class() -> Optional[type]:
    module = sys.modules.get("keras.src.distribution.distribution_lib")
    return getattr(module, "Distribution", None) if module is not None else None



def _fresh_copy_jax(variable: Any) -> Any:
    """A device copy of the variable's array, on its sharding, committed as it is (a clone's first value)."""
    jax = _fw("jax")
    value = stored(variable)
    return _jax_put_like(jax, [value], [value])[0]


def _jax_put_like(jax: Any, values: List[Any], targets: List[Any]) -> List[Any]:
    """Copies of `values` on the shardings of `targets`, committed where each target is.

    An uncommitted array (made on the default device, as Keras makes its
    variables) stays uncommitted when its copy needs no move: jit caches key
    on commitment, so a committed copy would retrace every jitted function
    the model had run (a compile per function, per model).
    """
    out: List[Any] = [None] * len(values)
    keep = [i for i, (v, t) in enumerate(zip(values, targets))
            if not getattr(t, "committed", True) and not getattr(v, "committed", True) and v.sharding == t.sharding]
    kept = set(keep)
    move = [i for i in range(len(values)) if i not in kept]
    if keep:
        try:
            copies = list(jax.device_put([values[i] for i in keep], may_alias=False))
        except TypeError:  # jax < 0.4.31 has no `may_alias`
            jnp = _fw("jax.numpy")
            copies = [jnp.array(values[i], copy=True) for i in keep]
        for i, value in zip(keep, copies):
            out[i] = value
    for i, value in zip(move, _jax_put(jax, [values[i] for i in move], [targets[i].sharding for i in move])):
        out[i] = value
    return out


def _assign_jax(pairs: Pairs) -> None:
    jax = _fw("jax")
    values = [stored(src) for src, _ in pairs]
    # Prepare: every copy lands in a new buffer with the target's sharding
    # (and commitment). A failure here (memory, a vanished device) has
    # written nothing.
    copies = _jax_put_like(jax, values, [stored(dst) for _, dst in pairs])
    # Commit: rebinding arrays of the exact shape, dtype and sharding.
    for (_, dst), value in zip(pairs, copies):
        rebind(dst, value)


# -- soft updates: tau * source + (1 - tau) * target --------------------------------

_JITTED: List[Callable[..., Any]] = []  # the one jitted blend, made on first use


def _blend_jit(jax: Any) -> Callable[..., Any]:
    """`jax.jit` of the blend over lists of arrays; `tau` is traced, so one trace serves every value."""
    if not _JITTED:
        jnp = _fw("jax.numpy")

        def blend(tau: Any, srcs: List[Any], dsts: List[Any]) -> List[Any]:
            out = []
            for s, d in zip(srcs, dsts):
                wide = jnp.promote_types(d.dtype, jnp.float32)  # float16 / bfloat16 blended in float32
                t = d.astype(wide)
                out.append((t + tau * (s.astype(wide) - t)).astype(d.dtype))
            return out

        _JITTED.append(jax.jit(blend))
    return _JITTED[0]


def _blend_jax(pairs: Pairs, tau: float) -> None:
    """Soft update: one jitted call per device set, results on each target's sharding.

    Floating-point (and complex) targets become `tau * src + (1 - tau) * dst`,
    computed where the target lives (sources on another sharding are moved
    there first, device to device); every other target (counters, seed
    states) is copied exactly. Every new array is made before the first
    target is rebound: a failure writes nothing.
    """
    jax = _fw("jax")
    jnp = _fw("jax.numpy")
    srcs = [stored(src) for src, _ in pairs]
    dsts = [stored(dst) for _, dst in pairs]
    # Prepare: sources onto their target's sharding, where they differ.
    moved = [i for i, (s, d) in enumerate(zip(srcs, dsts)) if s.sharding != d.sharding]
    for i, value in zip(moved, _jax_put(jax, [srcs[i] for i in moved], [dsts[i].sharding for i in moved])):
        srcs[i] = value
    groups: Dict[Any, List[int]] = {}
    exact: List[int] = []
    for i, d in enumerate(dsts):
        if jnp.issubdtype(d.dtype, jnp.inexact):
            groups.setdefault(frozenset(d.sharding.device_set), []).append(i)
        else:
            exact.append(i)
    new: List[Any] = list(dsts)
    blend = _blend_jit(jax)
    for indices in groups.values():
        for i, value in zip(indices, blend(tau, [srcs[i] for i in indices], [dsts[i] for i in indices])):
            new[i] = value
    for i, value in zip(exact, _jax_put_like(jax, [srcs[i] for i in exact], [dsts[i] for i in exact])):
        new[i] = value
    # Commit: rebinding arrays of the exact shape, dtype and sharding.
    for (_, dst), value in zip(pairs, new):
        rebind(dst, value)

