"""`compat-clone migrate --models DIR`: the saved Keras 2 models under DIR, each with its convert command.

Reads every candidate with `compat_clone.tools.saved_models` (no framework is
imported): Keras 2 models (standalone Keras, tf.keras, tf_keras; ``.h5``,
``.keras``, SavedModel folders) are listed with the ``compat-clone convert``
command that turns each into a Keras 3 ``.keras`` file; Keras 3 files are
listed as already Keras 3; a file that cannot be converted is named with the
reason.
"""

from __future__ import annotations

import os
import shlex
import sys
from typing import Collection, List, Set

from compat_clone.families.registry import entry

__all__ = ["list_models", "suggested_output"]


def suggested_output(path: str, taken: Collection[str] = ()) -> str:
    """Where the Keras 3 file of the model at `path` could go: beside it, ``.keras``, never over it.

    Args:
        path: the saved model (file or SavedModel folder).
        taken: names already suggested for other models.

    Returns:
        ``model.h5`` -> ``model.keras``; ``model.keras`` or a name taken -> ``model_keras3.keras``.

    Example:

    >>> suggested_output("models/old.h5")  # doctest: +SKIP
    'models/old.keras'
    """
    base = path.rstrip(os.sep)
    stem = os.path.splitext(base)[0] if os.path.isfile(base) else base
    candidates = [stem + ".keras", stem + "_keras3.keras"]
    candidates += [f"{stem}_keras3_{n}.keras" for n in range(2, len(taken) + 3)]
    return next(c for c in candidates if not os.path.exists(c) and c not in taken)


def list_models(folder: str) -> int:
    """Prints the saved models under `folder` and how to convert each; returns the exit status.

    Args:
        folder: a folder to walk (or one model).

    Returns:
        0 when every candidate was read; 2 when `folder` does not exist or a
        candidate could not be (each named on stderr with the reason).
    """
    from compat_clone.tools.saved_models import find_models

    if not os.path.exists(folder):
        print(f"{folder}: no such file or folder. Expected a folder holding saved models.", file=sys.stderr)
        return 2
    convert: List[str] = []
    done: List[str] = []
    problems: List[str] = []
    taken: Set[str] = set()
    for info in find_models(folder):
        if info.family is not None and entry(info.family).conversion_target:
            done.append(f"{info.path}: {info.describe()}: already Keras 3, nothing to convert")
        elif info.problem is not None:
            problems.append(f"{info.path}: cannot be converted: {info.problem}")
        else:
            output = suggested_output(info.path, taken)
            taken.add(output)
            command = " ".join(
                shlex.quote(a) for a in ["compat-clone", "convert", info.path, "-o", output, "--from", str(info.env)]
            )
            convert.append(f"{info.path}: {info.describe()}\n    {command}")
    for line in convert + done:
        print(line, flush=True)
    for line in problems:
        print(line, file=sys.stderr, flush=True)
    print(f"{len(convert)} Keras 2 model(s) to convert, {len(done)} already Keras 3, {len(problems)} not convertible.")
    return 2 if problems else 0
