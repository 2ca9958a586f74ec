"""The two runs over releases the table does not list: ``--declared`` and ``--bisect FAMILY``.

Both derive their environments from the table's (`derive`), install the
project's own dependencies beside the Keras pins, and keep them in the
per-user cache (`derived_root`), one folder per project: a later run reuses
every environment whose stamp still matches, so nothing that exists is built
again. `cli` parses the options and hands over here with a function that runs
environments (`RunEnvs`).
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path
from typing import Callable, List, Optional, Sequence

from compat_clone_matrix.project_meta import Declared, read_declared
from compat_clone_matrix.summary import EXIT_FAILED, EXIT_USAGE, Outcome, format_summary
from compat_clone_matrix.table import Env, TableError

__all__ = ["RANGE_OPTIONS", "derived_root", "run_declared", "run_bisect"]

RunEnvs = Callable[[Sequence[Env]], List[Outcome]]

# options a --declared / --bisect run refuses: they choose or report table environments
RANGE_OPTIONS = ("env", "tag", "emit", "merge", "report", "readme")


def derived_root(project: Path) -> Path:
    """Where the derived environments of `project` live: the per-user cache, one folder per project.

    Example:

    >>> derived_root(Path("/src/mylib")).parent.name
    'derived'
    """
    from compat_clone_matrix.paths import user_cache_dir

    resolved = project.resolve()
    key = hashlib.sha256(str(resolved).encode("utf-8")).hexdigest()[:10]
    return user_cache_dir() / "matrix" / "derived" / f"{resolved.name or 'root'}-{key}"


def _declared_or_none(project: Path) -> Optional[Declared]:
    """The project's metadata, or None where it declares none (a bisect runs without it)."""
    try:
        return read_declared(project)
    except TableError:
        return None


def run_declared(args: argparse.Namespace, table: Sequence[Env], command: Sequence[str], run_envs: RunEnvs) -> int:
    """``--declared``: the lowest and highest release of each declared range, built and tested.

    Returns:
        0 when every end passed, 1 when one did not (the declared range does
        not hold), 2 for a usage error (no metadata, nothing covered).
    """
    from compat_clone_matrix.declared import describe, plan_declared, verdict
    from compat_clone_matrix.releases import IndexReadError, list_releases

    try:
        plan = plan_declared(read_declared(Path.cwd()), table, list_releases)
    except (TableError, IndexReadError) as e:
        print(f"compat-clone matrix --declared: {e}", file=sys.stderr)
        return EXIT_USAGE
    for line in describe(plan):
        print(line, flush=True)
    if args.list:
        return 0
    if not command:
        print(
            "compat-clone matrix --declared: no COMMAND given. Usage: compat-clone matrix --declared -- python -m pytest -q",
            file=sys.stderr,
        )
        return EXIT_USAGE
    outcomes = run_envs([p.env for p in plan.points])
    holds, lines = verdict(plan, outcomes, command)
    print()
    print(format_summary(outcomes, max(o.build_s + o.run_s for o in outcomes)))
    for line in lines:
        print(line)
    print(f"declared range: {'holds' if holds else 'does NOT hold'} ({plan.declared.source})", flush=True)
    return 0 if holds else EXIT_FAILED


def run_bisect(args: argparse.Namespace, table: Sequence[Env], command: Sequence[str], run_envs: RunEnvs) -> int:
    """``--bisect FAMILY --good R --bad R``: the first release where COMMAND stops passing.

    Returns:
        0 when the first bad release was found, 1 when an end does not behave
        as given (``--good`` fails or ``--bad`` passes), 2 for a usage error.
    """
    from compat_clone_matrix.bisect import bisect, candidates, changed_rows
    from compat_clone_matrix.releases import IndexReadError, list_releases

    if not args.good or not args.bad:
        print(
            "compat-clone matrix --bisect: expected both --good RELEASE (the command passes there) and --bad RELEASE "
            f"(it fails there). e.g. compat-clone matrix --bisect {args.bisect} --good 3.2.1 --bad 3.6.0 -- python -m pytest -q",
            file=sys.stderr,
        )
        return EXIT_USAGE
    if not command and not args.list:
        print(
            "compat-clone matrix --bisect: no COMMAND given: the command that passes at --good and fails at --bad, after `--`.",
            file=sys.stderr,
        )
        return EXIT_USAGE
    declared = _declared_or_none(Path.cwd())
    beside = declared.installed_beside() if declared is not None else []
    try:
        served = candidates(args.bisect, table, list_releases, declared)
        if args.list:
            from compat_clone_matrix.bisect import walk_between

            for release, template in walk_between(served, args.good, args.bad, args.bisect):
                print(f"{release}  from the table's {template.env.name}")
            return 0
        steps, lo, hi, walk = bisect(args.bisect, args.good, args.bad, served, run_envs, beside)
    except (TableError, IndexReadError) as e:
        print(f"compat-clone matrix --bisect: {e}", file=sys.stderr)
        return EXIT_USAGE
    print()
    print(format_summary([s.outcome for s in steps], sum(s.outcome.build_s + s.outcome.run_s for s in steps)))
    if lo is None or hi is None:
        first, last = steps[0], steps[1]
        wrong = [
            f"--good {first.release} is {first.verdict}" if first.verdict != "good" else "",
            f"--bad {last.release} is {last.verdict}" if last.verdict != "bad" else "",
        ]
        print(
            f"bisect {args.bisect}: nothing to bisect: {'; '.join(w for w in wrong if w)} (expected good at --good, bad at --bad)."
        )
        return EXIT_FAILED
    by_release = {s.release: s for s in steps}
    skipped = [v for v in walk[lo + 1 : hi] if v in by_release and by_release[v].verdict == "skip"]  # the walk runs good -> bad
    print(
        f"bisect {args.bisect}: last good {walk[lo]} ({by_release[walk[lo]].env.name}), first bad {walk[hi]} ({by_release[walk[hi]].env.name})"
    )
    if skipped:
        print(
            f"  between them, skipped (could not be judged): {', '.join(str(v) for v in skipped)}: the first bad is one of those or {walk[hi]}"
        )
    for line in by_release[walk[hi]].outcome.failures:
        print(f"  {line}")
    rows = changed_rows(args.bisect, walk[lo], walk[hi])
    print(f"  known issues (compat_clone) whose range changes between {walk[lo]} and {walk[hi]}: {len(rows) or 'none'}")
    for row in rows:
        print(f"    {row[:240]}")
    return 0
