"""GPU mode: Keras 3 on one GPU, one backend per process (`KERAS_BACKEND`), `--device gpu:0`.

Needs only Keras 3 and its backend (PyTorch, JAX or TensorFlow): nothing here
imports another framework. Where the backend sees no GPU, the case says so and
measures nothing. Wall times: device work is awaited before the clock stops.

* ``clone``: native vs compat_clone clone of a chain of Dense(64) layers placed
  on the GPU, interleaved pairs.
* ``copy`` (torch, JAX): `copy_weights` vs the fastest raw device-to-device
  copy of the same tensors (`Ops.raw_copy`: torch `copy_` per tensor, a
  cudaMemcpy; JAX `device_put(may_alias=False)`), on a model of >= 4 GB
  (`Plan.gpu_heavy_layers` x Dense(`gpu_heavy_width`)).
* ``soft`` (torch, JAX): `copy_weights(tau=0.005)` on that model vs the fastest
  raw blend in place (`Ops.raw_blend`: `torch._foreach_lerp_`; one jitted JAX
  blend with the target's arrays donated). Each row names its raw op.
* ``clone with weights`` (torch, JAX): `clone_model(m, copy_weights=True)` of
  that model vs the raw copy into new buffers and vs the native clone (layers
  built and initialized on the GPU, no weights copied); the host's peak
  resident memory while compat_clone clones (a round trip through the host
  would hold the weights there), and whether the clone is bit for bit the source.
* ``placement`` (torch, JAX): where clones land: a clone of a source built on
  the CPU (compat_clone and native side by side), `device=` the GPU from a CPU
  source and `device="cpu"` from a GPU source, a copy across the two.
* ``first clone`` (JAX): the first clone in a fresh process, native vs
  compat_clone (tracing and compilation included), one process per clone.
"""

from __future__ import annotations

import inspect
import time
from typing import Any, Callable, Dict, List, Optional

from cases_weights import _built, _nbytes, _probe, _same
from common import Ctx, dense_chain, interleave, peak_rss, rss

import compat_clone

GPU_TAU = 0.005  # the soft update's tau on the GPU (a DQN / DDPG target network's)


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


def _weights_rows(ctx: Ctx) -> List[Dict[str, Any]]:
    plan, settle = ctx.plan, ctx.ops.settle
    source = _built(ctx, plan.gpu_heavy_layers, plan.gpu_heavy_width)
    size = {"mb": _nbytes(source) / 1e6, "layers": plan.gpu_heavy_layers, "width": plan.gpu_heavy_width}
    rows = [dict(row, **size) for row in _copy_rows(ctx, source)]  # its target is freed on return
    ways = {
        "compat": lambda: settle(compat_clone.clone_model(source, copy_weights=True)),
        "raw": ctx.ops.raw_copy(source),
        "native": lambda: settle(ctx.K.models.clone_model(source)),
    }
    times = interleave(ways, plan.gpu_reps)
    before = rss()
    clone, peak = peak_rss(ways["compat"])
    rows.append(
        {
            "what": "clone with weights",
            **size,
            "times": times,
            "host_mb": max(0, peak - before) / 1e6,
            "exact": _equal(ctx, source, clone),
            "device": ctx.ops.where(clone),
            "raw_op": ctx.ops.raw_copy_op(False),
        }
    )
    return rows


