"""One environment's benchmarks: every case, for every Keras family here, into one JSON file.

    python bench/worker.py --json OUT [--cases clone,growth,copy,heavy,soft,import] [--quick]
    python bench/worker.py --json OUT --cases gpu --device gpu:0        # Keras 3, KERAS_BACKEND's backend
    compat-clone matrix --env keras-2.2.5 -- python bench/worker.py --json OUT

`bench/run.py` starts it in each environment and renders the report from the
JSON; the numbers are raw (every timing, per method), the verdicts are the
report's. A case that fails is recorded as an error and the others still run.
Everything runs in a thread with a 512 MiB stack and a raised recursion limit:
Keras itself recurses once per graph node, and the growth curve clones chains
of thousands of layers (natively too).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import platform
import subprocess
import sys
import threading
import time
import traceback
from typing import Any, Callable, Dict, List, Optional

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import cases_clone  # noqa: E402
import cases_gpu  # noqa: E402
import cases_weights  # noqa: E402
from backends import ops_for  # noqa: E402
from common import QUICK, RECURSION_LIMIT, STACK_BYTES, Ctx, Plan, dense_chain, families_here, keras_module, versions  # noqa: E402  # noqa: E402

CASES: Dict[str, Callable[[Ctx], List[Dict[str, Any]]]] = {
    "clone": cases_clone.clone_ratios,
    "growth": cases_clone.growth,
    "copy": cases_weights.copy,
    "heavy": cases_weights.heavy,
    "soft": cases_weights.soft,
    "gpu": cases_gpu.gpu,
}
PROBES: Dict[str, Callable[[Ctx, str], Dict[str, Any]]] = {
    "memory": cases_weights.memory_probe,
    "first-clone": cases_gpu.first_clone_probe,
}
FRAMEWORKS = ("tensorflow", "keras", "tf_keras", "jax", "jaxlib", "torch", "numpy")
_IMPORT_PROBE = """import sys, time, json
before = set(sys.modules); c0 = time.process_time(); t0 = time.perf_counter()
import compat_clone
wall, cpu = time.perf_counter() - t0, time.process_time() - c0
print(json.dumps({"wall": wall, "cpu": cpu, "added": sorted(set(sys.modules) - before)}))"""


def import_case(runs: int) -> Dict[str, Any]:
    """`import compat_clone` in fresh interpreters (start-up excluded), and the slowest modules."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    probes = [
        json.loads(
            subprocess.run(
                [sys.executable, "-c", _IMPORT_PROBE], check=True, capture_output=True, text=True, env=env
            ).stdout.splitlines()[-1]
        )
        for _ in range(runs)
    ]
    timed = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import compat_clone"], check=True, capture_output=True, text=True, env=env
    ).stderr.splitlines()
    slowest = []
    for line in timed:
        if line.startswith("import time:") and "self [us]" not in line:
            _, cumulative, name = line.split(":", 1)[1].split("|", 2)
            slowest.append((int(cumulative), name.strip()))
    added = probes[0]["added"]
    return {
        "case": "import",
        "wall": [p["wall"] for p in probes],
        "cpu": [p["cpu"] for p in probes],
        "added": added,
        "frameworks": [m for m in added if m.split(".")[0] in FRAMEWORKS],
        "slowest": sorted(slowest, reverse=True)[:6],
    }


def _label(ctx: Ctx) -> Dict[str, Any]:
    """The family compat_clone sees in a model built here; it must be the one asked for."""
    import compat_clone

    info = compat_clone.family_of(dense_chain(ctx.K, 1, 4))
    if info.family != ctx.family:
        raise RuntimeError(f"asked for {ctx.family} but the models built are {info.family} ({info.package})")
    backend = f", {info.backend} backend" if info.family == "keras3" else ""
    return {"family": ctx.family, "backend": info.backend, "keras": f"{info.package} {info.version}{backend}"}


def run(args: argparse.Namespace, plan: Plan) -> Dict[str, Any]:
    out: Dict[str, Any] = {
        "env": args.env_name,
        "python": platform.python_version(),
        "versions": versions(),
        "plan": "quick" if plan == QUICK else "full",
        "rows": [],
        "errors": [],
        "measured": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }
    cases = [c for c in args.cases.split(",") if c]

    def attempt(what: str, fn: Callable[[], List[Dict[str, Any]]], extra: Dict[str, Any]) -> None:
        start = time.monotonic()
        try:
            rows = fn()
        except Exception as exc:  # recorded; the other cases still run
            traceback.print_exc()
            out["errors"].append(f"{args.env_name} {what}: {type(exc).__name__}: {exc}"[:400])
            return
        out["rows"] += [{**extra, **row} for row in rows]
        print(f"[bench {args.env_name}] {what}: done in {time.monotonic() - start:.0f}s", flush=True)

    for family in families_here():
        K = keras_module(family)
        ctx = Ctx(family, K, ops_for(family, K), plan, args.device)
        label = _label(ctx)
        for case in (c for c in cases if c in CASES):
            attempt(f"{family} {case}", functools.partial(CASES[case], ctx), {"case": case, **label})
    if "import" in cases:
        attempt("import", lambda: [import_case(plan.import_runs)], {})
    return out


def in_big_stack(fn: Callable[[], Any]) -> Any:
    """Runs `fn` in a thread with a 512 MiB stack and a raised recursion limit; returns or raises its outcome."""
    box: Dict[str, Any] = {}

    def target() -> None:
        sys.setrecursionlimit(max(sys.getrecursionlimit(), RECURSION_LIMIT))
        try:
            box["value"] = fn()
        except BaseException as exc:  # re-raised in the caller's thread
            box["error"] = exc

    threading.stack_size(STACK_BYTES)
    thread = threading.Thread(target=target, name="bench")
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", metavar="OUT", help="write the results here (default: print them)")
    parser.add_argument(
        "--cases", default="clone,growth,copy,heavy,soft,import", help=f"comma-separated, of {', '.join(CASES)}, import"
    )
    parser.add_argument("--quick", action="store_true", help="small sizes, few repeats: a smoke run")
    parser.add_argument("--device", help="place the models there (Keras 3: gpu:0, cpu:0); default: the backend's")
    parser.add_argument("--env-name", default=os.environ.get("COMPAT_CLONE_ENV", "default"))
    parser.add_argument("--probe", metavar="WHAT:WAY", help=argparse.SUPPRESS)  # one fresh-process measurement
    parser.add_argument("--family", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    plan = QUICK if args.quick else Plan()
    if args.probe:
        what, way = args.probe.split(":")
        K = keras_module(args.family)
        ctx = Ctx(args.family, K, ops_for(args.family, K), plan, args.device)
        print(json.dumps(in_big_stack(lambda: PROBES[what](ctx, way))))
        return 0
    result = in_big_stack(lambda: run(args, plan))
    text = json.dumps(result, indent=1)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            fh.write(text)
    else:
        print(text)
    return 1 if result["errors"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
