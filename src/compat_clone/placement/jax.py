"""JAX placement: default device during the build, then each variable on its source's sharding; batched device copies."""

from __future__ import annotations

import re
import sys
from typing import Any, Callable, Dict, List, Optional, Set, Tuple

from compat_clone.placement._common import (
    PairCache,
    Pairs,
    Placement,
    device_not_found,
    framework,
    model_variables,
    most_common,
    pair_variables,
    rebind,
    stored,
)

__all__ = ["JaxBackend"]


class JaxBackend:
    """JAX (Keras 3 on JAX): a `PlacementBackend`.

    The clone is built under `jax.default_device`, then each variable is put
    on its source's sharding (or the given device's); copies and blends are
    batched device-to-device operations, written into the targets' donated
    buffers where nothing else holds them.
    """

    def resolve(self, model: Any, device: Any) -> Placement:
        jax = framework("jax")
        keras_distribution = _keras_distribution_class()
        if keras_distribution is not None and isinstance(device, keras_distribution):
            given: Any = device
            return Placement(f"the given {type(given).__name__}", given.scope)
        if device is None:
            sources = [v for v in model_variables(model) if hasattr(getattr(v, "_value", None), "sharding")]
            singles = [_jax_single_device(jax, v._value.sharding) for v in sources]
            home = most_common([d for d in singles if d is not None])

            def finish_like_source(clone: Any, layer_map: Any) -> None:
                _jax_relayout(jax, pair_variables(model, clone, layer_map), layout_from_source=True)

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
            _jax_relayout(jax, [(sharding, v) for v in model_variables(clone)], layout_from_source=False)

        return Placement(f"{sharding}", lambda: jax.default_device(first), finish_on)

    def assign(self, pairs: Pairs) -> None:
        """Copies on the device: into the targets' own buffers from the second call on the same pairs.

        The first copy between two models makes new buffers (`device_put`): an
        in-place copy is a jitted program, compiled once per list of shapes, which
        a one-off copy would not pay back. A repeated copy (a hard target-network
        update every N steps) writes into the donated target buffers (`_in_place`):
        no allocation, and no old buffer freed, per call.
        """
        jax = framework("jax")
        values = [stored(src) for src, _ in pairs]
        owned = _owned(pairs) if _seen_before(pairs) else set()
        targets = [stored(dst) for _, dst in pairs]
        # Prepare: every copy that needs a new buffer (a target shared, on another
        # sharding, or in a first call) lands in one with the target's sharding
        # and commitment. A failure here has written nothing.
        donated, group = _donation_group(values, targets, owned)
        fresh = [i for i in range(len(pairs)) if i not in group]
        new: List[Any] = list(targets)
        for i, value in zip(fresh, _jax_put_like(jax, [values[i] for i in fresh], [targets[i] for i in fresh])):
            new[i] = value
        for i, value in zip(donated, _in_place(jax, _copy_jit(jax), [targets[i] for i in donated], [values[i] for i in donated])):
            new[i] = value
        # Commit: rebinding arrays of the exact shape, dtype and sharding.
        for (_, dst), value in zip(pairs, new):
            rebind(dst, value)

    def blend(self, pairs: Pairs, tau: float) -> None:
        """Soft update: one jitted call per device set, in place where the target's buffer may be donated.

        Floating-point (and complex) targets become `tau * src + (1 - tau) * dst`,
        computed where the target lives (sources on another sharding are moved
        there first, device to device); every other target (counters, seed
        states) is copied exactly. A target only its variable holds (`_owned`)
        is donated: the blend is written into its buffer, no new allocation per
        step. Every other new array is made before the donated call and before
        the first target is rebound.
        """
        jax = framework("jax")
        jnp = framework("jax.numpy")
        owned = _owned(pairs)
        srcs = [stored(src) for src, _ in pairs]
        dsts = [stored(dst) for _, dst in pairs]
        # Prepare: sources onto their target's sharding, where they differ.
        moved = [i for i, (s, d) in enumerate(zip(srcs, dsts)) if s.sharding != d.sharding]
        for i, value in zip(moved, _jax_put(jax, [srcs[i] for i in moved], [dsts[i].sharding for i in moved])):
            srcs[i] = value
        inexact = {i for i, d in enumerate(dsts) if jnp.issubdtype(d.dtype, jnp.inexact)}
        donated, in_place = _donation_group(srcs, dsts, owned & inexact)
        groups: Dict[Any, List[int]] = {}
        for i in sorted(inexact - in_place):
            groups.setdefault(frozenset(dsts[i].sharding.device_set), []).append(i)
        new: List[Any] = list(dsts)
        exact = [i for i in range(len(dsts)) if i not in inexact]
        for i, value in zip(exact, _jax_put_like(jax, [srcs[i] for i in exact], [dsts[i] for i in exact])):
            new[i] = value
        blend = _blend_jit(jax)
        home = frozenset(dsts[donated[0]].sharding.device_set) if donated else None
        for key in set(groups) | ({home} if home is not None else set()):
            shared, mine = groups.get(key, []), donated if key == home else []
            owned_out, shared_out = blend(
                tau, [dsts[i] for i in mine], [srcs[i] for i in mine], [dsts[i] for i in shared], [srcs[i] for i in shared]
            )
            for i, value in zip(mine + shared, list(owned_out) + list(shared_out)):
                new[i] = value
        # Commit: rebinding arrays of the exact shape, dtype and sharding.
        for (_, dst), value in zip(pairs, new):
            rebind(dst, value)

    def fresh_copier(self) -> Optional[Callable[[Any], Any]]:
        return _fresh_copy_jax


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
        raise device_not_found(device, "JAX", available, hint=" (a string such as 'cpu:0' or a jax.Device)")
    text = device.strip().lower().lstrip("/")
    text = text.rsplit("device:", 1)[-1]
    kind, _, index = text.partition(":")
    kind = {"cuda": "gpu", "rocm": "gpu"}.get(kind, kind)
    if not re.fullmatch(r"[a-z]+", kind) or not re.fullmatch(r"\d*", index):
        raise device_not_found(device, "JAX", available)
    try:
        candidates = list(jax.devices(kind))
    except RuntimeError:  # that platform is not present
        raise device_not_found(device, "JAX", available) from None
    wanted = int(index) if index else None
    for dev in candidates:
        if wanted is None or dev.id == wanted:
            return dev
    raise device_not_found(device, "JAX", available)


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
        jnp = framework("jax.numpy")
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
    jax = framework("jax")
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
    keep = [
        i
        for i, (v, t) in enumerate(zip(values, targets))
        if not getattr(t, "committed", True) and not getattr(v, "committed", True) and v.sharding == t.sharding
    ]
    kept = set(keep)
    move = [i for i in range(len(values)) if i not in kept]
    if keep:
        try:
            copies = list(jax.device_put([values[i] for i in keep], may_alias=False))
        except TypeError:  # jax < 0.4.31 has no `may_alias`
            jnp = framework("jax.numpy")
            copies = [jnp.array(values[i], copy=True) for i in keep]
        for i, value in zip(keep, copies):
            out[i] = value
    for i, value in zip(move, _jax_put(jax, [values[i] for i in move], [targets[i].sharding for i in move])):
        out[i] = value
    return out


