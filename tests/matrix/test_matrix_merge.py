"""`compat-clone matrix` beyond one machine, part two: --merge (results of several runs) and nox sessions.

Nothing here builds an environment: a stand-in environment is the running
interpreter behind a fresh stamp (`install_compat_clone = false`). --emit and
the workflow GitHub runs are tests/matrix/test_matrix_ci.py's.
"""

from __future__ import annotations

import json
import os
import sys
import types
from pathlib import Path
from typing import Any, Dict, List

import pytest

from compat_clone.tools import matrix as _matrix
from compat_clone_matrix import report as _report
from tests.matrix.matrix_support import ci_project, matrix_in, standin

# Framework-free: one matrix environment per Python version runs them (tests/conftest.py).
pytestmark = pytest.mark.tooling


@pytest.fixture()
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return ci_project(tmp_path, monkeypatch)


# --------------------------------------------------------------------------- --merge

_RECORD = (
    "import json, os, pathlib; env = os.environ['COMPAT_CLONE_ENV']; "
    "d = pathlib.Path(os.environ['COMPAT_CLONE_RESULTS']); "
    "(d / (env + '.jsonl')).write_text(json.dumps({'env': env, 'feature': 'clone', 'side': 'compat_clone', "
    "'outcome': 'pass', 'keras': 'keras ' + env}) + '\\n'); print('1 passed in 0.1s')"
)


def _machine_run(project: Path, root: str, env_name: str) -> Path:
    """One `compat-clone matrix` run on one "machine" (its own --root); returns its results folder."""
    (env,) = [e for e in _matrix.load_table(project / "matrix.toml") if e.name == env_name]
    standin(project / root, env)
    done = matrix_in(project, "--table", "matrix.toml", "--root", root, "--env", env_name, "--", "python", "-c", _RECORD)
    assert done.returncode == 0, done.stdout + done.stderr
    return project / root / "_results"


def test_merge_reports_results_of_two_runs_and_marks_the_missing(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first, second = _machine_run(project, "machine1", "a"), _machine_run(project, "machine2", "b")
    assert sorted(p.name for p in first.iterdir()) == ["a.jsonl", "a.outcome.json"]
    rc = _matrix.main(["--table", "matrix.toml", "--merge", str(first), str(second), "--report", "C.md"])
    assert rc == 0, capsys.readouterr().err
    text = (project / "C.md").read_text()
    assert "| feature | `a` | `b` |" in text and "| `clone` |   ✅ |   ✅ |" in text
    assert "| `a` | keras a |" in text and "| `b` | keras b |" in text
    assert "Missing, no results for: `c`." in text  # selected (enabled) but no job uploaded results
    # A job's folder nested in an artifact folder is found; one environment twice is refused.
    nested = project / "artifacts" / "compat-results-a" / "_results"
    nested.mkdir(parents=True)
    (nested / "a.jsonl").write_text((first / "a.jsonl").read_text())
    assert _matrix.main(["--table", "matrix.toml", "--merge", str(first), str(project / "artifacts"), "--report", "C.md"]) == 1
    err = capsys.readouterr().err
    assert "Environment 'a' has results in both" in err and "compat-results-a" in err


def test_merge_usage_errors(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _matrix.main(["--table", "matrix.toml", "--merge", "nowhere"]) == 2
    assert "--merge needs --report" in capsys.readouterr().err
    assert _matrix.main(["--table", "matrix.toml", "--merge", "nowhere", "--report", "C.md"]) == 1
    assert "result folder(s) 'nowhere' do not exist" in capsys.readouterr().err


def test_missing_env_shows_its_status(tmp_path: Path) -> None:
    results = tmp_path / "r"
    results.mkdir()
    (results / "c.outcome.json").write_text(json.dumps({"env": "c", "status": "BUILD FAILED"}))
    envs = _matrix.parse_table({"env": [{"name": "c", "packages": []}]})
    _report.write([results], envs, tmp_path / "C.md")
    assert "Missing, no results for: `c` (BUILD FAILED)." in (tmp_path / "C.md").read_text()


# --------------------------------------------------------------------------- nox


class _FakeSession:
    def __init__(self, posargs: List[str]) -> None:
        self.posargs = posargs
        self.calls: List[Any] = []

    def install(self, *args: str) -> None:
        self.calls.append(("install",) + args)

    def run(self, *args: str, env: Any = None, silent: bool = False) -> None:
        self.calls.append(("run",) + args)
        self.env = dict(env or {})
        self.outer_backend = os.environ.get("KERAS_BACKEND")


def test_nox_sessions_one_per_environment(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    registered: Dict[str, Any] = {}

    def session(**kwargs: Any) -> Any:
        def register(func: Any) -> Any:
            registered[kwargs["name"]] = (kwargs, func)
            return func

        return register

    monkeypatch.setitem(sys.modules, "nox", types.SimpleNamespace(session=session))
    monkeypatch.setenv("COMPAT_CLONE_PIP_ARGS", "--no-cache")  # this machine's own, after the table's
    (project / "fix.toml").write_text(
        '[[env]]\nname = "k2"\npackages = ["tensorflow-cpu==2.15.1"]\nno_deps = ["keras==2.2.4"]\n'
        'pip_args = ["--find-links", "/w"]\nfixup = "keras2_on_tf2"\nenv = { HYPOTHESIS_PROFILE = "dev" }\n'
        'expect = { family = "keras2", version = "2.2.4", backend = "tensorflow" }\n'
    )
    assert _matrix.nox_sessions("fix.toml", command=["pytest", "-q"]) == ["k2"]
    kwargs, func = registered["k2"]
    running = f"{sys.version_info[0]}.{sys.version_info[1]}"  # the table names no python
    assert kwargs == {"name": "k2", "python": running, "venv_backend": "uv", "reuse_venv": True}
    monkeypatch.setenv("KERAS_BACKEND", "torch")  # the caller's shell must not leak in
    fake = _FakeSession(["-x"])
    func(fake)
    assert fake.calls[0] == ("install", "--find-links", "/w", "--no-cache", "tensorflow-cpu==2.15.1")
    assert fake.calls[1] == ("install", "--no-deps", "--find-links", "/w", "--no-cache", "keras==2.2.4")
    # compat_clone: the wheel `make test` built, else this checkout
    source = _matrix.running_compat_clone()
    kind, where = source.kind, source.path
    assert fake.calls[2] == (
        "install",
        "--find-links",
        "/w",
        "--no-cache",
        *(("-e", str(where)) if kind == "editable" else (str(where),)),
    )
    assert fake.calls[3][:3] == ("run", "python", "-c") and "keras2_on_tf2" in fake.calls[3][3]
    assert fake.calls[-1] == ("run", "pytest", "-q", "-x")
    assert fake.env["COMPAT_CLONE_ENV"] == "k2" and fake.env["COMPAT_CLONE_EXPECT_VERSION"] == "2.2.4"
    assert fake.env["HYPOTHESIS_PROFILE"] == "dev" and fake.outer_backend is None
    assert os.environ["KERAS_BACKEND"] == "torch"  # restored after the session
    assert [n for n in _matrix.nox_sessions("matrix.toml", tags=["wide"])] == ["extra"]


def test_nox_sessions_without_nox(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "nox", None)
    with pytest.raises(ImportError, match="pip install nox"):
        _matrix.nox_sessions()
