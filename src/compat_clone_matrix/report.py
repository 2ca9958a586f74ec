"""COMPATIBILITY.md: the feature x environment table, native vs compat_clone.

`write` turns the result folders of a run (`results`: one ``<env>.jsonl``
per environment) into ``COMPATIBILITY.md`` and, when the README has the
markers ``<!-- compat-table:start -->`` / ``<!-- compat-table:end -->``,
rewrites the table between them. A report is read back (`report_format.parse_report`) so
that a run of some environments keeps the other columns of the last report.

Run it through ``compat-clone matrix --report COMPATIBILITY.md [--readme
README.md]`` (after a matrix run, or alone with no command).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from compat_clone_matrix.report_format import SYMBOL, TABLE_TAG, date_key, parse_report
from compat_clone_matrix.results import Results, Run, load_outcomes, load_run
from compat_clone_matrix.table import BUILTIN_TABLE

__all__ = ["render_table", "render_report", "parse_report", "update_readme", "readme_note", "write"]

START_MARKER = "<!-- compat-table:start -->"
END_MARKER = "<!-- compat-table:end -->"


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
    present = {c: sides for c, sides in cases.items() if any(o != "n/a" for o in sides.get("compat_clone", []))}
    if not present:
        return "·"
    counts = []
    for side in ("native", "compat_clone"):
        counts.append(sum(all(o in ("pass", "n/a") for o in sides.get(side, ["missing"])) for sides in present.values()))
    return f"{counts[0]} / {counts[1]} of {len(present)}"


def render_table(
    results: Results,
    env_names: Sequence[str] = (),
    descriptions: Optional[Mapping[str, str]] = None,
    summarize: Sequence[str] = (),
) -> str:
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
        return "_No results yet: run `compat-clone matrix --report FILE.md -- COMMAND`._\n"
    features = sorted({f for e in envs for f in results[e] if _group_of(f) not in summarize})
    kinds = {"test" if set(cell) == {"test"} else "feature" for e in envs for cell in results[e].values() if cell}
    header = f"| {'test' if kinds == {'test'} else 'feature'} | " + " | ".join(f"`{e}`" for e in envs) + " |"
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
                cells.append(SYMBOL[cell["test"][0]])
                continue
            native = cell.get("native", (None, ""))[0]
            compat = cell.get("compat_clone", (None, ""))[0]
            cells.append(f"{SYMBOL[native]} {SYMBOL[compat]}")
        label = f"`{f}`"
        rows.append(f"| {label} | " + " | ".join(cells) + " |")
    for group in summarize:
        if any(_group_of(f) == group for e in envs for f in results[e]):
            rows.append(
                f"| `{group}` (cases passing every aspect, native / compat_clone) | "
                + " | ".join(_summary_cell(results[e], group) for e in envs)
                + " |"
            )
    legend = "\n"
    if "feature" in kinds:
        legend += (
            "A feature's cell: native `clone_model` first, then `compat_clone.clone_model`. "
            "✅ passes · ❌ fails · ➖ the native API has no way to ask for it · "
            "`·` the feature does not exist in that family.\n"
        )
    if "test" in kinds:
        legend += "A test's cell: ✅ passed · ❌ failed · `·` skipped; blank: not run there.\n"
    if any(_group_of(f) in summarize for e in envs for f in results[e]):
        legend += (
            "A group row (`zoo`): per environment, the cases that pass every aspect natively / "
            "through `compat_clone`, of the cases run there; "
            "[COMPATIBILITY.md](COMPATIBILITY.md) has one row per case and aspect.\n"
        )
    return "\n".join(rows) + "\n" + legend


def _table_text(table: str, link: Optional[str]) -> str:
    if table == BUILTIN_TABLE:
        path = "compat_clone_matrix/matrix.toml"
        return (
            f"compat_clone's built-in matrix table ([`{path}`]({link}))"
            if link
            else f"compat_clone's built-in matrix table (`{path}`)"
        )
    return f"the matrix table [`{table}`]({link})" if link else f"the matrix table `{table}`"


def _show_date(produced: str) -> str:
    """``2026-11-27T11:20:05Z`` -> ``2026-11-27 11:20 UTC``."""
    match = re.match(r"^(\d{4}-\d\d-\d\d)(?:[T ](\d\d:\d\d))?", produced)
    if not match:
        return produced
    return match.group(1) + (f" {match.group(2)} UTC" if match.group(2) else "")


def render_report(
    results: Results,
    envs: Sequence[Any] = (),
    descriptions: Optional[Mapping[str, str]] = None,
    versions: Optional[Mapping[str, str]] = None,
    statuses: Optional[Mapping[str, str]] = None,
    expected: Optional[Sequence[str]] = None,
    *,
    table: str = BUILTIN_TABLE,
    table_link: Optional[str] = None,
    dates: Optional[Mapping[str, str]] = None,
    kept: Sequence[str] = (),
) -> str:
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
        table: the table's name (`table_id`), written in the file: a later
            report of the same table keeps its columns.
        table_link: a link to the table file from the report's folder.
        dates: env -> when its results were produced.
        kept: environments whose columns come from the previous report (no
            new results this time).

    Returns:
        The markdown text.
    """
    descriptions = descriptions or {}
    versions = versions or {}
    statuses = statuses or {}
    dates = dates or {}
    names = [e.name for e in envs]
    out = [
        "<!-- Generated by `compat-clone matrix --report` from the matrix's result files. Do not edit: a new",
        "     report of this table updates the columns its run produced and keeps the others, each dated. -->",
        f"{TABLE_TAG}{table} -->",
        "# Compatibility",
        "",
        f"Results of the test suite in each environment of {_table_text(table, table_link)}:",
        "one column per environment (when its results were produced: see Environments), one row per test or feature.",
        "",
        render_table(results, names, descriptions),
    ]
    envs_in = _env_order(results, names)
    missing = [e for e in (names if expected is None else expected) if e not in results]
    if envs_in:
        out += ["## Environments", "", "| env | loaded | results of | pins |", "|---|---|---|---|"]
        by_name = {e.name: e for e in envs}
        for name in envs_in:
            env = by_name.get(name)
            pins = (
                " ".join(
                    f"`{p}`"
                    for p in (tuple(env.packages) + tuple(env.no_deps))
                    if not p.startswith(("pytest", "hypothesis", "packaging", "pyyaml>=", "actionlint"))
                )
                if env
                else ""
            )
            out.append(f"| `{name}` | {versions.get(name, '')} | {_show_date(dates.get(name, ''))} | {pins} |")
        out.append("")
    stale = [e for e in (expected or ()) if e in kept]
    if stale:
        out += [
            "No new results from this run for: "
            + ", ".join(f"`{m}`" + (f" ({statuses[m]})" if m in statuses else "") for m in stale)
            + "; their columns are kept from the earlier report (dated above).",
            "",
        ]
    if missing:
        out += [
            "Missing, no results for: "
            + ", ".join(f"`{m}`" + (f" ({statuses[m]})" if m in statuses else "") for m in missing)
            + ".",
            "",
        ]
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


