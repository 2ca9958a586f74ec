"""COMPATIBILITY.md: the feature x environment table, native vs compat_clone.

The test suite (``tests/test_features.py``) appends one JSON line per feature
and side to ``$COMPAT_CLONE_RESULTS/<env>.jsonl`` in every matrix environment::

    {"env": "tf_keras-2.21", "feature": "copy_weights", "description": "...",
     "side": "native" | "compat_clone", "outcome": "pass" | "fail" | "n/a" | "missing",
     "detail": "...", "keras": "tf_keras 2.21.0"}

(one record holding both sides, ``{"native": ..., "compat": ...}``, is read as
well). `write` aggregates every environment's file into ``COMPATIBILITY.md``
and, when the README has the markers ``<!-- compat-table:start -->`` /
``<!-- compat-table:end -->``, rewrites the table between them.

Run it through ``compat-clone matrix --report COMPATIBILITY.md [--readme
README.md]`` (after a matrix run, or alone with no command).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Set, Tuple

__all__ = ["ReportError", "load_results", "load_statuses", "render_table", "render_report", "update_readme", "write"]

START_MARKER = "<!-- compat-table:start -->"
END_MARKER = "<!-- compat-table:end -->"
_SIDES = {"native": "native", "compat": "compat_clone", "compat_clone": "compat_clone", "test": "test"}
_OUTCOMES = ("pass", "fail", "missing", "n/a")
# When several records meet in one cell (a default env testing two families,
# a rerun appending), the worst wins.
_SEVERITY = {"fail": 3, "missing": 2, "pass": 1, "n/a": 0}
_SYMBOL = {"pass": "✅", "fail": "❌", "missing": "➖", "n/a": "·", None: " "}

# env -> feature -> side -> (outcome, detail)
Results = Dict[str, Dict[str, Dict[str, Tuple[str, str]]]]


class ReportError(ValueError):
    """A results file holds a line that is not a feature record."""


def _merge(cell: Dict[str, Tuple[str, str]], side: str, outcome: str, detail: str) -> None:
    old = cell.get(side)
    if old is None or _SEVERITY[outcome] > _SEVERITY[old[0]]:
        cell[side] = (outcome, detail)


def _load_file(path: Path, results: Results, descriptions: Dict[str, str], versions: Dict[str, str]) -> Set[str]:
    """Adds one ``.jsonl`` file's records; returns the environments it holds."""
    envs: Set[str] = set()
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        where = f"{path}:{lineno}"
        try:
            rec = json.loads(line)
        except ValueError as e:
            raise ReportError(f"{where} is not a JSON line ({e}). Received: {line[:120]!r}.") from None
        if not isinstance(rec, dict) or not isinstance(rec.get("feature"), str):
            raise ReportError(f"Expected {where} to be an object with a `feature` string. Received: {line[:120]!r}.")
        env = str(rec.get("env") or path.name.split(".")[0])
        envs.add(env)
        feature = rec["feature"]
        cell = results.setdefault(env, {}).setdefault(feature, {})
        pairs: List[Tuple[str, Any]] = [(str(rec["side"]), rec.get("outcome"))] if "side" in rec else []
        pairs += [(key, rec[key]) for key in ("native", "compat", "compat_clone") if key in rec]
        if not pairs:
            raise ReportError(f"Expected {where} to hold `side` and `outcome` (or `native` / `compat`). Received: {line[:120]!r}.")
        for side, outcome in pairs:
            if side not in _SIDES or outcome not in _OUTCOMES:
                raise ReportError(
                    f"Expected {where} to have side in {sorted(set(_SIDES))} and outcome in "
                    f"{list(_OUTCOMES)}. Received: side={side!r}, outcome={outcome!r}."
                )
            _merge(cell, _SIDES[side], outcome, str(rec.get("detail", "")))
        if isinstance(rec.get("description"), str):
            descriptions.setdefault(feature, rec["description"])
        if isinstance(rec.get("keras"), str) and rec["keras"]:
            versions.setdefault(env, rec["keras"])
    return envs


