"""The targets, and the verdict on each measured row: met, within noise, bounded, MISSED, ...

*bounded* means the target cannot be met by any implementation on this
machine, and ours is at that bound: a target of "N x faster than the native
way" is bounded when one raw framework copy of the same bytes (the floor of
any copy) is itself less than N x faster than the native way, and ours runs
within `AT_FLOOR` of that raw copy. The reason is printed on the line.
"""

from __future__ import annotations

import dataclasses
import statistics
from typing import Any, Dict, Iterable, List, Sequence, Tuple

CLONE_MAX = {"keras3": 1.10, "tf_keras": 1.10, "keras2": 1.00}  # compat_clone / native clone time
GROWTH_MAX = 9.0  # clone time at the largest / the smallest chain (500 -> 4000: linear is 8)
IMPORT_MAX_MS = 50.0
COPY_FASTER = 20.0  # copy_weights vs set_weights(get_weights()), CPU
HEAVY_FASTER_GET_SET = 5.0  # clone with weights <= 0.2x native clone + set_weights(get_weights())
HEAVY_FASTER_NATIVE = 2.0  # ... and <= 0.5x the native clone without weights
MEMORY_EXTRA = 0.10  # peak memory of a clone with weights <= source + clone + 10%
SOFT_FASTER = 20.0  # copy_weights(tau=) vs the NumPy get/set loop, TensorFlow-based families
AT_FLOOR = 1.5  # "within 1.5x of one raw copy of the same bytes"
GPU_COPY, GPU_SOFT, GPU_CLONE, GPU_FIRST = 1.10, 1.10, 1.05, 1.20
GPU_CLONE_WEIGHTS = 1.20  # clone_model(copy_weights=True) of a >= 4 GB model / one raw copy of its weights
HOST_SHARE = 0.05  # the host's peak while a GPU clone is made, as a share of its weights: no round trip
AT_RAW = 1.10  # copy_weights / the framework's fastest copy; the soft update / its fastest blend in place

# The raw op each weight row is measured against: the fastest the framework has for that copy or blend. Rows name theirs
# (`raw_op`, bench/backends.py `raw_copy_op` / `raw_blend_op`); rows written before they did (the GPU results of
# 2026-11-27 in bench/gpu/) used LEGACY_OPS. A row measured against another op than its anchor has no verdict.
ANCHORS = {
    ("torch", "copy"): "torch Tensor.copy_ per tensor",
    ("torch", "soft"): "torch._foreach_lerp_",
    ("jax", "copy"): "jax.device_put(may_alias=False)",
    ("jax", "soft"): "jax.jit blend, target donated (in place)",
}
LEGACY_OPS = {
    ("torch", "copy"): "torch._foreach_copy_",
    ("torch", "soft"): "torch._foreach_lerp_",
    ("jax", "copy"): "jax.device_put(may_alias=False)",
    ("jax", "soft"): "jax.jit blend into new buffers",
    ("torch", "clone with weights"): "torch Tensor.clone per tensor",
    ("jax", "clone with weights"): "jax.device_put(may_alias=False)",
}


def raw_op(row: Dict[str, Any]) -> str:
    """The raw op a GPU row was measured against (its own record, else the one the bench used then)."""
    return str(row.get("raw_op") or LEGACY_OPS.get((row.get("backend", ""), row["what"]), "?"))


def stale_anchor(row: Dict[str, Any]) -> str:
    """'' when a GPU row was measured against its anchor, else the anchor it was not measured against."""
    anchor = ANCHORS.get((row.get("backend", ""), row["what"]))
    return "" if anchor is None or anchor == raw_op(row) else anchor


@dataclasses.dataclass(frozen=True)
class Verdict:
    word: str  # met, within noise, bounded, MISSED, not available, not measured, skipped
    subject: str  # env/family case
    text: str

    def line(self) -> str:
        return f"{self.word:13} {self.subject}: {self.text}"


def med(times: Dict[str, Dict[str, List[float]]], name: str, clock: str = "wall") -> float:
    return float(statistics.median(times[name][clock]))


def pair_ratios(times: Dict[str, Dict[str, List[float]]], clock: str = "cpu") -> List[float]:
    return [c / n for c, n in zip(times["compat"][clock], times["native"][clock])]


