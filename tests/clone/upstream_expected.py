"""Where Keras's own `cloning_test.py` is expected to differ through compat_clone.

`tests/clone/test_upstream_keras3.py` requires every upstream test that passes
with the native `clone_model` to pass through `compat_clone.clone_model`.
A row here is the one way out of that rule, and only for a test that asserts
a *native bug that compat_clone fixes* (``fails="compat"``), or that fails
natively on a bug compat_clone fixes and is worth pinning as a pass
(``fails="native"``). A row is checked both ways: where it applies, the
difference must still be there, so a row that stops differing fails the
runner and has to be removed.

A compat_clone bug is never a row: it fails the runner until it is fixed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Tuple

from packaging.specifiers import SpecifierSet
from packaging.version import Version


@dataclass(frozen=True)
class ExpectedDifference:
    test: str
    """``Class::test_name`` as the runner reports it (parametrized ids included)."""
    fails: str
    """``"compat"``: passes natively, fails through compat_clone; ``"native"``: the reverse."""
    reason: str
    """Why: the native bug, with its upstream issue where there is one."""
    keras: str = ""
    """The Keras versions it applies to, as a specifier (``">=3.0,<3.4"``); empty: all."""
    backends: Tuple[str, ...] = ()
    """The backends it applies to; empty: all."""

    def applies(self, keras_version: str, backend: str) -> bool:
        if self.keras and Version(keras_version) not in SpecifierSet(self.keras):
            return False
        return not self.backends or backend in self.backends


EXPECTED_DIFFERENCES: Tuple[ExpectedDifference, ...] = ()
