"""The pytest plugin's work in one session, once it is on (`compat_clone_matrix.pytest_plugin`).

The claim check at session start, the header and closing lines, what the
tests used judged against the claim, the per-test results and the running
tests' record: everything the plugin's docstring lists. Imported by
``pytest_configure`` only when ``COMPAT_CLONE_ENV`` is set or
``--compat-results`` is given.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest

from compat_clone_matrix.claim import claim_from_environ
from compat_clone_matrix.observed import NO_KERAS, judge, merge, observe

__all__ = ["MatrixEnvironment"]

_CHECK_TIMEOUT_S = 600
_USAGE_ERROR = 4  # pytest.ExitCode.USAGE_ERROR: the environment is not what it says
_WORKER_KEY = "compat_clone_observed"  # an xdist worker's record, in its workeroutput


def _run_check() -> Dict[str, Any]:
    """`claim.main` in a fresh interpreter of this environment: its last stdout line."""
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "compat_clone_matrix.claim"],
            capture_output=True,
            text=True,
            timeout=_CHECK_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        return {"ok": False, "loaded": "nothing", "problems": [f"the check did not finish in {_CHECK_TIMEOUT_S}s"]}
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    try:
        result: Dict[str, Any] = json.loads(lines[-1])
    except (IndexError, ValueError):
        tail = (proc.stdout + proc.stderr).strip().splitlines()[-5:]
        return {"ok": False, "loaded": "nothing", "problems": ["the check crashed: " + " | ".join(tail)]}
    return result


def _write_claim_file(path: Optional[Path], env: str, claim: Dict[str, str], result: Dict[str, Any]) -> None:
    """The check's result for the matrix runner, at `path` (``$COMPAT_CLONE_CLAIM_FILE``, when it was set)."""
    if path is not None:
        record = {"env": env, "claim": claim, **result}
        path.write_text(json.dumps(record, sort_keys=True) + "\n", encoding="utf-8")


def _take_handed_file(name: str) -> Optional[Path]:
    """The file the runner handed this session in variable `name`, taken out of the environment.

    The session the runner started owns the files it is handed (the claim
    file, the running file): a pytest that one of its tests starts (Keras's
    own cloning tests in a child process) inherits no such variable, so it
    never writes them too.
    """
    value = os.environ.pop(name, None)
    return Path(value) if value else None


def _judged(start: Dict[str, Any], claim: Dict[str, str], records: List[Dict[str, Any]]) -> Dict[str, Any]:
    """The start check's result with the session's observation and its verdict added."""
    observed = merge(records)
    verdict, problems, used = judge(claim, observed)
    result = {**start, "observed": observed, "used": used, "verdict": verdict}
    if verdict == "mislabeled":
        result.update(ok=False, mislabeled=True, problems=[*start.get("problems", ()), *problems])
    elif verdict == NO_KERAS:
        result["notes"] = problems
    return result


def _detail(report: pytest.TestReport) -> str:
    """One line on why a test failed or skipped: the exception's message, or the skip's reason."""
    longrepr: Any = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:  # a skip: (path, line, reason)
        text = str(longrepr[2])
    else:
        crash = getattr(longrepr, "reprcrash", None)
        text = str(getattr(crash, "message", "") or report.longreprtext)
    return " ".join(text.split())[:300]


