"""Where clone time goes: cProfile of native and compat_clone clones, by package.

    python bench/profile_clone.py --family tf_keras --case dag200 [--json OUT]

Runs one warm-up clone of each side, then profiles one native and one
compat_clone clone of the same model. Reports, per side, the share of
CPU time spent in each package's own code (cProfile `tottime` summed by the
top-level package of the function's file: keras, tensorflow, compat_clone,
the standard library...) and the functions of compat_clone with their
cumulative time: what our code costs, and what bounds the rest.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import json
import os
import pstats
import sys
import sysconfig
import threading
from typing import Any, Dict, List, Optional, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import _models  # noqa: E402
from bench_clone import RECURSION_LIMIT, STACK_BYTES, keras_module  # noqa: E402

_STDLIB = os.path.realpath(sysconfig.get_paths()["stdlib"]) + os.sep


def _package(filename: str) -> str:
    if filename.startswith("~") or filename.startswith("<"):
        return "builtins (C)"
    real = os.path.realpath(filename)
    marker = os.sep + "site-packages" + os.sep
    if marker in real:
        return real.split(marker, 1)[1].split(os.sep, 1)[0].replace(".py", "")
    if "compat_clone" + os.sep in real:
        return "compat_clone"
    if real.startswith(_STDLIB):
        return "python stdlib"
    return "other"


def build(K: Any, case: str) -> Any:
    if case == "resnet50":
        return _models.resnet50(K)
    if case == "chain400":
        return _models.dense_chain(K, 400)
    if case == "dag200":
        return _models.shared_dag(K, 200)
    if case.startswith("relu"):
        return _models.relu_chain(K, int(case[4:]))
    raise SystemExit(f"unknown case {case!r}: expected resnet50, chain400, dag200 or reluN (e.g. relu4000)")


def profile_one(fn: Any, model: Any, top: int) -> Dict[str, Any]:
    gc.collect()
    prof = cProfile.Profile()
    prof.enable()
    clone = fn(model)
    prof.disable()
    del clone
    stats = pstats.Stats(prof)
    total = 0.0
    by_package: Dict[str, float] = {}
    ours: List[Dict[str, Any]] = []
    for (filename, line, func), (cc, nc, tt, ct, callers) in stats.stats.items():  # type: ignore[attr-defined]
        total += tt
        pkg = _package(filename)
        by_package[pkg] = by_package.get(pkg, 0.0) + tt
        if pkg == "compat_clone":
            ours.append({"function": f"{os.path.basename(filename)}:{line}({func})", "calls": nc,
                         "tottime_s": tt, "cumtime_s": ct})
    ours.sort(key=lambda r: -r["tottime_s"])
    packages = sorted(({"package": k, "tottime_s": v, "share": v / total if total else 0.0}
                       for k, v in by_package.items()), key=lambda r: -r["tottime_s"])
    return {"total_s": total, "packages": packages[:top], "compat_clone_functions": ours[:top]}


def _function_times(fn: Any, model: Any) -> Dict[str, Tuple[int, float]]:
    gc.collect()
    prof = cProfile.Profile()
    prof.enable()
    clone = fn(model)
    prof.disable()
    del clone
    out: Dict[str, Tuple[int, float]] = {}
    for (filename, line, func), (cc, nc, tt, ct, callers) in pstats.Stats(prof).stats.items():  # type: ignore[attr-defined]
        name = f"{_package(filename)}: {os.path.basename(filename)}:{line}({func})"
        out[name] = (nc, tt)
    return out


def growth(args: argparse.Namespace, K: Any, compat: Any) -> Dict[str, Any]:
    """Which functions grow faster than the chain: cost at `big` beyond (big/small) x cost at `small`."""
    small_n, big_n = args.growth
    scale = big_n / small_n
    sides: Dict[str, Any] = {}
    # compat_clone first: were there any drift in the process, it would not favour us.
    for side, fn in (("compat", compat), ("native", K.models.clone_model)):
        small, big = _models.relu_chain(K, small_n), _models.relu_chain(K, big_n)
        fn(small)  # warm-up
        t_small = _function_times(fn, small)
        t_big = _function_times(fn, big)
        rows = []
        for name in set(t_small) | set(t_big):
            n0, s0 = t_small.get(name, (0, 0.0))
            n1, s1 = t_big.get(name, (0, 0.0))
            rows.append({"function": name, "calls_small": n0, "calls_big": n1, "tottime_small_s": s0,
                         "tottime_big_s": s1, "excess_s": s1 - scale * s0})
        rows.sort(key=lambda r: -r["excess_s"])
        total_small = sum(v[1] for v in t_small.values())
        total_big = sum(v[1] for v in t_big.values())
        sides[side] = {"total_small_s": total_small, "total_big_s": total_big, "growth": total_big / total_small,
                       "excess_s": total_big - scale * total_small, "top_excess": rows[: args.top], "all": rows}
    native_calls = {r["function"]: (r["calls_small"], r["calls_big"]) for r in sides["native"]["all"]}
    for side in sides.values():
        for row in side["top_excess"]:
            row["native_calls_small"], row["native_calls_big"] = native_calls.get(row["function"], (0, 0))
        del side["all"]
    return {"family": args.family, "case": f"relu chain {small_n} -> {big_n}", "small": small_n, "big": big_n,
            "linear": scale, **sides}


def run(args: argparse.Namespace) -> Dict[str, Any]:
    K = keras_module(args.family)
    import compat_clone

    old = sys.getrecursionlimit()
    sys.setrecursionlimit(RECURSION_LIMIT)
    try:
        if args.growth:
            return growth(args, K, compat_clone.clone_model)
        model = build(K, args.case)
        native, compat = K.models.clone_model, compat_clone.clone_model
        native(model), compat(model)  # warm-up
        result = {
            "family": args.family,
            "case": args.case,
            "layers": len(model.layers),
            "native": profile_one(native, model, args.top),
            "compat": profile_one(compat, model, args.top),
        }
    finally:
        sys.setrecursionlimit(old)
    return result


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--family", required=True, choices=("keras3", "tf_keras", "keras2"))
    parser.add_argument("--case", default="dag200")
    parser.add_argument("--top", type=int, default=10)
    parser.add_argument("--growth", type=lambda s: [int(x) for x in s.split(",")], metavar="SMALL,BIG",
                        help="profile ReLU chains of SMALL and BIG layers instead; report what grows superlinearly")
    parser.add_argument("--json", metavar="OUT")
    args = parser.parse_args(argv)
    box: Dict[str, Any] = {}

    def target() -> None:
        try:
            box["result"] = run(args)
        except BaseException as exc:  # reported by the main thread
            box["error"] = exc

    threading.stack_size(STACK_BYTES)
    thread = threading.Thread(target=target)
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    result = box["result"]
    if args.growth:
        for side in ("native", "compat"):
            prof = result[side]
            print(f"[profile {args.family} {result['case']}] {side}: {prof['total_small_s']:.2f}s -> "
                  f"{prof['total_big_s']:.2f}s profiled, growth {prof['growth']:.2f} (linear {result['linear']:.0f}); "
                  f"superlinear excess {prof['excess_s']:.2f}s")
            for row in prof["top_excess"][:6]:
                print(f"    {row['function']}: {row['calls_small']} -> {row['calls_big']} calls, "
                      f"{row['tottime_small_s']:.3f}s -> {row['tottime_big_s']:.3f}s own")
        if args.json:
            with open(args.json, "w", encoding="utf-8") as fh:
                json.dump(result, fh, indent=1)
        return 0
    for side in ("native", "compat"):
        prof = result[side]
        shares = ", ".join(f"{p['package']} {100 * p['share']:.0f}%" for p in prof["packages"][:5])
        print(f"[profile {args.family} {args.case}] {side}: {prof['total_s']:.2f}s profiled; {shares}")
    for row in result["compat"]["compat_clone_functions"][:6]:
        print(f"    {row['function']}: {row['calls']} calls, {row['tottime_s']:.3f}s own, {row['cumtime_s']:.3f}s cumulative")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(result, fh, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