# -- in place: donated buffers --------------------------------------------------------

_SEEN = PairCache()  # the pairs copied before: their next copy goes in place
_COPY_JIT: List[Callable[..., Any]] = []  # the one jitted in-place copy, made on first use


def _seen_before(pairs: Pairs) -> bool:
    """Whether these exact pairs were copied before (counted per list of pairs, weakly: `PairCache`)."""
    calls = _SEEN.get(pairs, lambda: [0])
    calls[0] += 1
    return bool(calls[0] > 1)


class _Holder:
    _value: Any = None


def _refs(holder: Any) -> int:
    return sys.getrefcount(holder._value)


def _sole_count() -> int:
    """`_refs` of an object that only one attribute holds (calibrated: the count differs between Pythons)."""
    holder = _Holder()
    holder._value = object()
    return _refs(holder)


def _owned(pairs: Pairs) -> Set[int]:
    """Indices of the targets whose array nothing but their variable holds: those buffers may be donated.

    Donating deletes the array: any other holder (a source variable sharing
    it, a second target variable, the caller's own reference, a trainer's
    state) would find it deleted. A holder outside Python (a NumPy view of
    the buffer) makes JAX decline the donation and copy instead. Read before
    this call's own lists hold the arrays. CPython only (`sys.getrefcount`).
    """
    if not hasattr(sys, "getrefcount"):  # pragma: no cover - PyPy
        return set()
    sole = _sole_count()
    return {i for i, (_, dst) in enumerate(pairs) if "_value" in vars(dst) and _refs(dst) == sole}


