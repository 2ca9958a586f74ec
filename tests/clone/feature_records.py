"""Feature records for the matrix's report: one JSON line per feature and side.

Written to ``$COMPAT_CLONE_RESULTS/<env>.jsonl`` when the matrix runner sets
the variable (nothing is written outside a matrix run);
``compat_clone_matrix/results.py`` reads them back for COMPATIBILITY.md.
Used by tests/clone/test_features.py and tests/clone/test_zoo.py.
"""

from __future__ import annotations

import json
import os
from typing import Any, Iterable, Mapping


def write_records(K: Any, records: Iterable[Mapping[str, str]]) -> None:
    """Appends `records` (``feature``, ``description``, ``side``, ``outcome``, ``detail``), each
    tagged with the environment and the Keras that `K` is, in one write (safe across xdist workers)."""
    folder = os.environ.get("COMPAT_CLONE_RESULTS")
    if not folder:
        return
    os.makedirs(folder, exist_ok=True)
    env = os.environ.get("COMPAT_CLONE_ENV", "default")
    keras = f"{K.__name__.split('.')[0]} {K.__version__}"
    lines = [json.dumps({"env": env, **record, "detail": record.get("detail", "")[:300], "keras": keras}) for record in records]
    with open(os.path.join(folder, f"{env}.jsonl"), "a", encoding="utf-8") as fh:
        fh.write("".join(line + "\n" for line in lines))
