"""What Python 3.7 lacks, decided once: ``importlib.metadata`` and ``typing.Protocol`` (3.8).

Standalone Keras 2 users run TensorFlow 1.15 on Python 3.6 / 3.7; compat_clone
installs there (``requires-python >= 3.7``), so its modules import these names
from here, never from the standard library directly.
"""

from __future__ import annotations

import sys

if sys.version_info >= (3, 8):
    from importlib import metadata
    from typing import Protocol
else:  # pragma: no cover - Python 3.7
    # importlib.metadata: the backport, a dependency with marker python_version < "3.8";
    # Protocol: only mypy reads a protocol (on a newer Python), so a plain base class does here.
    import importlib_metadata as metadata

    Protocol = object

__all__ = ["metadata", "Protocol"]
