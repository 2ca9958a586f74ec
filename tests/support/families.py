"""Which Keras families this run tests, and where the matrix keeps its environments: shared by every product's tests.

The root ``tests/conftest.py`` builds its fixtures (``K``, ``family``) and
its collection rules on these; a test imports them from here, never from a
conftest (pytest imports each conftest under the one name ``conftest``).
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import Any, List

REPO = Path(__file__).resolve().parents[2]


def matrix_dir() -> Path:
    """This run's matrix folder (``COMPAT_CLONE_MATRIX_DIR``, else the checkout's ``.matrix``): its environments and caches."""
    return Path(os.environ.get("COMPAT_CLONE_MATRIX_DIR") or REPO / ".matrix")


def xla_flags(*extra: str) -> str:
    """``XLA_FLAGS`` for a JAX interpreter a test starts: this process's flags with `extra` added."""
    return " ".join([os.environ.get("XLA_FLAGS", ""), *extra]).strip()


FAMILIES = ("keras3", "tf_keras", "keras2")

# `make test-wide` sets it: the tests `make test` runs in fewer environments
# (marker `per_claim`, the conversion zoo's heavy cases) run in all of them.
WIDE = os.environ.get("COMPAT_CLONE_WIDE") == "1"


def expected_family() -> str | None:
    return os.environ.get("COMPAT_CLONE_EXPECT_FAMILY") or None


def _importable(name: str) -> bool:
    try:
        importlib.import_module(name)
    except Exception:
        return False
    return True


def families_under_test() -> List[str]:
    """The families this run tests (one in a matrix env, all importable otherwise)."""
    fam = expected_family()
    if fam:
        return [fam]
    found = []
    if _importable("keras"):
        import keras

        from compat_clone.families.registry import family_for  # the one version -> family rule

        found.append(family_for("keras", keras.__version__))
    if "tf_keras" not in found and _importable("tf_keras"):
        found.append("tf_keras")
    return found


def keras_module(family: str) -> Any:
    """The importable Keras module that serves `family` in this environment (the family registry's answer)."""
    from compat_clone.families.installed import keras_module as registry_keras_module

    return registry_keras_module(family)