def _copy_rows(ctx: Ctx, source: Any) -> List[Dict[str, Any]]:
    """`copy_weights` and the soft update into a clone of `source`, each against its raw op."""
    settle, reps = ctx.ops.settle, ctx.plan.gpu_reps
    with ctx.placed():
        target = compat_clone.clone_model(source)
    copy = {"copy_weights": lambda: settle(compat_clone.copy_weights(source, target)), "raw": ctx.ops.raw_copy(source, target)}
    rows = [
        {
            "what": "copy",
            "times": interleave(copy, reps),
            "exact": _equal(ctx, source, target),
            "raw_op": ctx.ops.raw_copy_op(True),
        }
    ]
    fused = ctx.ops.raw_blend(source, target, GPU_TAU)
    if "tau" not in inspect.signature(compat_clone.copy_weights).parameters or fused is None:
        return rows + [
            {
                "what": "soft",
                "available": False,
                "why": "compat_clone.copy_weights has no `tau`" if fused else "no fused blend on this backend",
            }
        ]
    soft = {"tau": lambda: settle(compat_clone.copy_weights(source, target, tau=GPU_TAU)), "fused": fused}
    return rows + [
        {"what": "soft", "available": True, "tau": GPU_TAU, "times": interleave(soft, reps), "raw_op": ctx.ops.raw_blend_op()}
    ]


def _equal(ctx: Ctx, a: Any, b: Any) -> bool:
    """Every variable of `a` equals `b`'s, compared on the device (no copy to the host)."""
    ops = ctx.K.ops
    return len(a.weights) == len(b.weights) and all(
        bool(ops.all(ops.equal(x.value, y.value))) for x, y in zip(a.weights, b.weights)
    )


def platform(tensor: Any) -> str:
    """Where a torch tensor or a JAX array lives: `gpu` or `cpu`."""
    if hasattr(tensor, "devices"):  # a JAX array
        return ",".join(sorted({d.platform for d in tensor.devices()}))
    return "gpu" if tensor.device.type == "cuda" else str(tensor.device.type)


def _platforms(model: Any) -> str:
    return ",".join(sorted({platform(v.value) for v in model.weights}))


def placement(ctx: Ctx) -> Dict[str, Any]:
    """Where clones land, by way of making them, against where they should (`expected`)."""
    K = ctx.K
    with K.device("cpu:0"):
        on_cpu = _built_small(K)
    with ctx.placed():
        on_gpu = _built_small(K)
    with K.device("cpu:0"):
        cpu_target = compat_clone.clone_model(on_cpu)
    compat_clone.copy_weights(on_gpu, cpu_target)
    checks = {
        "source built on the CPU": (_platforms(on_cpu), "cpu"),
        "source built on the GPU": (_platforms(on_gpu), "gpu"),
        "compat clone of the CPU source": (_platforms(compat_clone.clone_model(on_cpu, copy_weights=True)), "cpu"),
        "native clone of the CPU source (not judged: shown beside compat_clone's)": (
            _platforms(K.models.clone_model(on_cpu)),
            None,
        ),
        "compat clone of the GPU source": (_platforms(compat_clone.clone_model(on_gpu, copy_weights=True)), "gpu"),
        f"compat clone of the CPU source, device={ctx.device!r}": (
            _platforms(compat_clone.clone_model(on_cpu, device=ctx.device, copy_weights=True)),
            "gpu",
        ),
        "compat clone of the GPU source, device='cpu'": (
            _platforms(compat_clone.clone_model(on_gpu, device="cpu", copy_weights=True)),
            "cpu",
        ),
        "copy_weights GPU source -> CPU target": (_platforms(cpu_target), "cpu"),
    }
    records = [{"way": way, "found": found, "expected": want} for way, (found, want) in checks.items()]
    return {"what": "placement", "records": records, "copy_exact": _same(on_gpu, cpu_target)}


def _built_small(K: Any) -> Any:
    return dense_chain(K, 3, 32)


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

    pairs = interleave(
        {"native": clone(ctx.K.models.clone_model), "compat": clone(compat_clone.clone_model)}, max(6, 2 * ctx.plan.pairs)
    )
    rows = [{"what": "clone", "layers": ctx.plan.gpu_chain, "times": pairs}]
    if backend in ("torch", "jax"):
        rows += _weights_rows(ctx) + [placement(ctx)]
    if backend == "jax":
        firsts: Dict[str, List[float]] = {"native": [], "compat": []}
        for _ in range(5):
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
