"""COMPATIBILITY.md from the matrix's result files: aggregation, README table, malformed lines."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, List

import pytest

from compat_clone.tools import matrix as _matrix
from compat_clone_matrix import report as _report
from compat_clone_matrix import results as _results

# Framework-free: one matrix environment per Python version runs them (tests/conftest.py).
pytestmark = pytest.mark.tooling


def _records(env: str, rows: List[Any]) -> str:
    lines = []
    for feature, native, compat, detail in rows:
        for side, outcome in (("native", native), ("compat_clone", compat)):
            lines.append(
                json.dumps(
                    {
                        "env": env,
                        "feature": feature,
                        "description": f"{feature} works",
                        "side": side,
                        "outcome": outcome,
                        "detail": detail if outcome != "pass" else "",
                        "keras": "keras 3.15.1",
                    }
                )
            )
    return "\n".join(lines) + "\n"


def test_report_aggregates_envs_into_tables(tmp_path: Path) -> None:
    results = tmp_path / "_results"
    results.mkdir()
    (results / "keras-3.15-jax.jsonl").write_text(
        _records(
            "keras-3.15-jax",
            [
                ("sequential", "pass", "pass", ""),
                ("rename", "missing", "pass", "no `name` argument"),
            ],
        )
    )
    (results / "tf_keras-2.21.jsonl").write_text(
        _records(
            "tf_keras-2.21",
            [
                ("sequential", "fail", "pass", "ValueError: boom"),
                ("torch_device", "n/a", "n/a", "no torch"),
            ],
        )
        + json.dumps({"env": "tf_keras-2.21", "feature": "sequential", "native": "pass", "compat": "pass"})
        + "\n"
    )
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
    (results / "keras-3.15-jax.jsonl").write_text(
        _records(
            "keras-3.15-jax",
            [
                ("sequential", "pass", "pass", ""),
                ("zoo_bert.class", "fail", "pass", "Functional"),
                ("zoo_bert.outputs", "pass", "pass", ""),
                ("zoo_gru.class", "pass", "pass", ""),
                ("zoo_gru.outputs", "pass", "fail", "differs"),
                ("zoo_vit.class", "n/a", "n/a", "not in this family"),
            ],
        )
    )
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
    with pytest.raises(_results.ReportError, match="outcome='maybe'"):
        _results.load_results(tmp_path)
    (tmp_path / "e.jsonl").write_text("{not json\n")
    with pytest.raises(_results.ReportError, match=r"e\.jsonl:1 is not a JSON line"):
        _results.load_results(tmp_path)


# --------------------------------------------------------------------------- columns kept, tables, wording


def _tests(env: str, table: str, produced: str, outcomes: List[Any]) -> str:
    return "".join(
        json.dumps(
            {
                "env": env,
                "feature": f"tests/test_lib.py::{name}",
                "side": "test",
                "outcome": o,
                "detail": "AssertionError: no" if o == "fail" else "",
                "keras": f"keras of {env}",
                "table": table,
                "produced": produced,
            }
        )
        + "\n"
        for name, o in outcomes
    )


def _user_envs(*names: str) -> List[Any]:
    return _matrix.parse_table({"env": [{"name": n, "packages": [f"keras=={i}.0"]} for i, n in enumerate(names, 3)]})


def test_report_reads_back_what_it_wrote(tmp_path: Path) -> None:
    results = tmp_path / "r"
    results.mkdir()
    (results / "keras-3.15-jax.jsonl").write_text(
        _records(
            "keras-3.15-jax",
            [
                ("sequential", "pass", "pass", ""),
                ("rename", "missing", "pass", "no `name` argument"),
                ("trainable", "fail", "pass", "AssertionError: flags differ\nsecond line"),
            ],
        )
    )
    (results / "b.tests.jsonl").write_text(
        _tests("b", "built-in", "2026-11-20T08:00:00Z", [("test_a", "pass"), ("test_b", "fail"), ("test_c", "n/a")])
    )
    report = tmp_path / "C.md"
    _report.write(results, [e for e in _matrix.load_table() if e.name == "keras-3.15-jax"], report)
    back = _report.parse_report(report.read_text())
    run_results, descriptions, versions = _results.load_results(results)
    assert back.table == "built-in"
    for env, cells in run_results.items():  # every outcome, and each failure's first line
        assert {
            f: {side: (o, d.splitlines()[0][:200] if o in ("fail", "missing") else "") for side, (o, d) in c.items()}
            for f, c in cells.items()
        } == back.results[env]
    assert back.descriptions == descriptions and back.versions == versions
    assert back.dates["b"] == "2026-11-20T08:00"


def test_a_run_updates_its_columns_and_keeps_the_others_dated(tmp_path: Path) -> None:
    envs = _user_envs("a", "b", "c")
    old, new = tmp_path / "old", tmp_path / "new"
    old.mkdir(), new.mkdir()
    (old / "a.tests.jsonl").write_text(_tests("a", "t.toml", "2026-11-20T08:00:00Z", [("test_x", "fail")]))
    (old / "b.tests.jsonl").write_text(_tests("b", "t.toml", "2026-11-20T08:00:00Z", [("test_x", "pass")]))
    report = tmp_path / "C.md"
    _report.write(old, envs, report, table="t.toml")
    # A later run of `a` only (and `c`, which built but recorded nothing): its column changes, `b`'s stays.
    (new / "a.tests.jsonl").write_text(_tests("a", "t.toml", "2026-11-27T09:30:00Z", [("test_x", "pass")]))
    (new / "c.outcome.json").write_text(json.dumps({"env": "c", "status": "BUILD FAILED", "table": "t.toml"}))
    notes: List[str] = []
    _report.write(new, envs, report, table="t.toml", expected=["a", "c"], notes=notes)
    text = report.read_text()
    assert "| test | `a` | `b` |" in text and "| `tests/test_lib.py::test_x` | ✅ | ✅ |" in text
    assert "| `a` | keras of a | 2026-11-27 09:30 UTC |" in text
    assert "| `b` | keras of b | 2026-11-20 08:00 UTC |" in text
    assert "Missing, no results for: `c` (BUILD FAILED)." in text
    assert notes == ["kept 1 column(s) of the earlier C.md with no newer results: b"]
    # An environment this run selected but got nothing new from is said so, its old column kept.
    _report.write(tmp_path / "nothing", envs, report, table="t.toml", expected=["b"], statuses={"b": "FAILED"})
    assert "No new results from this run for: `b` (FAILED); their columns are kept" in report.read_text()
    # An environment no longer in the table loses its column; a report of another table keeps none.
    _report.write(tmp_path / "nothing", _user_envs("a"), report, table="t.toml")
    assert "`b`" not in report.read_text() and "| `a` |" in report.read_text()
    _report.write(tmp_path / "nothing", envs, report, table="other.toml")
    assert "No results yet" in report.read_text()


def test_an_older_report_without_a_table_name_is_the_builtin_tables(tmp_path: Path) -> None:
    report = tmp_path / "COMPATIBILITY.md"
    report.write_text(
        "<!-- Generated by `compat-clone matrix --report` (`make test`) ... -->\n# Compatibility\n\n"
        "| feature | `keras-3.15-jax` |\n|---|:-:|\n| `sequential` | ✅ ✅ |\n\n## Environments\n\n"
        "| env | loaded | pins |\n|---|---|---|\n| `keras-3.15-jax` | keras 3.15.1 | `keras==3.15.1` |\n"
    )
    _report.write(tmp_path / "none", _matrix.load_table(), report)
    text = report.read_text()
    assert "| `sequential` | ✅ ✅ |" in text and "| `keras-3.15-jax` | keras 3.15.1 |  |" in text


def test_report_ignores_results_and_statuses_of_another_table(tmp_path: Path) -> None:
    mine, theirs = tmp_path / "mine", tmp_path / "theirs"
    mine.mkdir(), theirs.mkdir()
    (mine / "x.tests.jsonl").write_text(_tests("x", "matrix.toml", "2026-11-27T09:00:00Z", [("test_x", "pass")]))
    (mine / "x.outcome.json").write_text(json.dumps({"env": "x", "status": "ok", "table": "matrix.toml"}))
    # the same environment name in another table: a run that failed its claim there, and results
    (theirs / "x.tests.jsonl").write_text(_tests("x", "other.toml", "2026-11-27T10:00:00Z", [("test_x", "fail")]))
    (theirs / "x.outcome.json").write_text(json.dumps({"env": "x", "status": "MISLABELED", "table": "other.toml"}))
    (theirs / "y.outcome.json").write_text(json.dumps({"env": "y", "status": "MISLABELED", "table": "other.toml"}))
    notes: List[str] = []
    report = tmp_path / "C.md"
    _report.write([mine, theirs], _user_envs("x", "y"), report, table="matrix.toml", notes=notes)
    text = report.read_text()
    assert "| `tests/test_lib.py::test_x` | ✅ |" in text and "❌ |" not in text
    assert "MISLABELED" not in text and "Missing, no results for: `y`." in text
    assert notes == ["ignored results of 'x' from table(s) other.toml: this report is of table 'matrix.toml'"]
    assert _results.load_statuses(mine, theirs, table="matrix.toml") == {"x": "ok"}


def test_report_of_a_users_suite_speaks_of_that_suite(tmp_path: Path) -> None:
    results = tmp_path / "r"
    results.mkdir()
    (results / "x.tests.jsonl").write_text(
        _tests("x", "ci/matrix.toml", "2026-11-27T09:00:00Z", [("test_x", "pass"), ("test_y", "n/a")])
    )
    (tmp_path / "ci").mkdir()
    (tmp_path / "ci" / "matrix.toml").write_text("")
    report = tmp_path / "C.md"
    _report.write(results, _user_envs("x"), report, table="ci/matrix.toml")
    text = report.read_text()
    for word in ("clone_model", "cloning", "make test", "native", "compat_clone.tools"):
        assert word not in text, word
    assert "Results of the test suite in each environment of the matrix table [`ci/matrix.toml`]" in text
    assert "A test's cell: ✅ passed · ❌ failed · `·` skipped" in text


def test_make_tests_report_keeps_the_wide_only_columns_of_the_committed_file(tmp_path: Path) -> None:
    """`make test` runs 13 environments; COMPATIBILITY.md holds all 32 (`make test-wide`): the 19 others stay."""
    committed = Path(__file__).resolve().parents[2] / "COMPATIBILITY.md"
    before = _report.parse_report(committed.read_text(encoding="utf-8"))
    table = _matrix.load_table()
    assert set(before.results) <= {e.name for e in table} and len(before.results) > 13
    assert set(before.dates) == set(before.results)  # every column dated
    report = tmp_path / "COMPATIBILITY.md"
    report.write_text(committed.read_text(encoding="utf-8"), encoding="utf-8")
    results = tmp_path / "_results"
    results.mkdir()
    (results / "keras-3.15-jax.jsonl").write_text(
        _records("keras-3.15-jax", [("sequential_basic", "pass", "pass", "")]).replace(
            '"keras": "keras 3.15.1"}', '"keras": "keras 3.15.1", "produced": "2099-01-01T00:00:00Z"}'
        )
    )
    default = [e.name for e in table if e.enabled]
    _report.write(results, table, report, expected=default)
    after = _report.parse_report(report.read_text(encoding="utf-8"))
    assert set(after.results) == set(before.results)  # no column dropped
    assert after.results["keras-3.15-jax"] == {"sequential_basic": {"native": ("pass", ""), "compat_clone": ("pass", "")}}
    assert after.dates["keras-3.15-jax"] == "2099-01-01T00:00"
    for env in set(before.results) - {"keras-3.15-jax"}:
        assert after.results[env] == before.results[env] and after.dates[env] == before.dates[env], env
    text = report.read_text(encoding="utf-8")
    assert f"No new results from this run for: `{default[0]}`" in text  # the other default ones said so