def subject(row: Dict[str, Any], what: str) -> str:
    return f"{row['env']}/{row.get('family', '')} {what}".replace("/ ", " ")


def _ratio(subj: str, ratios: Sequence[float], limit: float, extra: str = "") -> Verdict:
    ratio = statistics.median(ratios)
    word = "met" if ratio <= limit else "within noise" if min(ratios) <= limit else "MISSED"
    return Verdict(
        word, subj, f"compat/native {ratio:.3f} (pairs {min(ratios):.2f}–{max(ratios):.2f}{extra}; target ≤ {limit:.2f})"
    )


def faster(subj: str, ours: float, theirs: float, raw: float, need: float, what: str, at_floor: float = AT_FLOOR) -> Verdict:
    """Target: `ours` at least `need` x faster than `theirs`; bounded where the raw copy is not."""
    speedup, ceiling, vs_raw = theirs / ours, theirs / raw, ours / raw
    text = f"speed-up {speedup:.1f}× over {what}, {vs_raw:.2f}× the time of one raw copy (target ≥ {need:g}×)"
    if speedup >= need:
        return Verdict("met", subj, text)
    if ceiling < need and vs_raw <= at_floor:
        return Verdict(
            "bounded",
            subj,
            f"{text}; bounded: one raw copy of the same bytes is only "
            f"{ceiling:.1f}× faster than {what}, so no copy can reach {need:g}×",
        )
    return Verdict("MISSED", subj, text)


def clone(row: Dict[str, Any]) -> List[Verdict]:
    work = f"; calls ×{row['calls_ratio']:.4f}, own code {100 * row['own_share']:.2f}%" if "calls_ratio" in row else ""
    return [_ratio(subject(row, row["model"]), pair_ratios(row["times"]), CLONE_MAX[row["family"]], work)]


def growth(rows: Sequence[Dict[str, Any]]) -> List[Verdict]:
    """One verdict for a family's growth rows (chain depths in order)."""
    first, last = rows[0], rows[-1]

    def grown(side: str) -> float:
        return float(min(last["times"][side]["cpu"]) / min(first["times"][side]["cpu"]))

    walk = f"; compat_clone's own walk {last['walk'] / first['walk']:.2f}" if "walk" in first else ""
    value = grown("compat")
    return [
        Verdict(
            "met" if value <= GROWTH_MAX else "MISSED",
            subject(first, f"growth {last['layers']}/{first['layers']}"),
            f"{value:.2f} (native {grown('native'):.2f}{walk}; linear {last['layers'] / first['layers']:.0f}; "
            f"target ≤ {GROWTH_MAX:.0f})",
        )
    ]


def copy(row: Dict[str, Any]) -> List[Verdict]:
    t = row["times"]
    subj = subject(row, f"[{row['backend']}] copy {row['mb']:.1f} MB on CPU")
    if not row["exact"]:
        return [Verdict("MISSED", subj, "the copy differs from the source")]
    ratio = med(t, "copy_weights") / med(t, "raw")
    op = row.get("raw_op", "the raw copy of its day")
    return [
        faster(subj, med(t, "copy_weights"), med(t, "get_set"), med(t, "raw"), COPY_FASTER, "get/set", AT_RAW),
        Verdict(
            "met" if ratio <= AT_RAW else "MISSED",
            subj,
            f"copy_weights / raw copy {ratio:.2f} (raw: `{op}`; target ≤ {AT_RAW:g})",
        ),
    ]


