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

__all__ = [
    "FORMAT",
    "Description",
    "LayerOutput",
    "LayerOutputs",
    "ProbeSet",
    "SlotRecord",
    "TrainingState",
    "TrainingStep",
    "WeightRecord",
]

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
class SlotRecord:
    """One optimizer slot of one model variable (Adam's first moment of a kernel, say).

    Attributes:
        layer: the path of the layer holding the model variable (as `WeightRecord.layer`).
        index: the variable's position in that layer's ``weights`` (as `WeightRecord.index`).
        role: what the slot is, by Keras 3's name for it (``momentum``,
            ``velocity``, ``velocity_hat``, ``accumulator``, ...; `_optimizers`).
        value: its value, shaped as the variable.
    """

    layer: str
    index: int
    role: str
    value: np.ndarray


@dataclasses.dataclass
class TrainingStep:
    """One training step the source took on a fixed batch, for the proof of the training state.

    Attributes:
        inputs: the batch's inputs, one array per model input.
        targets: its targets, one array per model output.
        loss: the loss the source's `train_on_batch` returned (before the step).
        weights: every weight of every layer after the step (`WeightRecord`).
    """

    inputs: List[np.ndarray]
    targets: List[np.ndarray]
    loss: float
    weights: List[WeightRecord]


@dataclasses.dataclass
class TrainingState:
    """What a compiled Keras 2 model holds for training: its compile configuration and its optimizer's state.

    Attributes:
        loss: the loss as the source compiled it, serialized by its Keras: a
            name, ``{"class_name", "config"}``, or a list / dict of them per output.
        metrics: the metrics, serialized the same way (None: none).
        weighted_metrics: the weighted metrics (None: none).
        loss_weights: the loss weights, a list or a dict per output (None: none).
        optimizer: ``{"class_name", "config", "api"}``: the optimizer's class
            and hyperparameters (its `get_config()`), and which optimizer API of
            the source it is (``"keras2"`` standalone Keras 2, ``"optimizer_v2"``
            tf.keras <= 2.10 and ``optimizers.legacy``, ``"optimizer"`` tf.keras 2.11+ and tf_keras).
        iterations: the optimizer's iteration count.
        slots: each slot variable, tied to its model variable (`SlotRecord`).
        scalars: the optimizer's other state by role (Nadam's ``u_product``).
        uncarried: what the source holds and the conversion cannot carry, one sentence each.
        step: one step of training the source took on a fixed batch (None: not taken, `step_note` says why).
        step_note: why no step was recorded ("" when one was).
    """

    loss: Any
    metrics: Any
    weighted_metrics: Any
    loss_weights: Any
    optimizer: Dict[str, Any]
    iterations: int
    slots: List[SlotRecord] = dataclasses.field(default_factory=list)
    scalars: Dict[str, float] = dataclasses.field(default_factory=dict)
    uncarried: List[str] = dataclasses.field(default_factory=list)
    step: Optional[TrainingStep] = None
    step_note: str = ""


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
        training: the compile configuration and optimizer state
            (`TrainingState`), described only when asked (``compile=True``);
            None otherwise.
    """

    source: Dict[str, str]
    architecture: Dict[str, Any]
    weights: List[WeightRecord]
    probes: List[ProbeSet]
    notes: List[Dict[str, Any]]
    format: str = FORMAT
    layer_outputs: LayerOutputs = dataclasses.field(default_factory=LayerOutputs)
    training: Optional[TrainingState] = None

    def weights_of(self, layer: str) -> List[WeightRecord]:
        """The weights of the layer at path `layer`, in their source order."""
        return sorted((w for w in self.weights if w.layer == layer), key=lambda w: w.index)

    def notes_for(self, layer: str) -> List[Dict[str, Any]]:
        """The notes about the layer at path `layer`."""
        return [n for n in self.notes if n.get("layer") == layer]