def _keep_previous(report: Path, table: str, names: Sequence[str], run: Run) -> List[str]:
    """Adds to `run` the columns of the existing `report` of the same table that this run has no newer
    results for (environments still in the table); returns their names."""
    if not report.is_file():
        return []
    previous = parse_report(report.read_text(encoding="utf-8"))
    # A report that names no table predates table names: compat_clone's own, of the built-in table.
    if (previous.table or BUILTIN_TABLE) != table:
        return []
    kept = []
    for env, cells in previous.results.items():
        if env not in names:
            continue
        if env in run.results and date_key(run.dates.get(env, "")) >= previous.dates.get(env, ""):
            continue
        run.results[env] = cells
        run.versions[env] = previous.versions.get(env, "")
        run.dates[env] = previous.dates.get(env, "")
        for feature in cells:
            if feature in previous.descriptions:
                run.descriptions.setdefault(feature, previous.descriptions[feature])
        kept.append(env)
    return kept


def readme_note(default: Sequence[str], shown: Sequence[str], with_results: int, report_name: str) -> str:
    """The line under the README's table: which environments its columns are, counted from the table.

    Args:
        default: the default run's environments (the table's enabled ones).
        shown: those with a column (the others ran no feature: no results).
        with_results: how many environments the full report has.
        report_name: the full report's file name.
    """
    missing = [f"`{e}`" for e in default if e not in shown]
    without = f"; {', '.join(missing)} ran no feature: no column" if missing else ""
    return (
        f"\nThe columns are {len(shown)} of the {len(default)} environments of the default run (a run without "
        f"--env or --tag{without}); [{report_name}]({report_name}) has all {with_results} with results, one row "
        "per zoo case and aspect.\n"
    )


