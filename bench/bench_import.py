"""`import compat_clone`: time in a fresh interpreter, and what it loads.

Each run starts a new interpreter (`-c`), times `import compat_clone` with
`perf_counter` and `process_time` inside it (interpreter start-up excluded),
and lists the modules the import added to `sys.modules`. One more run with
`-X importtime` names the slowest modules. The import must load no framework:
tensorflow, keras, tf_keras, jax, torch (and their submodules) stay out of
`sys.modules`.

    python bench/bench_import.py --json out.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from typing import Any, Dict, List, Optional

FRAMEWORKS = ("tensorflow", "keras", "tf_keras", "jax", "jaxlib", "torch", "numpy")

_PROBE = r"""
import sys, time, json
before = set(sys.modules)
c0 = time.process_time(); t0 = time.perf_counter()
import compat_clone
t1 = time.perf_counter(); c1 = time.process_time()
added = sorted(set(sys.modules) - before)
print(json.dumps({"wall_s": t1 - t0, "cpu_s": c1 - c0, "added": added}))
"""


def _env() -> Dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    return env


def probe(python: str) -> Dict[str, Any]:
    out = subprocess.run([python, "-c", _PROBE], check=True, capture_output=True, text=True, env=_env())
    return json.loads(out.stdout.strip().splitlines()[-1])


def importtime(python: str, top: int = 8) -> List[Dict[str, Any]]:
    """The modules `import compat_clone` imports, slowest (cumulative) first."""
    out = subprocess.run([python, "-X", "importtime", "-c", "import compat_clone"],
                         check=True, capture_output=True, text=True, env=_env())
    rows = []
    for line in out.stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        self_us, cumulative_us, name = line.split(":", 1)[1].split("|", 2)
        rows.append({"module": name.strip(), "self_us": int(self_us), "cumulative_us": int(cumulative_us)})
    rows.sort(key=lambda r: -r["cumulative_us"])
    return rows[:top]


def run(python: str, runs: int) -> Dict[str, Any]:
    probes = [probe(python) for _ in range(runs)]
    added = probes[0]["added"]
    frameworks = sorted(m for m in added if m.split(".")[0] in FRAMEWORKS)
    ours = [m for m in added if m.split(".")[0] == "compat_clone"]
    return {
        "python_exe": python,
        "runs": runs,
        "wall_ms": [1000 * p["wall_s"] for p in probes],
        "cpu_ms": [1000 * p["cpu_s"] for p in probes],
        "median_wall_ms": 1000 * statistics.median(p["wall_s"] for p in probes),
        "median_cpu_ms": 1000 * statistics.median(p["cpu_s"] for p in probes),
        "modules_added": len(added),
        "compat_clone_modules": ours,
        "other_modules": [m for m in added if m.split(".")[0] != "compat_clone"],
        "frameworks_loaded": frameworks,
        "slowest": importtime(python),
    }


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", metavar="OUT")
    parser.add_argument("--runs", type=int, default=15, help="fresh interpreters (default 15)")
    parser.add_argument("--python", default=sys.executable, help="interpreter to measure (default: this one)")
    args = parser.parse_args(argv)
    result = run(args.python, args.runs)
    print(f"[bench_import] import compat_clone: median {result['median_wall_ms']:.1f} ms wall, "
          f"{result['median_cpu_ms']:.1f} ms CPU over {args.runs} fresh interpreters; "
          f"{result['modules_added']} modules added; frameworks loaded: {result['frameworks_loaded'] or 'none'}",
          flush=True)
    text = json.dumps(result, indent=1)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            fh.write(text)
    else:
        print(text)
    return 1 if result["frameworks_loaded"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