def _result_files(folder: Path) -> List[Path]:
    """Every ``*.jsonl`` under `folder`, at any depth, outside hidden (staging) folders."""
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.rglob("*.jsonl")
                  if not any(part.startswith(".") for part in p.relative_to(folder).parts))


def load_results(*folders: Path) -> Tuple[Results, Dict[str, str], Dict[str, str]]:
    """Reads every ``<env>.jsonl`` (and ``<env>.tests.jsonl``) under the folders.

    One folder is one run's ``.matrix/_results``; several are results
    collected from several machines (CI artifacts, one folder per job).

    Args:
        *folders: folders searched at any depth; a folder that does not exist
            holds nothing.

    Returns:
        ``(results, descriptions, keras_versions)``: results per env, feature
        and side; a description per feature; the ``keras`` field per env.

    Raises:
        ReportError: a line that is not JSON, or lacks the fields above; or
            one environment's results in two folders (two runs of it).
    """
    results: Results = {}
    descriptions: Dict[str, str] = {}
    versions: Dict[str, str] = {}
    origin: Dict[str, Path] = {}
    for folder in folders:
        for path in _result_files(folder):
            for env in _load_file(path, results, descriptions, versions):
                if origin.setdefault(env, path.parent) != path.parent:
                    raise ReportError(
                        f"Environment {env!r} has results in both {origin[env]} and {path.parent}: merge one run "
                        "per environment (drop the duplicate folder)."
                    )
    return results, descriptions, versions


def load_statuses(*folders: Path) -> Dict[str, str]:
    """env -> the status of its last run (``<env>.outcome.json``, written by the runner)."""
    statuses: Dict[str, str] = {}
    for folder in folders:
        for path in sorted(folder.rglob("*.outcome.json")) if folder.is_dir() else []:
            try:
                rec = json.loads(path.read_text(encoding="utf-8"))
            except ValueError:
                continue
            if isinstance(rec, dict) and isinstance(rec.get("env"), str):
                statuses[rec["env"]] = str(rec.get("status", "?"))
    return statuses


def _env_order(results: Results, env_names: Sequence[str]) -> List[str]:
    return [e for e in env_names if e in results] + sorted(e for e in results if e not in env_names)


def _group_of(feature: str) -> Optional[str]:
    """``zoo_app_resnet.outputs`` -> ``zoo``: features named ``<group>_<case>.<aspect>``."""
    if "." not in feature:
        return None
    return feature.split("_", 1)[0] if "_" in feature.split(".", 1)[0] else None


def _summary_cell(cells: Mapping[str, Dict[str, Tuple[str, str]]], group: str) -> str:
    """``native/compat`` counts of cases whose every aspect passes, out of the cases that exist."""
    cases: Dict[str, Dict[str, List[str]]] = {}
    for feature, cell in cells.items():
        if _group_of(feature) != group:
            continue
        case = feature.split(".", 1)[0]
        for side in ("native", "compat_clone"):
            cases.setdefault(case, {}).setdefault(side, []).append(cell.get(side, ("missing", ""))[0])
    present = {c: sides for c, sides in cases.items()
               if any(o != "n/a" for o in sides.get("compat_clone", []))}
    if not present:
        return "·"
    counts = []
    for side in ("native", "compat_clone"):
        counts.append(sum(all(o in ("pass", "n/a") for o in sides.get(side, ["missing"]))
                          for sides in present.values()))
    return f"{counts[0]} / {counts[1]} of {len(present)}"


