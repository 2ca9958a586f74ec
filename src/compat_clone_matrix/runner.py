"""Running one command in a built environment: its process environment, its log, its status.

The environment is built (or reused) first (`build`); the command runs with
the environment's ``bin`` first on ``PATH``, the table's variables and the
run's ``COMPAT_CLONE_*`` variables (`_child_environ`); its result files are
published into the run's result folder (`results`), and its status is read
from its exit code, pytest's counts and the pytest plugin's claim check.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shutil
import signal
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

from compat_clone_matrix.build import (
    PYCACHE_DIR,
    PYCACHE_PREFIX_PYTHON,
    STAMP_FILE,
    ensure_built,
    env_lock,
    env_stamp,
    python_version,
)
from compat_clone_matrix.install import InstallSource
from compat_clone_matrix.observed import NO_KERAS, brief
from compat_clone_matrix.procs import Procs
from compat_clone_matrix.results import publish_results, write_outcome
from compat_clone_matrix.summary import Outcome, counts_text, failed_tests, format_seconds, parse_pytest_summary
from compat_clone_matrix.table import Env

__all__ = ["RunSettings", "env_environ", "run_one"]

_CLAIM_FILE = "last-claim.json"  # the pytest plugin's claim check of the last run
_RUNNING_FILE = "running.json"  # the pytest plugin's record of the tests running now
# Variables that shape which Keras an environment loads, or how its TensorFlow
# runs: never inherited from the caller's shell, only set from the table.
# (Importing TensorFlow 2 sets TF2_BEHAVIOR=1 in its own process; a TF 1.15
# environment started from there would run eagerly, where Keras 2 cannot.)
_SCRUBBED = ("PYTHONPATH", "PYTHONHOME", "KERAS_BACKEND", "TF_USE_LEGACY_KERAS", "VIRTUAL_ENV", "TF2_BEHAVIOR")


def env_environ(env: Env, env_dir: Path) -> Dict[str, str]:
    """The process environment a command runs with in `env` (built at `env_dir`).

    The caller's variables, less those that decide which Keras loads
    (``PYTHONPATH``, ``KERAS_BACKEND``, ...; only the table sets them), with the
    environment's ``bin`` first on ``PATH``, ``VIRTUAL_ENV`` and the table's variables. From Python 3.8,
    ``PYTHONPYCACHEPREFIX`` is the environment's own bytecode folder (``.pycache`` in it) unless the
    caller set one, and ``PYTHONDONTWRITEBYTECODE`` is dropped: nothing is written beside the sources.
    """
    environ = {k: v for k, v in os.environ.items() if k not in _SCRUBBED and not k.startswith("COMPAT_CLONE_EXPECT_")}
    environ["PATH"] = os.pathsep.join([str(env_dir / "bin"), os.environ.get("PATH", "")])
    environ["VIRTUAL_ENV"] = str(env_dir)
    environ.update(dict(env.env))
    version = python_version(env_dir)
    if "PYTHONPYCACHEPREFIX" not in environ and version is not None and version >= PYCACHE_PREFIX_PYTHON:
        # The environment's own bytecode folder: every module its processes import is compiled once, and
        # nothing is written beside anyone's sources, which is what PYTHONDONTWRITEBYTECODE usually asks
        # for (without it each interpreter compiles TensorFlow's modules again; build.py).
        environ["PYTHONPYCACHEPREFIX"] = str(env_dir / PYCACHE_DIR)
        environ.pop("PYTHONDONTWRITEBYTECODE", None)
    return environ


def _child_environ(
    env: Env, env_dir: Path, results: Path, uv: List[str], siblings: Sequence[str] = (), table: str = ""
) -> Dict[str, str]:
    environ = env_environ(env, env_dir)
    environ["COMPAT_CLONE_ENV"] = env.name
    environ["COMPAT_CLONE_CLAIM_FILE"] = str(env_dir / _CLAIM_FILE)
    environ["COMPAT_CLONE_RUNNING_FILE"] = str(env_dir / _RUNNING_FILE)
    if table:
        environ["COMPAT_CLONE_TABLE"] = table
    # Where the other environments of this run live, and which they are: every
    # one was built before any command ran, so a test may use a sibling's
    # interpreter (compat-clone convert reads Keras 2 files there).
    environ["COMPAT_CLONE_MATRIX_DIR"] = str(env_dir.parent)
    environ["COMPAT_CLONE_MATRIX_ENVS"] = ",".join(siblings or (env.name,))
    environ.update(env.expect_vars())
    environ["COMPAT_CLONE_RESULTS"] = str(results)
    if len(uv) == 1:
        environ["COMPAT_CLONE_UV"] = uv[0]
    environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    return environ


@dataclasses.dataclass(frozen=True)
class RunSettings:
    """What one matrix run gives every environment it runs the command in.

    Attributes:
        root: the folder of the environments (``<root>/<env name>``).
        results: the run's result folder (`publish_results`).
        command: what runs in each environment (its first word looked up on
            the environment's ``PATH``).
        uv: how to call uv (`find_uv`).
        source: the compat_clone each environment gets.
        procs: the run's child processes (killed together on an interrupt).
        timeout: seconds a command may run, or None.
        rebuild: build each environment again even where its stamp is fresh.
        say: ``say(env name, text)``: a line of the run's progress.
        siblings: the environments of the run, exported to the command as
            ``COMPAT_CLONE_MATRIX_ENVS``.
        table: the table's id (`table_id`): tags the results and outcomes.
        progress: when given, told when a command starts and ends
            (``progress.begin(name, log)`` / ``end(name)``).
        workers: the cores each environment's command gets (`procs.workers_share`), exported as
            ``PYTEST_XDIST_AUTO_NUM_WORKERS`` (what ``pytest -n auto`` starts) unless the caller set it;
            0 exports nothing.
    """

    root: Path
    results: Path
    command: Sequence[str]
    uv: List[str]
    source: InstallSource
    procs: Procs
    timeout: Optional[float]
    rebuild: bool
    say: Any
    siblings: Sequence[str] = ()
    table: str = ""
    progress: Any = None
    workers: int = 0


def run_one(env: Env, run: RunSettings, prepared: Optional[Outcome] = None) -> Outcome:
    """Builds (or reuses) one environment and runs the run's command in it.

    Another `compat-clone matrix` run using the same environment folder (a
    second terminal, a benchmark) is waited for: one run at a time per
    environment, so a rebuild never pulls the floor from under a running one.
    With `prepared` (the outcome of `prepare_env`), the environment built in
    the first phase is used as it is; a failed build is reported, not retried.

    Args:
        env: the table's environment.
        run: what the run gives every environment.
        prepared: the environment's outcome from the build phase, or None to
            build it here.

    Returns:
        The environment's outcome, also written into the run's results.
    """
    with env_lock(run.root, env, run.say):
        # A build that failed in the first phase is reported, not retried.
        out = prepared if prepared is not None and prepared.build == "FAILED" else _run_one_locked(env, run, prepared)
        write_outcome(run.results, out, run.table)
        return out


def _read_claim(path: Path) -> Optional[Dict[str, Any]]:
    """The pytest plugin's claim check of this run, if it ran."""
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def _run_one_locked(env: Env, run: RunSettings, prepared: Optional[Outcome]) -> Outcome:
    env_dir = run.root / env.name
    stamp_path = env_dir / STAMP_FILE
    still_fresh = (
        prepared is not None
        and (env_dir / "bin" / "python").exists()
        and stamp_path.is_file()
        and stamp_path.read_text(encoding="utf-8").strip() == env_stamp(env, run.source)
    )
    if prepared is not None and still_fresh:
        out = prepared  # built (or reused) in the first phase; its log goes on
    else:  # no first phase, or another run changed the environment since
        out = Outcome(env=env.name)
        if not ensure_built(
            env,
            env_dir,
            out,
            uv=run.uv,
            source=run.source,
            procs=run.procs,
            rebuild=run.rebuild and prepared is None,
            say=run.say,
        ):
            return out
    assert out.log is not None
    with open(out.log, "a", encoding="utf-8", errors="replace") as log:
        # The command writes its result files into a staging folder of its own.
        staging = run.results / f".run-{os.getpid()}-{env.name}"
        shutil.rmtree(staging, ignore_errors=True)
        environ = _child_environ(env, env_dir, staging, run.uv, run.siblings, run.table)
        if run.workers > 0:  # `-n auto`: this environment's share of the cores, not all of them
            environ.setdefault("PYTEST_XDIST_AUTO_NUM_WORKERS", str(run.workers))
        claim_file = env_dir / _CLAIM_FILE
        for stale in (claim_file, env_dir / _RUNNING_FILE):
            with contextlib.suppress(FileNotFoundError):
                stale.unlink()  # a check or record of an earlier run must not look like this one's
        exe = shutil.which(run.command[0], path=environ["PATH"])
        if exe is None:
            out.status = "FAILED"
            log.write(f"compat-clone matrix: command {run.command[0]!r} not found on PATH={environ['PATH']}\n")
            run.say(env.name, f"FAILED: {run.command[0]!r} not found in the environment or on PATH")
            return out
        staging.mkdir(parents=True)
        run.say(env.name, f"running ({out.build} in {format_seconds(out.build_s)})")
        log.write(f"# environment: {json.dumps({**dict(env.env), **env.expect_vars()}, sort_keys=True)}\n")
        start = time.monotonic()
        cpu: List[float] = []
        if run.progress is not None:
            run.progress.begin(env.name, out.log)
        try:
            rc = run.procs.call([exe] + list(run.command[1:]), log=log, env=environ, cwd=Path.cwd(), timeout=run.timeout, cpu=cpu)
        finally:
            if run.progress is not None:
                run.progress.end(env.name)
        out.run_s = time.monotonic() - start
        out.cpu_s = cpu[0] if cpu else None
        claim = _read_claim(claim_file)
        mislabeled = claim is not None and not claim.get("ok")
        no_keras = claim is not None and claim.get("verdict") == NO_KERAS
        if claim is not None:
            _log_claim(log, env.name, claim, out, mislabeled)
        publish_results(staging, run.results, run.table, keep=not (mislabeled or no_keras))
    _judge(out, rc, env_dir / _RUNNING_FILE, timeout=run.timeout, mislabeled=mislabeled, no_keras=no_keras, say=run.say)
    return out


def _judge(
    out: Outcome, rc: int, running_file: Path, *, timeout: Optional[float], mislabeled: bool, no_keras: bool, say: Any
) -> None:
    """The outcome of a command that ran, from its exit code, its log and its claim; said, and logged on a timeout."""
    assert out.log is not None
    out.returncode = rc
    text = out.log.read_text(encoding="utf-8", errors="replace")
    out.counts = parse_pytest_summary(text)
    out.status = (
        "MISLABELED"
        if mislabeled
        else _status(rc, out.counts, timed_out=timeout is not None and rc == -signal.SIGKILL and out.run_s >= timeout)
    )
    if out.status != "ok":
        out.failures = failed_tests(text)
    if no_keras and out.status == "ok":
        out.status = NO_KERAS  # passed, but on no Keras: nothing to certify
    loaded = f"; loaded {out.loaded}" if out.loaded else ""
    say(out.env, f"{out.status} in {format_seconds(out.run_s)}{counts_text(out.counts)}{loaded}")
    if out.status == "TIMEOUT":
        note = _running_at_timeout(running_file, time.time())
        with open(out.log, "a", encoding="utf-8") as log:
            log.write(f"compat-clone matrix: {out.env}: {note}\n")
        say(out.env, note)


def _log_claim(log: Any, name: str, claim: Dict[str, Any], out: Outcome, mislabeled: bool) -> None:
    """The proof in the log, whatever the command's own output options (pytest -q hides its header)."""
    out.loaded = str(claim.get("loaded") or "nothing")
    log.write(f"\ncompat-clone matrix: {name} loaded {out.loaded}\n")
    if claim.get("verdict") in ("mislabeled", NO_KERAS) and isinstance(claim.get("observed"), dict):
        # The claim check before the tests loaded the claimed Keras; the tests used
        # another (or none): the summary's `loaded` says what they used, not what they could have.
        out.loaded = f"tests used {brief(claim['observed'])}, not {out.loaded}"
    if claim.get("used"):
        log.write(f"compat-clone matrix: {name}: the tests used {claim['used']}\n")
    if mislabeled:
        out.why = "; ".join(str(p) for p in claim.get("problems", ()))
        log.write(f"compat-clone matrix: {name} is MISLABELED: {out.why}\n")
    elif claim.get("verdict") == NO_KERAS:
        out.why = "; ".join(str(p) for p in claim.get("notes", ()))
        log.write(f"compat-clone matrix: {name}: {NO_KERAS}: {out.why}\n")


def _running_at_timeout(path: Path, now: float) -> str:
    """What the command was doing when it was killed: the tests the pytest plugin saw running, longest first."""
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
        running = sorted(record["running"].items(), key=lambda item: item[1])
        finished = int(record["finished"])
    except (OSError, ValueError, KeyError, AttributeError, TypeError):
        return "no record of the tests running (not pytest, or it had not started a test)"
    if not running:
        return f"{finished} tests had finished; none was running (collection, a session fixture or teardown)"
    listed = "; ".join(f"{nodeid} (running for {format_seconds(now - started)})" for nodeid, started in running)
    return f"{finished} tests had finished; still running: {listed}"


def _status(rc: int, counts: Optional[Dict[str, int]], *, timed_out: bool) -> str:
    """The summary's status of a command that ran: exit code first, then pytest's counts."""
    if timed_out:
        return "TIMEOUT"
    if rc == 5 and counts is not None:  # pytest: no tests were collected
        return "NO TESTS"
    if rc != 0:
        return "FAILED"
    if counts is not None and counts["passed"] == 0:
        return "NONE PASSED"  # an environment where every test skipped proves nothing
    return "ok"
