"""The matrix table: environments as data, validated.

A TOML document with ``[defaults]`` and one ``[[env]]`` per environment (the
built-in one is ``compat_clone/tools/matrix/matrix.toml``); `load_table`
reads it, `parse_table` validates it into `Env` records, `select_envs` picks
environments by name or glob.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import os
import re
import sys
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Set, Tuple

__all__ = ["Env", "TableError", "load_table", "parse_table", "select_envs"]

_FAMILIES = ("keras3", "tf_keras", "keras2")
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")


class TableError(ValueError):
    """The matrix table (TOML) is malformed, or names an unknown environment."""


@dataclasses.dataclass(frozen=True)
class Env:
    """One environment of the matrix, as the table describes it.

    Attributes:
        name: folder name under ``.matrix/`` and the value of ``COMPAT_CLONE_ENV``.
        python: interpreter request passed to ``uv venv -p``.
        packages: requirements installed together (defaults included).
        no_deps: requirements installed afterwards with ``--no-deps``.
        pip_args: extra arguments for every ``uv pip install``.
        env: environment variables set when the command runs.
        fixup: name of a `compat_clone.tools.envfix` fix-up, or None.
        expect: the claim (``family``, ``version``, ``backend``).
        enabled: False leaves it out unless selected by name.
        install_compat_clone: install the running `compat_clone` into it.
        note: free text.
    """

    name: str
    python: str
    packages: Tuple[str, ...]
    no_deps: Tuple[str, ...] = ()
    pip_args: Tuple[str, ...] = ()
    env: Tuple[Tuple[str, str], ...] = ()
    fixup: Optional[str] = None
    expect: Tuple[Tuple[str, str], ...] = ()
    enabled: bool = True
    install_compat_clone: bool = True
    note: str = ""

    def expect_vars(self) -> Dict[str, str]:
        """``COMPAT_CLONE_EXPECT_*`` variables for the claim."""
        return {f"COMPAT_CLONE_EXPECT_{k.upper()}": v for k, v in self.expect}


# --------------------------------------------------------------------------- table

_DEFAULT_KEYS = {"python", "packages", "pip_args", "env", "install_compat_clone"}
_ENV_KEYS = {
    "name",
    "python",
    "packages",
    "no_deps",
    "pip_args",
    "env",
    "fixup",
    "expect",
    "enabled",
    "install_compat_clone",
    "note",
}
_EXPECT_KEYS = {"family", "version", "backend"}


def _toml_loads(text: str) -> Dict[str, Any]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python < 3.11
        import tomli as tomllib  # dependency with marker python_version < "3.11"
    return tomllib.loads(text)


def _str_list(value: Any, where: str) -> Tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise TableError(f"Expected {where} to be a list of strings. Received: {value!r}.")
    return tuple(value)


def _str_map(value: Any, where: str) -> Dict[str, str]:
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise TableError(
            f"Expected {where} to be a table of strings, e.g. "
            f'{{ KERAS_BACKEND = "jax" }}. Received: {value!r}.'
        )
    return dict(value)


def _check_keys(table: Mapping[str, Any], allowed: Set[str], where: str) -> None:
    unknown = sorted(set(table) - allowed)
    if unknown:
        raise TableError(
            f"Unknown key(s) {', '.join(map(repr, unknown))} in {where}. "
            f"Allowed keys: {', '.join(sorted(allowed))}."
        )


def parse_table(data: Mapping[str, Any], source: str = "<table>") -> List[Env]:
    """Validates a parsed TOML table and returns its environments.

    Args:
        data: the parsed TOML document (``[defaults]`` and ``[[env]]``).
        source: where it came from, for error messages.

    Returns:
        The environments in table order, defaults merged in.

    Raises:
        TableError: unknown keys, wrong types, a missing or duplicate name,
            or a claim (``expect``) naming an unknown family.

    Example:

    >>> envs = parse_table({"env": [{"name": "k3", "packages": ["keras==3.15.1"]}]})
    >>> envs[0].packages
    ('keras==3.15.1',)
    """
    _check_keys(data, {"defaults", "env"}, f"the top level of {source}")
    defaults = data.get("defaults", {})
    if not isinstance(defaults, dict):
        raise TableError(f"Expected [defaults] in {source} to be a table. Received: {defaults!r}.")
    _check_keys(defaults, _DEFAULT_KEYS, f"[defaults] of {source}")
    d_python = defaults.get("python", f"{sys.version_info[0]}.{sys.version_info[1]}")
    d_packages = _str_list(defaults.get("packages", []), f"defaults.packages in {source}")
    d_pip_args = _str_list(defaults.get("pip_args", []), f"defaults.pip_args in {source}")
    d_env = _str_map(defaults.get("env", {}), f"defaults.env in {source}")
    d_self = defaults.get("install_compat_clone", True)
    if not isinstance(d_self, bool):
        raise TableError(f"Expected defaults.install_compat_clone in {source} to be true or false. Received: {d_self!r}.")
    raw_envs = data.get("env")
    if not isinstance(raw_envs, list) or not raw_envs:
        raise TableError(
            f"Expected {source} to define at least one environment as [[env]] "
            f"with a `name` and `packages`. Received: env={raw_envs!r}."
        )
    envs: List[Env] = []
    seen: Set[str] = set()
    for i, raw in enumerate(raw_envs):
        where = f"[[env]] #{i + 1} of {source}"
        if not isinstance(raw, dict):
            raise TableError(f"Expected {where} to be a table. Received: {raw!r}.")
        _check_keys(raw, _ENV_KEYS, where)
        name = raw.get("name")
        if not isinstance(name, str) or not _NAME_RE.match(name):
            raise TableError(
                f"Expected `name` of {where} to be a folder-safe name (letters, "
                f"digits, '.', '_', '+', '-'; not starting with a symbol). "
                f"Received: name={name!r}."
            )
        if name in seen:
            raise TableError(f"Duplicate environment name {name!r} in {source}.")
        seen.add(name)
        where = f"environment {name!r} of {source}"
        if "packages" not in raw:
            raise TableError(f"Missing `packages` in {where}: list its pinned requirements.")
        python = raw.get("python", d_python)
        if not isinstance(python, str):
            raise TableError(f'Expected `python` of {where} to be a string like "3.11". Received: {python!r}.')
        expect = _str_map(raw.get("expect", {}), f"`expect` of {where}")
        _check_keys(expect, _EXPECT_KEYS, f"`expect` of {where}")
        if "family" in expect and expect["family"] not in _FAMILIES:
            raise TableError(
                f"Expected `expect.family` of {where} to be one of {', '.join(_FAMILIES)}. "
                f"Received: {expect['family']!r}."
            )
        fixup = raw.get("fixup")
        if fixup is not None and not isinstance(fixup, str):
            raise TableError(f"Expected `fixup` of {where} to be a string. Received: {fixup!r}.")
        for flag in ("enabled", "install_compat_clone"):
            if flag in raw and not isinstance(raw[flag], bool):
                raise TableError(f"Expected `{flag}` of {where} to be true or false. Received: {raw[flag]!r}.")
        note = raw.get("note", "")
        if not isinstance(note, str):
            raise TableError(f"Expected `note` of {where} to be a string. Received: {note!r}.")
        env_vars = dict(d_env)
        env_vars.update(_str_map(raw.get("env", {}), f"`env` of {where}"))
        envs.append(
            Env(
                name=name,
                python=python,
                packages=_str_list(raw["packages"], f"`packages` of {where}") + d_packages,
                no_deps=_str_list(raw.get("no_deps", []), f"`no_deps` of {where}"),
                pip_args=d_pip_args + _str_list(raw.get("pip_args", []), f"`pip_args` of {where}"),
                env=tuple(sorted(env_vars.items())),
                fixup=fixup,
                expect=tuple(sorted(expect.items())),
                enabled=bool(raw.get("enabled", True)),
                install_compat_clone=bool(raw.get("install_compat_clone", d_self)),
                note=note,
            )
        )
    return envs


def load_table(path: "Optional[os.PathLike[str] | str]" = None) -> List[Env]:
    """Loads a matrix table: the built-in one, or a TOML file.

    Args:
        path: a TOML file with the schema of ``compat_clone/tools/matrix/matrix.toml``;
            None for the built-in table.

    Returns:
        The environments in table order.

    Raises:
        TableError: the file is missing, is not TOML, or fails validation.
    """
    if path is None:
        from importlib import resources

        source = "compat_clone/tools/matrix/matrix.toml"
        text = resources.files("compat_clone.tools.matrix").joinpath("matrix.toml").read_text(encoding="utf-8")
    else:
        source = os.fspath(path)
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as e:
            raise TableError(f"Cannot read the matrix table {source!r}: {e.strerror}. Pass an existing TOML file to --table.") from None
    try:
        data = _toml_loads(text)
    except ValueError as e:  # tomllib.TOMLDecodeError is a ValueError
        raise TableError(f"The matrix table {source!r} is not valid TOML: {e}.") from None
    return parse_table(data, source)


def select_envs(envs: Sequence[Env], patterns: Optional[Sequence[str]]) -> List[Env]:
    """Picks environments by name or glob (``keras-3.15-*``), in table order.

    Without patterns every enabled environment is picked; a disabled one is
    picked only when a pattern names it exactly.

    Raises:
        TableError: a pattern that matches no environment.
    """
    if not patterns:
        return [e for e in envs if e.enabled]
    names: List[str] = []
    for item in patterns:
        names.extend(p.strip() for p in item.split(",") if p.strip())
    chosen: Set[str] = set()
    for pat in names:
        hits = [e for e in envs if e.name == pat or (fnmatch.fnmatchcase(e.name, pat) and e.enabled)]
        if not hits:
            raise TableError(
                f"No environment matches --env {pat!r}. Known environments: "
                f"{', '.join(e.name for e in envs)}."
            )
        chosen.update(e.name for e in hits)
    return [e for e in envs if e.name in chosen]