class MatrixEnvironment:
    """The plugin's state in one pytest session (in the controller, not in xdist workers)."""

    def __init__(self, config: pytest.Config, *, write_results: bool) -> None:
        self.config = config
        self.env = os.environ.get("COMPAT_CLONE_ENV") or "default"
        self.claim = claim_from_environ()
        self.loaded: Optional[str] = None
        self.start: Optional[Dict[str, Any]] = None  # the claim check's result, in the controller
        self.records: List[Dict[str, Any]] = []  # the xdist workers' observations
        self.verdict: Optional[Dict[str, Any]] = None
        self.results: Optional[Path] = None
        self._started = False  # the results file is truncated by the first record
        self.worker = hasattr(config, "workerinput")
        if write_results and not self.worker:
            folder = Path(os.environ.get("COMPAT_CLONE_RESULTS") or Path(".matrix") / "_results")
            self.results = folder / f"{self.env}.tests.jsonl"
        # xdist workers write neither file (and are started without the variables).
        self.claim_file = None if self.worker else _take_handed_file("COMPAT_CLONE_CLAIM_FILE")
        self.running_file = None if self.worker else _take_handed_file("COMPAT_CLONE_RUNNING_FILE")
        self.running: Dict[str, float] = {}  # node id -> when it started (time.time())
        self.finished = 0

    def _write_running(self) -> None:
        """The tests running now, for the matrix runner's timeout report (replaced whole, never half-written)."""
        assert self.running_file is not None
        record = {"pid": os.getpid(), "finished": self.finished, "running": self.running}
        partial = self.running_file.with_name(f"{self.running_file.name}.{os.getpid()}.part")  # this process's own
        partial.write_text(json.dumps(record), encoding="utf-8")
        os.replace(partial, self.running_file)

    def pytest_runtest_logstart(self, nodeid: str, location: Any) -> None:
        if self.running_file is not None:
            self.running[nodeid] = time.time()
            self._write_running()

    def pytest_runtest_logfinish(self, nodeid: str, location: Any) -> None:
        if self.running_file is not None:
            self.running.pop(nodeid, None)
            self.finished += 1
            self._write_running()

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        if self.worker or not self.claim:
            return
        if "family" not in self.claim:
            pytest.exit(
                f"compat-clone: environment {self.env!r} claims {self.claim} but no family: set "
                "`expect.family` in the matrix table.",
                returncode=_USAGE_ERROR,
            )
        result = _run_check()
        self.loaded = str(result.get("loaded", "nothing"))
        self.start = result
        _write_claim_file(self.claim_file, self.env, self.claim, result)
        if not result.get("ok"):
            claim = ", ".join(f"{k}={v}" for k, v in sorted(self.claim.items()))
            problems = "; ".join(str(p) for p in result.get("problems", ()))
            pytest.exit(
                f"compat-clone: environment {self.env!r} is not what it claims ({claim}): {problems}. "
                "Fix its pins or its `expect` in the matrix table.",
                returncode=_USAGE_ERROR,
            )

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        """xdist: a worker's observation, sent back in its workeroutput."""
        text = getattr(node, "workeroutput", {}).get(_WORKER_KEY)
        if text:
            self.records.append(json.loads(text))

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if self.worker:
            # a worker: its record goes to the controller (`pytest_testnodedown`)
            getattr(session.config, "workeroutput")[_WORKER_KEY] = json.dumps(observe())  # noqa: B009 (xdist sets it; Config declares none)
            return
        if self.start is None or not self.start.get("ok"):
            return  # no claim, or the session stopped at the start check
        self.verdict = _judged(self.start, self.claim, [observe(), *self.records])
        _write_claim_file(self.claim_file, self.env, self.claim, self.verdict)
        if self.verdict["verdict"] == "mislabeled":
            session.exitstatus = _USAGE_ERROR

    def pytest_report_header(self, config: pytest.Config) -> List[str]:
        claim = " ".join(f"{k}={v}" for k, v in sorted(self.claim.items())) or "no claim"
        loaded = f"; loaded {self.loaded}" if self.loaded else ""
        where = f"; results -> {self.results}" if self.results else ""
        return [f"compat-clone matrix env: {self.env} ({claim}{loaded}){where}"]

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.worker or not self.loaded:
            return
        claim = " ".join(f"{k}={v}" for k, v in sorted(self.claim.items()))
        terminalreporter.write_line(f"compat-clone matrix env: {self.env} ({claim}); loaded {self.loaded}")
        if self.verdict is not None:
            terminalreporter.write_line(f"compat-clone matrix env: {self.env}: the tests used {self.verdict['used']}")
            for problem in self.verdict["problems"] + self.verdict.get("notes", []):
                verdict = str(self.verdict["verdict"]).upper()
                terminalreporter.write_line(f"compat-clone matrix env: {self.env} {verdict}: {problem}")

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if self.results is None:
            return
        # One line per test: its call, or the setup that failed or skipped it.
        if report.when != "call" and not (report.when == "setup" and not report.passed):
            return
        outcome = "pass" if report.passed else "fail" if report.failed else "n/a"
        detail = "" if report.passed else _detail(report)
        record = {
            "env": self.env,
            "feature": report.nodeid,
            "side": "test",
            "outcome": outcome,
            "detail": detail,
            "keras": self.loaded or "",
        }
        if not self._started:
            self.results.parent.mkdir(parents=True, exist_ok=True)
            self.results.write_text("", encoding="utf-8")  # this run replaces the last one
            self._started = True
        with open(self.results, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(record) + "\n")
