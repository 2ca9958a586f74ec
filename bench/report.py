"""BENCHMARKS.md and bench/clone_growth.png, rendered from the JSON of the last `bench/run.py`.

    python bench/report.py [--results .bench/results] [--out BENCHMARKS.md]

Only the standard library, plus matplotlib for the plot (without it the
report says so). Verdicts come from `verdicts.py`, where the targets are.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

import verdicts as V
from common import Plan

ROOT = Path(__file__).resolve().parent.parent
PLOT = ROOT / "bench" / "clone_growth.png"
# GPU results and suite logs from the lent GPU machine (`bench/gpu_device.sh`), committed: a run without a GPU
# reports them (bench/run.py).
GPU_RECORD = ROOT / "bench" / "gpu"
Row = Dict[str, Any]

GROWTH_CAUSES = {
    "keras3": "Keras 3.15's functional graph check (`ops/function.py` `map_graph`) makes every operation name "
    "unique with `all_names.count(name)` for each name: n² string comparisons. compat_clone's clone "
    "makes the native clone's calls (the counts above match) and grows as the native one does.",
    "tf_keras": "tf_keras's own `clone_model` is quadratic: `_clone_functional_model` (tf_keras 2.21 "
    "`src/models/cloning.py`) tests `layer not in new_model.layers` for every cloned layer, and "
    "`Model.layers` rebuilds the layer list on each access: n²/2 calls. compat_clone delegates a plain "
    "tf.keras clone to it, to stay identical to native; its own graph walk (*own walk*) grows linearly.",
    "keras2": "Keras 2.2.5's `Model` constructor is quadratic: `engine/network.py` `_map_graph_network` checks "
    "`x not in computable_tensors` (a list) for every node input, each comparison through TensorFlow's "
    "`Tensor.__eq__` dispatch: n²/2 calls. Native and compat_clone clones both end by constructing the "
    "`Model`, with the same calls.",
}
COPY_BOUNDS = (
    "Where the CPU copy target (≥ 20× the get/set path) is *bounded*: on the CPU the get/set path crosses no "
    "device; it is two memcpys of the same bytes (into NumPy and back) on JAX, torch and standalone Keras 2 "
    "(whose TF1 variables cannot share a buffer), while any real copy makes one. No copy can be 20× faster than "
    "the two it replaces; the 20× holds where the copy can be avoided (TensorFlow eager shares the buffer, "
    "copy-on-write), and on a GPU, where get/set goes through the host."
)
SOFT_FLOOR = (
    "The floor of the soft update in standalone Keras 2 (TF1 reference variables, CPU): a blend in place must read "
    "the source and the target and write the target, three streams of the model's bytes, where a raw copy reads the "
    "source and writes a new buffer (two streams, and the first-touch faults of the new pages, which is why the floor can lie below 1×). TensorFlow has no kernel "
    "that blends two variables in one pass, and an expression (`dst + tau * (src - dst)`, then `assign`) makes "
    "temporaries of the model's size and copies them again, as does concatenating the variables per dtype into one "
    "blend (measured while choosing the kernel, 2026-11-27 on this machine under load: 4.2× and 6.0× the CPU time of one raw copy). *One in-place pass* is the least traffic any "
    "blend in place can make: `ApplyGradientDescent` (`dst -= tau * src`, one fused kernel) on the same variables, "
    "not a blend itself. compat_clone now blends each float32/float64 target in one pass for `tau <= 0.5`: "
    "`SparseApplyProximalGradientDescent` over every row, which subtracts `lr * src_row` from a target row and "
    "divides it by `1 + l2 * lr` while the row is in cache; `lr = -tau / (1 - tau)` and `l2 = -1` make that the "
    "blend. Its loop is single-threaded (large targets run in pieces side by side). The *previous two-pass blend* "
    "(`dst -= tau * dst`, then `dst -= -tau * src`) reads and writes the target twice; it is still used above "
    "`tau = 0.5` (where `tau / (1 - tau)` could overflow), for float16 / bfloat16 and for variables on a GPU."
)
METHODS = [
    "- **Clone time**: `compat_clone.clone_model(model)` against the family's own `clone_model(model)`, same model, "
    "same process, interleaved (A B, B A, ...), `gc.collect()` before each call, after warm-up clones of both. The "
    "**ratio** is the median of the per-pair ratios of CPU time (`time.process_time`: the machine is shared, and "
    "CPU time is the steadier measure of the work); the wall ratio is shown too. Standalone Keras 2 keeps every "
    "clone in its TF1 graph: there each pair runs on a model rebuilt in a fresh graph.",
    "- **Growth**: the same on chains of weightless `ReLU` layers; the growth ratio is time(largest) / "
    "time(smallest) from the fastest clone at each size (sizes are minutes apart: noise only adds time). Keras "
    "itself recurses once per graph node, so the worker runs in a thread with a 512 MiB stack and a raised "
    "recursion limit, for both sides; compat_clone's own graph walks are iterative (`tests/clone/test_no_recursion.py`).",
    "- **Weights** (`bench/cases_weights.py`): `copy_weights` against `set_weights(get_weights())` and against the "
    "framework's fastest raw copy of the same tensors, named in each row (torch `Tensor.copy_` per tensor, JAX "
    "`device_put(may_alias=False)`, TensorFlow `assign` of a tensor); on a ≥ 500 MB model (8 Dense(4096)), "
    "`clone_model(m, copy_weights=True)` against native `clone_model` + get/set and the native clone alone, its "
    "peak resident memory in a fresh process (kernel high-water mark), and the soft update "
    "`copy_weights(source, target, tau=0.01)` against the NumPy loop, one raw copy and, where the framework has "
    "one, its fastest blend in place (`torch._foreach_lerp_`; one jitted JAX blend with the target's arrays "
    "donated). Medians of wall time.",
    "- **GPU** (`bench/cases_gpu.py`): Keras 3 per backend on one GPU, wall time with the device work awaited: "
    "clone overhead on a 300-layer chain; on a ≥ 4 GB model (4 Dense(16384)), `copy_weights` against the fastest "
    "raw device-to-device copy, the soft update `tau=0.005` against the fastest raw blend in place (each row names "
    "its raw op; a row measured against an older, slower op is *not measured*), and `clone_model(m, "
    "copy_weights=True)` against a raw copy into new buffers, with the host's peak memory while it runs (a round "
    "trip through the host would hold the weights there); where clones land (CPU source, `device=` both ways); "
    "the first clone on JAX in fresh processes. Run on the lent GPU machine by `bench/gpu_device.sh`.",
    "- **Import**: `import compat_clone` in fresh interpreters (start-up excluded); no framework may load.",
]


def _table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> List[str]:
    return (
        ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
        + ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
        + [""]
    )


def _ms(times: Dict[str, Any], name: str) -> str:
    return f"{1e3 * V.med(times, name):.1f}"


def _of(rows: Sequence[Row], case: str) -> List[Row]:
    return [r for r in rows if r["case"] == case]


def clone_section(rows: Sequence[Row]) -> List[str]:
    body = []
    for r in _of(rows, "clone"):
        t, cpu = r["times"], V.pair_ratios(r["times"])
        body.append(
            [
                r["env"],
                r["keras"],
                r["title"],
                r["layers"],
                f"{V.med(t, 'native', 'cpu'):.3f}",
                f"{V.med(t, 'compat', 'cpu'):.3f}",
                f"**{statistics.median(cpu):.3f}**",
                f"{min(cpu):.2f}–{max(cpu):.2f}",
                f"{statistics.median(V.pair_ratios(t, 'wall')):.3f}",
                len(cpu),
                f"{r['calls_ratio']:.4f}" if "calls_ratio" in r else "-",
                f"{100 * r['own_share']:.2f}%" if "own_share" in r else "-",
                V.clone(r)[0].word,
            ]
        )
    return (
        ["## Clone time: compat_clone / native", ""]
        + _table(
            [
                "env",
                "Keras",
                "model",
                "layers",
                "native s",
                "compat_clone s",
                "ratio (CPU)",
                "pair spread",
                "ratio (wall)",
                "pairs",
                "calls ratio",
                "own code",
                "verdict",
            ],
            body,
        )
        + [
            "CPU seconds, medians. *calls ratio*: function calls of one compat_clone clone / of one native clone "
            "(cProfile), a measure of work that does not depend on the load. *own code*: the share of the compat_clone "
            "clone's profiled time spent in compat_clone's own functions.",
            "",
        ]
    )


def growth_section(rows: Sequence[Row], plot_note: Optional[str], link: str = f"bench/{PLOT.name}") -> List[str]:
    groups = V.growth_groups(rows)
    if not groups:
        return []
    body = [
        [
            env,
            g["keras"],
            g["layers"],
            f"{V.med(g['times'], 'native', 'cpu'):.3f}",
            f"{V.med(g['times'], 'compat', 'cpu'):.3f}",
            f"{statistics.median(V.pair_ratios(g['times'])):.3f}",
            len(g["times"]["compat"]["cpu"]),
            f"{g['walk']:.3f}" if "walk" in g else "-",
        ]
        for (env, _), group in groups.items()
        for g in group
    ]
    out = [
        "## Growth with model size (ReLU chain)",
        "",
        f"![clone time vs layers]({link})" if plot_note is None else f"(No plot: {plot_note}.)",
        "",
    ]
    out += _table(["env", "Keras", "layers", "native s", "compat_clone s", "ratio (CPU)", "pairs", "own walk s"], body)
    out += [
        "*own walk*: tf.keras / tf_keras only: compat_clone with a `call_function`, which runs compat_clone's "
        "own graph walk instead of delegating to the native clone; one run per size.",
        "",
    ]
    profiles = [r for r in _of(rows, "growth") if "profile" in r]
    for p in profiles:
        out.append(
            f"- `{p['env']}` {p['keras']}: cProfile of chains of {p['small']} and {p['big']} layers (linear "
            f"{p['linear']:.0f}×): native grows {p['native_growth']:.2f}×, compat_clone {p['compat_growth']:.2f}×. "
            "What grows most beyond linear in the compat_clone clone (own time, small → big):"
        )
        out += [
            f"    - {t['function']}: {t['calls'][0]} → {t['calls'][1]} calls (native clone: {t['native_calls'][0]} "
            f"→ {t['native_calls'][1]}), {t['seconds'][0]:.3f} s → {t['seconds'][1]:.3f} s"
            for t in p["top"]
        ]
        out.append(f"    - Analysis: {GROWTH_CAUSES.get(p['family'], '-')}")
    return out + [""] * bool(profiles)


def weights_section(rows: Sequence[Row]) -> List[str]:
    out = ["## Weights", ""]
    copies = [
        [
            r["env"],
            r["keras"],
            r["device"],
            f"{r['mb']:.1f}",
            _ms(r["times"], "copy_weights"),
            _ms(r["times"], "get_set"),
            _ms(r["times"], "raw"),
            f"`{r.get('raw_op', '?')}`",
            f"{V.med(r['times'], 'get_set') / V.med(r['times'], 'copy_weights'):.1f}×",
            f"{V.med(r['times'], 'copy_weights') / V.med(r['times'], 'raw'):.2f}",
        ]
        for r in _of(rows, "copy")
    ]
    if copies:
        out += _table(
            [
                "env",
                "Keras",
                "device",
                "MB",
                "copy_weights ms",
                "get/set ms",
                "raw copy ms",
                "raw op",
                "speed-up",
                "copy_weights / raw",
            ],
            copies,
        ) + [COPY_BOUNDS, ""]
    heavy = []
    for r in _of(rows, "heavy"):
        t, mem = r["times"], r["memory"]
        peaks = " / ".join(
            "-" if "error" in mem[w] else f"{(mem[w]['peak'] - mem[w]['before']) / 1e6:.0f}" for w in ("compat", "native_get_set")
        )
        heavy.append(
            [
                r["env"],
                r["keras"],
                f"{r['mb']:.0f}",
                _ms(t, "compat"),
                _ms(t, "native_get_set"),
                _ms(t, "native"),
                f"{_ms(t, 'raw')} (`{r.get('raw_op', '?')}`)",
                peaks,
            ]
        )
    if heavy:
        out += [f"Clone with weights ({_of(rows, 'heavy')[0]['layers']} × Dense({_of(rows, 'heavy')[0]['width']})):", ""]
        out += _table(
            [
                "env",
                "Keras",
                "MB",
                "compat_clone, copy_weights=True ms",
                "native + get/set ms",
                "native, no weights ms",
                "raw copy ms",
                "peak MB above the source: compat_clone / native",
            ],
            heavy,
        )
    measured = [r for r in _of(rows, "soft") if r["available"]]

    def cell(t: Dict[str, Any], name: str) -> str:
        return f"{_ms(t, name)} ({V.med(t, name) / V.med(t, 'raw'):.2f}×)" if name in t else "-"

    if measured:
        out += [
            "Soft update, `copy_weights(source, target, tau=0.01)`, same model (in brackets: the time of one raw "
            "copy of the same bytes, ×):",
            "",
        ]
        out += _table(
            [
                "env",
                "Keras",
                "copy_weights(tau) ms",
                "NumPy loop ms",
                "raw copy ms (op)",
                "fused blend in place ms (op)",
                "one in-place pass ms",
                "previous two-pass blend ms",
            ],
            [
                [
                    r["env"],
                    r["keras"],
                    cell(r["times"], "tau"),
                    cell(r["times"], "numpy_loop"),
                    f"{_ms(r['times'], 'raw')} (`{r.get('raw_op', '?')}`)",
                    f"{cell(r['times'], 'fused')} (`{r['fused_op']}`)" if "fused" in r["times"] else "-",
                    cell(r["times"], "one_pass"),
                    cell(r["times"], "two_pass"),
                ]
                for r in measured
            ],
        )
        out += [SOFT_FLOOR, ""] if any("one_pass" in r["times"] for r in measured) else []
    return out


def gpu_section(rows: Sequence[Row], skipped: Sequence[str] = ()) -> List[str]:
    """The GPU table; where nothing was measured on a GPU, a section that says so, and why."""
    body, where = [], []
    for r in _of(rows, "gpu"):
        t = r.get("times", {})
        if r["what"] == "clone":
            body.append([r["env"], r["card"], f"clone, {r['layers']}-layer chain", _ms(t, "compat"), _ms(t, "native")])
        elif r["what"] == "first clone":
            s = r["seconds"]
            body.append(
                [
                    r["env"],
                    "",
                    "first clone (fresh process)",
                    f"{1e3 * statistics.median(s['compat']):.1f}",
                    f"{1e3 * statistics.median(s['native']):.1f}",
                ]
            )
        elif r["what"] == "clone with weights":
            body.append(
                [
                    r["env"],
                    "",
                    f"clone with weights, {r['mb'] / 1e3:.1f} GB (raw copy; native clone "
                    f"without weights {_ms(t, 'native')} ms; host peak {r['host_mb']:.0f} MB)",
                    _ms(t, "compat"),
                    _ms(t, "raw"),
                    f"`{V.raw_op(r)}`",
                ]
            )
        elif r["what"] == "placement":
            where += [
                f"- `{r['env']}`: {x['way']}: **{x['found']}**"
                + (f" (expected {x['expected']})" if x["expected"] is not None else "")
                for x in r["records"]
            ]
        elif t:
            ours, ref = ("copy_weights", "raw") if r["what"] == "copy" else ("tau", "fused")
            size = f", {r['mb'] / 1e3:.1f} GB" if "mb" in r else ""
            tau = f", tau={r['tau']:g}" if "tau" in r else ""
            stale = V.stale_anchor(r)
            op = f"`{V.raw_op(r)}`" + (f": the old anchor, **not measured against the new one** (`{stale}`)" if stale else "")
            body.append([r["env"], "", f"{r['what']} ({ref}{size}{tau})", _ms(t, ours), _ms(t, ref), op])
    for row in body:
        row += [""] * (6 - len(row))
    if body:
        placed = ["", "Placement (where each clone's variables are):", "", *where, ""] if where else []
        return (
            ["## GPU", ""]
            + _table(["env", "card", "what", "compat_clone ms", "native / raw op ms", "raw op"], body)
            + placed
            + suite_on_gpu()
        )
    why = [f"`{r['env']}`: {r['why']}" for r in _of(rows, "gpu") if r.get("what") == "skipped"]
    why += [m for m in skipped if m.startswith("GPU")]
    return [
        "## GPU",
        "",
        "**Not measured: no GPU** in this run.",
        "",
        *(f"- {w}" for w in why),
        *([""] if why else []),
        f"The GPU targets, for a machine with one (`bench/verdicts.py`): `copy_weights` ≤ {V.GPU_COPY:g}× a raw "
        f"device-to-device copy of the same tensors (torch `copy_` per tensor, JAX `device_put`), the soft update "
        f"≤ {V.GPU_SOFT:g}× the fastest raw blend in place (`torch._foreach_lerp_`, one jitted JAX blend with "
        f"the target donated), clone time ≤ {V.GPU_CLONE:g}× native on a "
        f"{Plan().gpu_chain}-layer chain, JAX's first clone in a fresh process ≤ {V.GPU_FIRST:g}× native. "
        "`make bench` measures them where `nvidia-smi` lists a GPU (`python bench/run.py --cases gpu` for "
        "those alone).",
        "",
    ]


def suite_on_gpu() -> List[str]:
    """The suite's outcome on the GPU machine, from the logs `bench/gpu_device.sh` left in bench/gpu/."""
    lines = []
    for log in sorted(GPU_RECORD.glob("tests-*.log")):
        text = log.read_text(encoding="utf-8", errors="replace").strip().splitlines()
        if text:
            lines.append(f"- `gpu-{log.stem.split('-', 1)[1]}`: {text[-1].strip('= ')} (`bench/gpu/{log.name}`)")
    return (
        [
            "The project's suite on the same machine (`bench/gpu_device.sh`), each backend an environment of its "
            "own with the installed wheel:",
            "",
            *lines,
            "",
        ]
        if lines
        else []
    )


