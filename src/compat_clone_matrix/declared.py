"""`compat-clone matrix --declared`: does the range a project declares hold at both of its ends?

The project's own metadata (`project_meta.read_declared`) gives a range for
each Keras-carrying package it depends on (``keras>=3.0``,
``tensorflow>=2.12,<2.16``, ``tf-keras``). For each Keras family those
ranges reach through the table's environments (`derive.templates`), the
lowest and the highest release the range allows are built (`derive.derive`:
the table's environment of that series with its pin moved to the release,
plus the project's other dependencies) and the command runs there. A range
holds when both ends pass; releases it allows that no environment of the
table covers are said, never guessed at.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Dict, List, Sequence, Set, Tuple

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from compat_clone_matrix.derive import Template, coverage, derive, pins, spans, templates
from compat_clone_matrix.project_meta import Declared, group_of
from compat_clone_matrix.summary import Outcome
from compat_clone_matrix.table import Env, TableError

__all__ = ["Point", "DeclaredPlan", "plan_declared", "describe", "verdict"]


@dataclasses.dataclass(frozen=True)
class Point:
    """One end of a family's declared range, and the environment that tests it."""

    family: str
    role: str  # "lowest", "highest" or "lowest and highest"
    group: str
    release: Version
    template: Template
    env: Env

    def label(self) -> str:
        return f"{self.template.package} {self.release}"


@dataclasses.dataclass
class DeclaredPlan:
    """What `--declared` builds and what it cannot test.

    Attributes:
        declared: the project's metadata.
        ranges: each declared Keras-carrying group: its range and the requirements it came from.
        points: the environments to run, lowest and highest of each family.
        untested: lines naming releases a range allows that no environment covers.
        left_out: table environments that could not serve, each with why.
    """

    declared: Declared
    ranges: Dict[str, Tuple[SpecifierSet, List[str]]]
    points: List[Point]
    untested: List[str]
    left_out: List[str]


def _usable(
    table: Sequence[Env], declared: Declared, ranges: Dict[str, Tuple[SpecifierSet, List[str]]], axes: Set[str]
) -> Tuple[List[Template], List[str]]:
    """The templates of the `axes` groups the project may run in (its Python, its other ranges), and why the others may not."""
    usable, left_out = [], []
    for t in templates(table):
        if t.group not in axes:
            continue
        if t.group not in ranges or not ranges[t.group][0].contains(t.pinned):
            usable.append(t)  # outside the range: never chosen, nothing to say about it
            continue
        if not declared.python_allows(t.env.python):
            left_out.append(f"{t.env.name} (Python {t.env.python}; the project requires {declared.requires_python})")
            continue
        clash = [
            f"{name} {version} outside {ranges[str(group_of(name))][0]}"
            for name, version, _ in pins(t.env)
            if name != t.package and group_of(name) in ranges and not ranges[str(group_of(name))][0].contains(version)
        ]
        if clash:
            left_out.append(f"{t.env.name} ({'; '.join(clash)})")
            continue
        usable.append(t)
    return usable, left_out


_TF_KERAS3 = (
    " (from TensorFlow 2.16 its tf.keras is Keras 3, or tf_keras where tf-keras is installed: declare keras or "
    "tf-keras to test those)"
)


def _axes(ranges: Dict[str, Tuple[SpecifierSet, List[str]]]) -> Dict[str, Tuple[SpecifierSet, List[str]]]:
    """The ranges whose releases are the ends to test: the Keras packages' own (``keras``, ``tf-keras``) where the
    project declares one, TensorFlow's only where it declares neither (then its ``tf.keras`` is the Keras it uses).
    The others still bound which environments may serve (`_usable`)."""
    own = {group: value for group, value in ranges.items() if group != "tensorflow"}
    return own or dict(ranges)


