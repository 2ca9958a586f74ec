"""The matrix as nox sessions: one session per environment, same pins, uv as backend.

In a ``noxfile.py`` (through `compat_clone.tools.matrix`, which passes the
running compat_clone as the sessions' `InstallSource`)::

    from compat_clone.tools.matrix import nox_sessions

    nox_sessions()                       # the built-in table's enabled environments
    nox_sessions("matrix.toml", tags=["wide"], command=["pytest", "-q"])

then ``nox -l`` lists one session per environment and ``nox -s keras-3.15-jax
-- -x`` runs one (arguments after ``--`` are appended to the command).
Each session installs the environment's ``packages`` (with its ``pip_args`` and
``$COMPAT_CLONE_PIP_ARGS``),
then its ``no_deps`` with ``--no-deps``, compat_clone itself (editable from a
source checkout, the wheel ``$COMPAT_CLONE_WHEEL`` names, else the running
version from the index) and its fix-up; it
runs the command with the table's variables, ``COMPAT_CLONE_ENV``,
``COMPAT_CLONE_EXPECT_*`` and ``COMPAT_CLONE_RESULTS`` (``.nox/_results``),
without the caller's ``KERAS_BACKEND`` / ``TF_USE_LEGACY_KERAS`` /
``PYTHONPATH``, like ``compat-clone matrix``.
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import Any, Callable, List, Optional, Sequence

from compat_clone_matrix.install import InstallSource, expand_requirements, machine_pip_args
from compat_clone_matrix.table import Env, load_table, select_envs

__all__ = ["nox_sessions"]

# Variables the caller's shell must not leak into a session (`VIRTUAL_ENV` is nox's own).
_SCRUBBED = ("PYTHONPATH", "PYTHONHOME", "KERAS_BACKEND", "TF_USE_LEGACY_KERAS")


def _self_requirement(source: InstallSource) -> List[str]:
    if source.kind == "editable":
        return ["-e", str(source.path)]
    if source.kind == "wheel":
        return [str(source.path)]
    return [f"{source.dist}=={source.version}"]


def _session_for(env: Env, command: Sequence[str], results: Path, install: Callable[[], InstallSource]) -> Callable[[Any], None]:
    def run_environment(session: Any) -> None:
        pip_args = [*env.pip_args, *machine_pip_args()]
        session.install(*pip_args, *expand_requirements(env.packages))
        if env.no_deps:
            session.install("--no-deps", *pip_args, *expand_requirements(env.no_deps))
        if env.install_compat_clone:
            session.install(*pip_args, *_self_requirement(install()))
        if env.fixup:
            session.run(
                "python",
                "-c",
                "import sysconfig; from compat_clone_matrix import envfix; "
                f"envfix.install_into(sysconfig.get_paths()['purelib'], {env.fixup!r})",
                silent=True,
            )
        environ = {**dict(env.env), "COMPAT_CLONE_ENV": env.name, **env.expect_vars(), "COMPAT_CLONE_RESULTS": str(results)}
        saved = {name: os.environ.pop(name) for name in _SCRUBBED if name in os.environ}
        try:
            session.run(*command, *session.posargs, env=environ)
        finally:
            os.environ.update(saved)

    run_environment.__doc__ = f"compat-clone matrix environment {env.name}: {env.note or ' '.join(env.packages[:3])}"
    return run_environment


def nox_sessions(
    table: Optional[os.PathLike[str] | str] = None,
    *,
    install: Callable[[], InstallSource],
    envs: Optional[Sequence[str]] = None,
    tags: Optional[Sequence[str]] = None,
    command: Sequence[str] = ("python", "-m", "pytest", "-q"),
    results: os.PathLike[str] | str = Path(".nox") / "_results",
) -> List[str]:
    """Registers one nox session per matrix environment; call it in a ``noxfile.py``.

    Args:
        table: a matrix table (TOML); None for the built-in one.
        install: says which package each session installs (`InstallSource`),
            when a session runs.
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

    >>> nox_sessions(envs=["keras-3.15-*"], install=lambda: source)  # doctest: +SKIP
    ['keras-3.15-tf', 'keras-3.15-jax', 'keras-3.15-torch']
    """
    try:
        nox = importlib.import_module("nox")
    except ImportError:
        raise ImportError("compat_clone's nox_sessions needs nox: `pip install nox` (uv is its venv backend).") from None
    if not command:
        raise ValueError(f"Expected a command for the sessions to run, e.g. ['pytest', '-q']. Received: command={command!r}.")
    results_dir = Path(results).resolve()
    names = []
    for env in select_envs(load_table(table), envs, tags):
        nox.session(name=env.name, python=env.python, venv_backend="uv", reuse_venv=True)(
            _session_for(env, command, results_dir, install)
        )
        names.append(env.name)
    return names
