"""`compat-clone matrix`: run one command in every environment of a version matrix.

The matrix is its own package, `compat_clone_matrix` (shipped in the same
distribution; docs/matrix.md is its manual). This module is its door on the
compat_clone side, and the one place that says which compat_clone the
environments get: `running_compat_clone`, the compat_clone running this
module, handed to the matrix as an `InstallSource`. It keeps the names a
noxfile or a script imports from ``compat_clone.tools.matrix``.

Example:

    compat-clone matrix --list
    compat-clone matrix -- python -m pytest -q tests
    python -m compat_clone.tools.matrix --env 'keras-3.15-*' -- pytest
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import List, Optional, Sequence

import compat_clone_matrix
from compat_clone_matrix import (
    Env,
    InstallSource,
    TableError,
    add_arguments,
    default_jobs,
    format_summary,
    load_table,
    parse_pytest_summary,
    parse_table,
    select_envs,
)

__all__ = [
    "Env",
    "TableError",
    "load_table",
    "parse_table",
    "select_envs",
    "env_stamp",
    "parse_pytest_summary",
    "format_summary",
    "default_jobs",
    "add_arguments",
    "run",
    "main",
    "nox_sessions",
    "running_compat_clone",
]

_DIST = "compat-clone"
_PACKAGE = "compat_clone"


def running_compat_clone() -> InstallSource:
    """How to install the running compat_clone into a matrix environment.

    ``wheel`` when ``$COMPAT_CLONE_WHEEL`` names a built wheel (``make test``
    builds one and tests what users install); ``editable`` when compat_clone
    runs from a source checkout; else ``copy`` (a pip install: the package
    folder is copied in, with its metadata).

    Returns:
        The `InstallSource` the matrix installs.

    Raises:
        ValueError: ``$COMPAT_CLONE_WHEEL`` is set to something other than a wheel file.

    Example:

    >>> running_compat_clone().kind  # doctest: +SKIP
    'editable'
    """
    from compat_clone import __version__

    def source(kind: str, path: Path) -> InstallSource:
        return InstallSource(kind=kind, path=path, dist=_DIST, package=_PACKAGE, version=__version__)

    wheel = os.environ.get("COMPAT_CLONE_WHEEL")
    if wheel:
        path = Path(wheel).expanduser().resolve()
        if not path.is_file() or path.suffix != ".whl":
            raise ValueError(
                f"COMPAT_CLONE_WHEEL={wheel!r} is not a wheel file. Expected the path of a built "
                "compat_clone wheel (`uv build` writes one into dist/), or unset the variable."
            )
        return source("wheel", path)
    pkg = Path(__file__).resolve().parents[1]  # compat_clone/tools/matrix.py -> compat_clone
    # src/ layout (a checkout: <repo>/src/compat_clone); a flat tree as a fallback.
    for repo in (pkg.parent.parent, pkg.parent) if pkg.parent.name == "src" else (pkg.parent,):
        pyproject = repo / "pyproject.toml"
        if not pyproject.is_file():
            continue
        try:
            name = compat_clone_matrix.toml_loads(pyproject.read_text(encoding="utf-8")).get("project", {}).get("name")
        except ValueError:
            name = None
        if name == _DIST:
            return source("editable", repo)
    return source("copy", pkg)


def env_stamp(env: Env, install: Optional[InstallSource] = None) -> str:
    """The hash of everything that decides `env`'s contents (`compat_clone_matrix.env_stamp`).

    Args:
        env: the table's environment.
        install: what it gets installed; None for `running_compat_clone`.

    Returns:
        20 hex digits; an environment whose stamp file holds them is reused as is.
    """
    return compat_clone_matrix.env_stamp(env, install if install is not None else running_compat_clone())


def run(args: argparse.Namespace) -> int:
    """Runs `compat-clone matrix` with parsed arguments, installing the running compat_clone.

    Args:
        args: from a parser that `add_arguments` set up.

    Returns:
        The exit status (see `compat_clone_matrix.run`).
    """
    return compat_clone_matrix.run(args, install=running_compat_clone)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """``python -m compat_clone.tools.matrix ...``: the subcommand on its own.

    Args:
        argv: the arguments after ``compat-clone matrix``; None for ``sys.argv[1:]``.

    Returns:
        The exit status (see `run`).

    Example:

    >>> main(["--list", "--env", "keras-3.15-jax"])  # doctest: +SKIP
    0
    """
    return compat_clone_matrix.main(argv, install=running_compat_clone)


def nox_sessions(
    table: Optional[os.PathLike[str] | str] = None,
    *,
    envs: Optional[Sequence[str]] = None,
    tags: Optional[Sequence[str]] = None,
    command: Sequence[str] = ("python", "-m", "pytest", "-q"),
    results: os.PathLike[str] | str = Path(".nox") / "_results",
) -> List[str]:
    """Registers one nox session per matrix environment, each installing the running compat_clone.

    Args:
        table: a matrix table (TOML); None for the built-in one.
        envs: names or globs, as ``--env`` (default: the enabled environments).
        tags: tags, as ``--tag`` (``["wide"]``).
        command: what each session runs; arguments after ``nox ... --`` are
            appended to it.
        results: ``COMPAT_CLONE_RESULTS`` of every session.

    Returns:
        The session names (the environment names), in table order.

    Raises:
        ImportError: nox is not installed (``pip install nox``).
        TableError: a bad table, or a name / tag that matches nothing.

    Example:

    >>> nox_sessions(envs=["keras-3.15-*"])  # doctest: +SKIP
    ['keras-3.15-tf', 'keras-3.15-jax', 'keras-3.15-torch']
    """
    return compat_clone_matrix.nox_sessions(
        table, install=running_compat_clone, envs=envs, tags=tags, command=command, results=results
    )


if __name__ == "__main__":
    raise SystemExit(main())