def render_table(results: Results, env_names: Sequence[str] = (), descriptions: Optional[Mapping[str, str]] = None,
                 summarize: Sequence[str] = ()) -> str:
    """The markdown table: one row per feature, one column per environment.

    Each cell is ``native compat_clone``: ✅ passes, ❌ fails, ➖ the native
    `clone_model` has no argument for it, · does not exist in that family.
    Features of a group named in `summarize` (``zoo``: ``zoo_<case>.<aspect>``)
    collapse into one row per group: per environment, how many of its cases
    pass every aspect natively / through compat_clone, out of the cases run
    there (the README's short form; COMPATIBILITY.md has every row).
    """
    envs = _env_order(results, env_names)
    if not envs:
        return "_No results yet: run `make test` (or `compat-clone matrix --report ...`)._\n"
    features = sorted({f for e in envs for f in results[e] if _group_of(f) not in summarize})
    header = "| feature | " + " | ".join(f"`{e}`" for e in envs) + " |"
    rule = "|---|" + "|".join(":-:" for _ in envs) + "|"
    rows = [header, rule]
    for f in features:
        cells = []
        for e in envs:
            cell = results[e].get(f)
            if not cell:
                cells.append(" ")
                continue
            if set(cell) == {"test"}:  # a plain test (pytest plugin's --compat-results): one symbol
                cells.append(_SYMBOL[cell["test"][0]])
                continue
            native = cell.get("native", (None, ""))[0]
            compat = cell.get("compat_clone", (None, ""))[0]
            cells.append(f"{_SYMBOL[native]} {_SYMBOL[compat]}")
        label = f"`{f}`"
        rows.append(f"| {label} | " + " | ".join(cells) + " |")
    for group in summarize:
        if any(_group_of(f) == group for e in envs for f in results[e]):
            rows.append(f"| `{group}` (cases passing every aspect, native / compat_clone) | "
                        + " | ".join(_summary_cell(results[e], group) for e in envs) + " |")
    legend = (
        "\nEach cell: native `clone_model` first, then `compat_clone.clone_model`. "
        "✅ passes · ❌ fails · ➖ the native API has no way to ask for it · "
        "`·` the feature does not exist in that family (a plain test's cell: its outcome; `·` skipped).\n"
    )
    if any(_group_of(f) in summarize for e in envs for f in results[e]):
        legend += ("A group row (`zoo`): per environment, the cases that pass every aspect natively / "
                   "through `compat_clone`, of the cases run there; "
                   "[COMPATIBILITY.md](COMPATIBILITY.md) has one row per case and aspect.\n")
    return "\n".join(rows) + "\n" + legend


def render_report(results: Results, envs: Sequence[Any] = (), descriptions: Optional[Mapping[str, str]] = None,
                  versions: Optional[Mapping[str, str]] = None, statuses: Optional[Mapping[str, str]] = None,
                  expected: Optional[Sequence[str]] = None) -> str:
    """The whole COMPATIBILITY.md text.

    Args:
        results: from `load_results`.
        envs: the matrix table's `Env` records (for column order and pins);
            environments with results but not in it come last.
        descriptions: feature -> one-line description.
        versions: env -> the Keras it loaded (``"keras 2.2.4"``).
        statuses: env -> status of the run that produced the results.
        expected: the environments that should have results (the run's
            selection); those without are listed as missing. Default: `envs`.

    Returns:
        The markdown text.
    """
    descriptions = descriptions or {}
    versions = versions or {}
    statuses = statuses or {}
    names = [e.name for e in envs]
    out = [
        "<!-- Generated by `compat-clone matrix --report` (`make test`) from .matrix/_results/*.jsonl.",
        "     Do not edit: changes are overwritten on the next run. -->",
        "# Compatibility",
        "",
        "Every cloning feature of the test suite, run in every environment of the version",
        "matrix ([`compat_clone/tools/matrix/matrix.toml`](compat_clone/tools/matrix/matrix.toml)) twice: with the",
        "family's native `clone_model` and with `compat_clone.clone_model`.",
        "",
        render_table(results, names, descriptions),
    ]
    envs_in = _env_order(results, names)
    missing = [e for e in (names if expected is None else expected) if e not in results]
    if envs_in:
        out += ["## Environments", "", "| env | loaded | pins |", "|---|---|---|"]
        by_name = {e.name: e for e in envs}
        for name in envs_in:
            env = by_name.get(name)
            pins = " ".join(f"`{p}`" for p in (tuple(env.packages) + tuple(env.no_deps))
                            if not p.startswith(("pytest", "hypothesis", "packaging", "pyyaml>="))) if env else ""
            out.append(f"| `{name}` | {versions.get(name, '')} | {pins} |")
        out.append("")
    if missing:
        out += ["Missing, no results for: " + ", ".join(
            f"`{m}`" + (f" ({statuses[m]})" if m in statuses else "") for m in missing) + ".", ""]
    notes = []
    for env in envs_in:
        for feature in sorted(results[env]):
            for side in ("native", "compat_clone", "test"):
                outcome, detail = results[env][feature].get(side, (None, ""))
                if outcome in ("fail", "missing") and detail:
                    notes.append(f"- `{feature}` in `{env}`, {side}: {outcome}: {detail.splitlines()[0][:200]}")
    if descriptions:
        out += ["## Features", ""]
        out += [f"- `{f}`: {descriptions[f]}" for f in sorted(descriptions)]
        out.append("")
    if notes:
        out += ["## Failures and gaps", ""] + notes + [""]
    return "\n".join(out).rstrip() + "\n"