def write(
    results_dir: Path | Sequence[Path],
    envs: Sequence[Any],
    report: Path,
    readme: Optional[Path] = None,
    statuses: Optional[Mapping[str, str]] = None,
    expected: Optional[Sequence[str]] = None,
    *,
    table: str = BUILTIN_TABLE,
    notes: Optional[List[str]] = None,
) -> List[Path]:
    """Writes `report` (and the README table) from one or several result folders.

    The report keeps the columns of the existing `report` (of the same table)
    that the folders hold no newer results for: a run of some environments
    updates their columns and leaves the others, each dated with when its
    results were produced.

    Args:
        results_dir: ``.matrix/_results``, or several folders collected from
            several machines (`load_results` refuses one environment in two).
        envs: the matrix table's `Env` records.
        report: the markdown file to write (``COMPATIBILITY.md``).
        readme: a file whose compat-table markers get the table, or None.
        statuses: env -> status of this run; the runner's ``<env>.outcome.json``
            files fill in the others.
        expected: environments that should have results (see `render_report`).
        table: the table's name (`table_id`): results and outcomes of another
            table (the same environment name in another table) are ignored.
        notes: when given, gets one line per thing the reader should know
            (columns kept, results of another table ignored).

    Returns:
        The files written.

    Raises:
        ReportError: a malformed result line, or a duplicate environment.
    """
    folders = [results_dir] if isinstance(results_dir, Path) else list(results_dir)
    run = load_run(folders, table)
    names = [e.name for e in envs]
    outcomes = load_outcomes(folders, table)
    for env, rec in outcomes.items():
        if env in run.results and not run.versions.get(env) and rec.get("loaded"):
            run.versions[env] = str(rec["loaded"])
    kept = _keep_previous(report, table, names, run)
    all_statuses = {**{env: str(rec.get("status", "?")) for env, rec in outcomes.items()}, **(statuses or {})}
    link = None
    if table == BUILTIN_TABLE:
        own = report.resolve().parent / "compat_clone_matrix" / "matrix.toml"
        link = "compat_clone_matrix/matrix.toml" if own.is_file() else None
    elif not Path(table).is_absolute():
        link = os.path.relpath(Path(table).resolve(), report.resolve().parent).replace(os.sep, "/")
    text = render_report(
        run.results,
        envs,
        run.descriptions,
        run.versions,
        all_statuses,
        expected,
        table=table,
        table_link=link,
        dates=run.dates,
        kept=kept,
    )
    report.write_text(text, encoding="utf-8")
    if notes is not None:
        if kept:
            notes.append(f"kept {len(kept)} column(s) of the earlier {report.name} with no newer results: {', '.join(kept)}")
        for env, others in sorted(run.foreign.items()):
            notes.append(
                f"ignored results of {env!r} from table(s) {', '.join(sorted(others))}: this report is of table {table!r}"
            )
    written = [report]
    if readme is not None:
        # The README keeps the default run's environments; COMPATIBILITY.md
        # has every environment with results.
        default = [e.name for e in envs if getattr(e, "enabled", True)]
        results = run.results
        shown = {e: r for e, r in results.items() if e in default} if default else results
        readme_table = render_table(shown, default or names, run.descriptions, summarize=("zoo",))
        if len(shown) < len(results):
            readme_table += readme_note(default, list(shown), len(results), report.name)
        if update_readme(readme, readme_table):
            written.append(readme)
    return written
