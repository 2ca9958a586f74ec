"""`compat-clone matrix --bisect FAMILY`: the first release of a family where a command stops passing.

Given a release where the command passes (``--good``) and one where it fails
(``--bad``), in either order, the releases between them that the table's
environments can serve (`derive.coverage`: every release and patch release of
each series the table pins) are walked in version order, halving the span at
each step: an environment is derived for the middle release (`derive.derive`),
built unless it exists, and the command run there. A release whose
environment cannot build, or whose run is neither a pass nor a failure of the
command (no tests, a mislabeled environment, a timeout), is skipped, as
``git bisect skip`` does. The answer is the last good and the first bad
release on the way from ``--good`` to ``--bad``, the failing tests there, and
the rows of compat_clone's known-issues table (`compat_clone.known_issues`)
whose range changes between the two.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from compat_clone_matrix.derive import Template, coverage, derive, templates
from compat_clone_matrix.project_meta import Declared
from compat_clone_matrix.summary import Outcome
from compat_clone_matrix.table import Env, TableError

__all__ = ["Step", "candidates", "walk_between", "bisect", "changed_rows"]

RunEnvs = Callable[[Sequence[Env]], List[Outcome]]


@dataclasses.dataclass(frozen=True)
class Step:
    """One release of the walk and what its run said (``good``, ``bad`` or ``skip``)."""

    release: Version
    env: Env
    verdict: str
    outcome: Outcome


def candidates(
    family: str, table: Sequence[Env], releases: Callable[[str], List[Version]], declared: Optional[Declared] = None
) -> Dict[Version, Template]:
    """Every release of `family` the table's environments can serve, with the template that serves it.

    Args:
        family: ``keras2``, ``tf_keras`` or ``keras3``.
        table: the matrix table (overlay applied).
        releases: lists a project's releases (`releases.list_releases`).
        declared: the project's metadata, when it has some: environments
            outside its ``requires-python`` are not used.

    Raises:
        TableError: no environment of the table claims `family`.
    """
    mine = [t for t in templates(table) if t.family == family and (declared is None or declared.python_allows(t.env.python))]
    if not mine:
        families = sorted({t.family for t in templates(table)})
        raise TableError(
            f"No environment of the table pins a release of {family!r}"
            + (" that the project's requires-python admits" if declared is not None else "")
            + f". Expected one of the table's families: {', '.join(families)}."
        )
    served: Dict[Version, Template] = {}
    for group in sorted({t.group for t in mine}):
        served.update(coverage(group, SpecifierSet(""), mine, releases, family).served)
    return dict(sorted(served.items()))


def _resolve(given: str, option: str, served: Dict[Version, Template], family: str) -> Version:
    """The release `given` names: itself, or for a series (``3.2``) the release the table pins in it."""
    try:
        wanted = Version(given)
    except InvalidVersion:
        raise TableError(f"Expected {option} to be a release such as 3.2.1. Received: {given!r}.") from None
    if len(wanted.release) <= 2:  # a series (3.3 == 3.3.0 to packaging: read it as the series, before the release)
        series = [v for v in served if v.release[:2] == (wanted.release + (0,))[:2]]
        pinned = [v for v in series if served[v].pinned == v]
        if pinned or series:
            return (pinned or series)[-1]
    if wanted in served:
        return wanted
    ordered = list(served)
    at = sum(1 for v in ordered if v < wanted)
    near = ", ".join(str(v) for v in ordered[max(0, at - 2) : at + 2])
    raise TableError(
        f"{option} {given}: no environment of the table serves that release of {family} (its series is not pinned by any). "
        f"Expected one it serves, e.g. {near}."
    )


def walk_between(served: Dict[Version, Template], good: str, bad: str, family: str) -> List[Tuple[Version, Template]]:
    """The releases from `good` to `bad` (either order) that the table serves, each with its template, in walk order.

    Raises:
        TableError: an end is not a release the table serves, or both are the same.
    """
    g, b = _resolve(good, "--good", served, family), _resolve(bad, "--bad", served, family)
    if g == b:
        raise TableError(f"--good and --bad name the same release ({g}). Expected two releases to bisect between.")
    walk = [v for v in served if min(g, b) <= v <= max(g, b)]
    return [(v, served[v]) for v in (reversed(walk) if g > b else walk)]


def _verdict(outcome: Outcome) -> str:
    if outcome.ok:
        return "good"
    return "bad" if outcome.status == "FAILED" else "skip"


def bisect(
    family: str,
    good: str,
    bad: str,
    served: Dict[Version, Template],
    run_envs: RunEnvs,
    beside: Sequence[str] = (),
    say: Callable[[str], None] = print,
) -> Tuple[List[Step], Optional[int], Optional[int], List[Version]]:
    """Walks from `good` to `bad` and finds where the command stops passing.

    Args:
        family: the family (for messages).
        good: the release where the command passes.
        bad: the release where it fails (older or newer than `good`).
        served: `candidates`.
        run_envs: builds (or reuses) environments and runs the command in
            them, returning their outcomes in order.
        beside: the project's other dependencies, installed in each environment.
        say: prints one line of progress.

    Returns:
        (the steps in the order they ran, the index in the walk of the last
        good release, of the first bad one, the walk's releases). The two
        indexes are None when an end does not behave as given (the
        first steps say which).

    Raises:
        TableError: an end is not a release the table serves, or both are the same.
    """
    walk = [v for v, _ in walk_between(served, good, bad, family)]
    g, b = walk[0], walk[-1]
    say(
        f"bisect {family}: {len(walk)} releases from {g} (good) to {b} (bad), at most {max(1, (len(walk) - 2).bit_length())} steps between"
    )
    envs = {v: derive(served[v], v, beside) for v in walk}
    steps: List[Step] = []

    def record(indexes: Sequence[int]) -> List[str]:
        outcomes = run_envs([envs[walk[i]] for i in indexes])
        verdicts = []
        for i, outcome in zip(indexes, outcomes):
            verdict = _verdict(outcome)
            steps.append(Step(release=walk[i], env=envs[walk[i]], verdict=verdict, outcome=outcome))
            say(f"bisect {family}: {walk[i]} is {verdict} ({outcome.status} in {envs[walk[i]].name})")
            verdicts.append(verdict)
        return verdicts

    ends = record([0, len(walk) - 1])
    if ends != ["good", "bad"]:
        return steps, None, None, walk
    lo, hi, skipped = 0, len(walk) - 1, set()
    while True:
        inner = [i for i in range(lo + 1, hi) if i not in skipped]
        if not inner:
            break
        mid = inner[len(inner) // 2]
        verdict = record([mid])[0]
        if verdict == "good":
            lo = mid
        elif verdict == "bad":
            hi = mid
        else:
            skipped.add(mid)
    return steps, lo, hi, walk


def changed_rows(family: str, last_good: Version, first_bad: Version) -> List[str]:
    """The rows of compat_clone's known-issues table of `family` that hold at one release and not at the other."""
    from compat_clone.known_issues import KNOWN_ISSUES, affects

    out = []
    for row in KNOWN_ISSUES:
        if row.family != family:
            continue
        before, after = affects(row, str(last_good)), affects(row, str(first_bad))
        if before != after:
            change = "starts" if after else "ends"
            out.append(f"{row.id} ({row.versions}; {change} at {first_bad}): {row.symptom}")
    return out
