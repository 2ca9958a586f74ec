"""Where each half of a conversion runs: a matrix environment, or a virtualenv of your own.

`--from` / `--to` name either an environment of the matrix table (built with
uv as `compat-clone matrix` builds it, in the per-user cache or ``--envs-dir``,
or reused when it is there) or a path: a virtualenv folder or a Python
interpreter, used as it is.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any, Dict, Optional, Sequence

from compat_clone.errors import InvalidArgumentError
from compat_clone_matrix.paths import user_cache_dir

__all__ = ["Interpreter", "resolve", "default_matrix_dir", "user_cache_dir"]


@dataclasses.dataclass(frozen=True)
class Interpreter:
    """A Python interpreter one half of the conversion runs in.

    Attributes:
        label: the environment's name, or the path given.
        python: the interpreter to run.
        environ: the process environment for it.
        family: the Keras family the table claims for it (None for a path).
        version: the claimed version (None for a path).
        backend: the claimed Keras 3 backend (None if none).
    """

    label: str
    python: str
    environ: Dict[str, str]
    family: Optional[str] = None
    version: Optional[str] = None
    backend: Optional[str] = None


def default_matrix_dir() -> Path:
    """Where the conversion's table environments live, when ``--envs-dir`` does not say.

    1. ``$COMPAT_CLONE_ENVS_DIR``: the user's choice;
    2. ``$COMPAT_CLONE_MATRIX_DIR``: set by `compat-clone matrix` for the
       commands it runs (``make test`` converts with its ``.matrix/``);
    3. the per-user cache (`user_cache_dir`), shared by every project and run
       of this user: never a ``.matrix/`` in whatever folder the command runs in.
    """
    explicit = os.environ.get("COMPAT_CLONE_ENVS_DIR") or os.environ.get("COMPAT_CLONE_MATRIX_DIR")
    return Path(explicit).expanduser().resolve() if explicit else user_cache_dir() / "envs"


def _looks_like_path(spec: str) -> bool:
    return os.sep in spec or spec.startswith(".") or os.path.exists(spec)


def resolve(spec: str, *, table: Sequence[Any], matrix_dir: Path, build: bool, role: str, say: Any) -> Interpreter:
    """The interpreter for `spec`: a table environment's name, a virtualenv folder or a python.

    Args:
        spec: what ``--from`` / ``--to`` said.
        table: the matrix environments (`load_table()`).
        matrix_dir: where table environments live.
        build: build a table environment that is missing (else refuse).
        role: ``"--from"`` or ``"--to"``, for messages.
        say: ``say(name, text)`` for build progress.

    Returns:
        An `Interpreter`.

    Raises:
        InvalidArgumentError: an unknown name, a path with no interpreter, a
            missing environment with `build` off, or a build that failed.
    """
    by_name = {env.name: env for env in table}
    if spec in by_name:
        return _matrix_env(by_name[spec], matrix_dir, build=build, role=role, say=say)
    if not _looks_like_path(spec):
        known = ", ".join(sorted(by_name))
        raise InvalidArgumentError(
            f"{role} {spec!r} is neither an environment of the matrix table nor a path. Expected one of: "
            f"{known}; or a virtualenv folder / python interpreter. Run `compat-clone matrix --list` to see them."
        )
    path = Path(spec).expanduser().resolve()
    python = path / "bin" / "python" if path.is_dir() else path
    if not python.exists():
        raise InvalidArgumentError(
            f"{role} {spec!r}: no Python interpreter at {str(python)!r}. Expected a virtualenv folder "
            "(with bin/python) or the path of a python executable."
        )
    environ = dict(os.environ)
    if path.is_dir():
        environ["VIRTUAL_ENV"] = str(path)
        environ["PATH"] = os.pathsep.join([str(path / "bin"), environ.get("PATH", "")])
    return Interpreter(label=spec, python=str(python), environ=environ)


def _matrix_env(env: Any, matrix_dir: Path, *, build: bool, role: str, say: Any) -> Interpreter:
    from compat_clone.tools.matrix import running_compat_clone
    from compat_clone_matrix import build_env, env_environ, is_built

    env_dir = matrix_dir / env.name
    python = env_dir / "bin" / "python"
    # An environment that is there is used as it is, without its lock: a
    # matrix run may be running its tests (that holds the lock for minutes),
    # and reading a model there does not disturb them. It is not rebuilt when
    # the table's pins moved on (`compat-clone matrix --rebuild` does that);
    # the worker reports the Keras version it read the model with.
    if not is_built(env_dir):
        if not build:
            raise InvalidArgumentError(
                f"{role} {env.name!r}: the environment is not built in {str(matrix_dir)!r}. Expected "
                f"{str(python)!r}. Drop --no-build to build it there, or point --envs-dir at the folder "
                "that holds it."
            )
        out = build_env(env, env_dir, install=running_compat_clone(), say=say)
        if out.build == "FAILED":
            raise InvalidArgumentError(
                f"{role} {env.name!r}: building the environment failed; see {out.log}. Fix the cause "
                "(network, disk) and run the command again, or name another environment."
            )
    environ = env_environ(env, env_dir)
    # A development checkout on PYTHONPATH serves the workers too (the matrix
    # clears PYTHONPATH for its commands; a caller's is passed on here).
    if os.environ.get("PYTHONPATH"):
        environ["PYTHONPATH"] = os.environ["PYTHONPATH"]
    claim = dict(env.expect)
    return Interpreter(
        label=env.name,
        python=str(python),
        environ=environ,
        family=claim.get("family"),
        version=claim.get("version"),
        backend=claim.get("backend"),
    )