def update_readme(readme: Path, table: str) -> bool:
    """Rewrites the text between the compat-table markers; False if absent."""
    if not readme.is_file():
        return False
    text = readme.read_text(encoding="utf-8")
    start = text.find(START_MARKER)
    end = text.find(END_MARKER, start + len(START_MARKER)) if start >= 0 else -1
    if start < 0 or end < 0:
        return False
    new = text[: start + len(START_MARKER)] + "\n" + table.rstrip() + "\n" + text[end:]
    if new != text:
        readme.write_text(new, encoding="utf-8")
    return True


def write(results_dir: "Path | Sequence[Path]", envs: Sequence[Any], report: Path, readme: Optional[Path] = None,
          statuses: Optional[Mapping[str, str]] = None, expected: Optional[Sequence[str]] = None) -> List[Path]:
    """Writes `report` (and the README table) from one or several result folders.

    Args:
        results_dir: ``.matrix/_results``, or several folders collected from
            several machines (`load_results` refuses one environment in two).
        envs: the matrix table's `Env` records.
        report: the markdown file to write (``COMPATIBILITY.md``).
        readme: a file whose compat-table markers get the table, or None.
        statuses: env -> status of this run; the runner's ``<env>.outcome.json``
            files fill in the others.
        expected: environments that should have results (see `render_report`).

    Returns:
        The files written.

    Raises:
        ReportError: a malformed result line, or a duplicate environment.
    """
    folders = [results_dir] if isinstance(results_dir, Path) else list(results_dir)
    results, descriptions, versions = load_results(*folders)
    all_statuses = {**load_statuses(*folders), **(statuses or {})}
    report.write_text(render_report(results, envs, descriptions, versions, all_statuses, expected), encoding="utf-8")
    written = [report]
    if readme is not None:
        # The README keeps the default run's environments (`make test`, CI);
        # COMPATIBILITY.md has every environment with results (`make test-wide`).
        default = [e.name for e in envs if getattr(e, "enabled", True)]
        shown = {e: r for e, r in results.items() if e in default} if default else results
        table = render_table(shown, default or [e.name for e in envs], descriptions, summarize=("zoo",))
        if len(shown) < len(results):
            table += (f"\nThe columns are `make test`'s environments; [COMPATIBILITY.md](COMPATIBILITY.md) "
                      f"has all {len(results)} with results (`make test-wide`), one row per zoo case and aspect.\n")
        if update_readme(readme, table):
            written.append(readme)
    return written
