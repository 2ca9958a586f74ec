"""Environments for releases the table does not list, derived from the table's own.

Each environment of the table that claims a Keras family and version pins the
package that carries that Keras (`Template`: ``keras==3.0.0`` in
``keras-3.0-tf``, ``tf_keras==2.16.0`` in ``tf_keras-2.16``,
``tensorflow-cpu==2.12.1`` in ``tf.keras-2.12``). That environment knows what
the series needs besides (the TensorFlow it runs on, the Python, NumPy's
bounds, a fix-up), so another release of the same series (same major.minor)
gets an environment of its own by moving that one pin (`derive`), named after
the release (``keras-3.0.2-tf``). A release whose series no environment of the
table pins is not guessed at: `Coverage` says it is not covered.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from compat_clone_matrix.project_meta import group_of
from compat_clone_matrix.table import Env

__all__ = ["Template", "Coverage", "templates", "derive", "coverage", "spans", "pins"]


@dataclasses.dataclass(frozen=True)
class Template:
    """One environment of the table as the model for its series.

    Attributes:
        env: the table's environment.
        package: the pinned project as the environment writes it (``tensorflow-cpu``).
        group: its Keras-carrying group (``keras``, ``tf-keras``, ``tensorflow``).
        pinned: the release it pins.
        family: the Keras family it claims.
        requirement: the pin as the environment writes it (``keras==3.0.0``).
    """

    env: Env
    package: str
    group: str
    pinned: Version
    family: str
    requirement: str

    @property
    def series(self) -> Tuple[int, ...]:
        return self.pinned.release[:2]


def pins(env: Env) -> List[Tuple[str, Version, str]]:
    """(project as written, release, requirement text) of each exact Keras-carrying pin of `env`."""
    found = []
    for text in env.packages + env.no_deps:
        try:
            req = Requirement(text)
        except InvalidRequirement:
            continue  # `-r FILE` and the like: not a pin
        specs = list(req.specifier)
        if group_of(req.name) is None or len(specs) != 1 or specs[0].operator != "==" or "*" in specs[0].version:
            continue
        try:
            found.append((req.name, Version(specs[0].version), text))
        except InvalidVersion:
            continue
    return found


def _claims(pinned: Version, claimed: str) -> bool:
    """Whether the claim's version (``3.0``, ``2.3.1``) is a prefix of the pinned release."""
    try:
        parts = tuple(int(p) for p in claimed.split("."))
    except ValueError:
        return False
    release = pinned.release + (0,) * max(0, len(parts) - len(pinned.release))
    return release[: len(parts)] == parts


def templates(table: Sequence[Env]) -> List[Template]:
    """The environments of `table` that pin the package of the Keras they claim, in table order.

    The pin is the one whose release the claim's version names; where two do
    (``tf_keras==2.16.0`` and ``tensorflow-cpu==2.16.2`` for a 2.16 claim),
    the Keras package's own (``keras``, ``tf-keras``) wins over TensorFlow.

    Example:

    >>> from compat_clone_matrix.table import load_table
    >>> [(t.env.name, t.package, str(t.pinned)) for t in templates(load_table())][:1]
    [('keras-2.2.4', 'keras', '2.2.4')]
    """
    found = []
    for env in table:
        expect = dict(env.expect)
        family, claimed = expect.get("family"), expect.get("version")
        if not family or not claimed:
            continue
        named = [pin for pin in pins(env) if _claims(pin[1], claimed)]
        named.sort(key=lambda pin: group_of(pin[0]) == "tensorflow")
        if named:
            name, pinned, text = named[0]
            group = str(group_of(name))
            found.append(Template(env=env, package=name, group=group, pinned=pinned, family=family, requirement=text))
    return found


