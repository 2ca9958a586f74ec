"""Where the environment fix-ups lived before the matrix became `compat_clone_matrix`.

An environment built before the move holds a ``.pth`` line that imports
``compat_clone.tools.envfix`` and calls its `activate`. `compat-clone matrix`
rewrites that line on its next run, but `compat-clone convert` uses a built
environment as it is: this module forwards the old line to
`compat_clone_matrix.envfix` for one release.
"""

from __future__ import annotations

from compat_clone_matrix.envfix import activate

__all__ = ["activate"]
