"""What goes into an environment: the running compat_clone and the table's requirements.

The running compat_clone is installed as a wheel (``$COMPAT_CLONE_WHEEL``), an
editable checkout, or a copy of its package folder (an `InstallSource` its caller gives); what of
that source decides an environment's contents is part of its stamp
(`source_identity`, `editable_metadata`). `post_install` re-applies, on
every run, the steps that a build does not cover: the copy, a changed wheel,
the environment's fix-up.
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import shutil
import subprocess
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, List, Sequence

from compat_clone_matrix.procs import Procs
from compat_clone_matrix.table import Env, toml_loads

__all__ = [
    "InstallSource",
    "machine_pip_args",
    "editable_metadata",
    "expand_requirements",
    "post_install",
    "source_identity",
    "wheel_requirements",
]

# In an environment folder: the sha256 of the compat_clone wheel installed there.
_WHEEL_MARKER = ".compat-clone-wheel"
# This package, copied into an environment with a copied install source.
_OWN_PACKAGE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class InstallSource:
    """Which distribution an environment gets as "the package under test", and how.

    The matrix installs it into every environment whose table entry says
    ``install_compat_clone = true``; the caller decides what it is (for
    `compat-clone matrix`, the running compat_clone: `compat_clone.tools.matrix`).

    Args:
        kind: ``"wheel"`` (a built wheel file), ``"editable"`` (a source
            checkout, installed with ``-e``) or ``"copy"`` (an installed
            package folder, copied into the environment with its metadata).
        path: the wheel file, the checkout's root, or the package folder.
        dist: the distribution's name (``"compat-clone"``).
        package: its import package (``"compat_clone"``).
        version: its version.

    Example:

        InstallSource("editable", Path("/src/compat-clone"), "compat-clone", "compat_clone", "0.1.0")
    """

    kind: str
    path: Path
    dist: str
    package: str
    version: str


def machine_pip_args() -> List[str]:
    """This machine's own installer arguments: ``$COMPAT_CLONE_PIP_ARGS``, split as a shell would.

    A table holds no path of one machine; a local wheel folder, a mirror or a
    cache go here instead (``COMPAT_CLONE_PIP_ARGS="--find-links /opt/wheels"``).
    They are added to every ``uv pip install`` of every environment, after the
    table's own ``pip_args``, and are part of each environment's stamp.
    """
    return shlex.split(os.environ.get("COMPAT_CLONE_PIP_ARGS", ""))


def wheel_requirements(wheel: Path) -> List[str]:
    """The ``Requires-Dist`` lines of a wheel's METADATA: what installing it pulls in."""
    with zipfile.ZipFile(wheel) as archive:
        names = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        if not names:
            raise ValueError(f"{str(wheel)!r} holds no .dist-info/METADATA: not a wheel built from compat_clone.")
        text = archive.read(names[0]).decode("utf-8", errors="replace")
    requires = [line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("Requires-Dist:")]
    # An extra's requirements (``; extra == "migrate"``) are not what installing the wheel pulls in.
    return sorted(r for r in requires if not re.search(r"""\bextra\s*==""", r))


def editable_metadata(src: InstallSource) -> Any:
    """What an editable install writes besides the link to the code (dependencies, scripts,
    entry points such as the pytest plugin): a change there needs a reinstall."""
    if src.kind != "editable":
        return None
    try:
        project = toml_loads((src.path / "pyproject.toml").read_text(encoding="utf-8")).get("project", {})
    except (OSError, ValueError):
        return None
    return {key: project.get(key) for key in ("dependencies", "scripts", "entry-points")}


def source_identity(src: InstallSource) -> Any:
    """What of the install source decides an environment's contents (its stamp).

    A wheel: its declared requirements (the wheel itself is reinstalled when its
    bytes change, see `post_install`). A copy: the version, not the path, so that
    every project on a machine shares one cached environment.
    """
    if src.kind == "wheel":
        return ["wheel", wheel_requirements(src.path)]
    if src.kind == "copy":
        return ["copy", src.version]
    return [src.kind, str(src.path)]