def import_section(rows: Sequence[Row]) -> List[str]:
    if not _of(rows, "import"):
        return []
    out = ["## Import", ""]
    for r in _of(rows, "import"):
        ours = [m for m in r["added"] if m.startswith("compat_clone")]
        out += [
            "- `import compat_clone`: " + V.import_time(r)[0].text + ".",
            f"- Modules added: {len(r['added'])}, compat_clone's: {', '.join(ours)}.",
            "- Slowest (`-X importtime`, cumulative µs): " + ", ".join(f"`{n}` {us}" for us, n in r["slowest"]) + ".",
        ]
    return out + [""]


def plot(rows: Sequence[Row], path: Path) -> Optional[str]:
    """Clone time against layers, native and compat_clone, one panel per environment and family."""
    groups = V.growth_groups(rows)
    if not groups:
        return "no growth data"
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib is not installed here; `make bench` installs it in .bench/venv"
    fig, axes = plt.subplots(1, len(groups), figsize=(4.6 * len(groups), 4.0), squeeze=False)
    for ax, ((env, _), group) in zip(axes[0], groups.items()):
        xs = [g["layers"] for g in group]
        for side, style, label in (("native", "o-", "native clone_model"), ("compat", "s--", "compat_clone")):
            ax.plot(xs, [V.med(g["times"], side, "cpu") for g in group], style, label=label)
        if all("walk" in g for g in group):
            ax.plot(xs, [g["walk"] for g in group], "^-.", label="compat_clone, own walk")
        first = V.med(group[0]["times"], "compat", "cpu")
        ax.plot(xs, [first * x / xs[0] for x in xs], ":", color="gray", label="linear")
        ax.set_xscale("log", base=2)
        ax.set(
            yscale="log",
            xticks=xs,
            xticklabels=[str(x) for x in xs],
            xlabel="layers (ReLU chain)",
            ylabel="clone time, CPU s (median)",
        )
        ax.tick_params(axis="x", which="minor", bottom=False, labelbottom=False)
        ax.set_title(f"{group[0]['keras']} [{env}]", fontsize=9)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return None


