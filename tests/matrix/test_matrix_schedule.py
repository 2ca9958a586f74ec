"""`compat-clone matrix` starts the environments that took longest last time first (compat_clone_matrix/schedule.py).

Framework-free: stand-in environments are the running interpreter behind a stamp.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, List

import pytest

from compat_clone.tools import matrix as _matrix
from compat_clone_matrix import schedule
from compat_clone_matrix.table import toml_loads
from tests.matrix.matrix_support import CI_TABLE

pytestmark = pytest.mark.tooling

# Each environment's command appends its name to order.txt: the order they started in, one at a time.
_NOTE_NAME = "import os; open('order.txt', 'a').write(os.environ['COMPAT_CLONE_ENV'] + chr(10))"


def _project(tmp_path: Path, monkeypatch: Any) -> List[str]:
    """A project with CI_TABLE's three enabled environments as stand-ins, the user cache in tmp_path."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.chdir(project)
    (project / "matrix.toml").write_text(CI_TABLE)
    (project / "pyproject.toml").write_text('[project]\nname = "ordered"\n')
    for env in _matrix.parse_table(toml_loads(CI_TABLE)):
        if not env.enabled:
            continue
        env_dir = project / ".matrix" / env.name
        (env_dir / "bin").mkdir(parents=True)
        (env_dir / "bin" / "python").symlink_to(sys.executable)
        (env_dir / ".compat-clone-stamp").write_text(_matrix.env_stamp(env) + "\n")
    return ["--table", "matrix.toml", "--jobs", "1", "--", sys.executable, "-c", _NOTE_NAME]


def _started(project: Path) -> List[str]:
    order = (project / "order.txt").read_text().split()
    (project / "order.txt").unlink()
    return order


def test_a_run_starts_the_longest_first_and_keeps_the_table_order_in_its_report(
    tmp_path: Path, monkeypatch: Any, capsys: Any
) -> None:
    argv = _project(tmp_path, monkeypatch)
    project = tmp_path / "project"
    _matrix.main(argv)  # no record yet: the table's order, and the seconds are recorded
    assert _started(project) == ["a", "b", "c"]
    record = schedule.durations_file(project, argv[argv.index("--") + 1 :])
    assert str(record).startswith(str(tmp_path / "cache" / "compat-clone" / "matrix"))  # the per-user cache
    assert sorted(json.loads(record.read_text())) == ["a", "b", "c"]

    record.write_text(json.dumps({"a": 5.0, "b": 300.0, "c": 40.0}))
    capsys.readouterr()
    _matrix.main(argv)
    assert _started(project) == ["b", "c", "a"]
    lines = capsys.readouterr().out.splitlines()
    header = max(i for i, line in enumerate(lines) if line.startswith("env "))
    assert [line.split()[0] for line in lines[header + 2 : header + 5]] == ["a", "b", "c"]  # the summary: the table's order

    # a record that cannot be read only loses the order; a new environment (no record) starts first
    record.write_text("{not json")
    _matrix.main(argv)
    assert _started(project) == ["a", "b", "c"]
    record.write_text(json.dumps({"a": 5.0, "b": 300.0}))
    _matrix.main(argv)
    assert _started(project) == ["c", "b", "a"]


def test_the_record_is_the_projects_and_commands(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    one, two, other = tmp_path / "one", tmp_path / "two", tmp_path / "other"
    for folder, name in ((one, "p"), (two, "p"), (other, "q")):
        folder.mkdir()
        (folder / "pyproject.toml").write_text(f'[project]\nname = "{name}"\n')
    # two clones of one project share the record; another project or another command does not
    assert schedule.durations_file(one, ["pytest", "tests"]) == schedule.durations_file(two, ["pytest", "tests"])
    assert schedule.durations_file(one, ["pytest", "tests"]) != schedule.durations_file(other, ["pytest", "tests"])
    assert schedule.durations_file(one, ["pytest", "tests"]) != schedule.durations_file(one, ["pytest", "-x", "tests"])
    path = schedule.durations_file(one, ["pytest"])
    schedule.record_durations(path, {"a": 1.04, "b": 2.0})
    schedule.record_durations(path, {"b": 3.0})
    assert schedule.read_durations(path) == {"a": 1.0, "b": 3.0}
    assert schedule.longest_first(["x", "y", "z"], ["a", "new", "b"], schedule.read_durations(path)) == ["y", "z", "x"]