def plan_declared(declared: Declared, table: Sequence[Env], releases: Callable[[str], List[Version]]) -> DeclaredPlan:
    """The environments that test the ends of each declared range, from `table`'s series.

    Args:
        declared: the project's metadata (`project_meta.read_declared`).
        table: the matrix table (with the overlay applied): the series it pins are the ones tested.
        releases: lists a project's releases (`releases.list_releases`).

    Returns:
        The plan: two points per family reached (one where the range allows a
        single release), what is left untested, which environments could not serve.

    Raises:
        TableError: the project declares no Keras-carrying package, or no
            release it allows is covered by the table.
    """
    ranges = declared.ranges()
    if not ranges:
        raise TableError(
            f"{declared.source} declares no Keras package (keras, tf-keras, tensorflow, tensorflow-cpu): --declared has "
            "no range to test. Declare the Keras your project supports there."
        )
    usable, left_out = _usable(table, declared, ranges, set(_axes(ranges)))
    beside = declared.installed_beside()
    points: List[Point] = []
    untested: List[str] = []
    for group, (spec, texts) in sorted(_axes(ranges).items()):
        cover = coverage(group, spec, usable, releases)
        if not cover.allowed:
            untested.append(f"{', '.join(texts)}: the index holds no release in {spec or 'any range'}")
        for first, last, count in spans(cover.uncovered(), cover.allowed):
            shown = f"{first}" if count == 1 else f"{first} ... {last} ({count} releases)"
            untested.append(
                f"{group} {shown}: allowed by {', '.join(texts)}; no environment of the table the project can use pins that series"
                + (_TF_KERAS3 if group == "tensorflow" and last.release[:2] >= (2, 16) else "")
            )
        for family, covered in sorted(cover.by_family().items()):
            ends = (
                [(covered[0], "lowest"), (covered[-1], "highest")] if len(covered) > 1 else [(covered[0], "lowest and highest")]
            )
            for release, role in ends:
                template = cover.served[release]
                env = derive(template, release, beside)
                points.append(Point(family=family, role=role, group=group, release=release, template=template, env=env))
    if not points:
        raise TableError(
            "No release the project declares is covered by the table: "
            + "; ".join(untested or left_out)
            + ". Add an environment of that series to a table of your own (--table)."
        )
    return DeclaredPlan(declared=declared, ranges=ranges, points=points, untested=untested, left_out=left_out)


def describe(plan: DeclaredPlan) -> List[str]:
    """The plan in words, before anything is built."""
    lines = [f"declared in {plan.declared.source}: " + "; ".join(", ".join(texts) for _, texts in plan.ranges.values())]
    for p in plan.points:
        lines.append(f"  {p.family:<8} {p.role:<7} {p.label():<22} in {p.env.name} (from the table's {p.template.env.name})")
    lines += [f"  not tested: {line}" for line in plan.untested]
    if plan.left_out:
        lines.append(f"  table environments the project cannot use: {', '.join(plan.left_out)}")
    return lines


def verdict(plan: DeclaredPlan, outcomes: Sequence[Outcome], command: Sequence[str]) -> Tuple[bool, List[str]]:
    """Whether every end passed, and the lines that say so (with the bisect command for a failing family)."""
    by_env = {o.env: o for o in outcomes}
    lines: List[str] = []
    holds = True
    for family in sorted({p.family for p in plan.points}):
        points = [p for p in plan.points if p.family == family]
        failed = [p for p in points if not by_env[p.env.name].ok]
        texts = ", ".join(plan.ranges[points[0].group][1])
        if not failed:
            lines.append(f"{family}: holds: {' and '.join(f'{p.label()} ({p.role}) ok' for p in points)}")
            continue
        holds = False
        said = ", ".join(f"{p.label()} ({p.role}): {by_env[p.env.name].status}" for p in failed)
        lines.append(f"{family}: the declared range {texts} does NOT hold: {said}")
        passing = [p for p in points if by_env[p.env.name].ok]
        if passing:
            good, bad = passing[0], failed[0]
            lines.append(
                f"  where it broke: compat-clone matrix --bisect {family} --good {good.release} --bad {bad.release} -- "
                + " ".join(command)
            )
        for p in failed:
            lines += [f"  {line}" for line in by_env[p.env.name].failures[:5]]
    if plan.untested:
        lines.append(f"not tested ({len(plan.untested)}): see above; add environments of those series to a table of your own")
    return holds, lines
