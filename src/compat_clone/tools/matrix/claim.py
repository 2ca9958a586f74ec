"""Does this environment load the Keras its matrix table entry claims?

The matrix runner exports an environment's claim as ``COMPAT_CLONE_EXPECT_FAMILY``
/ ``_VERSION`` / ``_BACKEND``. `check_claim` builds a two-layer model with the
claimed family's Keras module and asks `compat_clone.family_of` what it is, so
an environment that silently loads another Keras (a pin that resolved to
another release, a tf_keras env whose ``keras`` is Keras 3, a JAX env on the
TensorFlow backend) is caught before its tests run on the wrong one.

Importing this module imports no framework; `check_claim` imports the claimed
family's module. The pytest plugin runs it in a separate interpreter
(``python -m compat_clone.tools.matrix.claim``), so the test session's own
process and graph stay untouched; that prints one JSON object.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from typing import Any, Dict, Mapping, Optional

__all__ = ["claim_from_environ", "check_claim", "version_matches"]

_FAMILY_MODULES = {
    # family -> the modules that build its models, first importable one wins
    "keras3": ("keras",),
    "keras2": ("keras",),
    # tf_keras on TF >= 2.16; before that, tf.keras is the `keras` 2.x package
    "tf_keras": ("tf_keras", "tensorflow.keras"),
}


def claim_from_environ(environ: Optional[Mapping[str, str]] = None) -> Dict[str, str]:
    """The claim (``family``, ``version``, ``backend``) from ``COMPAT_CLONE_EXPECT_*``; empty keys dropped."""
    environ = os.environ if environ is None else environ
    claim = {key: environ.get(f"COMPAT_CLONE_EXPECT_{key.upper()}", "") for key in ("family", "version", "backend")}
    return {key: value for key, value in claim.items() if value}


def version_matches(actual: str, prefix: str) -> bool:
    """``2.12`` matches 2.12.0 and 2.12.1, not 2.120; ``3.0`` matches 3.0.5.

    Example:

    >>> version_matches("3.0.5", "3.0"), version_matches("2.120.0", "2.12")
    (True, False)
    """
    return actual == prefix or actual.startswith(prefix + ".")


def _keras_module(family: str) -> Any:
    errors = []
    for name in _FAMILY_MODULES[family]:
        try:
            return importlib.import_module(name)
        except Exception as e:  # an ImportError, or a broken install failing at import
            errors.append(f"import {name}: {type(e).__name__}: {e}")
    raise ImportError(f"no module of family {family!r} imports ({'; '.join(errors)})")


def check_claim(claim: Mapping[str, str]) -> Dict[str, Any]:
    """Checks the loaded Keras against a claim.

    Args:
        claim: ``{"family": ..., "version": ..., "backend": ...}``; ``family``
            is required, the others are checked when present.

    Returns:
        ``{"ok": bool, "loaded": "keras 3.15.1 on jax", "problems": [...]}``;
        each problem says what was loaded and what the table claims.

    Raises:
        ValueError: the claim has no family, or an unknown one.

    Example:

    >>> check_claim({"family": "keras3", "version": "3.15", "backend": "jax"})  # doctest: +SKIP
    {'ok': True, 'loaded': 'keras 3.15.1 on jax', 'problems': []}
    """
    family = claim.get("family")
    if family not in _FAMILY_MODULES:
        raise ValueError(
            f"Expected the claim's family to be one of {', '.join(_FAMILY_MODULES)}. Received: family={family!r}. "
            "Fix `expect.family` in the matrix table."
        )
    try:
        K = _keras_module(family)
        inputs = K.Input((3,))
        info = importlib.import_module("compat_clone").family_of(K.models.Model(inputs, K.layers.Dense(2)(inputs)))
    except Exception as e:
        return {"ok": False, "loaded": "nothing", "problems": [f"cannot build a {family} model: {type(e).__name__}: {e}"]}
    loaded = f"{info.package} {info.version} on {info.backend}"
    problems = []
    if info.family != family:
        problems.append(f"loaded family {info.family!r} ({loaded}), the table claims {family!r}")
    if claim.get("version") and not version_matches(info.version, claim["version"]):
        problems.append(f"loaded {info.package} {info.version}, the table claims version {claim['version']}")
    if claim.get("backend") and info.backend != claim["backend"]:
        problems.append(f"runs on backend {info.backend!r}, the table claims {claim['backend']!r}")
    return {"ok": not problems, "loaded": loaded, "problems": problems}


def main() -> int:
    """Prints `check_claim` of this process's ``COMPAT_CLONE_EXPECT_*`` as JSON; exit 0 when it holds."""
    claim = claim_from_environ()
    try:
        result = check_claim(claim)
    except ValueError as e:
        result = {"ok": False, "loaded": "nothing", "problems": [str(e)]}
    # Frameworks print to stdout while importing: the result is the last line.
    sys.stdout.write("\n" + json.dumps(result) + "\n")
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
