"""The conversion's format: a Keras 2 model as neutral data.

A `Description` is what passes between the two halves of a conversion:
`describe` (the Keras 2 side, `_describe`) writes one, `save` / `load`
(`_io`) move it through a file, `rebuild` (the Keras 3 side, `_rebuild`) and
`verify` (`_proof`) read it. It holds plain JSON-able data and NumPy arrays,
nothing of either framework, so this module imports NumPy only and neither
half owns it. `FORMAT` names its layout; `_io` writes it into every file
and refuses a file of another one.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Dict, List, Optional

import numpy as np

__all__ = ["FORMAT", "Description", "LayerOutput", "LayerOutputs", "ProbeSet", "WeightRecord"]

#: the version of the description's layout; `load` refuses any other
FORMAT = "compat_clone.convert/1"


@dataclasses.dataclass
class WeightRecord:
    """One weight of one layer, as the source names it.

    Attributes:
        layer: the layer's path from the top model, ``"/"``-joined names
            (``"encoder/dense"`` for a layer of the nested model ``encoder``).
        index: its position in the layer's ``weights`` list.
        name: the source's variable name (``"dense/kernel:0"``).
        value: the value, a NumPy array.
    """

    layer: str
    index: int
    name: str
    value: np.ndarray


@dataclasses.dataclass
class ProbeSet:
    """Inputs given to the source model, and what it answered.

    Attributes:
        origin: ``"random"`` (drawn by `describe`) or ``"user"``.
        inputs: one array per model input, in the model's input order.
        outputs: one array per model output, in the model's output order.
        masks: per output, the Keras mask the source computed for it (a
            boolean array over its leading dimensions, e.g. batch x steps),
            or None where the output carries no mask (empty: no output
            carries one). Values at masked
            positions mean nothing to Keras, and the families disagree on
            them (an RNN's masked steps hold zeros or the previous step's
            output), so `verify` compares only the unmasked positions.
    """

    origin: str
    inputs: List[np.ndarray]
    outputs: List[np.ndarray]
    masks: List[Optional[np.ndarray]] = dataclasses.field(default_factory=list)

    def mask_of(self, k: int) -> Optional[np.ndarray]:
        """The mask of output `k`, or None."""
        return self.masks[k] if k < len(self.masks) else None


@dataclasses.dataclass
class LayerOutput:
    """One output of one call of a layer, on the first probe sample.

    Attributes:
        layer: the layer's name in the top model (a nested model's name for
            the whole nested model).
        value: the output, batch of 1 first.
        mask: the Keras mask the source computed for it (positions not
            compared), or None.
    """

    layer: str
    value: np.ndarray
    mask: Optional[np.ndarray] = None


@dataclasses.dataclass
class LayerOutputs:
    """The layers' outputs a description holds, in graph order.

    Attributes:
        records: one `LayerOutput` per output of each layer call, in the
            order the model's graph runs them (a layer called twice: both
            calls', in that order).
        note: what is missing and why ("" when every layer is there), e.g.
            the layers after the byte budget, or why none were recorded.
    """

    records: List[LayerOutput] = dataclasses.field(default_factory=list)
    note: str = "not recorded (the description was written by a compat_clone that did not record them)"


@dataclasses.dataclass
class Description:
    """A Keras 2 model as neutral data: architecture, weights, probes, notes.

    Attributes:
        source: ``family``, ``package``, ``version``, ``backend`` of the
            model (`compat_clone.family_of`), and ``python``.
        architecture: ``{"class_name": ..., "config": ...}``, the model's
            config as its Keras writes it to JSON (per-layer class names,
            configs and inbound nodes, nested models inside).
        weights: every weight of every layer (`WeightRecord`), nested models'
            layers under their path.
        probes: inputs and the source's outputs on them (`ProbeSet`).
        notes: what could not be described as data, one dict per finding:
            ``{"kind": ..., "layer": ..., "detail": ...}`` (e.g. a `Lambda`
            whose function uses TensorFlow).
        format: the layout version, `FORMAT`.
        layer_outputs: each layer's outputs on the first sample of the
            first probe set, in graph order, within a byte budget
            (`LayerOutputs`): where a failed proof names the layer whose
            outputs first differ.
    """

    source: Dict[str, str]
    architecture: Dict[str, Any]
    weights: List[WeightRecord]
    probes: List[ProbeSet]
    notes: List[Dict[str, Any]]
    format: str = FORMAT
    layer_outputs: LayerOutputs = dataclasses.field(default_factory=LayerOutputs)

    def weights_of(self, layer: str) -> List[WeightRecord]:
        """The weights of the layer at path `layer`, in their source order."""
        return sorted((w for w in self.weights if w.layer == layer), key=lambda w: w.index)

    def notes_for(self, layer: str) -> List[Dict[str, Any]]:
        """The notes about the layer at path `layer`."""
        return [n for n in self.notes if n.get("layer") == layer]