def heavy(row: Dict[str, Any]) -> List[Verdict]:
    t, subj = row["times"], subject(row, f"clone with weights, {row['mb']:.0f} MB")
    if not row["exact"]:
        return [Verdict("MISSED", subj, "the clone's weights differ from the source's")]
    out = [
        faster(
            subj,
            med(t, "compat"),
            med(t, "native_get_set"),
            med(t, "raw"),
            HEAVY_FASTER_GET_SET,
            "native clone + set_weights(get_weights())",
        ),
        faster(subj, med(t, "compat"), med(t, "native"), med(t, "raw"), HEAVY_FASTER_NATIVE, "the native clone without weights"),
    ]
    mem, native = row["memory"]["compat"], row["memory"].get("native_get_set", {})
    if "error" in mem:
        return out + [Verdict("MISSED", subj + " memory", f"not measured: {mem['error']}")]
    grown, allowed = mem["peak"] - mem["before"], mem["weights"] * (1 + 2 * MEMORY_EXTRA)
    versus = "" if "error" in native else f"; native clone + get/set: {(native['peak'] - native['before']) / 1e6:.0f} MB"
    return out + [
        Verdict(
            "met" if grown <= allowed else "MISSED",
            subj + " memory",
            f"peak {grown / 1e6:.0f} MB above the source while making a {mem['weights'] / 1e6:.0f} MB "
            f"clone{versus} (target ≤ {allowed / 1e6:.0f} MB: the clone + "
            f"{100 * MEMORY_EXTRA:.0f}% of source + clone)",
        )
    ]


def soft(row: Dict[str, Any]) -> List[Verdict]:
    subj = subject(row, "soft update (tau=0.01)")
    if not row["available"]:
        return [Verdict("not available", subj, row["why"])]
    if not row["exact"]:
        return [Verdict("MISSED", subj, "the result is not tau·source + (1−tau)·target")]
    t = row["times"]
    out = []
    if row["backend"] == "tensorflow":
        out.append(faster(subj, med(t, "tau"), med(t, "numpy_loop"), med(t, "raw"), SOFT_FASTER, "the NumPy loop"))
    vs_raw = med(t, "tau") / med(t, "raw")
    refs = "".join(f"; {label} {med(t, name) / med(t, 'raw'):.2f}×" for name, label in SOFT_REFERENCES.items() if name in t)
    out.append(
        Verdict(
            "met" if vs_raw <= AT_FLOOR else "MISSED",
            subj,
            f"{vs_raw:.2f}× one raw copy of the same bytes (target ≤ {AT_FLOOR:g}×{refs})",
        )
    )
    if "fused" in t:
        fused = med(t, "tau") / med(t, "fused")
        out.append(
            Verdict(
                "met" if fused <= AT_RAW else "MISSED",
                subj,
                f"tau / fused blend in place {fused:.2f} (raw: `{row['fused_op']}`; target ≤ {AT_RAW:g})",
            )
        )
    return out


# The soft case's other ways, where the backend measures them (bench/backends.py `soft_references`).
SOFT_REFERENCES = {"one_pass": "floor: one in-place pass", "two_pass": "the previous two-pass blend"}


def gpu(row: Dict[str, Any]) -> List[Verdict]:
    subj = subject(row, f"GPU ({row['card']}) {row['what']}" if "card" in row else "GPU")
    if row["what"] == "skipped":
        return [Verdict("skipped", subj, row["why"])]
    if row.get("available") is False:
        return [Verdict("not available", subj, row["why"])]
    if row["what"] == "clone":
        return [_ratio(subj, pair_ratios(row["times"], "wall"), GPU_CLONE, f"; {row['layers']}-layer Dense(64) chain")]
    if row["what"] == "first clone":
        ratio = statistics.median(row["seconds"]["compat"]) / statistics.median(row["seconds"]["native"])
        return [Verdict("met" if ratio <= GPU_FIRST else "MISSED", subj, f"compat/native {ratio:.2f} (target ≤ {GPU_FIRST:g})")]
    if row["what"] == "placement":
        return [_placement(subj, row)]
    if row["what"] == "clone with weights":
        return _clone_with_weights(subj, row)
    if row.get("exact") is False:
        return [Verdict("MISSED", subj, "the target is not bit for bit the source")]
    ours, raw, limit = ("copy_weights", "raw", GPU_COPY) if row["what"] == "copy" else ("tau", "fused", GPU_SOFT)
    ratio = med(row["times"], ours) / med(row["times"], raw)
    size = f", {row['mb'] / 1e3:.1f} GB" if "mb" in row else ""
    tau = f" (tau={row['tau']:g})" if "tau" in row else ""
    text = f"{ours} / {raw} {ratio:.2f}{size} (raw: `{raw_op(row)}`; target ≤ {limit:g})"
    anchor = stale_anchor(row)
    if anchor:
        return [
            Verdict(
                "not measured",
                subj + tau,
                f"{text}; not measured against the new anchor `{anchor}`, which is faster: rerun bench/gpu_device.sh",
            )
        ]
    return [Verdict("met" if ratio <= limit else "MISSED", subj + tau, text)]


