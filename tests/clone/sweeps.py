"""What a sweep skipped, and why: listed in pytest's summary, never dropped silently.

A sweep (a property test over random models, a loop over every layer) that
cannot check some of its cases says which and why. `Skips` is given the
kinds of skip the sweep knows, each with its reason; `skip(kind, case)`
counts a case of a known kind and fails the test on a kind with no reason (a
new kind of skip is a finding until someone writes down why it is not a bug
of ours). `record` hands the list to pytest, whose terminal summary prints it
in a section "cases skipped by sweeps" (conftest.py, `summary_lines`), with
pytest-xdist too: the lines travel in the test's report.

Example:

    skips = Skips({"no-native": "the native API has no such argument"})
    for case in cases:
        if not native_has(case):
            skips.skip("no-native", case.name)
            continue
        check(case)
    skips.record(record_property)
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Iterable, List, Mapping

PROPERTY = "skipped_cases"
_SHOWN = 3  # cases named per kind; the rest are counted


class Skips:
    """The cases a sweep skipped, by kind, each kind with its reason.

    Args:
        reasons: kind -> why a case of that kind is skipped, not failed.
    """

    def __init__(self, reasons: Mapping[str, str]) -> None:
        self.reasons = dict(reasons)
        self.cases: Dict[str, List[str]] = {}

    def skip(self, kind: str, case: str) -> None:
        """Counts `case` as skipped for `kind`.

        Raises:
            AssertionError: `kind` has no reason (a new kind of skip).
        """
        if kind not in self.reasons:
            raise AssertionError(
                f"A new kind of skip: {kind!r} (case {case}). Either it is a bug to fix, or give it a reason "
                f"where the sweep lists its kinds ({sorted(self.reasons)})."
            )
        self.cases.setdefault(kind, []).append(case)

    def lines(self) -> List[str]:
        """One line per kind seen: how many cases, why, and the first few."""
        out = []
        for kind, cases in sorted(self.cases.items()):
            named = ", ".join(cases[:_SHOWN]) + (f", ... (+{len(cases) - _SHOWN})" if len(cases) > _SHOWN else "")
            out.append(f"{len(cases)} skipped, {kind}: {self.reasons[kind]} [{named}]")
        return out

    def record(self, record_property: Callable[[str, Any], None]) -> None:
        """Hands the list to pytest (the `record_property` fixture) for the terminal summary."""
        if self.cases:
            record_property(PROPERTY, self.lines())


def summary_lines(reports: Iterable[Any]) -> List[str]:
    """``nodeid: line`` for every skip list in the call reports of a run (conftest's terminal summary)."""
    out: List[str] = []
    for report in reports:
        if getattr(report, "when", None) != "call":
            continue
        for key, value in getattr(report, "user_properties", ()):
            if key == PROPERTY:
                out += [f"{report.nodeid}: {line}" for line in value]
    return sorted(set(out))
