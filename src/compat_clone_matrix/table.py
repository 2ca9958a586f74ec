"""The matrix table: environments as data, validated against one declarative schema.

A TOML document with ``[defaults]`` and one ``[[env]]`` per environment (the
built-in one is ``compat_clone_matrix/matrix.toml``). `load_table`
reads it, `parse_table` validates it into `Env` records, `select_envs` picks
environments by name, glob or tag.

The schema is the table `_FIELDS` below: one row per key with its type, its
default, whether ``[defaults]`` may set it, and how an environment's value
combines with the default. One small validator (`_validate_value`) checks every
key against its row.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import os
import re
import sys
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Set, Tuple

__all__ = ["Env", "TableError", "load_table", "parse_table", "select_envs", "table_id", "BUILTIN_TABLE", "toml_loads"]

BUILTIN_TABLE = "built-in"

_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")
_RUNNING_PYTHON = f"{sys.version_info[0]}.{sys.version_info[1]}"


class TableError(ValueError):
    """The matrix table (TOML) is malformed, or names an unknown environment."""


@dataclasses.dataclass(frozen=True)
class Env:
    """One environment of the matrix, as the table describes it.

    Attributes:
        name: folder name under ``.matrix/`` and the value of ``COMPAT_CLONE_ENV``.
        python: the interpreter: a path, or a version ``X.Y`` (pyenv's where
            pyenv has it, else uv's own discovery).
        packages: requirements installed together (defaults included).
        no_deps: requirements installed afterwards with ``--no-deps``.
        pip_args: extra arguments for every ``uv pip install``.
        env: environment variables set when the command runs.
        fixup: name of a `compat_clone_matrix.envfix` fix-up, or None.
        expect: the claim (``family``, ``version``, ``backend``, and ``module``:
            the module the project imports Keras from).
        enabled: False leaves it out of a run that names no environment.
        install_compat_clone: install the running `compat_clone` into it.
        tags: labels that `--tag` selects by (``wide``, ...).
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
    tags: Tuple[str, ...] = ()
    note: str = ""

    def expect_vars(self) -> Dict[str, str]:
        """``COMPAT_CLONE_EXPECT_*`` variables for the claim."""
        return {f"COMPAT_CLONE_EXPECT_{k.upper()}": v for k, v in self.expect}


# --------------------------------------------------------------------------- schema


def _is_str_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _is_str_map(value: Any) -> bool:
    return isinstance(value, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in value.items())


# type name -> (check, what the error message says was expected)
_TYPES: Dict[str, Tuple[Callable[[Any], bool], str]] = {
    "str": (lambda v: isinstance(v, str), "a string"),
    "bool": (lambda v: isinstance(v, bool), "true or false"),
    "list": (_is_str_list, 'a list of strings, e.g. ["keras==3.15.1"]'),
    "map": (_is_str_map, 'a table of strings, e.g. { KERAS_BACKEND = "jax" }'),
}


@dataclasses.dataclass(frozen=True)
class _Field:
    """One key of an ``[[env]]`` entry.

    `merge` says how the entry's value combines with the ``[defaults]`` one:
    ``replace`` (the entry's wins), ``append`` (the entry's items, then the
    defaults'), ``prepend`` (the defaults' items, then the entry's), ``update``
    (a table: the entry's keys over the defaults').
    """

    type: str
    default: Any
    in_defaults: bool = False
    merge: str = "replace"
    required: bool = False


_FIELDS: Dict[str, _Field] = {
    "name": _Field("str", None, required=True),
    "python": _Field("str", _RUNNING_PYTHON, in_defaults=True),
    "packages": _Field("list", [], in_defaults=True, merge="append", required=True),
    "no_deps": _Field("list", []),
    "pip_args": _Field("list", [], in_defaults=True, merge="prepend"),
    "env": _Field("map", {}, in_defaults=True, merge="update"),
    "fixup": _Field("str", None),
    "expect": _Field("map", {}, in_defaults=True, merge="update"),
    "enabled": _Field("bool", True),
    "install_compat_clone": _Field("bool", True, in_defaults=True),
    "tags": _Field("list", [], in_defaults=True, merge="prepend"),
    "note": _Field("str", ""),
}
_DEFAULT_KEYS = {key for key, field in _FIELDS.items() if field.in_defaults}
_EXPECT_KEYS = {"family", "version", "backend", "module", "uses"}


def _validate_keys(table: Mapping[str, Any], allowed: Set[str], where: str) -> None:
    unknown = sorted(set(table) - allowed)
    if unknown:
        raise TableError(
            f"Unknown key(s) {', '.join(map(repr, unknown))} in {where}. Allowed keys: {', '.join(sorted(allowed))}."
        )


def _validate_value(key: str, value: Any, where: str) -> Any:
    check, expected = _TYPES[_FIELDS[key].type]
    if not check(value):
        raise TableError(f"Expected `{key}` in {where} to be {expected}. Received: {key}={value!r}.")
    return value


def _merge(key: str, default: Any, value: Any) -> Any:
    how = _FIELDS[key].merge
    if how == "append":
        return list(value) + list(default)
    if how == "prepend":
        return list(default) + list(value)
    if how == "update":
        return {**default, **value}
    return value


def _validate_claim(expect: Mapping[str, str], where: str) -> None:
    """The claim names a family whose package could have that version.

    The version -> family rule is compat_clone's own (`family_for`), not a
    second copy: ``keras2`` claims need a 2.0-2.3 version, ``keras3`` a 3.x.
    """
    from compat_clone.families.registry import FAMILIES, family_for
    from compat_clone_matrix.claim import MODULE_FAMILIES

    _validate_keys(expect, _EXPECT_KEYS, f"`expect` of {where}")
    if expect.get("uses", "keras") not in ("keras", "none"):
        raise TableError(
            f'Expected `expect.uses` of {where} to be "keras" (the default) or "none" (its tests are '
            f"not claimed to use Keras). Received: uses={expect['uses']!r}."
        )
    module = expect.get("module")
    if module is not None and module not in MODULE_FAMILIES:
        raise TableError(
            f"Expected `expect.module` of {where} to be the module the project imports Keras from, one of "
            f"{', '.join(MODULE_FAMILIES)}. Received: module={module!r}."
        )
    family = expect.get("family")
    if family is None:
        if module is not None:
            raise TableError(f"The claim of {where} names a module but no family: add `expect.family`.")
        return
    if module is not None and family not in MODULE_FAMILIES[module]:
        raise TableError(
            f"The claim of {where} does not hold together: `{module}` never serves a {family} model "
            f"(it serves {', '.join(MODULE_FAMILIES[module])}). Fix `expect.module` or `expect.family`."
        )
    families = tuple(FAMILIES)
    if family not in families:
        raise TableError(f"Expected `expect.family` of {where} to be one of {', '.join(families)}. Received: family={family!r}.")
    version = expect.get("version")
    if version and family not in {family_for("keras", version), family_for("tf_keras", version)}:
        raise TableError(
            f"The claim of {where} does not hold together: a {family} model cannot have version {version!r} "
            f"(that version is {family_for('keras', version)}). Fix `expect.family` or `expect.version`."
        )


def _parse_defaults(raw: Any, source: str) -> Dict[str, Any]:
    where = f"[defaults] of {source}"
    if not isinstance(raw, dict):
        raise TableError(f"Expected {where} to be a table. Received: {raw!r}.")
    _validate_keys(raw, _DEFAULT_KEYS, where)
    merged = {key: field.default for key, field in _FIELDS.items()}
    merged.update({key: _validate_value(key, value, where) for key, value in raw.items()})
    return merged


def _parse_env(raw: Any, defaults: Mapping[str, Any], index: int, source: str) -> Env:
    where = f"[[env]] #{index} of {source}"
    if not isinstance(raw, dict):
        raise TableError(f"Expected {where} to be a table. Received: {raw!r}.")
    _validate_keys(raw, set(_FIELDS), where)
    name = raw.get("name")
    if not isinstance(name, str) or not _NAME_RE.match(name):
        raise TableError(
            f"Expected `name` of {where} to be a folder-safe name (letters, digits, '.', '_', '+', '-'; "
            f"not starting with a symbol). Received: name={name!r}."
        )
    where = f"environment {name!r} of {source}"
    for key, field in _FIELDS.items():
        if field.required and key not in raw:
            raise TableError(f"Missing `{key}` in {where}: add it (see the schema in compat_clone_matrix/matrix.toml).")
    values = {
        key: _merge(key, defaults[key], _validate_value(key, raw[key], where)) if key in raw else defaults[key] for key in _FIELDS
    }
    _validate_claim(values["expect"], where)
    return Env(**{key: _frozen(value) for key, value in values.items()})


def _frozen(value: Any) -> Any:
    """Lists become tuples, tables sorted tuples of pairs: `Env` is hashable."""
    if isinstance(value, dict):
        return tuple(sorted(value.items()))
    return tuple(value) if isinstance(value, list) else value


def parse_table(data: Mapping[str, Any], source: str = "<table>") -> List[Env]:
    """Validates a parsed TOML table and returns its environments.

    Args:
        data: the parsed TOML document (``[defaults]`` and ``[[env]]``).
        source: where it came from, for error messages.

    Returns:
        The environments in table order, defaults merged in.

    Raises:
        TableError: unknown keys, wrong types, a missing or duplicate name,
            or a claim (``expect``) naming an unknown family or a version
            that family cannot have.

    Example:

    >>> envs = parse_table({"env": [{"name": "k3", "packages": ["keras==3.15.1"]}]})
    >>> envs[0].packages
    ('keras==3.15.1',)
    """
    _validate_keys(data, {"defaults", "env"}, f"the top level of {source}")
    defaults = _parse_defaults(data.get("defaults", {}), source)
    raw_envs = data.get("env")
    if not isinstance(raw_envs, list) or not raw_envs:
        raise TableError(
            f"Expected {source} to define at least one environment as [[env]] "
            f"with a `name` and `packages`. Received: env={raw_envs!r}."
        )
    envs: List[Env] = []
    for index, raw in enumerate(raw_envs, 1):
        env = _parse_env(raw, defaults, index, source)
        if any(e.name == env.name for e in envs):
            raise TableError(f"Duplicate environment name {env.name!r} in {source}: names must be unique.")
        envs.append(env)
    return envs


def toml_loads(text: str) -> Dict[str, Any]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python < 3.11
        import tomli as tomllib  # dependency with marker python_version < "3.11"
    return tomllib.loads(text)


def load_table(path: Optional[os.PathLike[str] | str] = None) -> List[Env]:
    """Loads a matrix table: the built-in one, or a TOML file.

    Args:
        path: a TOML file with the schema of ``compat_clone_matrix/matrix.toml``;
            None for the built-in table.

    Returns:
        The environments in table order.

    Raises:
        TableError: the file is missing, is not TOML, or fails validation.

    Example:

    >>> [e.name for e in load_table() if e.enabled][:2]
    ['keras-2.3.1', 'keras-2.1.6-tf1']
    """
    if path is None:
        source = "compat_clone_matrix/matrix.toml"
        # The package's own data file, next to this module (`importlib.resources.files` is Python 3.9+).
        text = (Path(__file__).resolve().parent / "matrix.toml").read_text(encoding="utf-8")
    else:
        source = os.fspath(path)
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as e:
            raise TableError(
                f"Cannot read the matrix table {source!r}: {e.strerror}. Pass an existing TOML file to --table."
            ) from None
    try:
        data = toml_loads(text)
    except ValueError as e:  # tomllib.TOMLDecodeError is a ValueError
        raise TableError(f"The matrix table {source!r} is not valid TOML: {e}.") from None
    return parse_table(data, source)


def table_id(path: Optional[os.PathLike[str] | str] = None) -> str:
    """The name results and reports carry for a table: ``built-in``, or its path (``/``-separated,
    relative to the current folder when inside it).

    Results of one environment name from two tables never mix: every result
    record and outcome a run writes carries this name, and a report reads
    only those of its own table.

    Example:

    >>> table_id(), table_id("ci/./matrix.toml")
    ('built-in', 'ci/matrix.toml')
    """
    if path is None:
        return BUILTIN_TABLE
    resolved = Path(os.path.abspath(os.fspath(path)))
    try:
        return resolved.relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return resolved.as_posix()


def _split(items: Optional[Sequence[str]]) -> List[str]:
    return [p.strip() for item in items or () for p in item.split(",") if p.strip()]


def select_envs(envs: Sequence[Env], patterns: Optional[Sequence[str]], tags: Optional[Sequence[str]] = None) -> List[Env]:
    """Picks environments by name, glob (``keras-3.15-*``) or tag, in table order.

    With neither patterns nor tags, every enabled environment is picked. Tags
    pick every environment carrying one of them, enabled or not; patterns then
    narrow that group. Without tags a glob matches enabled environments only,
    and a disabled one is picked when a pattern names it exactly.

    Args:
        envs: the table, from `load_table`.
        patterns: names or globs; an item may hold several, comma-separated.
        tags: tags (``wide``); an item may hold several, comma-separated.

    Returns:
        The picked environments, in table order.

    Raises:
        TableError: a pattern or tag that matches no environment.

    Example:

    >>> [e.name for e in select_envs(load_table(), ["keras-2.2.*"])]
    ['keras-2.2.4-tf1']
    """
    names, wanted_tags = _split(patterns), _split(tags)
    pool = list(envs) if wanted_tags else [e for e in envs if e.enabled]
    for tag in wanted_tags:
        if not any(tag in e.tags for e in envs):
            known = sorted({t for e in envs for t in e.tags})
            raise TableError(f"No environment has --tag {tag!r}. Known tags: {', '.join(known) or '(none)'}.")
    if wanted_tags:
        pool = [e for e in pool if set(e.tags) & set(wanted_tags)]
    if not names:
        return pool
    chosen: Set[str] = set()
    for pat in names:
        hits = [e for e in pool if fnmatch.fnmatchcase(e.name, pat)]
        hits += [e for e in envs if e.name == pat and not wanted_tags]
        if not hits:
            scope = f" among the environments tagged {', '.join(wanted_tags)}" if wanted_tags else ""
            raise TableError(
                f"No environment matches --env {pat!r}{scope}. Known environments: {', '.join(e.name for e in envs)}."
            )
        chosen.update(e.name for e in hits)
    return [e for e in envs if e.name in chosen]
