"""A project's declared dependencies, read from its own metadata files without building it.

`read_declared` reads, in this order, the first of:

1. ``pyproject.toml``: ``[project] dependencies``, ``optional-dependencies`` and
   ``requires-python`` (unless ``dynamic`` says they are computed);
2. ``setup.cfg``: ``[options] install_requires`` / ``python_requires`` and
   ``[options.extras_require]``;
3. ``setup.py``: the literal ``install_requires=`` / ``extras_require=`` /
   ``python_requires=`` arguments of its ``setup(...)`` call (read with `ast`,
   never run).

The Keras-carrying requirements (`KERAS_PACKAGES`: ``keras``, ``tf-keras``,
``tensorflow``, ``tensorflow-cpu``) are the ranges `--declared` tests; an
extra's range counts with the dependencies' (both hold where the extra is
installed), and the other dependencies are installed beside the pins.
"""

from __future__ import annotations

import ast
import configparser
import dataclasses
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name

from compat_clone_matrix.table import TableError, toml_loads

__all__ = ["Declared", "KERAS_PACKAGES", "group_of", "read_declared"]

# canonical project name -> the group its releases are counted in (tensorflow-cpu is tensorflow's CPU build)
KERAS_PACKAGES: Dict[str, str] = {
    "keras": "keras",
    "tf-keras": "tf-keras",
    "tensorflow": "tensorflow",
    "tensorflow-cpu": "tensorflow",
}


def group_of(name: str) -> Optional[str]:
    """The Keras-carrying group of a project name (``tensorflow-cpu`` -> ``tensorflow``), or None.

    Example:

    >>> group_of("TF_Keras"), group_of("numpy")
    ('tf-keras', None)
    """
    return KERAS_PACKAGES.get(canonicalize_name(name))


@dataclasses.dataclass(frozen=True)
class Declared:
    """What a project declares about the packages it runs with.

    Attributes:
        source: the file it was read from (``pyproject.toml``, ...).
        requirements: the dependencies, as written.
        extras: each extra's name and requirements, as written.
        requires_python: the project's ``requires-python``, or None.
    """

    source: str
    requirements: Tuple[str, ...]
    extras: Tuple[Tuple[str, Tuple[str, ...]], ...] = ()
    requires_python: Optional[str] = None

    def ranges(self) -> Dict[str, Tuple[SpecifierSet, List[str]]]:
        """Each Keras-carrying group the project declares: its range (dependencies and extras together) and the requirements it came from."""
        found: Dict[str, Tuple[SpecifierSet, List[str]]] = {}
        for text in self.requirements + tuple(r for _, reqs in self.extras for r in reqs):
            req = _parsed(text, self.source)
            group = group_of(req.name)
            if group is None:
                continue
            spec, texts = found.get(group, (SpecifierSet(""), []))
            found[group] = (spec & req.specifier, texts + [text])
        return found

    def installed_beside(self) -> List[str]:
        """The dependencies other than the Keras-carrying ones: installed in each derived environment."""
        return [text for text in self.requirements if group_of(_parsed(text, self.source).name) is None]

    def python_allows(self, version: str) -> bool:
        """Whether ``requires-python`` admits an interpreter ``X.Y`` (True when there is none, or `version` is a path)."""
        if not self.requires_python or not version[:1].isdigit():
            return True
        return SpecifierSet(self.requires_python).contains(version, prereleases=True)


def _parsed(text: str, source: str) -> Requirement:
    try:
        return Requirement(text)
    except InvalidRequirement as e:
        raise TableError(f"{source} declares a requirement that cannot be read: {text!r} ({e}).") from None


def _checked(source: str, requirements: Sequence[Any], extras: Any, python: Any) -> Declared:
    if not isinstance(requirements, (list, tuple)) or not all(isinstance(r, str) for r in requirements):
        raise TableError(f"Expected the dependencies of {source} to be a list of strings. Received: {requirements!r}.")
    if not isinstance(extras, dict) or not all(
        isinstance(v, (list, tuple)) and all(isinstance(r, str) for r in v) for v in extras.values()
    ):
        raise TableError(f"Expected the extras of {source} to map names to lists of strings. Received: {extras!r}.")
    if python is not None:
        try:
            SpecifierSet(str(python))
        except InvalidSpecifier:
            raise TableError(f"{source} declares a Python range that cannot be read: {python!r}.") from None
    declared = Declared(
        source=source,
        requirements=tuple(r.strip() for r in requirements if r.strip()),
        extras=tuple((name, tuple(r.strip() for r in reqs if r.strip())) for name, reqs in sorted(extras.items())),
        requires_python=str(python) if python is not None else None,
    )
    declared.ranges()  # every requirement readable, or refused here
    return declared


def _from_pyproject(path: Path) -> Optional[Declared]:
    try:
        data = toml_loads(path.read_text(encoding="utf-8"))
    except ValueError as e:
        raise TableError(f"{path} is not valid TOML: {e}.") from None
    project = data.get("project")
    if not isinstance(project, dict) or "dependencies" in project.get("dynamic", []):
        return None
    return _checked(
        path.name, project.get("dependencies", []), project.get("optional-dependencies", {}), project.get("requires-python")
    )


def _lines(value: str) -> List[str]:
    return [line.split("#", 1)[0].strip() for line in value.splitlines() if line.split("#", 1)[0].strip()]


def _from_setup_cfg(path: Path) -> Optional[Declared]:
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(path, encoding="utf-8")
    if not parser.has_option("options", "install_requires") and not parser.has_section("options.extras_require"):
        return None
    extras = (
        {name: _lines(value) for name, value in parser.items("options.extras_require")}
        if parser.has_section("options.extras_require")
        else {}
    )
    return _checked(
        path.name,
        _lines(parser.get("options", "install_requires", fallback="")),
        extras,
        parser.get("options", "python_requires", fallback=None),
    )


def _from_setup_py(path: Path) -> Optional[Declared]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
        if name != "setup":
            continue
        found: Dict[str, Any] = {}
        for keyword in node.keywords:
            if keyword.arg in ("install_requires", "extras_require", "python_requires"):
                try:
                    found[keyword.arg] = ast.literal_eval(keyword.value)
                except ValueError:
                    raise TableError(
                        f"{path.name} computes `{keyword.arg}` (line {keyword.value.lineno}): it can only be read where it "
                        "is a literal. Declare the dependencies in pyproject.toml ([project] dependencies) or setup.cfg."
                    ) from None
        return _checked(
            path.name, found.get("install_requires", []), found.get("extras_require", {}), found.get("python_requires")
        )
    return None


def read_declared(project: Path) -> Declared:
    """The dependencies `project` declares (pyproject.toml, else setup.cfg, else setup.py).

    Args:
        project: the project's root folder.

    Returns:
        Its declared requirements, extras and Python range.

    Raises:
        TableError: no metadata file declares dependencies there, or one
            cannot be read (a computed ``install_requires``, a requirement
            that does not parse).

    Example:

    >>> read_declared(Path(".")).ranges()  # doctest: +SKIP
    {'keras': (<SpecifierSet('>=3.0')>, ['keras>=3.0'])}
    """
    readers = (("pyproject.toml", _from_pyproject), ("setup.cfg", _from_setup_cfg), ("setup.py", _from_setup_py))
    for name, reader in readers:
        path = project / name
        if path.is_file():
            declared = reader(path)
            if declared is not None:
                return declared
    raise TableError(
        f"No dependencies declared in {project}: expected pyproject.toml with [project] dependencies, setup.cfg with "
        "[options] install_requires, or setup.py with a literal install_requires. Run --declared from the project's root."
    )
