"""The pytest plugin shipped with compat_clone (entry point ``pytest11``: ``compat_clone``).

It is off, and does nothing, unless pytest runs in a matrix environment
(``COMPAT_CLONE_ENV`` is set, as `compat-clone matrix` does) or with
``--compat-results``. When on, it

1. checks at session start, in a separate interpreter (`claim`), that the
   Keras the project imports is the family / version / backend the
   environment claims (``COMPAT_CLONE_EXPECT_*``, ``_MODULE`` naming the
   module the project imports it from), and stops the session with exit
   status 4 and the reason when it is not: a mislabeled environment fails
   instead of passing on the wrong Keras. The check's result also goes to
   ``$COMPAT_CLONE_CLAIM_FILE`` when set (the matrix runner reads it: its
   status ``MISLABELED``, the "loaded" column of its summary);
2. names the environment, its claim and the Keras it loaded in the report
   header and, whatever the options (``-q`` hides the header), in a line
   of the closing summary: the proof of what the tests ran on;
3. records what the tests really used (`observed`: the families of the
   models compat_clone was handed, the Keras modules imported, in every
   process that ran tests, xdist workers included) and judges it against the
   claim at session end: tests that used another family than the claimed
   one make the environment MISLABELED (exit status 4, the claim file says
   why: the module imported, the family it gave, what to change); tests that
   used no Keras at all are reported as such (``used: "no Keras"``), not
   certified;
4. with ``--compat-results``, writes one JSON line per test to
   ``$COMPAT_CLONE_RESULTS/<env>.tests.jsonl`` (default folder
   ``.matrix/_results``; created at the first test, so a session stopped
   before any test leaves the last results in place), which ``compat-clone
   matrix --report`` / ``--merge`` turn into a test x environment table;
4. keeps ``$COMPAT_CLONE_RUNNING_FILE`` (when set) up to date with the
   tests running now and when each started (xdist workers' included), and
   how many finished: when the matrix runner kills a session that ran out of
   time, it reports from there which tests were running and for how long.

Importing this module imports no framework: pytest loads it in every
environment where compat_clone is installed. ``-p no:compat_clone`` turns it
off entirely.
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

from compat_clone.tools.matrix.claim import claim_from_environ
from compat_clone.tools.matrix.observed import NO_KERAS, judge, merge, observe

__all__ = ["pytest_addoption", "pytest_configure"]

_CHECK_TIMEOUT_S = 600
_USAGE_ERROR = 4  # pytest.ExitCode.USAGE_ERROR: the environment is not what it says
_WORKER_KEY = "compat_clone_observed"  # an xdist worker's record, in its workeroutput


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("compat_clone", "compat-clone matrix environments")
    group.addoption(
        "--compat-results", action="store_true", default=False,
        help="write one JSON line per test to $COMPAT_CLONE_RESULTS/<env>.tests.jsonl "
             "(default folder .matrix/_results) for `compat-clone matrix --report`",
    )


def pytest_configure(config: pytest.Config) -> None:
    asked = bool(config.getoption("compat_results", False))
    if os.environ.get("COMPAT_CLONE_ENV") or asked:
        config.pluginmanager.register(_MatrixEnvironment(config, write_results=asked), "compat_clone_matrix_env")


def _run_check() -> Dict[str, Any]:
    """`claim.main` in a fresh interpreter of this environment: its last stdout line."""
    try:
        proc = subprocess.run([sys.executable, "-m", "compat_clone.tools.matrix.claim"], capture_output=True,
                              text=True, timeout=_CHECK_TIMEOUT_S, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return {"ok": False, "loaded": "nothing", "problems": [f"the check did not finish in {_CHECK_TIMEOUT_S}s"]}
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    try:
        result: Dict[str, Any] = json.loads(lines[-1])
    except (IndexError, ValueError):
        tail = (proc.stdout + proc.stderr).strip().splitlines()[-5:]
        return {"ok": False, "loaded": "nothing", "problems": ["the check crashed: " + " | ".join(tail)]}
    return result


def _write_claim_file(env: str, claim: Dict[str, str], result: Dict[str, Any]) -> None:
    """The check's result for the matrix runner, at ``$COMPAT_CLONE_CLAIM_FILE`` (when set)."""
    path = os.environ.get("COMPAT_CLONE_CLAIM_FILE")
    if path:
        record = {"env": env, "claim": claim, **result}
        Path(path).write_text(json.dumps(record, sort_keys=True) + "\n", encoding="utf-8")


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


class _MatrixEnvironment:
    """The plugin's state in one pytest session (in the controller, not in xdist workers)."""

    def __init__(self, config: pytest.Config, *, write_results: bool) -> None:
        self.config = config
        self.env = os.environ.get("COMPAT_CLONE_ENV") or "default"
        self.claim = claim_from_environ()
        self.loaded: Optional[str] = None
        self.start: Optional[Dict[str, Any]] = None  # the claim check's result, in the controller
        self.records: List[Dict[str, Any]] = []      # the xdist workers' observations
        self.verdict: Optional[Dict[str, Any]] = None
        self.results: Optional[Path] = None
        self._started = False  # the results file is truncated by the first record
        self.worker = hasattr(config, "workerinput")
        if write_results and not self.worker:
            folder = Path(os.environ.get("COMPAT_CLONE_RESULTS") or Path(".matrix") / "_results")
            self.results = folder / f"{self.env}.tests.jsonl"
        running = os.environ.get("COMPAT_CLONE_RUNNING_FILE")
        self.running_file = Path(running) if running and not self.worker else None
        self.running: Dict[str, float] = {}  # node id -> when it started (time.time())
        self.finished = 0

    def _write_running(self) -> None:
        """The tests running now, for the matrix runner's timeout report (replaced whole, never half-written)."""
        assert self.running_file is not None
        record = {"pid": os.getpid(), "finished": self.finished, "running": self.running}
        partial = self.running_file.with_name(self.running_file.name + ".part")
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
            pytest.exit(f"compat-clone: environment {self.env!r} claims {self.claim} but no family: set "
                        "`expect.family` in the matrix table.", returncode=_USAGE_ERROR)
        result = _run_check()
        self.loaded = str(result.get("loaded", "nothing"))
        self.start = result
        _write_claim_file(self.env, self.claim, result)
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
            getattr(session.config, "workeroutput")[_WORKER_KEY] = json.dumps(observe())
            return
        if self.start is None or not self.start.get("ok"):
            return  # no claim, or the session stopped at the start check
        self.verdict = _judged(self.start, self.claim, [observe(), *self.records])
        _write_claim_file(self.env, self.claim, self.verdict)
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
        record = {"env": self.env, "feature": report.nodeid, "side": "test", "outcome": outcome,
                  "detail": detail, "keras": self.loaded or ""}
        if not self._started:
            self.results.parent.mkdir(parents=True, exist_ok=True)
            self.results.write_text("", encoding="utf-8")  # this run replaces the last one
            self._started = True
        with open(self.results, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(record) + "\n")
