"""What one matrix run reports: pytest counts, per-environment outcomes, the summary table."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Dict, List, Optional, Sequence

__all__ = [
    "parse_pytest_summary",
    "failed_tests",
    "format_summary",
    "EXIT_FAILED",
    "EXIT_USAGE",
    "EXIT_MISLABELED",
    "Outcome",
    "format_seconds",
    "log_tail",
    "counts_text",
]

# `compat-clone matrix` exit statuses (0: every environment passed)
EXIT_FAILED = 1  # an environment failed to build, failed its command, ran no test or passed none
EXIT_USAGE = 2  # bad options or table: nothing ran
EXIT_MISLABELED = 3  # an environment is not what its table entry claims (status MISLABELED)

# --------------------------------------------------------------------------- summary

_SUMMARY_LINE_RE = re.compile(r"\b(\d+) (passed|failed|skipped|errors?|xfailed|xpassed|deselected)\b")
_IN_TIME_RE = re.compile(r"\bin [0-9.]+s\b")


def parse_pytest_summary(text: str) -> Optional[Dict[str, int]]:
    """Counts from pytest's closing line (``3 passed, 1 skipped in 2.1s``).

    Returns:
        ``{"passed", "failed", "skipped", "errors", "xfailed", "xpassed",
        "deselected"}`` counts, or None when the text has no pytest closing
        line (the command was not pytest, or it crashed). ``no tests ran``
        gives all zeros.

    Example:

    >>> parse_pytest_summary("== 3 passed, 1 skipped, 2 warnings in 2.10s ==")["passed"]
    3
    """
    for line in reversed(text.splitlines()):
        line = line.strip().strip("=").strip()
        if not _IN_TIME_RE.search(line):
            continue
        counts = {k: 0 for k in ("passed", "failed", "skipped", "errors", "xfailed", "xpassed", "deselected")}
        found = False
        for num, word in _SUMMARY_LINE_RE.findall(line):
            counts["errors" if word.startswith("error") else word] += int(num)
            found = True
        if found or line.startswith("no tests ran"):
            return counts
    return None


# pytest's short test summary (``-r fE``, its default): ``FAILED tests/t.py::test_x - AssertionError: ...``
_FAILED_LINE_RE = re.compile(r"^(?:FAILED|ERROR) \S+")
_SHOWN_FAILURES = 5  # per environment, in the closing summary (all of them are in its last.log)


def failed_tests(text: str) -> List[str]:
    """The short test summary's ``FAILED`` / ``ERROR`` lines of a pytest log, in its order.

    Args:
        text: the output of a pytest session (an environment's ``last.log``).

    Returns:
        One line per failed test or error, each cut to 300 characters; empty
        when pytest reported none (or the command was not pytest).

    Example:

    >>> failed_tests("..F\\nFAILED tests/t.py::test_x - assert 1 == 2\\n1 failed, 2 passed in 0.1s")
    ['FAILED tests/t.py::test_x - assert 1 == 2']
    """
    return [line.rstrip()[:300] for line in text.splitlines() if _FAILED_LINE_RE.match(line)]


@dataclasses.dataclass
class Outcome:
    env: str
    build: str = ""  # "reused" | "built" | "FAILED"
    status: str = "not run"  # "ok" | "FAILED" | "NO TESTS" | "NONE PASSED" | "BUILD FAILED" | "TIMEOUT" | "MISLABELED"
    #                           | "NO KERAS" (passed, but the tests used no Keras: nothing certified)
    returncode: Optional[int] = None
    counts: Optional[Dict[str, int]] = None
    build_s: float = 0.0
    run_s: float = 0.0
    cpu_s: Optional[float] = None  # CPU seconds of the command (all its processes)
    log: Optional[Path] = None
    loaded: str = ""  # the Keras the project's tests got (the pytest plugin's claim check)
    why: str = ""  # MISLABELED / NO KERAS: the plugin's reason (what the tests used, what to change)
    failures: List[str] = dataclasses.field(default_factory=list)  # FAILED: pytest's FAILED / ERROR lines

    @property
    def ok(self) -> bool:
        return self.status == "ok"


def format_seconds(seconds: float) -> str:
    seconds = int(round(seconds))
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"


def counts_text(counts: Optional[Dict[str, int]]) -> str:
    if counts is None:
        return ""
    return f": {counts['passed']} passed, {counts['failed'] + counts['errors']} failed, {counts['skipped']} skipped"


def format_summary(outcomes: Sequence[Outcome], wall_s: float) -> str:
    """The closing table: env, build, passed / failed / skipped, status, time."""
    headers = ["env", "build", "passed", "failed", "skipped", "status", "time", "cpu", "loaded"]
    rows = []
    for o in outcomes:
        c = o.counts
        rows.append(
            [
                o.env,
                o.build or "-",
                str(c["passed"]) if c else "-",
                str(c["failed"] + c["errors"]) if c else "-",
                str(c["skipped"] + c["xfailed"]) if c else "-",
                o.status,
                format_seconds(o.build_s + o.run_s),
                format_seconds(o.cpu_s) if o.cpu_s is not None else "-",
                o.loaded or "-",
            ]
        )
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    numeric = {2, 3, 4, 6, 7}

    def fmt(cells: Sequence[str]) -> str:
        return "  ".join(c.rjust(w) if i in numeric else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    lines = [fmt(headers), fmt(["-" * w for w in widths])] + [fmt(r) for r in rows] + _failure_lines(outcomes)
    bad = [o.env for o in outcomes if not o.ok]
    mislabeled = [o.env for o in outcomes if o.status == "MISLABELED"]
    totals = [sum((o.counts or {}).get(k, 0) for o in outcomes) for k in ("passed", "failed", "errors", "skipped")]
    verdict = (
        f"{len(bad)} of {len(outcomes)} environments FAILED: {', '.join(bad)}"
        if bad
        else f"all {len(outcomes)} environments passed"
    )
    lines.append(
        f"matrix: {verdict} ({totals[0]} passed, {totals[1] + totals[2]} failed, {totals[3]} skipped in {format_seconds(wall_s)})"
    )
    if mislabeled:
        lines.append(
            f"matrix: {len(mislabeled)} environment(s) MISLABELED, not what the table claims: "
            f"{', '.join(mislabeled)} (exit status {EXIT_MISLABELED}; the reason is in their last.log)"
        )
    lines += [f"matrix: {o.env} {o.status}: {o.why}" for o in outcomes if o.why]
    return "\n".join(lines)


def _failure_lines(outcomes: Sequence[Outcome]) -> List[str]:
    """What failed, under the table (CI shows the end of the output): the first few tests of each environment."""
    lines = []
    for o in outcomes:
        shown = o.failures[:_SHOWN_FAILURES]
        lines += [f"{o.env}: {line}" for line in shown]
        if len(o.failures) > len(shown):
            lines.append(f"{o.env}: ... and {len(o.failures) - len(shown)} more in {o.log}")
    return lines


def log_tail(path: Optional[Path], n: int) -> str:
    if path is None or not path.exists():
        return ""
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    return "\n".join(lines[-n:])
