"""Weights: copy, clone of a weight-heavy model, soft update; each against its native way and a raw copy.

* ``copy``: `compat_clone.copy_weights(source, target)` vs
  `target.set_weights(source.get_weights())` vs the framework copying the same
  tensors and nothing else (`Ops.raw_copy`, the framework's fastest copy, named
  in each row: torch `copy_` per tensor, JAX `device_put`, TensorFlow `assign`
  of a tensor). Before each call the target's variables get fresh buffers of
  their own, untimed.
* ``heavy``: on a model of >= 500 MB (8 Dense(4096)), `clone_model(m,
  copy_weights=True)` vs native `clone_model` + `set_weights(get_weights())` vs
  native `clone_model` alone; each clone is made usable before the clock stops
  (device work awaited, standalone Keras 2's variables initialized). Peak
  resident memory of each way is measured in a fresh process of its own.
* ``soft``: `compat_clone.copy_weights(source, target, tau=0.01)` vs the NumPy
  loop over `get_weights` / `set_weights` vs one raw copy of the same bytes vs
  the framework's fastest blend in place (`Ops.raw_blend`: torch
  `_foreach_lerp_`, a JAX jitted blend with the target donated);
  where the backend gives them (`Ops.soft_references`: standalone Keras 2),
  also the floor of a blend in place and the previous two-pass blend.
"""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys
from typing import Any, Callable, Dict, List, Sequence

from common import QUICK, Ctx, dense_chain, interleave, peak_rss, rss

import compat_clone

TAU = 0.01
COPY_WIDTH = 2048  # a Dense(2048) on 2048 inputs holds 16.8 MB of float32


def _nbytes(model: Any) -> int:
    """Bytes of the model's weights (all float32 here)."""
    total = 0
    for w in model.weights:
        size = 4
        for dim in w.shape:
            size *= int(dim)
        total += size
    return total


def _built(ctx: Ctx, layers: int, width: int) -> Any:
    with ctx.placed():
        model = dense_chain(ctx.K, layers, width)
    ctx.ops.settle(model)
    return model


def _same(a: Any, b: Any) -> bool:
    import numpy as np

    return all(np.array_equal(x, y) for x, y in zip(a.get_weights(), b.get_weights()))


def copy(ctx: Ctx) -> List[Dict[str, Any]]:
    layers = max(1, round(ctx.plan.copy_mb * 1e6 / ((COPY_WIDTH + 1) * COPY_WIDTH * 4)))
    source = _built(ctx, layers, COPY_WIDTH)
    with ctx.placed():
        target = compat_clone.clone_model(source)
    ops = ctx.ops

    def get_set() -> Any:
        target.set_weights(source.get_weights())
        return ops.settle(target)

    methods = {
        "copy_weights": lambda: ops.settle(compat_clone.copy_weights(source, target)),
        "get_set": get_set,
        "raw": ops.raw_copy(source, target),
    }
    times = interleave(methods, ctx.plan.copy_reps, before_each=lambda: ops.refresh(target))
    ops.refresh(target)
    compat_clone.copy_weights(source, target)
    return [
        {
            "mb": _nbytes(source) / 1e6,
            "device": ops.where(source),
            "times": times,
            "exact": _same(source, target),
            "raw_op": ops.raw_copy_op(True),
        }
    ]


def _clone_ways(ctx: Ctx, box: Dict[str, Any]) -> Dict[str, Callable[[], Any]]:
    K, settle = ctx.K, ctx.ops.settle

    def native_get_set() -> Any:
        clone = K.models.clone_model(box["model"])
        clone.set_weights(box["model"].get_weights())
        return settle(clone)

    return {
        "compat": lambda: settle(compat_clone.clone_model(box["model"], copy_weights=True)),
        "native_get_set": native_get_set,
        "native": lambda: settle(K.models.clone_model(box["model"])),
    }