def _donation_group(values: List[Any], targets: List[Any], owned: Set[int]) -> Tuple[List[int], Set[int]]:
    """The targets written in place: owned, on one device, each source already there with the same commitment.

    One jitted call on one device writes them all (a donated call that
    failed half way would leave deleted arrays behind): the device holding
    the most owned targets. A target array read by the call as a source is
    not donated (donating it would delete what the other pair reads; a
    variable paired twice holds the same array twice, no longer owned). An
    uncommitted target keeps its commitment only where its source is
    uncommitted too (a jitted result is committed if any argument is): jit
    caches key on commitment.
    """
    jax = framework("jax")
    by_device: Dict[Any, List[int]] = {}
    read = {id(v) for v in values}  # a target that is also a source of this call (`copy-shared-variable`)
    for i in sorted(owned):
        d, s = targets[i], values[i]
        if id(d) in read or not isinstance(d.sharding, jax.sharding.SingleDeviceSharding) or s.sharding != d.sharding:
            continue
        if not jax.numpy.issubdtype(d.dtype, jax.numpy.number) and d.dtype != bool:
            continue  # key data and other extended dtypes: copied into new buffers
        if getattr(s, "committed", True) and not getattr(d, "committed", True):
            continue
        by_device.setdefault((next(iter(d.sharding.device_set)), getattr(d, "committed", True)), []).append(i)
    if not by_device:
        return [], set()
    chosen = max(by_device.values(), key=len)
    return chosen, set(chosen)


def _copy_jit(jax: Any) -> Callable[..., Any]:
    """`jax.jit` of a copy of `srcs` into the donated `dsts` (`keep_unused`: a dropped argument is not donated)."""
    if not _COPY_JIT:

        def copy(dsts: List[Any], srcs: List[Any]) -> List[Any]:
            # The barrier keeps each result from being the source array itself.
            return list(jax.lax.optimization_barrier(srcs))

        _COPY_JIT.append(jax.jit(copy, donate_argnums=0, keep_unused=True))
    return _COPY_JIT[0]


def _in_place(jax: Any, fn: Callable[..., Any], dsts: List[Any], srcs: List[Any]) -> List[Any]:
    """`fn(dsts, srcs)` with `dsts` donated: results written into the targets' buffers."""
    if not dsts:
        return []
    out = list(fn(dsts, srcs))
    # Never the source itself (that sharing is what `fit`'s own donation would break).
    return [_jax_put(jax, [o], [o.sharding])[0] if o is s else o for o, s in zip(out, srcs)]


# -- soft updates: tau * source + (1 - tau) * target --------------------------------

_JITTED: List[Callable[..., Any]] = []  # the one jitted blend, made on first use


def _blend_jit(jax: Any) -> Callable[..., Any]:
    """`jax.jit` of the blend over lists of arrays; `tau` is traced, so one trace serves every value.

    `owned` targets are donated: their blend is written into their own
    buffers. `shared` ones get new buffers.
    """
    if not _JITTED:
        jnp = framework("jax.numpy")

        def mix(tau: Any, srcs: List[Any], dsts: List[Any]) -> List[Any]:
            out = []
            for s, d in zip(srcs, dsts):
                wide = jnp.promote_types(d.dtype, jnp.float32)  # float16 / bfloat16 blended in float32
                t = d.astype(wide)
                out.append((t + tau * (s.astype(wide) - t)).astype(d.dtype))
            return out

        def blend(
            tau: Any, owned: List[Any], owned_srcs: List[Any], shared: List[Any], shared_srcs: List[Any]
        ) -> Tuple[List[Any], List[Any]]:
            return mix(tau, owned_srcs, owned), mix(tau, shared_srcs, shared)

        _JITTED.append(jax.jit(blend, donate_argnums=1))
    return _JITTED[0]
