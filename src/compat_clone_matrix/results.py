"""The result folder of a run (``.matrix/_results``): written by the runner, read by the report.

A command writes its result files into a staging folder of its own;
`publish_results` moves them into the result folder, each record tagged
with the table and the time it was produced, and `write_outcome` leaves
how the environment's run ended (``<env>.outcome.json``). `load_results` and
`load_statuses` read one or several such folders back (one per machine or
CI job) for `report`.

The suite (``tests/clone/test_features.py``) appends one JSON line per feature and
side to ``$COMPAT_CLONE_RESULTS/<env>.jsonl``::

    {"env": "tf_keras-2.21", "feature": "copy_weights", "description": "...",
     "side": "native" | "compat_clone", "outcome": "pass" | "fail" | "n/a" | "missing",
     "detail": "...", "keras": "tf_keras 2.21.0"}

(one record holding both sides, ``{"native": ..., "compat": ...}``, is read as
well); the pytest plugin's ``--compat-results`` writes ``side: "test"``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import time
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Set, Tuple

from compat_clone_matrix.summary import Outcome

__all__ = [
    "ReportError",
    "Results",
    "load_results",
    "load_statuses",
    "RESULTS_DIR",
    "Run",
    "load_outcomes",
    "load_run",
    "publish_results",
    "write_outcome",
]

RESULTS_DIR = "_results"
_SIDES = {"native": "native", "compat": "compat_clone", "compat_clone": "compat_clone", "test": "test"}
_OUTCOMES = ("pass", "fail", "missing", "n/a")
# When several records meet in one cell (a default env testing two families,
# a rerun appending), the worst wins.
_SEVERITY = {"fail": 3, "missing": 2, "pass": 1, "n/a": 0}

# env -> feature -> side -> (outcome, detail)
Results = Dict[str, Dict[str, Dict[str, Tuple[str, str]]]]


class ReportError(ValueError):
    """A results file holds a line that is not a feature record."""


def _merge(cell: Dict[str, Tuple[str, str]], side: str, outcome: str, detail: str) -> None:
    old = cell.get(side)
    if old is None or _SEVERITY[outcome] > _SEVERITY[old[0]]:
        cell[side] = (outcome, detail)


@dataclasses.dataclass
class Run:
    """What result folders hold for one table: results, descriptions, and per environment the
    Keras it loaded and when its results were produced; environments of other tables skipped."""

    results: Results = dataclasses.field(default_factory=dict)
    descriptions: Dict[str, str] = dataclasses.field(default_factory=dict)
    versions: Dict[str, str] = dataclasses.field(default_factory=dict)
    dates: Dict[str, str] = dataclasses.field(default_factory=dict)
    foreign: Dict[str, Set[str]] = dataclasses.field(default_factory=dict)  # env -> other tables seen


def _file_time(path: Path) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(path.stat().st_mtime))


def _load_file(path: Path, run: Run, table: Optional[str]) -> Set[str]:
    """Adds one ``.jsonl`` file's records of `table` (None: any); returns the environments it holds."""
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
        if table is not None and rec.get("table") not in (None, table):
            run.foreign.setdefault(env, set()).add(str(rec["table"]))
            continue
        envs.add(env)
        feature = rec["feature"]
        cell = run.results.setdefault(env, {}).setdefault(feature, {})
        pairs: List[Tuple[str, Any]] = [(str(rec["side"]), rec.get("outcome"))] if "side" in rec else []
        pairs += [(key, rec[key]) for key in ("native", "compat", "compat_clone") if key in rec]
        if not pairs:
            raise ReportError(
                f"Expected {where} to hold `side` and `outcome` (or `native` / `compat`). Received: {line[:120]!r}."
            )
        for side, outcome in pairs:
            if side not in _SIDES or outcome not in _OUTCOMES:
                raise ReportError(
                    f"Expected {where} to have side in {sorted(set(_SIDES))} and outcome in "
                    f"{list(_OUTCOMES)}. Received: side={side!r}, outcome={outcome!r}."
                )
            _merge(cell, _SIDES[side], outcome, str(rec.get("detail", "")))
        if isinstance(rec.get("description"), str):
            run.descriptions.setdefault(feature, rec["description"])
        if isinstance(rec.get("keras"), str) and rec["keras"]:
            run.versions.setdefault(env, rec["keras"])
        produced = str(rec.get("produced") or _file_time(path))
        if produced > run.dates.get(env, ""):
            run.dates[env] = produced
    return envs


