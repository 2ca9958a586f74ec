"""A project's test needs laid over a matrix table: ``compat-clone matrix --overlay FILE.toml``.

The built-in table installs the Keras pins (and pytest) only: it is what a
user's project gets. What one project's own tests need besides (pytest-xdist,
hypothesis, a library its tests import) goes in an overlay of the same
schema, limited to the keys that add requirements::

    [defaults]                       # added to every environment of the table
    packages = ["pytest-xdist>=3", "hypothesis>=6"]

    [[env]]                          # added to one environment, by name
    name = "keras-3.15-tf"
    packages = ["tokenizers"]
    no_deps = ["keras-hub==0.32.0"]
    env = { MY_FLAG = "1" }

The overlaid environments keep their names and their table's identity (the
reports of the table stay one report); their stamp follows the added
requirements, so an environment built with an overlay is rebuilt without it
and the other way round. compat_clone's own suite uses tests/matrix-overlay.toml
(`make test`).
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any, Dict, List, Mapping, Sequence

from compat_clone_matrix.table import Env, TableError, toml_loads

__all__ = ["apply_overlay"]

_KEYS = {"packages", "no_deps", "pip_args", "env"}


def _additions(raw: Any, where: str, extra: Sequence[str] = ()) -> Dict[str, Any]:
    if not isinstance(raw, dict):
        raise TableError(f"Expected {where} to be a table. Received: {raw!r}.")
    unknown = sorted(set(raw) - _KEYS - set(extra))
    if unknown:
        raise TableError(
            f"Expected only {', '.join(sorted(_KEYS))} in {where} (an overlay adds requirements). Received: {', '.join(unknown)}."
        )
    for key in ("packages", "no_deps", "pip_args"):
        value = raw.get(key, [])
        if not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
            raise TableError(f"Expected `{key}` in {where} to be a list of strings. Received: {key}={value!r}.")
    env = raw.get("env", {})
    if not (isinstance(env, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in env.items())):
        raise TableError(f"Expected `env` in {where} to be a table of strings. Received: env={env!r}.")
    return raw


def _added(env: Env, add: Mapping[str, Any]) -> Env:
    variables = dict(env.env)
    variables.update(add.get("env", {}))
    return dataclasses.replace(
        env,
        packages=env.packages + tuple(p for p in add.get("packages", ()) if p not in env.packages),
        no_deps=env.no_deps + tuple(add.get("no_deps", ())),
        pip_args=env.pip_args + tuple(add.get("pip_args", ())),
        env=tuple(sorted(variables.items())),
    )


def apply_overlay(envs: Sequence[Env], path: os.PathLike[str] | str) -> List[Env]:
    """`envs` with the overlay at `path` added.

    Args:
        envs: a loaded table (`load_table`).
        path: the overlay (TOML; see the module's docstring).

    Returns:
        The environments in the same order, each with the overlay's defaults
        and its own entry added.

    Raises:
        TableError: the file cannot be read, holds another key, or names an
            environment the table does not have.
    """
    try:
        data = toml_loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise TableError(f"Cannot read the overlay {str(path)!r}: {e}. Expected a TOML file (docs/matrix.md).") from None
    unknown = sorted(set(data) - {"defaults", "env"})
    if unknown:
        raise TableError(f"Expected [defaults] and [[env]] in the overlay {str(path)!r}. Received: {', '.join(unknown)}.")
    defaults = _additions(data.get("defaults", {}), f"[defaults] of {path}")
    names = {e.name for e in envs}
    per_env: Dict[str, Dict[str, Any]] = {}
    for i, raw in enumerate(data.get("env", [])):
        entry = _additions(raw, f"[[env]] #{i + 1} of {path}", extra=("name",))
        name = entry.get("name")
        if name not in names:
            raise TableError(
                f"The overlay {str(path)!r} adds to environment {name!r}, which the table does not have. "
                "Expected one of the table's names (`compat-clone matrix --list`)."
            )
        if name in per_env:
            raise TableError(
                f"The overlay {str(path)!r} adds to environment {name!r} twice. "
                "Expected one [[env]] entry per environment: merge the two."
            )
        per_env[str(name)] = entry
    return [_added(_added(env, defaults), per_env.get(env.name, {})) for env in envs]
