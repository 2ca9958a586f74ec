"""What Python 3.7 lacks, decided once for the matrix: ``importlib.metadata`` (3.8).

The matrix's pytest plugin and fix-ups run in every environment, Python 3.7
included; the matrix imports nothing private of compat_clone, so it keeps
its own copy of this decision.
"""

from __future__ import annotations

import sys

if sys.version_info >= (3, 8):
    from importlib import metadata
else:  # pragma: no cover - Python 3.7
    # the backport, a dependency of compat-clone with marker python_version < "3.8"
    import importlib_metadata as metadata

__all__ = ["metadata"]
