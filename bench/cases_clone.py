"""Clone time: `compat_clone.clone_model` against the family's own `clone_model`.

Both are timed on the same model object, interleaved (A B, B A, ...), after
warm-up clones of both; standalone Keras 2 keeps every clone in its TF1
graph, so there each pair runs on a model rebuilt in a fresh graph. Cases:
ResNet50 (`weights=None`), a 400-layer Dense chain, a 200-branch DAG with
shared layers, and the growth curve on chains of weightless ReLU layers.
"""

from __future__ import annotations

import cProfile
import gc
import os
import pstats
from typing import Any, Callable, Dict, List, Tuple

from common import Ctx, dense_chain, interleave, relu_chain, shared_dag
from verdicts import GROWTH_MAX

import compat_clone

MODELS: Tuple[Tuple[str, str, Callable[[Any], Any]], ...] = (
    ("resnet50", "ResNet50 (weights=None)", lambda K: K.applications.ResNet50(weights=None)),
    ("chain400", "400-layer Dense chain", lambda K: dense_chain(K, 400)),
    ("dag200", "200-branch DAG, shared layers", lambda K: shared_dag(K, 200)),
)
_OURS = os.sep + "compat_clone" + os.sep


def _pairs(ctx: Ctx, build: Callable[[], Any], pairs: int) -> Tuple[Any, Dict[str, Any]]:
    """Native and compat_clone clones of `build()`, `pairs` interleaved pairs (rounded up to even)."""
    ctx.fresh()
    box = {"model": build()}

    def rebuild(rep: int) -> None:
        if rep:
            ctx.fresh()
            box["model"] = build()

    methods = {"native": lambda: ctx.K.models.clone_model(box["model"]), "compat": lambda: compat_clone.clone_model(box["model"])}
    times = interleave(methods, pairs + pairs % 2, warmup=False, before_rep=rebuild if ctx.family == "keras2" else None)
    return box["model"], times


def _profiled(fn: Callable[[Any], Any], model: Any) -> pstats.Stats:
    gc.collect()
    prof = cProfile.Profile()
    prof.enable()
    clone = fn(model)
    prof.disable()
    del clone
    return pstats.Stats(prof)


def count_work(ctx: Ctx, model: Any) -> Dict[str, float]:
    """Function calls of a compat_clone clone / of a native one (cProfile), and compat_clone's own share.

    Call counts do not depend on the machine's load. The native clone is
    counted before and after, averaged: some work grows with what earlier
    clones left behind (standalone Keras 2 filters every variable of its graph).
    """
    native, compat = ctx.K.models.clone_model, compat_clone.clone_model
    before, ours, after = _profiled(native, model), _profiled(compat, model), _profiled(native, model)
    entries = ours.stats.items()  # type: ignore[attr-defined]
    total = sum(row[2] for _, row in entries) or 1.0
    own = sum(row[2] for (filename, _, _), row in entries if _OURS in filename)
    native_calls = (before.total_calls + after.total_calls) / 2  # type: ignore[attr-defined]
    return {"calls_ratio": ours.total_calls / native_calls, "own_share": own / total}  # type: ignore[attr-defined]


def clone_ratios(ctx: Ctx) -> List[Dict[str, Any]]:
    K = ctx.K
    for _ in range(2):  # warm-up: adapters imported, caches filled, every layer type traced
        for model in (shared_dag(K, 8), relu_chain(K, 20)):
            K.models.clone_model(model), compat_clone.clone_model(model)
    rows = []
    for key, title, build in MODELS:
        model, times = _pairs(ctx, lambda build=build: build(K), ctx.plan.pairs)
        if ctx.family == "keras2":
            ctx.fresh()
            model = build(K)
        rows.append(
            {
                "model": key,
                "title": title,
                "layers": len(model.layers),
                "times": times,
                **(count_work(ctx, model) if ctx.plan.count_calls else {}),
            }
        )
        del model
    return rows


def _call_layer(layer: Any, *args: Any, **kwargs: Any) -> Any:
    return layer(*args, **kwargs)


def growth(ctx: Ctx) -> List[Dict[str, Any]]:
    """Clone time at each chain depth; where it grows past the target, what grows (a profile)."""
    rows: List[Dict[str, Any]] = []
    for depth in ctx.plan.growth:
        model, times = _pairs(ctx, lambda depth=depth: relu_chain(ctx.K, depth), ctx.plan.pairs if depth <= 1000 else 2)
        row: Dict[str, Any] = {"layers": depth, "times": times}
        if ctx.family == "tf_keras":
            # compat_clone delegates a plain tf.keras clone to the native one; with a
            # `call_function` it runs its own graph walk: timed once, for our own growth.
            row["walk"] = interleave(
                {"walk": lambda model=model: compat_clone.clone_model(model, call_function=_call_layer)}, 1, warmup=False
            )["walk"]["cpu"][0]
        rows.append(row)
    first, last = rows[0]["times"]["compat"]["cpu"], rows[-1]["times"]["compat"]["cpu"]
    if len(rows) > 1 and min(last) / min(first) > GROWTH_MAX:
        rows.append(profile_growth(ctx, ctx.plan.growth[0], min(4 * ctx.plan.growth[0], ctx.plan.growth[-1])))
    return rows


def _function_times(fn: Callable[[Any], Any], model: Any) -> Dict[str, Tuple[int, float]]:
    out = {}
    for (filename, line, func), row in _profiled(fn, model).stats.items():  # type: ignore[attr-defined]
        out[f"{_package(filename)}: {os.path.basename(filename)}:{line}({func})"] = (row[1], row[2])
    return out


def _package(filename: str) -> str:
    if filename.startswith(("~", "<")):
        return "builtins (C)"
    marker = os.sep + "site-packages" + os.sep
    if marker in filename:
        return filename.split(marker, 1)[1].split(os.sep, 1)[0].replace(".py", "")
    return "compat_clone" if _OURS in filename else "python stdlib"


def profile_growth(ctx: Ctx, small: int, big: int) -> Dict[str, Any]:
    """The functions whose own time grows most beyond linear from `small` to `big` layers."""
    scale, sides = big / small, {}
    for side, fn in (("compat", compat_clone.clone_model), ("native", ctx.K.models.clone_model)):
        ctx.fresh()
        models = relu_chain(ctx.K, small), relu_chain(ctx.K, big)
        fn(models[0])  # warm-up
        sides[side] = [_function_times(fn, m) for m in models]
    (c_small, c_big), (n_small, n_big) = sides["compat"], sides["native"]
    excess = sorted(set(c_small) | set(c_big), key=lambda f: -(c_big.get(f, (0, 0.0))[1] - scale * c_small.get(f, (0, 0.0))[1]))

    def total(times: Dict[str, Tuple[int, float]]) -> float:
        return sum(t for _, t in times.values())

    top = [
        {
            "function": f,
            "calls": [c_small.get(f, (0, 0.0))[0], c_big.get(f, (0, 0.0))[0]],
            "native_calls": [n_small.get(f, (0, 0.0))[0], n_big.get(f, (0, 0.0))[0]],
            "seconds": [c_small.get(f, (0, 0.0))[1], c_big.get(f, (0, 0.0))[1]],
        }
        for f in excess[:6]
    ]
    return {
        "profile": True,
        "small": small,
        "big": big,
        "linear": scale,
        "top": top,
        "compat_growth": total(c_big) / total(c_small),
        "native_growth": total(n_big) / total(n_small),
    }
