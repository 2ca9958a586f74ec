"""GPU mode: Keras 3 on one GPU, one backend per process (`KERAS_BACKEND`), `--device gpu:0`.

Needs only Keras 3 and its backend (PyTorch, JAX or TensorFlow): nothing here
imports another framework. Where the backend sees no GPU, the case says so and
measures nothing. Wall times: device work is awaited before the clock stops.

* ``clone``: native vs compat_clone clone of a chain of Dense(64) layers placed
  on the GPU, interleaved pairs.
* ``copy`` (torch, JAX): `copy_weights` vs a raw device-to-device copy of the
  same tensors.
* ``soft`` (torch, JAX): `copy_weights(tau=0.01)` vs the fused raw op
  (`torch._foreach_lerp_`; one jitted JAX blend).
* ``first clone`` (JAX): the first clone in a fresh process, native vs
  compat_clone (tracing and compilation included), one process per clone.
"""

from __future__ import annotations

import inspect
import time
from typing import Any, Callable, Dict, List, Optional

import compat_clone
from cases_weights import COPY_WIDTH, TAU, _built, _probe
from common import Ctx, interleave


def card(backend: str) -> Optional[str]:
    """The GPU's name as the backend sees it; None when it sees none."""
    if backend == "torch":
        import torch

        return torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    if backend == "jax":
        import jax

        gpus = [d for d in jax.devices() if d.platform == "gpu"]
        return str(gpus[0].device_kind) if gpus else None
    import tensorflow as tf

    gpus = tf.config.list_physical_devices("GPU")
    return str(tf.config.experimental.get_device_details(gpus[0]).get("device_name", gpus[0].name)) if gpus else None


def _fused_blend(ctx: Ctx, source: Any, target: Any) -> Callable[[], Any]:
    """The blend as one fused framework op on the target's tensors: the floor of a soft update."""
    src, dst = ctx.ops.tensors(source), ctx.ops.tensors(target)
    if ctx.K.backend.backend() == "torch":
        import torch

        def lerp() -> Any:
            with torch.no_grad():
                torch._foreach_lerp_(dst, src, TAU)
            return ctx.ops.settle(target)

        return lerp
    import jax

    blend = jax.jit(lambda s, t: [ti + TAU * (si - ti) for si, ti in zip(s, t)])
    return lambda: jax.block_until_ready(blend(src, dst))


def _weights_rows(ctx: Ctx) -> List[Dict[str, Any]]:
    source = _built(ctx, max(1, round(ctx.plan.copy_mb * 1e6 / ((COPY_WIDTH + 1) * COPY_WIDTH * 4))), COPY_WIDTH)
    with ctx.placed():
        target = compat_clone.clone_model(source)
    settle = ctx.ops.settle
    copy = {"copy_weights": lambda: settle(compat_clone.copy_weights(source, target)),
            "raw": ctx.ops.raw_copy(source, target)}
    rows = [{"what": "copy", "times": interleave(copy, ctx.plan.copy_reps)}]
    if "tau" not in inspect.signature(compat_clone.copy_weights).parameters:
        return rows + [{"what": "soft", "available": False, "why": "compat_clone.copy_weights has no `tau`"}]
    soft = {"tau": lambda: settle(compat_clone.copy_weights(source, target, tau=TAU)),
            "fused": _fused_blend(ctx, source, target)}
    return rows + [{"what": "soft", "available": True, "times": interleave(soft, ctx.plan.copy_reps)}]


def gpu(ctx: Ctx) -> List[Dict[str, Any]]:
    backend = ctx.K.backend.backend()
    name = card(backend)
    if name is None or ctx.device is None:
        return [{"what": "skipped", "why": f"no GPU visible to {backend}" if name is None else "no --device"}]
    box = {"model": _built(ctx, ctx.plan.gpu_chain, 64)}

    def clone(fn: Callable[[Any], Any]) -> Callable[[], Any]:
        def run() -> Any:
            with ctx.placed():
                return ctx.ops.settle(fn(box["model"]))

        return run

    pairs = interleave({"native": clone(ctx.K.models.clone_model), "compat": clone(compat_clone.clone_model)},
                       max(6, 2 * ctx.plan.pairs))
    rows = [{"what": "clone", "layers": ctx.plan.gpu_chain, "times": pairs}]
    if backend in ("torch", "jax"):
        rows += _weights_rows(ctx)
    if backend == "jax":
        firsts: Dict[str, List[float]] = {"native": [], "compat": []}
        for _ in range(3):
            for way in firsts:
                probe = _probe(ctx, f"first-clone:{way}", ["--device", ctx.device])
                if "error" in probe:
                    raise RuntimeError(f"the first-clone probe failed: {probe['error']}")
                firsts[way].append(probe["seconds"])
        rows.append({"what": "first clone", "seconds": firsts})
    return [dict(row, card=name) for row in rows]


def first_clone_probe(ctx: Ctx, way: str) -> Dict[str, Any]:
    """In a fresh process: the wall time of the very first clone of the Dense(64) chain."""
    model = _built(ctx, ctx.plan.gpu_chain, 64)
    fn = compat_clone.clone_model if way == "compat" else ctx.K.models.clone_model
    start = time.perf_counter()
    with ctx.placed():
        clone = fn(model)
    ctx.ops.settle(clone)
    return {"seconds": time.perf_counter() - start, "layers": len(clone.layers)}