def derive(template: Template, release: Version, beside: Sequence[str] = ()) -> Env:
    """`template`'s environment with its pin moved to `release`, and `beside` installed with it.

    The claim follows the pin: the exact release for ``keras`` / ``tf-keras``;
    the series for TensorFlow (whose ``tf.keras`` is the Keras package of
    that series, not of that TensorFlow patch). The name is the template's
    with its claimed version replaced by the release (``keras-3.0-tf`` ->
    ``keras-3.0.2-tf``), or the template's followed by ``+<release>``.

    Example:

    >>> from compat_clone_matrix.table import load_table
    >>> t = [t for t in templates(load_table()) if t.env.name == "keras-3.0-tf"][0]
    >>> e = derive(t, Version("3.0.2")); e.name, [p for p in e.packages if p.startswith("keras")]
    ('keras-3.0.2-tf', ['keras==3.0.2'])
    """
    env = template.env
    expect = dict(env.expect)
    claimed = expect["version"]
    moved = f"{template.package}=={release}"

    def move(items: Tuple[str, ...]) -> Tuple[str, ...]:
        return tuple(moved if text == template.requirement else text for text in items)

    expect["version"] = str(release) if template.group != "tensorflow" else ".".join(str(p) for p in release.release[:2])
    name = env.name.replace(claimed, str(release), 1) if claimed in env.name else f"{env.name}+{release}"
    if name == env.name and release != template.pinned:
        name = f"{env.name}+{release}"
    packages = move(env.packages) + tuple(p for p in beside if p not in env.packages)
    return dataclasses.replace(
        env,
        name=name,
        packages=packages,
        no_deps=move(env.no_deps),
        expect=tuple(sorted(expect.items())),
        enabled=True,
        note=f"{template.package} {release}, from the table's {env.name}",
    )


@dataclasses.dataclass
class Coverage:
    """The releases of one Keras-carrying group a range allows, and the templates that serve them.

    Attributes:
        group: ``keras``, ``tf-keras`` or ``tensorflow``.
        allowed: every release the range allows, oldest first.
        served: each covered release and the template that serves it.
    """

    group: str
    allowed: List[Version]
    served: Dict[Version, Template]

    def uncovered(self) -> List[Version]:
        return [v for v in self.allowed if v not in self.served]

    def by_family(self) -> Dict[str, List[Version]]:
        """The covered releases of each family, oldest first."""
        out: Dict[str, List[Version]] = {}
        for version in self.allowed:
            if version in self.served:
                out.setdefault(self.served[version].family, []).append(version)
        return out


def _preferred(candidates: Sequence[Template], release: Version) -> Template:
    """The template for `release`: the one pinning it exactly, else the first enabled one, else the first."""
    exact = [t for t in candidates if t.pinned == release]
    enabled = [t for t in candidates if t.env.enabled]
    return (exact or enabled or list(candidates))[0]


def coverage(
    group: str,
    spec: SpecifierSet,
    usable: Sequence[Template],
    releases: Callable[[str], List[Version]],
    family: Optional[str] = None,
) -> Coverage:
    """Which releases of `group` that `spec` allows the `usable` templates serve (a template serves its series).

    Args:
        group: the Keras-carrying group.
        spec: the range (``SpecifierSet("")`` for every release).
        usable: the templates that may serve (already filtered for the project's Python and other ranges).
        releases: lists a project's releases on the index (`compat_clone_matrix.releases.list_releases`).
        family: only templates of this family, when given.
    """
    mine = [t for t in usable if t.group == group and (family is None or t.family == family)]
    names = sorted({t.package for t in mine}) or [group]
    allowed = sorted({v for name in names for v in releases(name) if spec.contains(v)})
    served: Dict[Version, Template] = {}
    for version in allowed:
        candidates = [t for t in mine if t.series == version.release[:2]]
        if candidates:
            served[version] = _preferred(candidates, version)
    return Coverage(group=group, allowed=allowed, served=served)


def spans(versions: Sequence[Version], every: Sequence[Version]) -> List[Tuple[Version, Version, int]]:
    """`versions` as runs of consecutive releases of `every`: (first, last, count) each."""
    index = {v: i for i, v in enumerate(every)}
    out: List[Tuple[Version, Version, int]] = []
    for v in versions:
        if out and index[v] == index[out[-1][1]] + 1:
            out[-1] = (out[-1][0], v, out[-1][2] + 1)
        else:
            out.append((v, v, 1))
    return out
