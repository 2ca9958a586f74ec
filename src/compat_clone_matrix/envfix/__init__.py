"""Runtime fix-ups for the project's *test environments* (not public API).

Some matrix environments run a Keras release on a TensorFlow / Python it was
never released for (standalone Keras 2.2.x on TF 2.15 / Python 3.11). Such an
environment needs a fix-up to run before `keras` is first imported. The
matrix runner installs it with `install_into`, which writes one `.pth` file
into the environment's site-packages. That `.pth` line registers a small
`sys.meta_path` finder; the finder does nothing until the first `import
keras`, then removes itself, runs the fix-up, and lets the normal import
proceed. Processes that never import `keras` (pip, uv, `python -c ...`) pay
only for importing this small module, never for TensorFlow.

The table of fix-ups is data: `FIXUPS` maps a fix-up name (the `fixup = ...`
field of an environment in the matrix table) to the module whose `apply()`
runs it, and to the top-level module names whose first import triggers it.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
from typing import Any, Dict, Sequence, Tuple

__all__ = ["FIXUPS", "install_into", "activate", "apply_now", "pth_filename"]

# fix-up name -> (module with `apply()`, top-level imports that trigger it)
FIXUPS: Dict[str, Tuple[str, Tuple[str, ...]]] = {
    "keras2_on_tf2": ("compat_clone_matrix.envfix.keras2_on_tf2", ("keras",)),
}


def _check_name(fixup_name: str) -> Tuple[str, Tuple[str, ...]]:
    try:
        return FIXUPS[fixup_name]
    except KeyError:
        raise ValueError(
            f"Unknown environment fix-up {fixup_name!r}. Expected one of: "
            f"{', '.join(sorted(FIXUPS))}. Check the `fixup` field of the "
            "environment in the matrix table."
        ) from None


def pth_filename(fixup_name: str) -> str:
    """The name of the `.pth` file `install_into` writes for a fix-up."""
    _check_name(fixup_name)
    return f"compat_clone_envfix_{fixup_name}.pth"


def apply_now(fixup_name: str) -> None:
    """Runs a fix-up immediately (idempotent)."""
    module, _ = _check_name(fixup_name)
    importlib.import_module(module).apply()


class _LazyFixupFinder:
    """A `sys.meta_path` finder that runs a fix-up on the first trigger import.

    It never finds anything itself: on the first `import <trigger>` it removes
    itself from `sys.meta_path`, runs the fix-up, and returns None so the
    regular finders import the module (the fix-up may import it first; the
    import system then uses `sys.modules`).
    """

    def __init__(self, fixup_name: str, triggers: Sequence[str]) -> None:
        self.fixup_name = fixup_name
        self.triggers = frozenset(triggers)

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> None:
        if fullname not in self.triggers:
            return None
        with contextlib.suppress(ValueError):
            sys.meta_path.remove(self)
        apply_now(self.fixup_name)
        return None

    def __repr__(self) -> str:
        return f"<compat_clone_matrix.envfix lazy fix-up {self.fixup_name!r}>"


def activate(fixup_name: str) -> None:
    """Registers the lazy fix-up hook in this process (called from the `.pth`).

    If a trigger module is imported already, the fix-up cannot run before it:
    nothing is registered (the environment variable
    ``COMPAT_CLONE_NO_ENVFIX=1`` also disables the hook, to debug the bare
    environment).
    """
    if os.environ.get("COMPAT_CLONE_NO_ENVFIX"):
        return
    _, triggers = _check_name(fixup_name)
    if any(name in sys.modules for name in triggers):
        return
    for finder in sys.meta_path:
        if isinstance(finder, _LazyFixupFinder) and finder.fixup_name == fixup_name:
            return
    sys.meta_path.insert(0, _LazyFixupFinder(fixup_name, triggers))


def install_into(site_packages_dir: os.PathLike[str] | str, fixup_name: str) -> str:
    """Installs a fix-up into an environment: writes one `.pth` file.

    Called by the matrix runner for every environment whose table entry has
    ``fixup = "<name>"``, after `compat_clone` itself is installed in that
    environment (the `.pth` line imports `compat_clone_matrix.envfix`). Idempotent:
    the file is rewritten with the same content. Remove the file to uninstall.

    Args:
        site_packages_dir: the environment's site-packages folder, e.g.
            ``.matrix/k224/lib/python3.11/site-packages`` (what
            ``<env>/bin/python -c "import sysconfig;
            print(sysconfig.get_paths()['purelib'])"`` prints).
        fixup_name: a key of `FIXUPS`, e.g. ``"keras2_on_tf2"``.

    Returns:
        The path of the `.pth` file written.

    Raises:
        ValueError: unknown `fixup_name`.
        FileNotFoundError: `site_packages_dir` is not a folder.

    Example:

    >>> from compat_clone_matrix import envfix as _envfix
    >>> _envfix.install_into(".matrix/k224/lib/python3.11/site-packages",
    ...                      "keras2_on_tf2")  # doctest: +SKIP
    '.matrix/k224/lib/python3.11/site-packages/compat_clone_envfix_keras2_on_tf2.pth'
    """
    filename = pth_filename(fixup_name)
    folder = os.fspath(site_packages_dir)
    if not os.path.isdir(folder):
        raise FileNotFoundError(
            f"Expected `site_packages_dir` to be an environment's site-packages "
            f"folder. Received: {folder!r}, which is not a folder."
        )
    # A `.pth` line starting with `import` is executed at interpreter start-up
    # (after the editable-install `.pth` files, which sort before it). A
    # broken line must not break the interpreter: guard it.
    line = (
        'import sys; exec("try:\\n import compat_clone_matrix.envfix as _m; '
        f"_m.activate({fixup_name!r})\\nexcept Exception as _e:\\n "
        "sys.stderr.write('compat_clone env fix-up not installed: %r\\\\n' % (_e,))\")\n"
    )
    path = os.path.join(folder, filename)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(line)
    return path
