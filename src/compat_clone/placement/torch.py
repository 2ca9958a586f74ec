"""torch placement: Keras's torch device scope during the build, strays moved after; fused in-place copies."""

from __future__ import annotations

import re
import sys
from typing import Any, Callable, ContextManager, Dict, List, Optional, Set, Tuple

from compat_clone.placement._common import (
    Pairs,
    Placement,
    device_not_found,
    framework,
    model_variables,
    most_common,
    pair_variables,
    stored,
)

__all__ = ["TorchBackend"]


class TorchBackend:
    """torch (Keras 3 on torch): a `PlacementBackend`.

    The clone is built under Keras's torch device scope, and variables left on
    another device are moved after; copies and blends run in place under
    `no_grad` (`copy_`, `_foreach_copy_`, `_foreach_lerp_`), sources on
    another device staged on the target's first.
    """

    def resolve(self, model: Any, device: Any) -> Placement:
        torch = framework("torch")
        if device is None:
            devices = [str(v._value.device) for v in model_variables(model) if hasattr(getattr(v, "_value", None), "device")]
            home = most_common(devices)

            def finish_like_source(clone: Any, layer_map: Any) -> None:
                _torch_move(pair_variables(model, clone, layer_map))

            enter = (lambda: _keras_device_scope(home)) if home else None
            return Placement(f"the source's device ({home})", enter, finish_like_source)
        name = _torch_device(torch, device)
        target = torch.device(name)

        def finish_on(clone: Any, layer_map: Any) -> None:
            _torch_move([(target, v) for v in model_variables(clone)])

        return Placement(f"device {name}", lambda: _keras_device_scope(name), finish_on)

    def assign(self, pairs: Pairs) -> None:
        torch = framework("torch")
        with torch.no_grad():
            # Prepare: stage cross-device sources on the target device (direct
            # device-to-device transfer). Nothing is written to a target yet.
            srcs, dsts, written = _tensors(pairs)
            for i, (s, d) in enumerate(zip(srcs, dsts)):
                if s.device != d.device:
                    srcs[i] = s.to(d.device)
                elif s.data_ptr() in written:  # `copy-shared-variable`: read before any write
                    srcs[i] = s.clone()
            # Commit: same-device copies into buffers of the same shape and dtype.
            _copy_into(torch, dsts, srcs)

    def blend(self, pairs: Pairs, tau: float) -> None:
        """Soft update in place: one `torch._foreach_lerp_` per (device, dtype) group.

        Floating-point (and complex) targets become `tau * src + (1 - tau) * dst`
        on the target's device; every other target (counters, seed states) is
        copied exactly (`_foreach_copy_`). Sources on another device are staged
        on the target's device before anything is written.
        """
        torch = framework("torch")
        groups: Dict[Tuple[Any, Any, bool], Tuple[List[Any], List[Any]]] = {}
        with torch.no_grad():
            # Prepare: group by (device, dtype, blended) and stage cross-device
            # sources (device to device). Nothing is written to a target yet.
            srcs, dsts, written = _tensors(pairs)
            for s, d in zip(srcs, dsts):
                if s.device != d.device:
                    s = s.to(d.device)
                elif s.data_ptr() in written:  # `copy-shared-variable`: read before any write
                    s = s.clone()
                inexact = d.is_floating_point() or d.is_complex()
                group = groups.setdefault((d.device, d.dtype, inexact), ([], []))
                group[0].append(d)
                group[1].append(s)
            # Commit: in-place kernels into buffers of the exact shape, dtype and device.
            lerp = getattr(torch, "_foreach_lerp_", None)  # torch 2.0+
            copy = getattr(torch, "_foreach_copy_", None)  # torch 2.1+
            for (_, _, inexact), (dsts, srcs) in groups.items():
                if inexact and lerp is not None:
                    lerp(dsts, srcs, tau)
                elif not inexact and copy is not None:
                    copy(dsts, srcs)
                else:  # pragma: no cover - torch < 2.1
                    for d, s in zip(dsts, srcs):
                        if inexact:
                            d.lerp_(s, tau)
                        else:
                            d.copy_(s)

    def fresh_copier(self) -> Optional[Callable[[Any], Any]]:
        return _fresh_copy_torch


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
        raise device_not_found(device, "torch", available, hint=" (a string such as 'cpu' or 'cuda:0')")
    try:
        parsed = torch.device(text)
    except RuntimeError:
        raise device_not_found(device, "torch", available) from None
    if parsed.type == "cpu":
        if parsed.index not in (None, 0):
            raise device_not_found(device, "torch", available)
        return "cpu"
    name = f"{parsed.type}:{parsed.index or 0}"
    if name not in available and not (parsed.type == "mps" and "mps" in available):
        raise device_not_found(device, "torch", available)
    return "mps" if parsed.type == "mps" else name


def _keras_device_scope(name: str) -> ContextManager[Any]:
    # The torch backend's `device_scope(name)` sets the device its variables
    # are created on (Keras 3.0-3.15.1; `keras.device` fronts it since 3.1).
    core = sys.modules.get("keras.src.backend.torch.core")
    scope_fn: Any = getattr(core, "device_scope", None) or framework("keras").device
    return scope_fn(name)  # type: ignore[no-any-return]


def _torch_move(pairs: List[Tuple[Any, Any]]) -> None:
    """Moves clone variables to a torch device (only strays; device to device)."""
    torch = framework("torch")
    with torch.no_grad():
        for target, variable in pairs:
            param = getattr(variable, "_value", None)
            if param is None or not hasattr(param, "device"):
                continue
            dev = target if isinstance(target, torch.device) else getattr(getattr(target, "_value", None), "device", None)
            if dev is not None and param.device != dev:
                param.data = param.data.to(dev)


def _fresh_copy_torch(variable: Any) -> Any:
    """A copy of the variable's tensor on its device (a clone's first value)."""
    torch = framework("torch")
    with torch.no_grad():
        return stored(variable).detach().clone()


def _tensors(pairs: Pairs) -> Tuple[List[Any], List[Any], Set[int]]:
    """The stored (source, target) tensors, each read once, and the targets' data pointers.

    A source whose storage is a target's is snapshotted before the writes.
    """
    srcs = [stored(src).detach() for src, _ in pairs]
    dsts = [stored(dst) for _, dst in pairs]
    return srcs, dsts, {d.data_ptr() for d in dsts if d.numel()}


# A tensor this large is copied on its own (`copy_`: a cudaMemcpy on a GPU, a
# parallel memcpy on the CPU); smaller ones in one `_foreach_copy_`, whose
# single launch wins where launches cost more than the bytes (measured on an
# H100: `_foreach_copy_` of 4.3 GB in Dense(16384) kernels took 1.27x the time
# of `clone()` per tensor).
_MEMCPY_BYTES = 1 << 24


def _copy_into(torch: Any, dsts: List[Any], srcs: List[Any]) -> None:
    """`d.copy_(s)` for every pair: large tensors one by one, the rest batched per device."""
    foreach_copy: Any = getattr(torch, "_foreach_copy_", None)  # torch 2.1+
    by_device: Dict[Any, Tuple[List[Any], List[Any]]] = {}
    for d, s in zip(dsts, srcs):
        if foreach_copy is None or d.numel() * d.element_size() >= _MEMCPY_BYTES:
            d.copy_(s)
            continue
        group = by_device.setdefault(d.device, ([], []))
        group[0].append(d)
        group[1].append(s)
    for group_dsts, group_srcs in by_device.values():
        foreach_copy(group_dsts, group_srcs)
