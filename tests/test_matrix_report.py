"""COMPATIBILITY.md from the matrix's result files: aggregation, README table, malformed lines."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, List

import pytest

from compat_clone.tools import matrix as _matrix
from compat_clone.tools.matrix import report as _report


def _records(env: str, rows: List[Any]) -> str:
    lines = []
    for feature, native, compat, detail in rows:
        for side, outcome in (("native", native), ("compat_clone", compat)):
            lines.append(json.dumps({"env": env, "feature": feature, "description": f"{feature} works",
                                     "side": side, "outcome": outcome, "detail": detail if outcome != "pass" else "",
                                     "keras": "keras 3.15.1"}))
    return "\n".join(lines) + "\n"


def test_report_aggregates_envs_into_tables(tmp_path: Path) -> None:
    results = tmp_path / "_results"
    results.mkdir()
    (results / "keras-3.15-jax.jsonl").write_text(_records("keras-3.15-jax", [
        ("sequential", "pass", "pass", ""), ("rename", "missing", "pass", "no `name` argument"),
    ]))
    (results / "tf_keras-2.21.jsonl").write_text(_records("tf_keras-2.21", [
        ("sequential", "fail", "pass", "ValueError: boom"), ("torch_device", "n/a", "n/a", "no torch"),
    ]) + json.dumps({"env": "tf_keras-2.21", "feature": "sequential", "native": "pass", "compat": "pass"}) + "\n")
    envs = [e for e in _matrix.load_table() if e.name in ("tf_keras-2.21", "keras-3.15-jax", "keras-2.2.4")]
    readme = tmp_path / "README.md"
    readme.write_text(f"# x\n\n{_report.START_MARKER}\nold table\n{_report.END_MARKER}\n\nrest\n")
    report = tmp_path / "COMPATIBILITY.md"
    written = _report.write(results, envs, report, readme, statuses={"keras-2.2.4": "BUILD FAILED"})
    assert written == [report, readme]
    text = report.read_text()
    assert text.startswith("<!-- Generated") and "Do not edit" in text
    # columns in table order; the worst outcome of a cell wins
    assert "| feature | `tf_keras-2.21` | `keras-3.15-jax` |" in text
    assert "| `sequential` | ❌ ✅ | ✅ ✅ |" in text
    assert "| `rename` |   | ➖ ✅ |" in text
    assert "| `torch_device` | · · |   |" in text
    assert "Missing, no results for: `keras-2.2.4` (BUILD FAILED)." in text
    assert "- `sequential` in `tf_keras-2.21`, native: fail: ValueError: boom" in text
    new_readme = readme.read_text()
    assert "old table" not in new_readme and "| `sequential` | ❌ ✅ | ✅ ✅ |" in new_readme
    assert new_readme.endswith(f"{_report.END_MARKER}\n\nrest\n")
    # regenerating is stable
    _report.write(results, envs, report, readme)
    assert report.read_text() == text.replace(" (BUILD FAILED)", "")


def test_readme_collapses_the_zoo_into_one_row_per_env(tmp_path: Path) -> None:
    results = tmp_path / "_results"
    results.mkdir()
    (results / "keras-3.15-jax.jsonl").write_text(_records("keras-3.15-jax", [
        ("sequential", "pass", "pass", ""),
        ("zoo_bert.class", "fail", "pass", "Functional"), ("zoo_bert.outputs", "pass", "pass", ""),
        ("zoo_gru.class", "pass", "pass", ""), ("zoo_gru.outputs", "pass", "fail", "differs"),
        ("zoo_vit.class", "n/a", "n/a", "not in this family"),
    ]))
    (results / "keras-3.5-tf.jsonl").write_text(_records("keras-3.5-tf", [("sequential", "pass", "pass", "")]))
    envs = [e for e in _matrix.load_table() if e.name in ("keras-3.15-jax", "keras-3.5-tf")]
    assert [e.enabled for e in envs] == [False, True]  # 3.5: the wide matrix only
    readme = tmp_path / "README.md"
    readme.write_text(f"{_report.START_MARKER}\n{_report.END_MARKER}\n")
    report = tmp_path / "COMPATIBILITY.md"
    _report.write(results, envs, report, readme)
    short = readme.read_text()
    # README: no zoo row of its own, one summary row: natively only gru passes
    # every aspect (bert's class fails), through compat_clone only bert (gru's
    # outputs fail); 2 cases exist there (vit is n/a)
    assert "zoo_bert" not in short and "| `sequential` | ✅ ✅ |" in short
    assert "| `zoo` (cases passing every aspect, native / compat_clone) | 1 / 1 of 2 |" in short
    # COMPATIBILITY.md keeps every row
    # README: the default run's environments only, and where the others are
    assert "keras-3.5-tf" not in short and "[COMPATIBILITY.md](COMPATIBILITY.md) has all 2 with results" in short
    full = report.read_text()
    assert "| feature | `keras-3.5-tf` | `keras-3.15-jax` |" in full
    assert "| `zoo_bert.class` |   | ❌ ✅ |" in full and "| `zoo_gru.outputs` |   | ✅ ❌ |" in full
    assert "cases passing every aspect" not in full


def test_report_without_markers_leaves_readme_alone(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("no markers\n")
    written = _report.write(tmp_path / "none", [], tmp_path / "C.md", readme)
    assert written == [tmp_path / "C.md"] and readme.read_text() == "no markers\n"
    assert "No results yet" in (tmp_path / "C.md").read_text()


def test_report_rejects_malformed_lines(tmp_path: Path) -> None:
    (tmp_path / "e.jsonl").write_text('{"feature": "f", "side": "native", "outcome": "maybe"}\n')
    with pytest.raises(_report.ReportError, match="outcome='maybe'"):
        _report.load_results(tmp_path)
    (tmp_path / "e.jsonl").write_text("{not json\n")
    with pytest.raises(_report.ReportError, match=r"e\.jsonl:1 is not a JSON line"):
        _report.load_results(tmp_path)