def expand_requirements(items: Sequence[str]) -> List[str]:
    """``"-e ."`` and ``"-r requirements-test.txt"`` (one table string each) become ``-e <absolute path>`` /
    ``-r <absolute path>`` for uv; paths are relative to the folder the matrix runs in (the project root)."""
    out: List[str] = []
    for item in items:
        flag, _, rest = item.partition(" ")
        if flag in ("-e", "--editable") and rest.strip():
            out += ["-e", str(Path(rest.strip()).expanduser().resolve())]
        elif flag in ("-r", "--requirement") and rest.strip():
            out += ["-r", str(Path(rest.strip()).expanduser().resolve())]
        else:
            out.append(item)
    return out


def _site_packages(python: Path) -> str:
    out = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    )
    return out.stdout.strip()


def post_install(env: Env, python: Path, source: InstallSource, uv: List[str], procs: Procs, log: IO[str]) -> None:
    """Steps re-applied on every run (cheap, idempotent): the copied compat_clone
    (when not editable), the wheel when its bytes changed, and the environment's fix-up `.pth`.

    Nothing is rewritten when it is already there: another process may be
    running in the environment (a conversion worker, a sibling's test)."""
    site = None
    if env.install_compat_clone and source.kind == "copy":
        site = _site_packages(python)
        _copy_package(source, Path(site), log)
    if env.install_compat_clone and source.kind == "wheel":
        marker = python.parent.parent / _WHEEL_MARKER
        digest = _file_digest(source.path)
        if not marker.is_file() or marker.read_text(encoding="utf-8").strip() != digest:
            cmd = uv + [
                "pip",
                "install",
                "--python",
                str(python),
                "--no-deps",
                "--reinstall-package",
                source.dist,
                str(source.path),
            ]
            if procs.call(cmd, log=log) != 0:
                raise RuntimeError(f"installing {source.path.name} into {env.name!r} failed")
            marker.write_text(digest + "\n", encoding="utf-8")
            log.write(f"compat-clone matrix: installed {source.path} (sha256 {digest[:12]})\n")
    if env.fixup:
        if not env.install_compat_clone:
            raise RuntimeError(
                f"environment {env.name!r} needs fix-up {env.fixup!r}, which runs from "
                "compat_clone inside the environment: set install_compat_clone = true."
            )
        from compat_clone_matrix.envfix import install_into

        path = install_into(site or _site_packages(python), env.fixup)
        log.write(f"compat-clone matrix: fix-up {env.fixup!r} installed: {path}\n")


def _file_digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _tree_digest(pkg: Path) -> str:
    """A digest of a package folder's files (``__pycache__`` left out)."""
    h = hashlib.sha256()
    for path in sorted(p for p in pkg.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        h.update(str(path.relative_to(pkg)).encode("utf-8") + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def _copy_package(source: InstallSource, site: Path, log: IO[str]) -> None:
    """Copies the installed package into `site`, unless the same files are there already.

    The matrix's own package goes with it: its pytest plugin (the entry point
    the copied metadata declares) and its fix-ups run inside the environment.
    """
    folders = [(source.path, site / source.package), (_OWN_PACKAGE, site / _OWN_PACKAGE.name)]
    marker = site / f"{source.package}.source-digest"
    digest = ":".join(_tree_digest(folder) for folder, _ in folders)
    if (
        all(target.is_dir() for _, target in folders)
        and marker.is_file()
        and marker.read_text(encoding="utf-8").strip() == digest
    ):
        return
    for folder, target in folders:
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(folder, target, ignore=shutil.ignore_patterns("__pycache__"))
    _write_dist_info(site, source)
    marker.write_text(digest + "\n", encoding="utf-8")
    log.write(f"compat-clone matrix: copied {source.path} -> {site / source.package}\n")


def _write_dist_info(site: Path, source: InstallSource) -> None:
    """The copied package's metadata: its version and entry points (the pytest plugin)."""
    from compat_clone_matrix._compat import metadata

    stem = source.dist.replace("-", "_")
    for old in site.glob(f"{stem}-*.dist-info"):
        shutil.rmtree(old, ignore_errors=True)
    try:
        dist = metadata.distribution(source.dist)
    except metadata.PackageNotFoundError:  # a vendored copy: nothing to declare
        return
    info = site / f"{stem}-{dist.version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {source.dist}\nVersion: {dist.version}\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(dist.read_text("entry_points.txt") or "", encoding="utf-8")
    (info / "INSTALLER").write_text("compat-clone matrix\n", encoding="utf-8")
