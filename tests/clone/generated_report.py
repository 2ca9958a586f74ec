"""The generated subclassed models' outcomes, after the run: printed, and kept with the run's results.

tests/clone/test_generated_subclasses.py records each sweep (its family, how many
models it drew, the outcome pairs, what the models held, the rules broken, the
refusals and where the native recipe fell short) as the user property
``GENERATED``; the conftest's terminal summary prints them here and writes
``$COMPAT_CLONE_RESULTS/<env>.generated.json``, so a run's log and its result
files say what was drawn and how each side did, not only that the test passed.
"""

from __future__ import annotations

from typing import Any, Dict, List, Sequence

GENERATED = "generated_subclasses"


def gather(reports: Sequence[Any]) -> Dict[str, Dict[str, Any]]:
    """The sweeps' records by test name (``test_model_subclasses[keras3]``), from the run's call reports."""
    sweeps: Dict[str, Dict[str, Any]] = {}
    for report in reports:
        if getattr(report, "when", None) != "call":
            continue
        for key, value in getattr(report, "user_properties", ()):
            if key == GENERATED:
                sweeps[report.nodeid.rpartition("::")[2]] = dict(value, outcome=report.outcome)
    return dict(sorted(sweeps.items()))


def summary_lines(sweeps: Dict[str, Dict[str, Any]]) -> List[str]:
    """One block per sweep: examples and outcome pairs, then the broken rules, refusals and native shortfalls."""
    lines: List[str] = []
    for test, sweep in sweeps.items():
        lines.append(f"{test} ({sweep['family']}): {sweep['examples']} models drawn, {sweep['outcome']}")
        lines += [f"  {n:>4} x {pair}" for pair, n in sweep["outcomes"].items()]
        for title, key in (
            ("rule broken", "broken"),
            ("refused, the native recipe fails too", "refusals"),
            ("the native recipe", "native_fell_short"),
        ):
            lines += [f"  {title}: {n} x {kind}" for kind, n in sorted(sweep[key].items(), key=lambda kv: -kv[1])]
        lines.append("  held: " + ", ".join(f"{label} {n}" for label, n in sweep["mix"].items()))
    return lines
