"""Clone time: `compat_clone.clone_model` against the family's own `clone_model`.

One process, one family. Native and compat_clone are timed interleaved on
the same model object (A B B A ...), `gc.collect()` before each call, so load
from other processes hits both alike; the ratio reported for a case is the
median of the per-pair ratios (each pair ran back to back).

    python bench/bench_clone.py --family keras3 --json out.json
    compat-clone matrix --env keras-2.2.5 -- python bench/bench_clone.py --family keras2 --json out.json

Cases: ResNet50 built in code (`weights=None`), a 400-layer Dense chain, a
200-branch DAG with shared layers; and the growth curve, a chain of weightless
ReLU layers at 500, 1000, 2000 and 4000 layers. Keras itself (3.15 and
tf_keras 2.21 `_build_map_helper`) recurses once per graph node, so building
and cloning (natively too) a chain of more than ~900 layers needs a higher
recursion limit: the whole run happens in a thread with a 512 MiB stack and a
raised limit, for both sides alike. `tests/test_no_recursion.py` shows that
compat_clone's own graph walks need no such thing.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import json
import os
import platform
import statistics
import sys
import threading
import time
import traceback
from typing import Any, Callable, Dict, List, Optional

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import _models  # noqa: E402

RECURSION_LIMIT = 100_000
STACK_BYTES = 512 * 1024 * 1024


def keras_module(family: str) -> Any:
    if family == "tf_keras":
        try:
            return importlib.import_module("tf_keras")
        except ImportError:
            import tensorflow as tf

            return tf.keras
    return importlib.import_module("keras")


def _versions() -> Dict[str, str]:
    from importlib import metadata

    out = {}
    for dist in ("keras", "tf_keras", "tensorflow", "tensorflow-cpu", "jax", "jaxlib", "torch",
                 "numpy", "keras_applications", "compat-clone"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            pass
    return out


def _silence(K: Any) -> None:
    try:
        import logging

        logging.getLogger("tensorflow").setLevel(logging.ERROR)
        import warnings

        warnings.filterwarnings("ignore")
    except Exception:
        pass


def fresh_session(K: Any) -> None:
    """A new graph / fresh name counters for the next case (standalone Keras 2
    keeps every op of every clone in one TF1 graph otherwise)."""
    gc.collect()
    K.backend.clear_session()
    gc.collect()


def time_pairs(
    model: Any,
    native: Callable[[Any], Any],
    compat: Callable[[Any], Any],
    repeats: int,
    rebuild: Optional[Callable[[], Any]] = None,
) -> Dict[str, Any]:
    """Times `native(model)` and `compat(model)` `repeats` times each, interleaved.

    With `rebuild`, every pair runs on a model rebuilt in a fresh session
    (standalone Keras 2: one TF1 graph holds every clone made in it, and each
    clone costs more than the one before, not always evenly).

    Both wall time (`perf_counter`) and this process's CPU time
    (`process_time`, all threads) are kept. On a machine shared with other
    work the CPU time is the steadier measure of the work done; the ratios are
    medians of per-pair ratios (each pair ran back to back).
    """
    times: Dict[str, List[float]] = {"native_s": [], "compat_s": [], "native_cpu_s": [], "compat_cpu_s": []}
    # An even number of pairs, so that each side goes first equally often:
    # work that grows with every clone (a TF1 graph keeps what each clone
    # created) then favours neither.
    repeats += repeats % 2
    for i in range(repeats):
        if rebuild is not None and i:
            del model
            model = rebuild()
        order = [("native", native), ("compat", compat)]
        if i % 2:
            order.reverse()
        for side, fn in order:
            gc.collect()
            cpu0, wall0 = time.process_time(), time.perf_counter()
            clone = fn(model)
            wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
            del clone
            times[f"{side}_s"].append(wall)
            times[f"{side}_cpu_s"].append(cpu)
    out: Dict[str, Any] = dict(times)
    for key, values in times.items():
        out[key[: -len("_s")] + "_median_s"] = statistics.median(values)  # native_cpu_median_s, ...
    out["ratios_wall"] = [c / n for c, n in zip(times["compat_s"], times["native_s"])]
    out["ratios_cpu"] = [c / n for c, n in zip(times["compat_cpu_s"], times["native_cpu_s"])]
    out["ratio_wall"] = statistics.median(out["ratios_wall"])
    out["ratio_cpu"] = statistics.median(out["ratios_cpu"])
    return out


_OURS = os.sep + "compat_clone" + os.sep


def _call_layer(layer: Any, *args: Any, **kwargs: Any) -> Any:
    return layer(*args, **kwargs)


def count_work(model: Any, native: Callable[[Any], Any], compat: Callable[[Any], Any]) -> Dict[str, Any]:
    """cProfile'd clones, native, compat_clone, native: function calls made, and our own time.

    Call counts do not depend on the machine's load: `calls_ratio` is how
    much more Python work (function calls, Keras's and TensorFlow's included)
    the compat_clone clone does than the native one. The native clone is
    counted before and after and averaged: some work grows with what earlier
    clones left behind (standalone Keras 2 in graph mode filters every
    variable of the graph by name when it creates one), and the average
    cancels that drift. `own_share` is the part of the compat_clone clone's
    profiled time spent in compat_clone's own functions (cProfile `tottime`).
    """
    import cProfile
    import pstats

    calls: Dict[str, List[int]] = {"native": [], "compat": []}
    out: Dict[str, Any] = {}
    for side, fn in (("native", native), ("compat", compat), ("native", native)):
        gc.collect()
        prof = cProfile.Profile()
        prof.enable()
        clone = fn(model)
        prof.disable()
        del clone
        stats = pstats.Stats(prof)
        calls[side].append(stats.total_calls)  # type: ignore[attr-defined]
        if side == "compat":
            total = own = 0.0
            for (filename, _, _), (_, _, tottime, _, _) in stats.stats.items():  # type: ignore[attr-defined]
                total += tottime
                if _OURS in filename:
                    own += tottime
            out["own_s"] = own
            out["own_share"] = own / total if total else 0.0
    out["native_calls"] = statistics.mean(calls["native"])
    out["native_calls_each"] = calls["native"]
    out["compat_calls"] = calls["compat"][0]
    out["calls_ratio"] = out["compat_calls"] / out["native_calls"]
    return out


def run(args: argparse.Namespace) -> Dict[str, Any]:
    K = keras_module(args.family)
    _silence(K)
    import compat_clone

    native = K.models.clone_model
    compat = compat_clone.clone_model
    result: Dict[str, Any] = {
        "env": os.environ.get("COMPAT_CLONE_ENV", "default"),
        "family_requested": args.family,
        "python": platform.python_version(),
        "versions": _versions(),
        "cases": [],
        "growth": [],
        "recursion_limit": RECURSION_LIMIT,
    }

    def log(text: str) -> None:
        print(f"[bench_clone {result['env']}/{args.family}] {text}", flush=True)

    with _models.recursion_limit(RECURSION_LIMIT):
        # Warm-up: first calls import the adapter, fill caches, trace layer
        # classes. A small model with every layer type used below.
        warm = _models.shared_dag(K, branches=8)
        info = compat_clone.family_of(warm)
        result.update(family=info.family, package=info.package, keras_version=info.version,
                      backend=info.backend)
        if info.family != args.family:
            raise SystemExit(f"--family {args.family} but the models built are {info.family} ({info.package} {info.version})")
        for _ in range(2):
            native(warm), compat(warm)
            small = _models.relu_chain(K, 20)
            native(small), compat(small)
        del warm, small

        cases = [
            ("resnet50", "ResNet50 (weights=None)", lambda: _models.resnet50(K), args.repeats_resnet),
            ("chain400", "400-layer Dense chain", lambda: _models.dense_chain(K, 400), args.repeats),
            ("dag200", "200-branch DAG, shared layers", lambda: _models.shared_dag(K, 200), args.repeats),
        ]
        for key, title, build, repeats in cases:
            if args.only and key not in args.only:
                continue
            fresh_session(K)
            t0 = time.perf_counter()
            model = build()
            built = time.perf_counter() - t0
            row = {"case": key, "title": title, "layers": _models.count_layers(model),
                   "params": int(model.count_params()), "build_s": built, "repeats": repeats}
            # Standalone Keras 2: a fresh graph and model for every pair.
            rebuild = (lambda build=build: (fresh_session(K), build())[1]) if info.family == "keras2" else None
            row.update(time_pairs(model, native, compat, repeats, rebuild))
            row["repeats"] = len(row["native_s"])
            if rebuild is not None:
                model = rebuild()
            if not args.no_count:
                row.update(count_work(model, native, compat))
            result["cases"].append(row)
            log(f"{key}: native {row['native_cpu_median_s']:.3f}s compat {row['compat_cpu_median_s']:.3f}s CPU, "
                f"ratio {row['ratio_cpu']:.3f} CPU / {row['ratio_wall']:.3f} wall"
                + ("" if args.no_count else f"; calls {row['calls_ratio']:.4f}x, own code {100 * row['own_share']:.2f}%"))
            del model
            gc.collect()

        if not args.only or "growth" in args.only:
            for depth in args.growth:
                fresh_session(K)
                t0 = time.perf_counter()
                model = _models.relu_chain(K, depth)
                built = time.perf_counter() - t0
                # Small chains are cheap: more pairs where the growth ratio's
                # denominator is measured.
                repeats = args.repeats_growth if depth <= 1000 else 2
                row = {"layers": depth, "build_s": built, "repeats": repeats}
                rebuild = ((lambda depth=depth: (fresh_session(K), _models.relu_chain(K, depth))[1])
                           if info.family == "keras2" else None)
                row.update(time_pairs(model, native, compat, repeats, rebuild))
                row["repeats"] = len(row["native_s"])
                walk = ""
                if info.family == "tf_keras":
                    # compat_clone delegates a plain tf.keras clone to the
                    # native one; with a `call_function` it runs its own graph
                    # walk (_tfkeras._Cloner._walk_clone). Timed once, for the
                    # growth of our own code.
                    gc.collect()
                    cpu0 = time.process_time()
                    compat(model, call_function=_call_layer)
                    row["walk_cpu_s"] = time.process_time() - cpu0
                    walk = f"; own walk (call_function) {row['walk_cpu_s']:.3f}s"
                result["growth"].append(row)
                log(f"growth {depth}: native {row['native_cpu_median_s']:.3f}s compat "
                    f"{row['compat_cpu_median_s']:.3f}s CPU, ratio {row['ratio_cpu']:.3f} CPU / "
                    f"{row['ratio_wall']:.3f} wall{walk}")
                del model
                gc.collect()
    if len(result["growth"]) >= 2:
        first, last = result["growth"][0], result["growth"][-1]
        # The fastest clone at each size: the growth ratio divides times
        # measured minutes apart, not interleaved, so the machine's load does
        # not cancel out; noise only ever adds time, and the minimum is the
        # steadiest estimate of the work (same rule for native and compat).
        result["growth_ratio"] = {
            "from": first["layers"],
            "to": last["layers"],
            "linear": last["layers"] / first["layers"],
            "estimator": "min",
            "native_cpu": min(last["native_cpu_s"]) / min(first["native_cpu_s"]),
            "compat_cpu": min(last["compat_cpu_s"]) / min(first["compat_cpu_s"]),
            "native_wall": min(last["native_s"]) / min(first["native_s"]),
            "compat_wall": min(last["compat_s"]) / min(first["compat_s"]),
        }
        if "walk_cpu_s" in first and "walk_cpu_s" in last:
            result["growth_ratio"]["walk_cpu"] = last["walk_cpu_s"] / first["walk_cpu_s"]
    return result


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--family", required=True, choices=("keras3", "tf_keras", "keras2"))
    parser.add_argument("--json", metavar="OUT", help="write the results here")
    parser.add_argument("--repeats", type=int, default=4, help="pairs per small case (default 4; rounded up to even)")
    parser.add_argument("--repeats-resnet", type=int, default=4, help="pairs for ResNet50 (default 4)")
    parser.add_argument("--repeats-growth", type=int, default=4,
                        help="pairs per growth size up to 1000 layers; 2 above (default 4)")
    parser.add_argument("--growth", type=lambda s: [int(x) for x in s.split(",") if x],
                        default=[500, 1000, 2000, 4000], help="chain depths (default 500,1000,2000,4000)")
    parser.add_argument("--no-count", action="store_true",
                        help="skip the cProfile'd clone per side (call counts, compat_clone's own share)")
    parser.add_argument("--only", type=lambda s: s.split(","), default=None,
                        help="comma-separated subset of resnet50,chain400,dag200,growth")
    args = parser.parse_args(argv)

    box: Dict[str, Any] = {}

    def target() -> None:
        try:
            box["result"] = run(args)
        except BaseException as exc:  # reported by the main thread
            box["error"] = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))

    # Keras recurses once per graph node: a deep chain needs a big C stack too.
    threading.stack_size(STACK_BYTES)
    thread = threading.Thread(target=target, name="bench_clone")
    thread.start()
    thread.join()
    if "error" in box:
        print(box["error"], file=sys.stderr)
        return 1
    text = json.dumps(box["result"], indent=1)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            fh.write(text)
    else:
        print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
