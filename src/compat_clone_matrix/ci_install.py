"""Where CI installs compat_clone from: ``--install-from``, or the project's own choice.

`install_requirement` turns ``--install-from`` (a version, a path in the
project, a VCS URL, a requirement) into one pip argument;
`default_install_source` finds it without the option: compat_clone's own
checkout, the project's pin of compat-clone, a copy vendored in the project,
or how the running compat_clone was installed.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Callable, List, Optional, Tuple

from compat_clone_matrix.install import InstallSource
from compat_clone_matrix.table import toml_loads

__all__ = ["InstallSourceError", "install_requirement", "default_install_source", "names_compat_clone"]

_DIST_RE = re.compile(r"^\s*compat[-_.]clone(?![A-Za-z0-9_.-])", re.I)
_VERSION_RE = re.compile(r"^v?\d+(\.\d+)*([-_.]?(a|b|rc|post|dev)\.?\d*)*$", re.I)
_VCS_PREFIXES = ("git+", "hg+", "svn+", "bzr+")


class InstallSourceError(ValueError):
    """``--install-from`` names nothing CI can install compat_clone from."""


def _relative_inside(path: Path, project: Path) -> Optional[str]:
    try:
        rel = path.resolve().relative_to(project.resolve()).as_posix()
    except ValueError:
        return None
    return "." if rel == "." else f"./{rel}"


def names_compat_clone(folder: Path) -> bool:
    """A folder pip can install as compat-clone (its pyproject.toml names it)."""
    pyproject = folder / "pyproject.toml"
    if not pyproject.is_file():
        return False
    try:
        name = toml_loads(pyproject.read_text(encoding="utf-8")).get("project", {}).get("name", "")
    except ValueError:
        return False
    return bool(_DIST_RE.match(str(name)))


def install_requirement(source: str, project: Path) -> str:
    """What ``pip install`` gets for `source` in CI.

    Args:
        source: a version (``0.2.0``), a path in the project (a compat_clone
            checkout or vendored copy with its ``pyproject.toml``, or a wheel /
            sdist), a VCS URL (``git+https://...@TAG``), or a requirement
            naming compat-clone (``compat-clone>=0.2``).
        project: the project root (paths are checked there).

    Returns:
        One pip argument: ``compat-clone==0.2.0``, ``./vendor/compat-clone``,
        ``compat-clone @ git+https://...``.

    Raises:
        InstallSourceError: a path that is absolute, outside the project,
            missing or not installable; or none of the above.

    Example:

    >>> install_requirement("0.2.0", Path("."))
    'compat-clone==0.2.0'
    """
    text = source.strip()
    if text.startswith(_VCS_PREFIXES) or re.match(r"^[a-z]+://", text):
        return f"compat-clone @ {text}"
    if _DIST_RE.match(text):
        return text
    if _VERSION_RE.match(text):
        return f"compat-clone=={text.lstrip('vV')}"
    if os.path.isabs(text):
        raise InstallSourceError(
            f"Expected --install-from to be a path inside the project (CI checks it out elsewhere). "
            f"Received: {source!r}. Give it relative to the project root."
        )
    path = project / text
    rel = _relative_inside(path, project)
    if rel is None:
        raise InstallSourceError(f"Expected --install-from to lie inside the project {project}. Received: {source!r}.")
    if path.is_dir() and (names_compat_clone(path) or (path / "setup.py").is_file()):
        return rel
    if path.is_file() and path.name.endswith((".whl", ".tar.gz", ".zip")):
        return rel
    raise InstallSourceError(
        f"Expected --install-from to be a version (0.2.0), a VCS URL (git+https://...), or a path in the project "
        f"to a compat_clone checkout (with its pyproject.toml) or a wheel. Received: {source!r}"
        + (" (no such path)." if not path.exists() else " (not installable: no pyproject.toml naming compat-clone).")
    )


def _requirement_files(project: Path) -> List[Path]:
    found = sorted(project.glob("requirements*.txt")) + sorted(project.glob("requirements/*.txt"))
    return found + sorted(project.glob("*requirements*.in"))


def _project_pin(project: Path) -> Optional[Tuple[str, str]]:
    """The project's own requirement of compat-clone: (requirement, where), from its requirement
    files (a line naming it, or a path to a checkout of it) or its ``pyproject.toml``."""
    for path in _requirement_files(project):
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            line = line.split(" #", 1)[0].strip()
            if not line or line.startswith("#"):
                continue
            item = re.sub(r"^(-e|--editable)\s+", "", line)
            if _DIST_RE.match(item) or re.search(r"#egg=compat[-_]clone\b", item, re.I):
                return item, path.name
            candidate = (path.parent / item) if not os.path.isabs(item) else Path(item)
            if not item.startswith("-") and candidate.is_dir() and names_compat_clone(candidate):
                rel = _relative_inside(candidate, project)
                if rel is not None:
                    return rel, path.name
    pyproject = project / "pyproject.toml"
    if pyproject.is_file():
        try:
            data = toml_loads(pyproject.read_text(encoding="utf-8"))
        except ValueError:
            return None
        project_table = data.get("project", {})
        groups = [project_table.get("dependencies", [])] + list(project_table.get("optional-dependencies", {}).values())
        groups += list(data.get("dependency-groups", {}).values())
        for group in groups:
            for item in group if isinstance(group, list) else []:
                if isinstance(item, str) and _DIST_RE.match(item):
                    return item.split(";", 1)[0].strip(), "pyproject.toml"
    return None


def _running_install(project: Path, source: InstallSource) -> Optional[Tuple[str, str]]:
    """How the running compat_clone was installed, when CI can do the same: its checkout inside
    the project, or the VCS URL / project file it came from (PEP 610 ``direct_url.json``)."""
    if source.kind == "editable":
        rel = _relative_inside(source.path, project)
        if rel is not None:
            return rel, "the compat_clone checkout in the project"
    try:
        from compat_clone_matrix._compat import metadata
    except ImportError:  # pragma: no cover - Python 3.7 without the backport
        return None
    try:
        raw = metadata.distribution(source.dist).read_text("direct_url.json")
    except metadata.PackageNotFoundError:
        return None
    try:
        direct = json.loads(raw or "{}")
    except ValueError:
        return None
    url = str(direct.get("url", ""))
    vcs = direct.get("vcs_info")
    if isinstance(vcs, dict) and url:
        rev = vcs.get("commit_id") or vcs.get("requested_revision")
        return f"compat-clone @ {vcs.get('vcs', 'git')}+{url}" + (f"@{rev}" if rev else ""), "the installed compat-clone"
    if url.startswith("file://"):
        rel = _relative_inside(Path(url[len("file://") :]), project)
        if rel is not None:
            return rel, "the installed compat-clone"
    return None


def default_install_source(project: Path, install: Callable[[], InstallSource]) -> Tuple[str, str]:
    """Where CI installs compat_clone from when ``--install-from`` is not given: (requirement, why).

    In order: compat_clone's own checkout (``.``); the project's own pin
    (a requirements file or ``pyproject.toml`` naming compat-clone, or a path
    to a vendored checkout); the running compat_clone's checkout inside the
    project, or the VCS URL / project file it was installed from; a
    compat_clone wheel kept in the project (``vendor/compat_clone-*.whl``).
    Never a bare ``compat-clone==VERSION``: no package index serves it yet.

    Args:
        project: the project's root.
        install: says how the running compat_clone is installed; called only
            when neither the checkout nor a pin answers.

    Returns:
        (the requirement for ``pip install``, why it was chosen).

    Raises:
        InstallSourceError: none of these: the message says how to give one.
    """
    if names_compat_clone(project):
        return ".", "compat_clone's own checkout"
    pin = _project_pin(project)
    if pin is not None:
        return pin[0], f"the project's pin in {pin[1]}"
    source = install()
    version = source.version
    running = _running_install(project, source)
    if running is not None:
        return running
    wheels = _vendored_wheels(project)
    if wheels:
        return wheels[-1], "the compat_clone wheel in the project"
    # No index serves compat-clone yet: `compat-clone==VERSION` would not resolve in CI.
    raise InstallSourceError(
        f"Found nothing CI can install compat-clone {version} from: no package index serves it yet, the project pins "
        "none (requirements*.txt, pyproject.toml), holds no compat_clone wheel or checkout, and the running one was "
        "not installed from inside the project. Put a wheel in the project (`uv build` or `python -m build` in a "
        f"compat_clone checkout writes dist/compat_clone-{version}-py3-none-any.whl; commit it as, say, vendor/"
        f"compat_clone-{version}-py3-none-any.whl) and pass `--install-from vendor/compat_clone-{version}-py3-none-any.whl`, "
        "or a VCS URL (`--install-from git+https://...@TAG`), or a version once an index serves it (`--install-from "
        f"{version}`)."
    )


def _vendored_wheels(project: Path) -> List[str]:
    """compat_clone wheels committed in the project (its root or one folder down; not dist/, not hidden folders),
    oldest name first."""
    found = list(project.glob("compat_clone-*.whl")) + list(project.glob("*/compat_clone-*.whl"))
    kept = [p for p in found if p.parent.name != "dist" and not p.parent.name.startswith(".")]
    return sorted(r for r in (_relative_inside(p, project) for p in kept) if r is not None)
