"""Where compat_clone keeps what it builds for a user: the per-user cache folder.

One rule for the whole distribution: `compat-clone convert` keeps its
environments there, and `compat-clone matrix --declared` / ``--bisect`` the
environments they derive from the table.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

__all__ = ["user_cache_dir"]


def user_cache_dir() -> Path:
    """compat_clone's per-user cache folder, where the platform keeps caches.

    ``$XDG_CACHE_HOME/compat-clone`` (default ``~/.cache/compat-clone``) on Linux
    and other Unix; ``~/Library/Caches/compat-clone`` on macOS;
    ``%LOCALAPPDATA%\\compat-clone\\Cache`` on Windows.

    Returns:
        The folder (not created here).

    Example:

    >>> user_cache_dir().name in ("compat-clone", "Cache")
    True
    """
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or str(Path.home() / "AppData" / "Local")
        return Path(base) / "compat-clone" / "Cache"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "compat-clone"
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".cache") / "compat-clone"
