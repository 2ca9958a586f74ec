"""`compat-clone matrix`: stamps and runs (reuse, rebuild, status, timeouts, results, the lock).

The tests need no framework and build no environment: a stand-in environment
is the running interpreter behind a stamp. The table and the summary are in
tests/matrix/test_matrix.py.
"""

from __future__ import annotations

import dataclasses
import json
import re
import sys
import time
from pathlib import Path
from typing import Any, List

import pytest

from compat_clone.tools import matrix as _matrix
from compat_clone_matrix import install, procs, runner
from tests.matrix.matrix_support import one_env_table

# Framework-free: one matrix environment per Python version runs them (tests/conftest.py).
pytestmark = pytest.mark.tooling

REPO = Path(__file__).resolve().parents[2]


# --------------------------------------------------------------------------- stamps and runs


def test_stamp_follows_pins_not_runtime_settings() -> None:
    (env,) = _matrix.parse_table(one_env_table())
    source = _matrix.running_compat_clone()
    source = dataclasses.replace(source, kind="editable", path=REPO)
    stamp = _matrix.env_stamp(env, source)
    assert stamp == _matrix.env_stamp(env, source)
    (moved,) = _matrix.parse_table(one_env_table(packages=["keras==3.15.0"]))
    assert _matrix.env_stamp(moved, source) != stamp
    (no_deps,) = _matrix.parse_table(one_env_table(no_deps=["x==1"]))
    assert _matrix.env_stamp(no_deps, source) != stamp
    # variables and notes apply at run time: no rebuild
    (runtime,) = _matrix.parse_table(one_env_table(env={"KERAS_BACKEND": "jax"}, note="n"))
    assert _matrix.env_stamp(runtime, source) == stamp
    assert _matrix.env_stamp(env, dataclasses.replace(source, kind="copy", path=REPO / "src" / "compat_clone")) != stamp


