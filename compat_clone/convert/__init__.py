"""Keras 2 models (standalone keras 2.x, tf.keras, tf_keras) to Keras 3.

Two halves joined by a neutral description, because standalone Keras 2 and
tf.keras <= 2.15 cannot share a process with Keras 3:

* `describe(model)` (in the source's environment) -> `Description`:
  architecture, weights, probe inputs and the source's outputs on them;
* `save(description, path)` / `load(path)`: the description as one `.npz`;
* `rebuild(description)` (in a Keras 3 environment) -> a Keras 3 model;
* `verify(description, model)` -> `Proof`: outputs compared on the probes.

`convert(model)` does all of it in one process, where both Kerases import.
Importing this package imports no framework.
"""

from __future__ import annotations

from typing import Any

from compat_clone.convert._describe import FORMAT, Description, ProbeSet, WeightRecord, describe
from compat_clone.convert._io import load, save

__all__ = [
    "FORMAT",
    "Description",
    "ProbeSet",
    "WeightRecord",
    "describe",
    "save",
    "load",
]


def __getattr__(name: str) -> Any:
    raise AttributeError(f"module 'compat_clone.convert' has no attribute {name!r}")
