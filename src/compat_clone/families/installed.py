"""The Keras families installed in this environment, and each one's Keras module here.

The registry (`compat_clone.families.registry`) says what a family is; this
module answers what this environment holds of each, for the tools, the tests
and the bench: a family's Keras module (`keras_module`, imported on request)
and every installed Keras package with its family (`installed_families`, read
from package metadata, nothing imported). A clone never asks: it reads the
model's own Keras (`registry.keras_of`).
"""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

from compat_clone.families.registry import entry, family_for

__all__ = ["installed_families", "installed_version", "installed_versions", "keras_module"]

_KERAS_PACKAGES = {"keras": ("keras",), "tf_keras": ("tf_keras", "tf-keras")}  # module -> its distributions


def keras_module(family: str) -> ModuleType:
    """This environment's Keras for `family`: the first of its `environment_modules` that is installed.

    Args:
        family: a family name.

    Returns:
        The module, imported.

    Raises:
        InvalidArgumentError: `family` is not a family.
        ImportError: none of the family's modules is installed.
    """
    names = entry(family).environment_modules
    for name in names:
        top, _, attribute = name.partition(".")
        if importlib.util.find_spec(top) is None:
            continue
        module = importlib.import_module(top)
        found: ModuleType = getattr(module, attribute) if attribute else module
        return found
    raise ImportError(f"No Keras of the {family} family is installed here: tried {', '.join(names)}.")


def installed_families(versions: Optional[Mapping[str, str]] = None) -> List[Tuple[str, str, str]]:
    """(family, module to import, version) for every Keras package installed here.

    Args:
        versions: the installed version of each package by module name
            (``{"keras": "3.15.1", "tf_keras": "2.21.0"}``); None reads the
            distributions' metadata. Either way nothing is imported.

    Returns:
        One triple per Keras package (``keras``, then ``tf_keras``); two
        packages may serve the same family (``keras`` 2.15 and ``tf_keras``).
    """
    if versions is None:
        versions = installed_versions(_KERAS_PACKAGES)
    return [
        (family_for(module, versions[module]), module, versions[module]) for module in _KERAS_PACKAGES if versions.get(module)
    ]


def installed_version(distributions: Sequence[str]) -> Optional[str]:
    """The version of the first of `distributions` installed here, read from package metadata (nothing imported).

    Args:
        distributions: distribution names, tried in order
            (``("tensorflow", "tensorflow-cpu")``).

    Returns:
        Its version string, or None where none of them is installed.

    Example:

    >>> installed_version(("no-such-distribution",)) is None
    True
    """
    from compat_clone._compat import metadata  # here: only tools ask, and a clone never does

    for dist in distributions:
        try:
            return str(metadata.version(dist))
        except metadata.PackageNotFoundError:
            continue
    return None


def installed_versions(distributions: Mapping[str, Sequence[str]]) -> Dict[str, str]:
    """The version of each name whose distributions are installed here, by `installed_version`.

    Args:
        distributions: a name -> the distributions that provide it, tried in
            order (``{"tensorflow": ("tensorflow", "tensorflow-cpu")}``).

    Returns:
        name -> version, for the names installed; the others are left out.
    """
    found = {name: installed_version(dists) for name, dists in distributions.items()}
    return {name: version for name, version in found.items() if version}
