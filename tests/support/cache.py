"""Where the suite keeps what it can reuse across runs and clones: the user's cache folder, never the checkout.

What is kept there is named by its content, so that a fresh clone (CI's run,
a second checkout) reads what an earlier one made, as uv reads its wheels
from its own cache: the old releases' conversion sources
(tests/convert/source_cache.py) and JAX's compiled programs (tests/conftest.py
sets ``JAX_COMPILATION_CACHE_DIR``; JAX names each by the program, its JAX
and jaxlib, and its flags).

The folder is ``$COMPAT_CLONE_TEST_CACHE``, else the one `compat-clone convert`
keeps its environments in (``compat_clone_matrix.paths.user_cache_dir``:
``~/.cache/compat-clone`` on Linux, ``$XDG_CACHE_HOME`` where set). Where it
cannot be made (a read-only home), the caller's fallback under the matrix
folder is used.

Python 3.7+, importing no framework: the writer environments import it.
"""

from __future__ import annotations

import os
from pathlib import Path

from compat_clone_matrix.paths import user_cache_dir

__all__ = ["cache_dir"]


def cache_dir(name: str, fallback: Path) -> Path:
    """The folder `name` of the suite's cache (made if missing), or `fallback` where it cannot be made.

    Args:
        name: the kind of entries (``sources``, ``jax``).
        fallback: the folder to use where the user's cache folder is not writable.

    Returns:
        An absolute folder that exists.

    Raises:
        OSError: neither folder can be made and written.
    """
    base = os.environ.get("COMPAT_CLONE_TEST_CACHE")
    chosen = Path(base) / name if base else user_cache_dir() / name
    for folder in (chosen, fallback):
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError:
            continue
        if os.access(str(folder), os.W_OK):
            return folder.resolve()
    raise OSError(f"no writable folder for the suite's {name} cache: {chosen} nor {fallback}")
