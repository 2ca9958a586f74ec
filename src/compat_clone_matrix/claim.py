"""Does this environment load the Keras its matrix table entry claims, where the project imports it?

The matrix runner exports an environment's claim as ``COMPAT_CLONE_EXPECT_FAMILY``
/ ``_VERSION`` / ``_BACKEND`` / ``_MODULE``. `check_claim` builds a two-layer
model through each module a project of that family imports Keras from, and asks
`compat_clone.family_of` what it is, so an environment that silently gives the
project another Keras is caught before its tests run on the wrong one: a pin
that resolved to another release, a tf_keras environment whose
``tensorflow.keras`` is Keras 3 (no ``TF_USE_LEGACY_KERAS``), a Keras 3 claim
where ``tensorflow.keras`` is tf_keras, a JAX environment on TensorFlow.

The modules checked: the one the table names (``expect.module``: ``keras``,
``tf_keras``, ``tensorflow.keras`` or its alias ``tf.keras``), the module the
project imports; else every installed module that a project of the claimed
family imports Keras through (`_FAMILY_MODULES`), each of which must agree.

Importing this module imports no framework; `check_claim` imports the checked
modules. The pytest plugin runs it in a separate interpreter (``python -m
compat_clone_matrix.claim``), so the test session's own process and graph
stay untouched; that prints one JSON object.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import sys
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

__all__ = ["MODULES", "claim_from_environ", "check_claim", "version_matches", "MODULE_FAMILIES"]

# expect.module -> (top-level distribution module that must be installed, attribute path)
MODULES: Dict[str, Tuple[str, str]] = {
    "keras": ("keras", ""),
    "tf_keras": ("tf_keras", ""),
    # `from tensorflow import keras` and `tf.keras`: TensorFlow's attribute, which
    # TF >= 2.16 resolves to Keras 3, or to tf_keras under TF_USE_LEGACY_KERAS=1.
    "tensorflow.keras": ("tensorflow", "keras"),
    "tf.keras": ("tensorflow", "keras"),
}

# family -> the modules a project of that family gets its Keras from, checked
# (where installed) when the table names no module
_FAMILY_MODULES: Dict[str, Tuple[str, ...]] = {
    "keras3": ("keras", "tensorflow.keras"),
    "keras2": ("keras",),
    "tf_keras": ("tensorflow.keras", "tf_keras"),
}
# which families a module can serve (a table naming another pair is refused)
MODULE_FAMILIES: Dict[str, Tuple[str, ...]] = {
    "keras": ("keras3", "keras2", "tf_keras"),  # keras 2.6-2.15 is tf.keras's own package
    "tf_keras": ("tf_keras",),
    "tensorflow.keras": ("keras3", "tf_keras"),
    "tf.keras": ("keras3", "tf_keras"),
}


def claim_from_environ(environ: Optional[Mapping[str, str]] = None) -> Dict[str, str]:
    """The claim (``family``, ``version``, ``backend``, ``module``, ``uses``) from ``COMPAT_CLONE_EXPECT_*``; empty keys
    dropped."""
    environ = os.environ if environ is None else environ
    keys = ("family", "version", "backend", "module", "uses")
    claim = {key: environ.get(f"COMPAT_CLONE_EXPECT_{key.upper()}", "") for key in keys}
    return {key: value for key, value in claim.items() if value}


def version_matches(actual: str, prefix: str) -> bool:
    """``2.12`` matches 2.12.0 and 2.12.1, not 2.120; ``3.0`` matches 3.0.5.

    Example:

    >>> version_matches("3.0.5", "3.0"), version_matches("2.120.0", "2.12")
    (True, False)
    """
    return actual == prefix or actual.startswith(prefix + ".")


def _import(module: str) -> Any:
    top, attribute = MODULES[module]
    mod = importlib.import_module(top)
    return getattr(mod, attribute) if attribute else mod


def _installed(module: str) -> bool:
    return importlib.util.find_spec(MODULES[module][0]) is not None


def _modules_to_check(claim: Mapping[str, str]) -> Tuple[List[str], bool]:
    """(modules, named): the table's module, or the family's installed ones."""
    if claim.get("module"):
        return [claim["module"]], True
    family_modules = _FAMILY_MODULES[claim["family"]]
    present = [m for m in family_modules if _installed(m)]
    return (present or list(family_modules[:1])), False


def _describe(K: Any) -> Any:
    inputs = K.Input((3,))
    model = K.models.Model(inputs, K.layers.Dense(2)(inputs))
    return importlib.import_module("compat_clone").family_of(model)


def _loaded_text(seen: Sequence[Tuple[str, str]]) -> str:
    """``keras 3.15.1 on jax via keras``; modules that load the same Keras share one entry."""
    groups: Dict[str, List[str]] = {}
    for module, loaded in seen:
        groups.setdefault(loaded, []).append(module)
    return "; ".join(f"{loaded} via {', '.join(modules)}" for loaded, modules in groups.items())


def check_claim(claim: Mapping[str, str]) -> Dict[str, Any]:
    """Checks the Keras the project gets against a claim.

    Args:
        claim: ``{"family": ..., "version": ..., "backend": ..., "module": ...}``;
            ``family`` is required, the others are checked when present.
            ``module`` names the module the project imports Keras from; without
            it every installed module of the family's (`_FAMILY_MODULES`) is
            checked.

    Returns:
        ``{"ok": bool, "mislabeled": bool, "loaded": "keras 3.15.1 on jax via
        keras", "modules": {module: loaded}, "problems": [...]}``; each problem
        says what a module loaded and what the table claims. ``mislabeled`` is
        True when a module loaded another Keras than the claimed one (False
        when nothing could be built at all).

    Raises:
        ValueError: the claim has no family, or an unknown family or module.

    Example:

    >>> check_claim({"family": "keras3", "version": "3.15", "backend": "jax"})  # doctest: +SKIP
    {'ok': True, 'mislabeled': False, 'loaded': 'keras 3.15.1 on jax via keras', ...}
    """
    family = claim.get("family")
    if family not in _FAMILY_MODULES:
        raise ValueError(
            f"Expected the claim's family to be one of {', '.join(_FAMILY_MODULES)}. Received: family={family!r}. "
            "Fix `expect.family` in the matrix table."
        )
    if claim.get("module") and claim["module"] not in MODULES:
        raise ValueError(
            f"Expected the claim's module to be one of {', '.join(MODULES)}. Received: module={claim['module']!r}. "
            "Fix `expect.module` in the matrix table."
        )
    modules, named = _modules_to_check(claim)
    seen: List[Tuple[str, str]] = []
    problems: List[str] = []
    mislabeled = False
    for module in modules:
        try:
            info = _describe(_import(module))
        except Exception as e:  # an ImportError, or a broken install failing at import or build
            problems.append(f"cannot build a model with `{module}`: {type(e).__name__}: {e}")
            continue
        loaded = f"{info.package} {info.version} on {info.backend}"
        seen.append((module, loaded))
        before = len(problems)
        if info.family != family:
            problems.append(f"`{module}` loads family {info.family!r} ({loaded}), the table claims {family!r}")
        if claim.get("version") and not version_matches(info.version, claim["version"]):
            problems.append(f"`{module}` loads {info.package} {info.version}, the table claims version {claim['version']}")
        if claim.get("backend") and info.backend != claim["backend"]:
            problems.append(f"`{module}` runs on backend {info.backend!r}, the table claims {claim['backend']!r}")
        mislabeled = mislabeled or len(problems) > before
    if problems and not named and len(modules) > 1:
        problems.append("if the project imports Keras through one of these only, name it: `expect.module` in the matrix table")
    return {
        "ok": not problems,
        "mislabeled": mislabeled,
        "loaded": _loaded_text(seen) or "nothing",
        "modules": dict(seen),
        "problems": problems,
    }


def main() -> int:
    """Prints `check_claim` of this process's ``COMPAT_CLONE_EXPECT_*`` as JSON; exit 0 when it holds."""
    claim = claim_from_environ()
    try:
        result = check_claim(claim)
    except ValueError as e:
        result = {"ok": False, "mislabeled": True, "loaded": "nothing", "modules": {}, "problems": [str(e)]}
    # Frameworks print to stdout while importing: the result is the last line.
    sys.stdout.write("\n" + json.dumps(result) + "\n")
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