def test_editable_requirements_resolve_against_the_project(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.chdir(tmp_path)
    assert install.expand_requirements(["-e .", "keras==3.15.1", "--editable ./lib", "-r requirements-test.txt"]) == [
        "-e",
        str(tmp_path),
        "keras==3.15.1",
        "-e",
        str(tmp_path / "lib"),
        "-r",
        str(tmp_path / "requirements-test.txt"),
    ]


def _standin_env(root: Path, env: Any) -> Path:
    """An 'environment' that is the running interpreter, stamped as up to date."""
    env_dir = root / env.name
    (env_dir / "bin").mkdir(parents=True)
    (env_dir / "bin" / "python").symlink_to(sys.executable)
    (env_dir / ".compat-clone-stamp").write_text(_matrix.env_stamp(env) + "\n")
    return env_dir


def _settings(root: Path, command: List[str], *, timeout: float = 60, say: Any = None, **kwargs: Any) -> Any:
    """One run's settings: results under `root`, uv never called (``false``)."""
    return runner.RunSettings(
        root=root,
        results=root / "_results",
        command=command,
        uv=["false"],
        source=_matrix.running_compat_clone(),
        procs=procs.Procs(),
        timeout=timeout,
        rebuild=False,
        say=say or (lambda name, text: None),
        **kwargs,
    )


def _run(env: Any, root: Path, command: List[str], **kwargs: Any) -> Any:
    return runner.run_one(env, _settings(root, command, **kwargs))


def test_fresh_stamp_is_reused_and_the_claim_is_exported(tmp_path: Path) -> None:
    (env,) = _matrix.parse_table(
        one_env_table(
            install_compat_clone=False,
            env={"KERAS_BACKEND": "jax"},
            expect={"family": "keras3", "version": "3.15", "backend": "jax"},
        )
    )
    env_dir = _standin_env(tmp_path, env)
    script = (
        "import os, sys; "
        "print(*[k + '=' + os.environ.get(k, '') for k in ('COMPAT_CLONE_ENV', 'COMPAT_CLONE_EXPECT_FAMILY', "
        "'COMPAT_CLONE_EXPECT_BACKEND', 'KERAS_BACKEND', 'X', 'VIRTUAL_ENV')]); "
        "print(os.environ['PATH'].split(os.pathsep)[0]); print('2 passed, 1 skipped in 0.01s')"
    )
    out = _run(env, tmp_path, [sys.executable, "-c", script])  # uv is never called
    log = (env_dir / "last.log").read_text()
    assert out.build == "reused" and out.status == "ok", log
    assert out.cpu_s is not None and out.cpu_s > 0
    assert out.counts is not None and out.counts["passed"] == 2 and out.counts["skipped"] == 1
    assert "COMPAT_CLONE_ENV=a COMPAT_CLONE_EXPECT_FAMILY=keras3 COMPAT_CLONE_EXPECT_BACKEND=jax" in log
    assert f"KERAS_BACKEND=jax X=1 VIRTUAL_ENV={env_dir}" in log
    assert f"\n{env_dir / 'bin'}\n" in log


def test_each_environment_gets_its_share_of_the_cores_for_xdist_auto(tmp_path: Path, monkeypatch: Any) -> None:
    """`pytest -n auto` in each of the environments run at once starts their share of the cores, not all of them;
    a value the caller set is kept."""
    monkeypatch.setattr(procs, "cores", lambda: 8)
    assert [procs.workers_share(jobs, 14) for jobs in (1, 2, 3, 8, 16)] == [8, 4, 2, 1, 1]
    assert procs.workers_share(4, 1) == 8  # one environment: every core, whatever --jobs says
    (env,) = _matrix.parse_table(one_env_table(install_compat_clone=False))
    _standin_env(tmp_path, env)
    script = "import os; print('auto=' + os.environ.get('PYTEST_XDIST_AUTO_NUM_WORKERS', '-'))"
    monkeypatch.delenv("PYTEST_XDIST_AUTO_NUM_WORKERS", raising=False)
    _run(env, tmp_path, [sys.executable, "-c", script], workers=3)
    assert "\nauto=3\n" in (tmp_path / env.name / "last.log").read_text()
    _run(env, tmp_path, [sys.executable, "-c", script])  # a run that shares nothing (the default) exports nothing
    assert "\nauto=-\n" in (tmp_path / env.name / "last.log").read_text()
    monkeypatch.setenv("PYTEST_XDIST_AUTO_NUM_WORKERS", "5")
    _run(env, tmp_path, [sys.executable, "-c", script], workers=3)
    assert "\nauto=5\n" in (tmp_path / env.name / "last.log").read_text()


def test_stale_stamp_rebuilds_and_a_build_failure_fails_the_env(tmp_path: Path) -> None:
    (env,) = _matrix.parse_table(one_env_table(install_compat_clone=False))
    env_dir = _standin_env(tmp_path, env)
    (env_dir / ".compat-clone-stamp").write_text("stale\n")
    out = _run(env, tmp_path, [sys.executable, "-c", "print('ran')"])  # `false venv ...` fails
    assert out.build == "FAILED" and out.status == "BUILD FAILED" and not out.ok
    log = (env_dir / "last.log").read_text()
    assert "building a failed" in log and "ran" not in log
    assert not (env_dir / "bin").exists()  # the stale environment was removed


@pytest.mark.parametrize(
    "script, status",
    [
        ("print('3 passed in 0.1s')", "ok"),
        ("import sys; print('1 failed, 2 passed in 0.1s'); sys.exit(1)", "FAILED"),
        ("import sys; print('no tests ran in 0.01s'); sys.exit(5)", "NO TESTS"),
        ("print('4 skipped in 0.1s')", "NONE PASSED"),
        ("print('not pytest at all')", "ok"),
        ("import sys; sys.exit(3)", "FAILED"),
    ],
)
def test_status_from_exit_code_and_summary(tmp_path: Path, script: str, status: str) -> None:
    (env,) = _matrix.parse_table(one_env_table(install_compat_clone=False))
    _standin_env(tmp_path, env)
    assert _run(env, tmp_path, [sys.executable, "-c", script]).status == status


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    (env,) = _matrix.parse_table(one_env_table(install_compat_clone=False))
    env_dir = _standin_env(tmp_path, env)
    script = (
        "import subprocess, sys, time; "
        "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
        "print('grandchild', p.pid, flush=True); time.sleep(60)"
    )
    out = _run(env, tmp_path, [sys.executable, "-c", script], timeout=3)
    log = (env_dir / "last.log").read_text()
    assert out.status == "TIMEOUT" and "timed out after 3s" in log, log
    grandchild = int(re.search(r"grandchild (\d+)", log).group(1))  # type: ignore[union-attr]
    for _ in range(50):
        stat = Path(f"/proc/{grandchild}/stat")
        if not stat.exists() or stat.read_text().split()[2] == "Z":
            break
        time.sleep(0.1)
    else:
        pytest.fail(f"process {grandchild} outlived the timeout")


_SLOW_PROJECT = {
    "pytest.ini": "[pytest]\n",
    "test_slow.py": (
        "import time\n"
        "def test_quick():\n    pass\n"
        "def test_sleeps_past_the_limit():\n    time.sleep(600)\n"
        "def test_sleeps_too():\n    time.sleep(600)\n"
    ),
}


def test_a_timeout_names_the_tests_still_running(tmp_path: Path) -> None:
    """A killed pytest session (xdist, as `make test` runs it) is reported with the tests it was in, and for how long."""
    (env,) = _matrix.parse_table(one_env_table(install_compat_clone=False))
    env_dir = _standin_env(tmp_path, env)
    project = tmp_path / "project"
    project.mkdir()
    for name, text in _SLOW_PROJECT.items():
        (project / name).write_text(text)
    said: List[str] = []
    out = _run(
        env,
        tmp_path,
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2", str(project)],
        timeout=40,
        say=lambda name, text: said.append(text),
    )
    log = (env_dir / "last.log").read_text()
    assert out.status == "TIMEOUT", log
    note = re.search(r"compat-clone matrix: a: (1 tests had finished; still running: .*)", log)
    assert note is not None and note.group(1) in said, log
    running = dict(re.findall(r"(test_slow\.py::\w+) \(running for (\d+)s\)", note.group(1)))
    assert sorted(running) == ["test_slow.py::test_sleeps_past_the_limit", "test_slow.py::test_sleeps_too"], note
    assert all(0 <= int(s) <= 40 for s in running.values()), note  # started after xdist's start-up, before the kill


def test_a_timeout_without_a_pytest_record_says_so(tmp_path: Path) -> None:
    (env,) = _matrix.parse_table(one_env_table(install_compat_clone=False))
    env_dir = _standin_env(tmp_path, env)
    (env_dir / "running.json").write_text('{"finished": 3, "running": {"old::test": 1}}')  # an earlier run's
    out = _run(env, tmp_path, [sys.executable, "-c", "import time; time.sleep(60)"], timeout=2)
    log = (env_dir / "last.log").read_text()
    assert out.status == "TIMEOUT" and "no record of the tests running" in log and "old::test" not in log, log


def test_results_are_replaced_only_by_a_run_that_records(tmp_path: Path) -> None:
    (env,) = _matrix.parse_table(one_env_table(install_compat_clone=False))
    _standin_env(tmp_path, env)
    old = tmp_path / "_results" / "a.jsonl"
    old.parent.mkdir()
    old.write_text('{"feature": "old"}\n')
    _run(env, tmp_path, [sys.executable, "-c", "print('1 passed in 0.1s')"])
    assert old.read_text() == '{"feature": "old"}\n'  # recorded nothing: kept
    record = (
        "import os, pathlib; d = pathlib.Path(os.environ['COMPAT_CLONE_RESULTS']); "
        "(d / (os.environ['COMPAT_CLONE_ENV'] + '.jsonl')).write_text('{\"feature\": \"new\"}\\n'); "
        "print('1 passed in 0.1s')"
    )
    _run(env, tmp_path, [sys.executable, "-c", record], table="mine.toml")
    (new,) = [json.loads(line) for line in old.read_text().splitlines()]
    # each record is tagged with the table that defined the environment and when it was produced
    assert new["feature"] == "new" and new["table"] == "mine.toml"
    assert re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$", new["produced"]), new
    assert sorted(p.name for p in old.parent.iterdir()) == ["a.jsonl", "a.outcome.json"]  # staging removed
    outcome = json.loads((old.parent / "a.outcome.json").read_text())
    assert outcome["env"] == "a" and outcome["status"] == "ok" and outcome["counts"]["passed"] == 1
    assert outcome["table"] == "mine.toml" and outcome["finished"] >= new["produced"]


@pytest.mark.skipif(sys.platform == "win32", reason="no fcntl")
def test_a_second_run_waits_for_the_environment_lock(tmp_path: Path) -> None:
    import fcntl
    import threading

    (env,) = _matrix.parse_table(one_env_table(install_compat_clone=False))
    _standin_env(tmp_path, env)
    said: List[Any] = []

    def second_run() -> None:
        said.append(
            _run(env, tmp_path, [sys.executable, "-c", "print('1 passed in 0.1s')"], say=lambda name, text: said.append(text))
        )

    with open(tmp_path / ".a.lock", "a+") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        thread = threading.Thread(target=second_run)
        thread.start()
        for _ in range(200):
            if said:
                break
            time.sleep(0.05)
        assert said == ["waiting for another run that uses this environment"]
        assert thread.is_alive()
    thread.join(60)
    assert said[-1].status == "ok"


@pytest.mark.parametrize(
    "version, caller, prefix, dont_write",
    [
        ("3.11.7", {}, ".pycache", None),  # the environment's own bytecode folder; nothing beside the sources
        ("3.11.7", {"PYTHONDONTWRITEBYTECODE": "1"}, ".pycache", None),
        ("3.11.7", {"PYTHONPYCACHEPREFIX": "/theirs", "PYTHONDONTWRITEBYTECODE": "1"}, "/theirs", "1"),  # the caller's
        ("3.7.16", {"PYTHONDONTWRITEBYTECODE": "1"}, None, "1"),  # no such folder before 3.8: built with bytecode
    ],
)
def test_an_environment_compiles_each_module_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, version: str, caller: Any, prefix: Any, dont_write: Any
) -> None:
    """Without bytecode each interpreter a run starts compiles TensorFlow's modules again (5 CPU s an import)."""
    from compat_clone_matrix import build
    from compat_clone_matrix.table import load_table

    (tmp_path / "pyvenv.cfg").write_text(f"home = /usr/bin\nversion_info = {version}\n", encoding="utf-8")
    assert build.python_version(tmp_path) == tuple(int(p) for p in version.split(".")[:2])
    for name in ("PYTHONPYCACHEPREFIX", "PYTHONDONTWRITEBYTECODE"):
        monkeypatch.delenv(name, raising=False)
    for name, value in caller.items():
        monkeypatch.setenv(name, value)
    env = next(iter(load_table()))
    environ = runner.env_environ(env, tmp_path)
    want = str(tmp_path / prefix) if prefix == ".pycache" else prefix
    assert environ.get("PYTHONPYCACHEPREFIX") == want
    assert environ.get("PYTHONDONTWRITEBYTECODE") == dont_write
    assert build.python_version(tmp_path / "absent") is None
