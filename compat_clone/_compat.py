"""What Python 3.7 lacks, decided once: ``importlib.metadata`` (3.8) and ``importlib.resources.files`` (3.9).

Standalone Keras 2 users run TensorFlow 1.15 on Python 3.6 / 3.7; compat_clone
installs there (``requires-python >= 3.7``), so its modules import these names
from here, never from the standard library directly.
"""

from __future__ import annotations

import sys

if sys.version_info >= (3, 8):
    from importlib import metadata
else:  # pragma: no cover - Python 3.7: the backport, a dependency with marker python_version < "3.8"
    import importlib_metadata as metadata

__all__ = ["metadata", "package_text"]


def package_text(package: str, name: str) -> str:
    """The text of data file `name` shipped inside `package` (UTF-8)."""
    from importlib import resources

    files = getattr(resources, "files", None)  # Python >= 3.9
    if files is not None:
        text: str = files(package).joinpath(name).read_text(encoding="utf-8")
        return text
    return resources.read_text(package, name, encoding="utf-8")  # Python 3.7 / 3.8


def add_note(exc: BaseException, note: str) -> None:
    """``exc.add_note(note)`` (Python >= 3.11); before that the note goes to ``exc.__notes__``
    (where the backports and tracebacks of 3.11 look) and is shown as a RuntimeWarning."""
    method = getattr(exc, "add_note", None)
    if method is not None:
        method(note)
        return
    notes = getattr(exc, "__notes__", None)
    if not isinstance(notes, list):
        notes = []
        try:
            exc.__notes__ = notes
        except AttributeError:  # pragma: no cover - an exception type with __slots__
            pass
    notes.append(note)
    import warnings

    warnings.warn(note, RuntimeWarning, stacklevel=3)