def heavy(ctx: Ctx) -> List[Dict[str, Any]]:
    plan = ctx.plan
    box: Dict[str, Any] = {}

    def build(rep: int = 0) -> None:  # standalone Keras 2: a fresh TF1 graph per rep (it keeps every clone)
        box.clear()
        ctx.fresh()
        box["model"] = _built(ctx, plan.heavy_layers, plan.heavy_width)
        box["raw"] = ctx.ops.raw_copy(box["model"])

    build()
    ways = _clone_ways(ctx, box)
    ways["raw"] = lambda: box["raw"]()
    times = interleave(ways, plan.heavy_reps, before_rep=build if ctx.family == "keras2" else None)
    clone = ways["compat"]()
    row = {
        "mb": _nbytes(box["model"]) / 1e6,
        "layers": plan.heavy_layers,
        "width": plan.heavy_width,
        "times": times,
        "exact": _same(box["model"], clone),
        "raw_op": ctx.ops.raw_copy_op(False),
    }
    del clone
    box.clear()
    ctx.fresh()
    row["memory"] = {way: _probe(ctx, f"memory:{way}") for way in ("compat", "native_get_set")}
    return [row]


def _probe(ctx: Ctx, what: str, extra: Sequence[str] = ()) -> Dict[str, Any]:
    """Runs `bench/worker.py --probe WHAT` in a fresh interpreter of this environment."""
    cmd = [
        sys.executable,
        os.path.join(os.path.dirname(__file__), "worker.py"),
        "--probe",
        what,
        "--family",
        ctx.family,
        *extra,
    ] + (["--quick"] if ctx.plan == QUICK else [])
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    if out.returncode != 0:
        lines = out.stderr.strip().splitlines()
        return {"error": lines[-1] if lines else f"exit {out.returncode}"}
    result: Dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def memory_probe(ctx: Ctx, way: str) -> Dict[str, Any]:
    """In a fresh process: resident memory with the source built, and its peak while one clone is made."""
    box = {"model": _built(ctx, 1, 64)}
    ways = _clone_ways(ctx, box)
    ways[way]()  # warm-up: code loaded, caches filled
    box["model"] = _built(ctx, ctx.plan.heavy_layers, ctx.plan.heavy_width)
    before = rss()
    clone, peak = peak_rss(ways[way])
    return {"before": before, "peak": peak, "after": rss(), "weights": _nbytes(clone)}


def soft(ctx: Ctx) -> List[Dict[str, Any]]:
    if "tau" not in inspect.signature(compat_clone.copy_weights).parameters:
        return [{"available": False, "why": "compat_clone.copy_weights has no `tau` argument in this version"}]
    import numpy as np

    source = _built(ctx, ctx.plan.heavy_layers, ctx.plan.heavy_width)
    with ctx.placed():
        target = compat_clone.clone_model(source)
    ctx.ops.settle(target)
    s0, t0 = source.get_weights()[0], target.get_weights()[0]
    try:
        compat_clone.copy_weights(source, target, tau=TAU)
    except (TypeError, NotImplementedError, compat_clone.CompatCloneError) as exc:
        return [{"available": False, "why": f"{type(exc).__name__}: {exc}"}]
    exact = bool(np.allclose(target.get_weights()[0], TAU * s0 + (1 - TAU) * t0, rtol=1e-5, atol=1e-6))

    def numpy_loop() -> None:
        target.set_weights([TAU * s + (1 - TAU) * t for s, t in zip(source.get_weights(), target.get_weights())])

    into = ctx.ops.copies_into_target
    methods = {
        "tau": lambda: ctx.ops.settle(compat_clone.copy_weights(source, target, tau=TAU)),
        "raw": ctx.ops.raw_copy(source, target if into else None),
        **ctx.ops.soft_references(source, target, TAU),
    }
    fused = ctx.ops.raw_blend(source, target, TAU)
    if fused is not None:
        methods["fused"] = fused
    times = interleave(methods, ctx.plan.soft_reps)
    # The NumPy loop is 10-100x slower than the rest: fewer runs, on their own.
    times.update(interleave({"numpy_loop": numpy_loop}, ctx.plan.heavy_reps))
    return [
        {
            "available": True,
            "mb": _nbytes(source) / 1e6,
            "times": times,
            "exact": exact,
            "raw_op": ctx.ops.raw_copy_op(into),
            **({"fused_op": ctx.ops.raw_blend_op()} if fused else {}),
        }
    ]
