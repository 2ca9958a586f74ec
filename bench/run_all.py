"""`make bench`: every benchmark, one process per environment, then BENCHMARKS.md.

    python bench/run_all.py [--envs default,keras-2.2.5] [--quick] [--out BENCHMARKS.md]

For each environment (``default`` is the project's ``.venv``; any other name
is an environment of the version matrix, created and entered with
``compat-clone matrix --env NAME -- ...``) it runs, each in a fresh process:

* ``bench/bench_clone.py`` once per Keras family there: compat_clone against
  the native ``clone_model`` on ResNet50, a 400-layer chain, a 200-branch DAG
  with shared layers, and the growth curve (500 to 4000 layers);
* ``bench/bench_copy.py`` (``copy_weights`` vs ``set_weights(get_weights())``
  vs a raw copy) in each of those environments, and in the ``--copy-envs``
  (default: Keras 3 on JAX and on torch), so every backend's copy is measured;
* once, ``bench/bench_import.py`` (``import compat_clone`` in fresh
  interpreters; no framework may load).

Where a clone ratio misses its target, ``bench/profile_clone.py`` profiles
that case and the profile goes into the report. Environments run one after
the other (never in parallel: the ratios are measured in-process, and two
benchmarks at once only add noise). The report has the tables, the command,
the machine, the load average, and a plot of clone time against layers.
This script needs only the standard library, plus matplotlib for the plot.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import signal
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"

# Targets (issue 8).
ADAPTER_MAX = 1.10  # keras3 / tf_keras: compat_clone at most 1.10x native
LEGACY_MAX = 1.00   # keras2: no slower than keras 2.2.5's native clone
GROWTH_MAX = 9.0    # clone time at 4000 layers / at 500 layers (linear is 8)
IMPORT_MAX_MS = 50.0
COPY_MIN_SPEEDUP_CPU = 20.0  # copy_weights at least 20x faster than set_weights(get_weights()) on CPU
COPY_MAX_RAW_GPU = 1.25      # on a GPU, within 1.25x of a raw device copy of the same bytes

# What bounds the growth where it is superlinear: found with
# `bench/profile_clone.py --growth 500,2000` (the report prints that profile
# from the current run beside this text).
GROWTH_CAUSES = {
    "keras3": (
        "Keras 3.15's functional graph check (`ops/function.py` `map_graph`) makes every operation name "
        "unique with `all_names.count(name)` for each name: n² string comparisons (the `count` row above: "
        "4× the calls, 20× the time). The rest is not more work but dearer work: the same calls, 4× as "
        "many, each cost more in a bigger heap (`typing` protocol checks, Keras's tracking `__setattr__`). "
        "compat_clone's clone makes the native clone's calls (the counts above match) and grows as the native "
        "one does."
    ),
    "tf_keras": (
        "tf_keras's own `clone_model` is quadratic: `_clone_functional_model` (tf_keras 2.21 "
        "`src/models/cloning.py`, the `ancillary_layers` comprehension) tests `layer not in "
        "new_model.layers` for every cloned layer, and `Model.layers` rebuilds the whole layer list "
        "(`_flatten_layers` / `_flatten_modules`) on each access: n²/2 calls. compat_clone delegates a "
        "plain tf.keras clone to that function, to stay identical to native, and so inherits it; "
        "compat_clone's own graph walk (the *own walk* column, used with `call_function`) grows linearly."
    ),
    "keras2": (
        "Keras 2.2.5's `Model` constructor is quadratic: `engine/network.py` `_map_graph_network` checks "
        "`x not in computable_tensors` (a list) for every node input, and each comparison goes through "
        "TensorFlow's `Tensor.__eq__` dispatch (`math_ops.tensor_equals`): n²/2 calls; it also counts "
        "every layer name in the list of all names. Native and compat_clone clones both end by "
        "constructing the `Model`, with the same calls (see the native counts above)."
    ),
}

# environment -> families benchmarked there
ENV_FAMILIES = {
    "default": ("keras3", "tf_keras"),
    "keras-2.2.5": ("keras2",),
    "keras-2.2.4": ("keras2",),
    "keras-3.15-jax": ("keras3",),
    "keras-3.15-torch": ("keras3",),
    "keras-3.15-tf": ("keras3",),
    "tf_keras-2.21": ("tf_keras",),
    "tf.keras-2.15": ("tf_keras",),
}
DEFAULT_ENVS = "default,keras-2.2.5"
# weight copy only (no clone benchmark): every Keras 3 backend has its own copy path
DEFAULT_COPY_ENVS = "keras-3.15-jax,keras-3.15-torch"

# What bounds the CPU copy speed-up where the get/set path is itself one or
# two host memory copies (no device to cross, no buffer to share).
COPY_BOUNDS = {
    "jax": ("JAX on the CPU: `get_weights` copies each array into NumPy and `set_weights` copies it back "
            "(two memcpys, measured: neither shares memory); `copy_weights` makes one copy (a fresh buffer: "
            "sharing the source's array would be undone by Keras's buffer donation in `fit`), at the raw "
            "copy's speed (copy_weights / raw ≈ 1)."),
    "torch": ("torch on the CPU: `get_weights` copies into NumPy and `set_weights` copies back (two memcpys); "
              "`copy_weights` is one in-place `copy_`, at the raw copy's speed (copy_weights / raw ≈ 1)."),
    "keras2": ("standalone Keras 2, TF1 graph: its variables cannot share a buffer, so the copy is one "
               "memcpy per variable inside one session run, against get/set's fetch and feed (two memcpys "
               "plus the feed's placeholders); it beats TensorFlow's own `DeepCopy` op (copy_weights / raw < 1)."),
}
CASE_ORDER = ("resnet50", "chain400", "dag200")


# --------------------------------------------------------------------------- running


def _say(text: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {text}", flush=True)


def _shown(line: str, details: bool = True) -> bool:
    """A progress line of a bench script (echoed by the runner)."""
    return line.startswith(("[bench_", "[profile")) or (details and line.startswith("    "))


class Runner:
    """Runs a bench script in an environment; collects its JSON."""

    def __init__(self, python: str, compat_clone_exe: str, results: Path, timeout: float,
                 reuse: Sequence[str] = ()) -> None:
        self.python = python
        self.compat_clone_exe = compat_clone_exe
        self.results = results
        self.timeout = timeout
        self.reuse = set(reuse)
        self.failures: List[str] = []
        self.reused: List[str] = []

    def command(self, env: str, script_args: Sequence[str]) -> List[str]:
        if env == "default":
            return [self.python] + list(script_args)
        return [self.compat_clone_exe, "matrix", "--env", env, "--tail", "60", "--", "python"] + list(script_args)

    def run(self, env: str, label: str, script: str, args: Sequence[str]) -> Optional[Dict[str, Any]]:
        out = self.results / f"{env}--{label}.json"
        if env in self.reuse and not label.startswith("profile"):
            if out.exists():
                stamp = time.strftime("%Y-%m-%d %H:%M", time.localtime(out.stat().st_mtime))
                self.reused.append(f"{env} / {label}: results of an earlier run ({stamp}) reused (--reuse)")
                _say(f"{env} / {label}: reusing {out} ({stamp})")
                reused: Dict[str, Any] = json.loads(out.read_text())
                reused["_seconds"] = 0.0
                return reused
            _say(f"{env} / {label}: nothing to reuse in {out}; running it")
        if out.exists():
            out.unlink()
        cmd = self.command(env, [f"bench/{script}"] + list(args) + ["--json", str(out)])
        _say(f"{env} / {label}: {' '.join(shlex.quote(c) for c in cmd)}")
        start = time.monotonic()
        environ = dict(os.environ)
        environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        if env == "default":  # the .venv: no inherited choice of Keras
            for var in ("KERAS_BACKEND", "TF_USE_LEGACY_KERAS", "PYTHONPATH"):
                environ.pop(var, None)
        # Streamed, so a long benchmark shows its progress; matrix environments
        # write the script's own output to .matrix/<env>/last.log instead.
        proc = subprocess.Popen(cmd, cwd=ROOT, env=environ, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, text=True, errors="replace", start_new_session=True)
        timer = threading.Timer(self.timeout, lambda: os.killpg(proc.pid, signal.SIGKILL))
        timer.start()
        lines: List[str] = []
        assert proc.stdout is not None
        try:
            for line in proc.stdout:
                lines.append(line.rstrip("\n"))
                if _shown(line):
                    print("    " + line.rstrip(), flush=True)
            rc = proc.wait()
        except KeyboardInterrupt:
            os.killpg(proc.pid, signal.SIGKILL)
            raise
        timed_out = not timer.is_alive() and rc < 0
        timer.cancel()
        text = "\n".join(lines) + (f"\ntimed out after {self.timeout:.0f}s" if timed_out else "")
        took = time.monotonic() - start
        log = ROOT / ".matrix" / env / "last.log"
        if env != "default" and log.exists():
            for line in log.read_text(errors="replace").splitlines():
                if _shown(line, details=False):
                    print("    " + line.rstrip(), flush=True)
        if rc != 0 or not out.exists():
            tail = text.strip().splitlines()[-25:]
            if env != "default" and log.exists():
                tail = log.read_text(errors="replace").strip().splitlines()[-25:]
            self.failures.append(f"{env} / {label}: exit {rc}")
            _say(f"{env} / {label}: FAILED (exit {rc}, {took:.0f}s)\n      " + "\n      ".join(tail))
            return None
        _say(f"{env} / {label}: done in {took:.0f}s")
        data: Dict[str, Any] = json.loads(out.read_text())
        data["_seconds"] = took
        return data


# --------------------------------------------------------------------------- machine


def _read(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError:
        return ""


def machine() -> Dict[str, Any]:
    cpu = next((line.split(":", 1)[1].strip() for line in _read("/proc/cpuinfo").splitlines()
                if line.startswith("model name")), platform.processor() or platform.machine())
    mem_kb = next((int(line.split()[1]) for line in _read("/proc/meminfo").splitlines()
                   if line.startswith("MemTotal:")), 0)
    pretty = next((line.split("=", 1)[1].strip().strip('"') for line in _read("/etc/os-release").splitlines()
                   if line.startswith("PRETTY_NAME=")), "")
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "ram_gb": round(mem_kb / 1024**2, 1),
        "os": f"{pretty} ({platform.system()} {platform.release()})" if pretty else platform.platform(),
    }


def loadavg() -> str:
    try:
        return " / ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        return "?"


# --------------------------------------------------------------------------- report


def _f(x: Optional[float], digits: int = 2) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]], right: Sequence[int] = ()) -> List[str]:
    lines = ["| " + " | ".join(headers) + " |",
             "|" + "|".join(("---:" if i in right else "---") for i in range(len(headers))) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def _on_gpu(copy_result: Dict[str, Any]) -> bool:
    """Whether a `bench_copy.py` result was measured on a GPU (its device names one)."""
    where = str(copy_result.get("device", "")).lower()
    return "gpu" in where or "cuda" in where


def _target(family: str) -> float:
    return LEGACY_MAX if family == "keras2" else ADAPTER_MAX


def verdict(ratio: float, ratios: Sequence[float], target: float) -> str:
    """met / within noise (some pair met it, the median did not) / MISSED."""
    if ratio <= target:
        return "met"
    if ratios and min(ratios) <= target:
        return "within noise"
    return "MISSED"


def _label(res: Dict[str, Any]) -> str:
    backend = f", {res['backend']} backend" if res.get("family") == "keras3" else ""
    return f"{res['package']} {res['keras_version']}{backend}"


def clone_rows(clones: List[Dict[str, Any]]) -> List[List[str]]:
    rows = []
    for res in clones:
        for case in res["cases"]:
            target = _target(res["family"])
            spread = f"{min(case['ratios_cpu']):.2f}–{max(case['ratios_cpu']):.2f}" if case.get("ratios_cpu") else "-"
            rows.append([
                res["env"], _label(res), case["title"], str(case["layers"]),
                _f(case["native_cpu_median_s"], 3), _f(case["compat_cpu_median_s"], 3),
                f"**{case['ratio_cpu']:.3f}**", spread, _f(case["ratio_wall"], 3), str(case["repeats"]),
                _f(case.get("calls_ratio"), 4), "-" if "own_share" not in case else f"{100 * case['own_share']:.2f}%",
                f"≤ {target:.2f}: {verdict(case['ratio_cpu'], case.get('ratios_cpu', []), target)}",
            ])
    return rows


def growth_rows(clones: List[Dict[str, Any]]) -> List[List[str]]:
    rows = []
    for res in clones:
        for g in res["growth"]:
            rows.append([res["env"], _label(res), str(g["layers"]), _f(g["native_cpu_median_s"], 3),
                         _f(g["compat_cpu_median_s"], 3), _f(g["ratio_cpu"], 3), _f(g["ratio_wall"], 3),
                         str(g["repeats"]), _f(g.get("walk_cpu_s"), 3)])
    return rows


def growth_summary(clones: List[Dict[str, Any]]) -> List[List[str]]:
    rows = []
    for res in clones:
        gr = res.get("growth_ratio")
        if not gr:
            continue
        met = gr["compat_cpu"] <= GROWTH_MAX
        rows.append([res["env"], _label(res), f"{gr['to']}/{gr['from']}", _f(gr["linear"], 1),
                     _f(gr["native_cpu"], 2), f"**{gr['compat_cpu']:.2f}**", _f(gr["compat_wall"], 2),
                     _f(gr.get("walk_cpu"), 2), f"≤ {GROWTH_MAX:.0f}: {'met' if met else 'MISSED'}"])
    return rows


def copy_rows(copies: List[Tuple[str, Dict[str, Any]]]) -> List[List[str]]:
    rows = []
    for env, payload in copies:
        for r in payload.get("results", []):
            med = r["median_s"]
            rows.append([env, f"{r['keras']} [{r['backend']}]", str(r["device"]), f"{r['mb']}",
                         f"{1e3 * med['copy_weights']:.1f}", f"{1e3 * med['get_set']:.1f}", f"{1e3 * med['raw']:.1f}",
                         f"{r['speedup_vs_get_set']:.1f}×", f"{r['ratio_to_raw']:.2f}"])
    return rows


def plot(clones: List[Dict[str, Any]], path: Path) -> Optional[str]:
    """Clone time against layers, native and compat_clone, one panel per family."""
    with_growth = [r for r in clones if r["growth"]]
    if not with_growth:
        return "no growth data"
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        return f"matplotlib is not installed here ({exc}); `make bench` installs it in .bench/venv"
    fig, axes = plt.subplots(1, len(with_growth), figsize=(4.6 * len(with_growth), 4.0), squeeze=False)
    for ax, res in zip(axes[0], with_growth):
        xs = [g["layers"] for g in res["growth"]]
        native = [g["native_cpu_median_s"] for g in res["growth"]]
        compat = [g["compat_cpu_median_s"] for g in res["growth"]]
        ax.plot(xs, native, "o-", label="native clone_model")
        ax.plot(xs, compat, "s--", label="compat_clone.clone_model")
        walk = [g.get("walk_cpu_s") for g in res["growth"]]
        if all(w is not None for w in walk):
            ax.plot(xs, walk, "^-.", label="compat_clone, own graph walk\n(call_function)")
        ax.plot(xs, [compat[0] * x / xs[0] for x in xs], ":", color="gray", label="linear (from first point)")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xticks(xs)
        ax.set_xticklabels([str(x) for x in xs])
        ax.set_xlabel("layers (ReLU chain)")
        ax.set_ylabel("clone time, CPU seconds (median)")
        ax.set_title(f"{_label(res)}\n[{res['env']}]", fontsize=9)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return None


def _profile_lines(profiles: List[Dict[str, Any]]) -> List[str]:
    lines: List[str] = []
    for prof in profiles:
        if "error" in prof:
            lines.append(f"- `{prof['env']}` {prof['case']}: profiling failed ({prof['error']}).")
            continue
        if prof["case"] == "growth":
            nat, comp = prof["native"], prof["compat"]
            lines.append(
                f"- `{prof['env']}` {_label(prof['_res'])}, growth, cProfile of ReLU chains of {prof['small']} and "
                f"{prof['big']} layers (linear: {prof['linear']:.0f}×): native grows {nat['growth']:.2f}×, "
                f"compat_clone {comp['growth']:.2f}×. The functions whose time grows most beyond linear, in the "
                f"compat_clone clone (package: function, own time small → big):")
            for row in comp["top_excess"][:6]:
                lines.append(f"    - {row['function']}: {row['calls_small']} → {row['calls_big']} calls "
                             f"(native clone: {row.get('native_calls_small', '?')} → {row.get('native_calls_big', '?')}), "
                             f"{row['tottime_small_s']:.3f} s → {row['tottime_big_s']:.3f} s")
            known = GROWTH_CAUSES.get(prof["_res"]["family"])
            if known:
                lines.append(f"    - Analysis: {known}")
            continue
        comp, nat = prof["compat"], prof["native"]
        ours = next((p["tottime_s"] for p in comp["packages"] if p["package"] == "compat_clone"), 0.0)
        top = ", ".join(f"{p['package']} {100 * p['share']:.0f}%" for p in comp["packages"][:5])
        lines.append(
            f"- `{prof['env']}` {_label(prof['_res'])}, {prof['case']} ({prof['layers']} layers), cProfile: "
            f"native {nat['total_s']:.2f} s, compat_clone {comp['total_s']:.2f} s, of which compat_clone's own "
            f"code {ours:.3f} s ({100 * ours / comp['total_s']:.1f}%). Where the compat_clone clone spends its "
            f"time: {top}."
        )
        for fn in comp["compat_clone_functions"][:4]:
            lines.append(f"    - `{fn['function']}`: {fn['calls']} calls, {fn['tottime_s']:.3f} s own, "
                         f"{fn['cumtime_s']:.3f} s cumulative (including the Keras calls it makes)")
    return lines


def report(
    args: argparse.Namespace,
    argv: Sequence[str],
    mach: Dict[str, Any],
    loads: Tuple[str, str],
    clones: List[Dict[str, Any]],
    copies: List[Tuple[str, Dict[str, Any]]],
    imp: Optional[Dict[str, Any]],
    profiles: List[Dict[str, Any]],
    plot_note: Optional[str],
    failures: List[str],
    skipped: List[str],
    wall: float,
    reused: Sequence[str] = (),
) -> Tuple[str, List[str]]:
    """BENCHMARKS.md text, and the verdict lines printed at the end."""
    plot_rel = os.path.relpath(args.plot, ROOT)
    if os.environ.get("COMPAT_CLONE_BENCH_VIA_MAKE"):
        extra = " ".join(shlex.quote(a) for a in argv[1:])
        command = "make bench" + (f" BENCH_ARGS={shlex.quote(extra)}" if extra else "")
    else:
        command = "python " + " ".join(shlex.quote(a) for a in argv)
    verdicts: List[str] = []
    for res in clones:
        for case in res["cases"]:
            t = _target(res["family"])
            v = verdict(case["ratio_cpu"], case.get("ratios_cpu", []), t)
            work = ""
            if "calls_ratio" in case:
                work = f"; calls ×{case['calls_ratio']:.4f}, own code {100 * case['own_share']:.2f}%"
            verdicts.append(f"{v:12} {res['env']}/{res['family']} {case['case']}: compat/native "
                            f"{case['ratio_cpu']:.3f} (pairs {min(case['ratios_cpu']):.2f}–{max(case['ratios_cpu']):.2f}"
                            f"{work}; target ≤ {t:.2f})")
        gr = res.get("growth_ratio")
        if gr:
            ok = gr["compat_cpu"] <= GROWTH_MAX
            verdicts.append(f"{'met' if ok else 'MISSED':12} {res['env']}/{res['family']} growth {gr['to']}/{gr['from']}: "
                            f"{gr['compat_cpu']:.2f} (native {gr['native_cpu']:.2f}"
                            + (f"; compat_clone's own walk {gr['walk_cpu']:.2f}" if "walk_cpu" in gr else "")
                            + f"; linear {gr['linear']:.0f}; target ≤ {GROWTH_MAX:.0f})")
    copy_notes: List[str] = []
    for env, payload in copies:
        for r in payload.get("results", []):
            label = f"{env}/{r['family']} [{r['backend']}] copy {r['mb']} MB"
            if _on_gpu(r):
                ok = r["ratio_to_raw"] <= COPY_MAX_RAW_GPU
                verdicts.append(f"{'met' if ok else 'MISSED':12} {label} on GPU: copy_weights / raw "
                                f"{r['ratio_to_raw']:.2f} (target ≤ {COPY_MAX_RAW_GPU:.2f})")
                continue
            ok = r["speedup_vs_get_set"] >= COPY_MIN_SPEEDUP_CPU
            bound = COPY_BOUNDS.get("keras2" if r["family"] == "keras2" else r["backend"])
            mark = "met" if ok else ("bounded" if bound and r["ratio_to_raw"] <= 1.5 else "MISSED")
            verdicts.append(f"{mark:12} {label} on CPU: {r['speedup_vs_get_set']:.1f}× faster than get/set, "
                            f"copy_weights / raw {r['ratio_to_raw']:.2f} (target ≥ {COPY_MIN_SPEEDUP_CPU:.0f}×)")
            if not ok and bound and bound not in copy_notes:
                copy_notes.append(bound)
    if imp:
        ok = imp["median_cpu_ms"] < IMPORT_MAX_MS and not imp["frameworks_loaded"]
        verdicts.append(f"{'met' if ok else 'MISSED':12} import compat_clone: {imp['median_cpu_ms']:.1f} ms CPU, "
                        f"{imp['median_wall_ms']:.1f} ms wall (median), frameworks loaded: "
                        f"{', '.join(imp['frameworks_loaded']) or 'none'} (target < {IMPORT_MAX_MS:.0f} ms, none)")

    md: List[str] = [
        "# Benchmarks",
        "",
        "<!-- Generated by `make bench` (bench/run_all.py). Do not edit by hand: rerun the command. -->",
        "",
        f"Generated {time.strftime('%Y-%m-%d %H:%M %Z')} by `{command}` in {wall / 60:.1f} min.",
        "",
        "## What is measured, and how",
        "",
        "- **Clone time**: `compat_clone.clone_model(model)` against the family's own "
        "`clone_model(model)`, same model object, same process, interleaved (A B B A ...), "
        "`gc.collect()` before each call, after warm-up clones of both. One process per environment "
        "and family. The **ratio** is the median of the per-pair ratios compat/native; the spread is "
        "the lowest and highest pair. Times are the process's **CPU time** (`time.process_time`, all "
        "threads): the machine is shared with other work, and CPU time is the steadier measure of the work "
        "done; the wall-clock ratio is shown too. Standalone Keras 2 (TF1 graph mode) keeps every clone's ops and "
        "variables in one graph, and each clone costs more than the one before: there every pair runs on a model "
        "rebuilt in a fresh graph (`clear_session`). The pair count is even, each side going first in half the "
        "pairs.",
        "- **Growth**: the same, on chains of weightless `ReLU` layers (so the per-layer bookkeeping of "
        "the clone machinery, ours and Keras's, is all there is) at 500, 1000, 2000 and 4000 layers; the "
        "growth ratio is time(4000) / time(500), linear is 8, from the fastest clone at each size (sizes are "
        "measured minutes apart, so the load does not cancel out as it does in an interleaved pair; noise only "
        "adds time). Keras itself recurses once per graph node "
        "(`_build_map_helper` in Keras 3.15 and tf_keras 2.21), so building *and natively cloning* a chain "
        "of more than ~900 layers needs a higher recursion limit: the benchmark runs in a thread with a "
        "512 MiB stack and a raised limit, for both sides. compat_clone's own graph walks are iterative "
        "(`tests/test_no_recursion.py`: the number of compat_clone frames on the stack does not grow with "
        "the model; `_keras3._walk` clones a 1100-layer chain at the default limit).",
        "- **Weight copy** (`bench/bench_copy.py`): `compat_clone.copy_weights` vs "
        "`set_weights(get_weights())` vs a raw framework copy of the same tensors.",
        "- **Import**: `import compat_clone` in fresh interpreters (start-up excluded), median; the "
        "modules it adds to `sys.modules`; no framework may be among them.",
        "",
        "## Targets",
        "",
        "```",
        *verdicts,
        "```",
        "",
    ]
    if failures or skipped:
        md += ["**Not measured in this run:**", ""]
        md += [f"- {x}" for x in skipped + failures]
        md += [""]
    if reused:
        md += ["**Reused from an earlier run of this command** (`--reuse`):", ""]
        md += [f"- {x}" for x in reused]
        md += [""]

    md += ["## Clone time: compat_clone / native", ""]
    md += _table(["env", "Keras", "model", "layers", "native s", "compat_clone s", "ratio (CPU)", "pair spread",
                  "ratio (wall)", "pairs", "calls ratio", "own code", "target"], clone_rows(clones),
                 right=(3, 4, 5, 6, 8, 9, 10, 11))
    md += ["", "Times: medians of CPU seconds. *calls ratio*: function calls made by one compat_clone clone / "
           "by one native clone (cProfile; Keras's and TensorFlow's calls included), a measure of the work "
           "done that does not depend on the machine's load. *own code*: the share of the compat_clone clone's "
           "profiled time spent in compat_clone's own functions.", ""]
    md += ["", "## Growth with model size (ReLU chain)", ""]
    md += _table(["env", "Keras", "growth of", "linear", "native", "compat_clone", "compat_clone (wall)",
                  "own walk", "target"], growth_summary(clones), right=(3, 4, 5, 6, 7))
    md += [""]
    if plot_note is None:
        md += [f"![clone time vs layers]({plot_rel})", ""]
    else:
        md += [f"(No plot: {plot_note}.)", ""]
    md += _table(["env", "Keras", "layers", "native s", "compat_clone s", "ratio (CPU)", "ratio (wall)", "pairs",
                  "own walk s"], growth_rows(clones), right=(2, 3, 4, 5, 6, 7, 8))
    md += ["", "*own walk*: tf.keras / tf_keras only: compat_clone with a `call_function`, which replaces the "
           "native clone by compat_clone's own graph walk (`_tfkeras._Cloner._walk_clone`); one run per size.", ""]
    md += [""]
    if profiles:
        md += ["## Profiles of missed targets", "",
               "Each missed clone target, profiled (`bench/profile_clone.py`: one native and one compat_clone "
               "clone under cProfile, own time summed by package). What bounds the ratio is the share of "
               "compat_clone's own code: the rest is the same Keras / TensorFlow work the native call does, "
               "and a difference there is measurement noise or a different Keras path. Growth misses are profiled "
               "at two chain sizes: what grows faster than the chain is named, with the package it lives in.", ""]
        md += _profile_lines(profiles)
        md += [""]
    md += ["## Weight copy", ""]
    if copies:
        md += _table(["env", "Keras [backend]", "device", "MB", "copy_weights ms", "set_weights(get_weights()) ms",
                      "raw copy ms", "copy_weights speed-up", "copy_weights / raw"], copy_rows(copies),
                     right=(3, 4, 5, 6, 7, 8))
        md += ["", "Medians of wall time (`bench/bench_copy.py` explains the methods; on TensorFlow a "
               "variable-to-variable assign can share the source buffer copy-on-write, so it can beat the raw copy).",
               ""]
        if copy_notes:
            md += ["**Where the CPU target (≥ 20× the get/set path) is *bounded*:** on these backends the CPU "
                   "*is* the host, so the get/set path crosses no device: it is two memcpys of the same bytes "
                   "(into NumPy and back), while a real copy must make one, and `copy_weights` already runs at the "
                   "raw copy's speed (copy_weights / raw at or below 1). No copy can be 20× faster than the two "
                   "memcpys it replaces. The 20× holds where the copy can be avoided (TensorFlow eager shares the "
                   "buffer, copy-on-write) and is what the GPU target measures (device to device against a trip "
                   "through the host).", ""]
            md += [f"- {note}" for note in copy_notes]
            md += [""]
    else:
        md += ["Not run (`bench/bench_copy.py` missing or failed).", ""]
    md += ["## Import", ""]
    if imp:
        md += [
            f"- `import compat_clone`: **{imp['median_cpu_ms']:.1f} ms CPU**, {imp['median_wall_ms']:.1f} ms wall "
            f"(median of {imp['runs']} fresh interpreters; fastest {min(imp['wall_ms']):.1f} ms wall).",
            f"- Modules added: {imp['modules_added']} — compat_clone's "
            f"({', '.join(imp['compat_clone_modules'])}) and, from the standard library and `packaging`: "
            f"{', '.join(imp['other_modules'])}.",
            f"- Frameworks loaded: **{', '.join(imp['frameworks_loaded']) or 'none'}** "
            "(tensorflow, keras, tf_keras, jax, jaxlib, torch, numpy checked).",
            "- Slowest imports (`-X importtime`, cumulative µs): "
            + ", ".join(f"`{r['module']}` {r['cumulative_us']}" for r in imp["slowest"][:6]) + ".",
            "",
        ]
    else:
        md += ["Not run.", ""]
    md += ["## Machine and software", "",
           f"- CPU: {mach['cpu']}, {mach['cores']} cores; RAM {mach['ram_gb']} GB; {mach['os']}.",
           f"- Load average (1/5/15 min) at start {loads[0]}, at end {loads[1]}: the machine was shared "
           "with other work, which is why times are CPU times and every ratio is measured in-process, interleaved.",
           ]
    seen = set()
    for res in clones + [dict(p, env=e) for e, p in copies]:
        key = res["env"]
        if key in seen:
            continue
        seen.add(key)
        versions = ", ".join(f"{k} {v}" for k, v in sorted(res.get("versions", {}).items()))
        md.append(f"- `{key}`: Python {res.get('python', '?')}; {versions}.")
    md += ["", "## Reproduce", "", "```", command, "```", "",
           "`make bench` creates `.bench/venv` (matplotlib, for the plot) and runs "
           "`bench/run_all.py` there; the benchmarks themselves run in the project's `.venv` and in matrix "
           "environments (`compat-clone matrix --env keras-2.2.5 -- python bench/bench_clone.py ...`). "
           "Raw results: `.bench/results/*.json`. Options: `python bench/run_all.py --help`.", ""]
    return "\n".join(md), verdicts


# --------------------------------------------------------------------------- main


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--envs", default=DEFAULT_ENVS,
                        help=f"comma-separated environments (default {DEFAULT_ENVS}; also: "
                             f"{', '.join(e for e in ENV_FAMILIES if e not in DEFAULT_ENVS.split(','))})")
    parser.add_argument("--python", default=str(ROOT / ".venv" / "bin" / "python"),
                        help="interpreter of the default environment (default .venv/bin/python)")
    parser.add_argument("--compat-clone", default=str(ROOT / ".venv" / "bin" / "compat-clone"),
                        help="the compat-clone command that enters matrix environments")
    parser.add_argument("--copy-envs", default=DEFAULT_COPY_ENVS,
                        help=f"environments for the weight-copy benchmark only (default {DEFAULT_COPY_ENVS}; '' for none)")
    parser.add_argument("--quick", action="store_true",
                        help="fewer repeats and growth 250..2000 (a smoke run; not for the report of record)")
    parser.add_argument("--clone-args", default="", help="extra arguments for bench_clone.py (e.g. \"--only dag200\")")
    parser.add_argument("--copy-args", default="", help="extra arguments for bench_copy.py (e.g. \"--mb 20\")")
    parser.add_argument("--reuse", default="", metavar="ENVS",
                        help="comma-separated environments whose results in --results are reused, not rerun "
                             "(the report says so, with their time)")
    parser.add_argument("--no-import", action="store_true", help="skip the import benchmark")
    parser.add_argument("--no-profile", action="store_true", help="do not profile missed targets")
    parser.add_argument("--timeout", type=float, default=1800, help="per benchmark process, seconds")
    parser.add_argument("--out", default=str(ROOT / "BENCHMARKS.md"))
    parser.add_argument("--plot", default=str(BENCH / "clone_growth.png"))
    parser.add_argument("--results", default=str(ROOT / ".bench" / "results"))
    args = parser.parse_args(argv)
    args.plot = Path(args.plot).resolve()

    started = time.monotonic()
    envs = [e.strip() for e in args.envs.split(",") if e.strip()]
    copy_envs = [e.strip() for e in args.copy_envs.split(",") if e.strip()]
    unknown = [e for e in envs + copy_envs if e not in ENV_FAMILIES]
    if unknown:
        parser.error(f"unknown environment(s) {unknown}; expected some of {sorted(ENV_FAMILIES)}")
    results = Path(args.results).resolve()
    results.mkdir(parents=True, exist_ok=True)
    runner = Runner(args.python, args.compat_clone, results, args.timeout,
                    [e.strip() for e in args.reuse.split(",") if e.strip()])
    load_start = loadavg()
    _say(f"environments: {', '.join(envs)}; load average {load_start}")

    clone_args: List[str] = []
    if args.quick:
        clone_args = ["--repeats", "3", "--repeats-resnet", "2", "--repeats-growth", "2",
                      "--growth", "250,500,1000,2000"]
    clone_args += shlex.split(args.clone_args)
    copy_args = (["--reps", "5"] if args.quick else []) + shlex.split(args.copy_args)
    skipped: List[str] = []
    imp = None if args.no_import else runner.run("default", "import", "bench_import.py", [])
    clones: List[Dict[str, Any]] = []
    copies: List[Tuple[str, Dict[str, Any]]] = []
    for env in envs:
        for family in ENV_FAMILIES[env]:
            res = runner.run(env, f"clone-{family}", "bench_clone.py", ["--family", family] + clone_args)
            if res is not None:
                clones.append(res)
    for env in envs + [e for e in copy_envs if e not in envs]:
        copy = runner.run(env, "copy", "bench_copy.py", copy_args)
        if copy is not None:
            copies.append((env, copy))
    if not any(_on_gpu(r) for _, payload in copies for r in payload.get("results", [])):
        skipped.append("weight copy on a GPU (target: within 1.25× of a raw device copy): no GPU on this machine; "
                       "`python bench/bench_copy.py --device cuda:0` measures it where there is one")

    profiles: List[Dict[str, Any]] = []
    if not args.no_profile:
        for res in clones:
            for case in res["cases"]:
                if verdict(case["ratio_cpu"], case.get("ratios_cpu", []), _target(res["family"])) != "met":
                    prof = runner.run(res["env"], f"profile-{res['family']}-{case['case']}", "profile_clone.py",
                                      ["--family", res["family"], "--case", case["case"]])
                    entry: Dict[str, Any] = prof if prof is not None else {"error": "see the log above"}
                    entry.update(env=res["env"], case=case["case"], _res=res)
                    entry.setdefault("layers", case["layers"])
                    profiles.append(entry)

        for res in clones:
            gr = res.get("growth_ratio")
            if gr and gr["compat_cpu"] > GROWTH_MAX:
                sizes = f"{gr['from']},{min(gr['to'], 4 * gr['from'])}"
                prof = runner.run(res["env"], f"profile-{res['family']}-growth", "profile_clone.py",
                                  ["--family", res["family"], "--growth", sizes])
                entry = prof if prof is not None else {"error": "see the log above"}
                entry.update(env=res["env"], case="growth", _res=res)
                profiles.append(entry)

    plot_note = plot(clones, args.plot)
    wall = time.monotonic() - started
    text, verdicts = report(args, [os.path.relpath(sys.argv[0], ROOT)] + (argv if argv is not None else sys.argv[1:]),
                            machine(), (load_start, loadavg()), clones, copies, imp, profiles, plot_note,
                            runner.failures, skipped, wall, runner.reused)
    Path(args.out).write_text(text, encoding="utf-8")

    print()
    for line in text.split("## Clone time", 1)[1].split("## Weight copy", 1)[0].splitlines():
        if line.startswith("|") or line.startswith("!["):
            print(line)
    print()
    for line in verdicts:
        print(line)
    for line in skipped + runner.failures:
        print(f"not measured: {line}")
    _say(f"wrote {os.path.relpath(args.out, ROOT)}" + ("" if plot_note else f" and {os.path.relpath(args.plot, ROOT)}")
         + f" in {wall / 60:.1f} min")
    return 1 if runner.failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