def _result_files(folder: Path) -> List[Path]:
    """Every ``*.jsonl`` under `folder`, at any depth, outside hidden (staging) folders."""
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.rglob("*.jsonl") if not any(part.startswith(".") for part in p.relative_to(folder).parts))


def load_run(folders: Sequence[Path], table: Optional[str]) -> Run:
    run = Run()
    origin: Dict[str, Path] = {}
    for folder in folders:
        for path in _result_files(folder):
            for env in _load_file(path, run, table):
                if origin.setdefault(env, path.parent) != path.parent:
                    raise ReportError(
                        f"Environment {env!r} has results in both {origin[env]} and {path.parent}: merge one run "
                        "per environment (drop the duplicate folder)."
                    )
    return run


def load_results(*folders: Path, table: Optional[str] = None) -> Tuple[Results, Dict[str, str], Dict[str, str]]:
    """Reads every ``<env>.jsonl`` (and ``<env>.tests.jsonl``) under the folders.

    One folder is one run's ``.matrix/_results``; several are results
    collected from several machines (CI artifacts, one folder per job).

    Args:
        *folders: folders searched at any depth; a folder that does not exist
            holds nothing.
        table: read only records of this table (`table_id`; records that
            name no table are read too); None reads every record.

    Returns:
        ``(results, descriptions, keras_versions)``: results per env, feature
        and side; a description per feature; the ``keras`` field per env.

    Raises:
        ReportError: a line that is not JSON, or lacks the fields above; or
            one environment's results in two folders (two runs of it).
    """
    run = load_run(folders, table)
    return run.results, run.descriptions, run.versions


def load_statuses(*folders: Path, table: Optional[str] = None) -> Dict[str, str]:
    """env -> the status of its last run (``<env>.outcome.json``, written by the runner), of `table` only
    when given (outcomes that name no table are read too)."""
    return {env: str(rec.get("status", "?")) for env, rec in load_outcomes(folders, table).items()}


def load_outcomes(folders: Sequence[Path], table: Optional[str]) -> Dict[str, Dict[str, Any]]:
    outcomes: Dict[str, Dict[str, Any]] = {}
    for folder in folders:
        for path in sorted(folder.rglob("*.outcome.json")) if folder.is_dir() else []:
            try:
                rec = json.loads(path.read_text(encoding="utf-8"))
            except ValueError:
                continue
            if not isinstance(rec, dict) or not isinstance(rec.get("env"), str):
                continue
            if table is not None and rec.get("table") not in (None, table):
                continue
            outcomes[rec["env"]] = rec
    return outcomes


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _tag_records(path: Path, tags: Mapping[str, str]) -> None:
    """Adds `tags` (``table``, ``produced``) to every JSON record of a ``.jsonl`` file that lacks them."""
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            record = None
        if isinstance(record, dict):
            line = json.dumps({**tags, **record})
        lines.append(line)
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")


def publish_results(staging: Path, results: Path, table: str = "", keep: bool = True) -> None:
    """Moves the run's result files into `results`, replacing older ones.

    Every record is tagged with the table and the time it was produced, so a
    report never mixes them with another table's results for the same
    environment name. A run that records nothing (a benchmark, a subset of
    tests that records no feature) leaves the previous results of the
    environment in place; so does a run whose results are void (`keep`
    False: the environment is not what it claims).
    """
    if staging.is_dir():
        if keep:
            tags = {"table": table, "produced": _now()} if table else {"produced": _now()}
            for item in staging.iterdir():
                if item.is_file():
                    if item.suffix == ".jsonl":
                        _tag_records(item, tags)
                    os.replace(item, results / item.name)
        shutil.rmtree(staging, ignore_errors=True)


def write_outcome(results: Path, out: Outcome, table: str = "") -> None:
    """``<results>/<env>.outcome.json``: how the environment's last run ended, for reports merged elsewhere.

    It names the table that defined the environment (`table_id`) and the time
    the run ended: a report of another table ignores it.
    """
    results.mkdir(parents=True, exist_ok=True)
    record = {
        "env": out.env,
        "status": out.status,
        "build": out.build,
        "counts": out.counts,
        "seconds": round(out.build_s + out.run_s, 1),
        "loaded": out.loaded,
        "finished": _now(),
    }
    if table:
        record["table"] = table
    tmp = results / f".{out.env}.outcome.json.tmp"
    tmp.write_text(json.dumps(record, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, results / f"{out.env}.outcome.json")
