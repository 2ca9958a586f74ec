"""Where a run's CPU goes: each test's CPU seconds, summed by module after the run.

`--durations` gives wall seconds, and in a matrix run two environments and two
xdist workers share the cores, so a test's wall time says little about what it
costs. This counts, per test (setup, call and teardown), the CPU time of the
process that runs it and of the child processes it waited for (the conversions'
and placement checks' interpreters), and the CPU seconds the warm conversion
workers answered for (`compat_clone.tools.convert._warm.cpu_seconds`: a
server is waited for only when the process ends). tests/conftest.py records it in each
teardown report's ``user_properties`` (which xdist sends to the controller) and
prints the modules and tests that cost most after the run's summary: each
environment's log (.matrix/<env>/last.log) ends with them.
"""

from __future__ import annotations

import sys
import time
from collections import defaultdict
from typing import Any, Dict, Iterable, List, Tuple

try:
    import resource
except ImportError:  # not on Windows: the interpreters a test starts are not counted there
    resource = None  # type: ignore[assignment]

PROPERTY = "cpu_s"  # a test's CPU seconds, in its teardown report's user_properties
_START = "_compat_clone_cpu_start"


def _now() -> float:
    spent = time.process_time()
    if resource is not None:
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        spent += children.ru_utime + children.ru_stime
    warm = sys.modules.get("compat_clone.tools.convert._warm")  # imported by the tests that convert
    if warm is not None:
        spent += warm.cpu_seconds()
    return spent


def start(item: Any) -> None:
    """Marks the start of `item`'s setup."""
    setattr(item, _START, _now())


def finish(item: Any) -> None:
    """Adds the CPU seconds since `start` to `item`'s user properties (its teardown report gets them)."""
    began = getattr(item, _START, None)
    if began is not None:
        item.user_properties.append((PROPERTY, round(_now() - began, 3)))


def _spent(reports: Iterable[Any]) -> List[Tuple[str, float]]:
    out = []
    for report in reports:
        if getattr(report, "when", None) != "teardown":
            continue
        for key, value in getattr(report, "user_properties", ()):
            if key == PROPERTY:
                out.append((report.nodeid, float(value)))
    return out


def summary_lines(reports: Iterable[Any], top: int = 15) -> List[str]:
    """The modules and the tests that took most CPU, each with its seconds, and the run's total."""
    spent = _spent(reports)
    if not spent:
        return []
    by_module: Dict[str, float] = defaultdict(float)
    for nodeid, seconds in spent:
        by_module[nodeid.split("::")[0]] += seconds
    total = sum(seconds for _, seconds in spent)
    lines = [f"{total:.0f} CPU s in {len(spent)} tests; by module:"]
    lines += [f"{seconds:8.1f}s {module}" for module, seconds in sorted(by_module.items(), key=lambda kv: -kv[1])[:top]]
    lines.append("by test:")
    lines += [f"{seconds:8.1f}s {nodeid}" for nodeid, seconds in sorted(spent, key=lambda kv: -kv[1])[:top]]
    return lines