def write(results: Path, out: Path) -> List[V.Verdict]:
    """Renders the report of the run recorded in `results/_run.json`; returns its verdicts."""
    meta = json.loads((results / "_run.json").read_text(encoding="utf-8"))
    runs = [json.loads((results / name).read_text(encoding="utf-8")) for name in meta["files"] if (results / name).exists()]
    rows = [dict(row, env=run["env"]) for run in runs for row in run["rows"]]
    verdicts = V.all_verdicts(rows)
    args = " ".join(shlex.quote(a) for a in meta["argv"])
    command = (
        (f"make bench BENCH_ARGS={shlex.quote(args)}" if args else "make bench")
        if meta["via_make"]
        else f"python bench/run.py {args}".strip()
    )
    missing = meta["failures"] + meta["skipped"] + [e for run in runs for e in run["errors"]]
    md = [
        "# Benchmarks",
        "",
        "<!-- Generated by `make bench` (bench/run.py, bench/report.py). Do not edit by hand. -->",
        "",
        f"Generated {meta['started']} by `{command}` in {meta['wall'] / 60:.1f} min.",
    ]
    if meta["quick"]:
        md += [
            "",
            "**Quick run** (`--quick`): small models and few repeats, a smoke test of the benchmarks; its "
            "numbers are not the measurements of record (`make bench` without `--quick` makes those).",
        ]
    md += [
        "",
        "## What is measured, and how",
        "",
        *METHODS,
        "",
        "## Targets",
        "",
        "```",
        *(v.line() for v in verdicts),
        "```",
        "",
    ]
    md += ["**Not measured in this run:**", "", *(f"- {m}" for m in missing), ""] if missing else []
    md += (
        [
            "**Reused from an earlier run** (`--reuse`; the GPU results, where this machine has no GPU, from "
            "`bench/gpu/`, written on the lent GPU machine by `bench/gpu_device.sh`):",
            "",
            *(f"- {m}" for m in meta["reused"]),
            "",
        ]
        if meta["reused"]
        else []
    )
    # The plot of record goes with BENCHMARKS.md; another report (a partial run) has its own, beside it.
    record = out.resolve() == (ROOT / "BENCHMARKS.md").resolve()
    plot_path = PLOT if record else out.with_name(out.stem + ".clone_growth.png")
    link = os.path.relpath(plot_path, out.resolve().parent)
    md += clone_section(rows) + growth_section(rows, plot(rows, plot_path), link) + weights_section(rows)
    md += gpu_section(rows, meta["skipped"]) + import_section(rows)
    mach, (load0, load1) = meta["machine"], (meta["load"] + ["?"])[:2]
    md += [
        "## Machine and software",
        "",
        f"- CPU: {mach['cpu']}, {mach['cores']} cores; RAM {mach['ram_gb']} GB; {mach['os']}.",
        f"- Load average (1/5/15 min) at start {load0}, at end {load1}: the machine is shared, "
        "which is why clone ratios are CPU times measured in-process, interleaved.",
    ]
    md += [
        f"- `{run['env']}`: Python {run['python']}; " + ", ".join(f"{k} {v}" for k, v in sorted(run["versions"].items())) + "."
        for run in runs
    ]
    md += [
        "",
        "## Reproduce",
        "",
        "```",
        command,
        "```",
        "",
        "Raw results: `.bench/results/*.json` (one file per "
        "environment, `_run.json` for the run); `python bench/report.py` renders this file from them again.",
        "",
    ]
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(md), encoding="utf-8")
    return verdicts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", default=str(ROOT / ".bench" / "results"))
    parser.add_argument("--out", default=str(ROOT / "BENCHMARKS.md"))
    args = parser.parse_args()
    for verdict in write(Path(args.results), Path(args.out)):
        print(verdict.line())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