def _placement(subj: str, row: Dict[str, Any]) -> Verdict:
    judged = [r for r in row["records"] if r["expected"] is not None]
    wrong = [f"{r['way']}: on {r['found']}, expected {r['expected']}" for r in judged if r["found"] != r["expected"]]
    if not row["copy_exact"]:
        wrong.append("copy_weights GPU -> CPU: the target is not bit for bit the source")
    native = [f"{r['way'].split(' (')[0]} on {r['found']}" for r in row["records"] if r["expected"] is None]
    shown = f"; {', '.join(native)}" if native else ""
    if wrong:
        return Verdict("MISSED", subj, "; ".join(wrong))
    return Verdict("met", subj, f"all {len(judged)} clones and copies where they belong{shown}")


def _clone_with_weights(subj: str, row: Dict[str, Any]) -> List[Verdict]:
    t, size = row["times"], f"{row['mb'] / 1e3:.1f} GB"
    if not row["exact"]:
        return [Verdict("MISSED", subj, "the clone's weights are not bit for bit the source's")]
    ours, raw, native = med(t, "compat"), med(t, "raw"), med(t, "native")
    detail = (
        f"{ours / raw:.2f}× one raw copy into new buffers (`{raw_op(row)}`), {size} (native clone without weights: "
        f"{native / raw:.2f}×; target ≤ {GPU_CLONE_WEIGHTS:g})"
    )
    if ours / raw <= GPU_CLONE_WEIGHTS:
        speed = Verdict("met", subj, detail)
    elif ours <= native:
        speed = Verdict(
            "bounded",
            subj,
            detail + "; bounded: the native clone alone, with no weights copied, "
            "takes longer than the target allows, and compat_clone's clone with weights is faster",
        )
    else:
        speed = Verdict("MISSED", subj, detail)
    share = row["host_mb"] / row["mb"]
    host = Verdict(
        "met" if share <= HOST_SHARE else "MISSED",
        subj.replace("clone with weights", "host round trip"),
        f"host peak {row['host_mb']:.0f} MB while cloning {size} on {row['device']} "
        f"({100 * share:.1f}%; target ≤ {100 * HOST_SHARE:g}%: no round trip through the host)",
    )
    return [speed, host]


def import_time(row: Dict[str, Any]) -> List[Verdict]:
    cpu, wall = 1e3 * statistics.median(row["cpu"]), 1e3 * statistics.median(row["wall"])
    ok = cpu < IMPORT_MAX_MS and not row["frameworks"]
    return [
        Verdict(
            "met" if ok else "MISSED",
            "import compat_clone",
            f"{cpu:.1f} ms CPU, {wall:.1f} ms wall (median), frameworks loaded: "
            f"{', '.join(row['frameworks']) or 'none'} (target < {IMPORT_MAX_MS:.0f} ms, none)",
        )
    ]


def growth_groups(rows: Iterable[Dict[str, Any]]) -> Dict[Tuple[str, str], List[Dict[str, Any]]]:
    """The growth rows (profiles aside) of each environment and family, in depth order."""
    groups: Dict[Tuple[str, str], List[Dict[str, Any]]] = {}
    for row in rows:
        if row["case"] == "growth" and "profile" not in row:
            groups.setdefault((row["env"], row["family"]), []).append(row)
    return groups


def all_verdicts(rows: Sequence[Dict[str, Any]]) -> List[Verdict]:
    """Every verdict, in the order of the rows (a family's growth curve where its first row is)."""
    groups, out = growth_groups(rows), []
    for row in rows:
        if row["case"] == "growth":
            key = (row["env"], row["family"])
            if "profile" not in row and groups[key][0] is row:
                out += growth(groups[key])
        elif row["case"] in _BY_CASE:
            out += _BY_CASE[row["case"]](row)
    return out


_BY_CASE = {"clone": clone, "copy": copy, "heavy": heavy, "soft": soft, "gpu": gpu, "import": import_time}
