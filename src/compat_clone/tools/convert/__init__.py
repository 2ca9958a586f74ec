"""`compat-clone convert`: a saved Keras 2 model to a Keras 3 `.keras` file, with a proof.

Standalone Keras 2 and tf.keras <= 2.15 cannot share a process with Keras 3,
so the conversion runs in two interpreters joined by a file:

1. the source's environment (``--from``; default: the matrix environment of
   the family and version recorded in the file, `compat_clone.tools.saved_models`)
   loads the model and writes its neutral description
   (`compat_clone.convert.describe` / `save`, one ``.npz`` in a temporary folder);
2. a Keras 3 environment (``--to``; default ``keras-3.15-<backend>``) rebuilds
   it (`compat_clone.convert.rebuild`), compares its outputs with the
   source's on the probe inputs (`verify`), saves the ``.keras`` file, loads
   it back and compares again.

``NEW.keras`` appears (in one rename) only when the proof passes; the
per-output max abs / rel differences are printed either way. Matrix
environments are built with uv exactly as `compat-clone matrix` builds them,
or reused when they are there. Each half is
``python -m compat_clone.tools.convert._worker describe|rebuild ...``.
"""

from __future__ import annotations

from compat_clone.tools.convert.cli import EXIT_FAILED, EXIT_OK, EXIT_USAGE, add_arguments, run

__all__ = ["EXIT_OK", "EXIT_FAILED", "EXIT_USAGE", "add_arguments", "run"]
