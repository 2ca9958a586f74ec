"""Which Keras a test session really used, and whether that is the Keras its environment claims.

The claim check (`claim`) runs before the tests, on the modules a project of
the claimed family *would* import. This module looks afterwards at what the
tests *did* use, in each process that ran tests (the pytest plugin collects it
from xdist workers too):

- the model classes compat_clone classified (`compat_clone.families.registry.classes_seen`):
  their family, package and version;
- the Keras modules imported (``keras``, ``tf_keras``, and TensorFlow's
  in-tree ``tensorflow.python.keras`` of TF <= 2.5), with their family.

`judge` compares them with the claim: an environment whose tests built models
of other families only, or imported only another family's Keras, is
mislabeled; one whose tests touched no Keras at all proves nothing about
Keras. Importing this module imports no framework, and `observe` imports
nothing: it reads ``sys.modules``.
"""

from __future__ import annotations

import sys
from typing import Any, Dict, List, Mapping, Sequence, Tuple

from compat_clone_matrix.claim import version_matches

__all__ = ["observe", "merge", "judge", "brief", "NO_KERAS"]

NO_KERAS = "NO KERAS"  # the runner's status of an environment whose tests used no Keras


def _version(module: Any) -> str:
    version = getattr(module, "__version__", None)
    if isinstance(version, str):
        return version
    return str(getattr(getattr(module, "version", None), "__version__", "") or "?")


def observe() -> Dict[str, Any]:
    """This process's record: ``{"models": {class: [family, package, version]}, "modules": {module: [family, version]}}``."""
    models: Dict[str, List[str]] = {}
    registry = sys.modules.get("compat_clone.families.registry")
    if registry is not None:
        models = {name: list(found) for name, found in registry.classes_seen().items()}
    modules: Dict[str, List[str]] = {}
    from compat_clone.families.registry import family_for

    for name in ("keras", "tf_keras"):
        module = sys.modules.get(name)
        if module is not None:
            version = _version(module)
            modules[name] = [family_for(name, version), version]
    # TensorFlow <= 2.5: tf.keras is TensorFlow's own `tensorflow.python.keras`
    # (no `keras` package behind it); later TensorFlows keep that tree as dead code.
    tf = sys.modules.get("tensorflow")
    if "tensorflow.python.keras.engine" in sys.modules and tf is not None and "keras" not in modules:
        modules["tensorflow.keras"] = ["tf_keras", _version(tf)]
    return {"models": models, "modules": modules}


def merge(records: Sequence[Mapping[str, Any]]) -> Dict[str, Any]:
    """One record from several processes' (the controller's and each xdist worker's)."""
    out: Dict[str, Any] = {"models": {}, "modules": {}}
    for record in records:
        out["models"].update(record.get("models") or {})
        out["modules"].update(record.get("modules") or {})
    return out


# What makes the tests use each family (the matrix's own texts, keyed by family).
_HOW = {
    "tf_keras": (
        "import `tf_keras` (or `tensorflow.keras` with TF_USE_LEGACY_KERAS=1 in the environment's `env`) "
        "where the tests build models"
    ),
    "keras3": "import `keras` (Keras 3) where the tests build models, and leave TF_USE_LEGACY_KERAS unset",
    "keras2": "import the standalone `keras` 2.x where the tests build models",
}


def _fix(claimed: str) -> str:
    """What to change so that the tests use the claimed family, or so that the table says what they use."""
    how = _HOW.get(claimed, _HOW["keras2"])
    return (
        f"To test {claimed}, {how}; if the tests mean the Keras they got, claim it: `expect.family` and "
        "`expect.module` (the module the tests import) in the matrix table."
    )


def _seen_text(found: Sequence[Tuple[str, str, str, str]]) -> str:
    """``keras3 (keras 3.15.1, from `keras`: keras.src.models.functional.Functional)``, one per family."""
    by_family: Dict[str, Tuple[str, str, str]] = {}
    for name, family, package, version in found:
        by_family.setdefault(family, (package, version, name))
    return "; ".join(
        f"{family} ({package} {version}, imported from `{package}`: {name})"
        for family, (package, version, name) in sorted(by_family.items())
    )


def judge(claim: Mapping[str, str], record: Mapping[str, Any]) -> Tuple[str, List[str], str]:
    """(verdict, problems, used): ``"ok"``, ``"mislabeled"`` or `NO_KERAS`, and what the tests used, in words.

    Args:
        claim: the environment's claim (``family``, ``version``, ...; `claim.claim_from_environ`).
        record: `observe` / `merge` of the test session's processes.

    Returns:
        The verdict; the problems (each names the module the tests imported,
        the family it gave and what to change); the one-line ``used`` text.

    Example:

    >>> judge({"family": "tf_keras"}, {"models": {"keras.src.models.functional.Functional":
    ...       ["keras3", "keras", "3.15.1"]}, "modules": {}})[0]
    'mislabeled'
    """
    family, version = claim.get("family", ""), claim.get("version", "")
    models = [(name, f, p, v) for name, (f, p, v) in sorted((record.get("models") or {}).items())]
    modules = sorted((record.get("modules") or {}).items())
    if models:
        used = "models of " + _seen_text(models)
        ours = [m for m in models if m[1] == family]
        if not ours:
            return (
                "mislabeled",
                [f"the tests cloned models of {_seen_text(models)} only, the table claims {family}. {_fix(family)}"],
                used,
            )
        if version and not any(version_matches(m[3], version) for m in ours):
            return (
                "mislabeled",
                [
                    f"the tests' {family} models are {_seen_text(ours)}, the table claims version "
                    f"{version}. Fix the environment's pins or `expect.version`."
                ],
                used,
            )
        return "ok", [], used
    if not modules and claim.get("uses") == "none":
        return "ok", [], 'no Keras (the table\'s `expect.uses = "none"`)'
    if not modules:
        return (
            NO_KERAS,
            [
                f"the tests imported no Keras and compat_clone saw no model: nothing here shows that "
                f"they ran on {family or 'Keras'}. Run tests that build models, or leave this "
                "environment out of the claims."
            ],
            "no Keras",
        )
    used = "imported " + ", ".join(f"`{name}` ({fam} {ver})" for name, (fam, ver) in modules)
    if not any(fam == family for _, (fam, _v) in modules):
        named = ", ".join(f"`{name}` (family {fam}, {ver})" for name, (fam, ver) in modules)
        return (
            "mislabeled",
            [f"the tests imported {named} and nothing of family {family}, the table's claim. {_fix(family)}"],
            used,
        )
    return "ok", [], used


def brief(record: Mapping[str, Any]) -> str:
    """What the tests used, short enough for the summary's ``loaded`` column.

    The packages of the models compat_clone was handed, else the Keras modules
    imported, else ``no Keras``.

    Args:
        record: `observe` / `merge` of the test session's processes.

    Returns:
        e.g. ``keras 3.15.1 (keras3)``; one entry per package and family.

    Example:

    >>> brief({"models": {"keras.src.models.functional.Functional": ["keras3", "keras", "3.15.1"]}})
    'keras 3.15.1 (keras3)'
    >>> brief({"models": {}, "modules": {}})
    'no Keras'
    """
    seen = {(package, version, family) for family, package, version in (record.get("models") or {}).values()}
    if not seen:
        seen = {(name, version, family) for name, (family, version) in (record.get("modules") or {}).items()}
    if not seen:
        return "no Keras"
    return ", ".join(f"{package} {version} ({family})" for package, version, family in sorted(seen))
