"""A `Description` in one file, for `describe` and `rebuild` in two environments.

The file is a NumPy ``.npz`` archive (``numpy.savez_compressed``), read with
``allow_pickle=False``: nothing in it can run code when loaded.

Entries:

* ``description.json`` -- a 0-d unicode array holding UTF-8 JSON::

      {
        "format": "compat_clone.convert/1",
        "source": {"family": ..., "package": ..., "version": ...,
                   "backend": ..., "python": ...},
        "architecture": {"class_name": ..., "config": {...}},
        "notes": [{"kind": ..., "layer": ..., ...}, ...],
        "weights": [{"layer": "encoder/dense", "index": 0,
                     "name": "dense/kernel:0", "array": "w/0"}, ...],
        "probes": [{"origin": "random" | "user",
                    "inputs": ["p/0/in/0", ...],
                    "outputs": ["p/0/out/0", ...],
                    "masks": ["p/0/mask/0" | null, ...]}, ...],
        "layer_outputs": {"records": [{"layer": "dense", "array": "o/0",
                                       "mask": "o/0/mask" | null}, ...],
                          "note": ""},
        "training": {"loss": ..., "metrics": ..., "weighted_metrics": ...,
                     "loss_weights": ..., "optimizer": {"class_name": ...,
                     "config": {...}, "api": ...}, "iterations": 12,
                     "scalars": {...}, "uncarried": [...], "step_note": "",
                     "slots": [{"layer": ..., "index": 0, "role": "momentum",
                                "array": "s/0"}, ...],
                     "step": {"inputs": ["t/in/0"], "targets": ["t/y/0"],
                              "loss": 0.7, "weights": [{..., "array": "t/w/0"}]}
                              | null}
      }

* ``w/<n>`` -- the value of the n-th weight record;
* ``p/<i>/in/<k>`` and ``p/<i>/out/<k>`` -- probe set i's k-th input and
  the source's k-th output on it;
* ``p/<i>/mask/<k>`` -- the Keras mask the source computed for that output
  (only for outputs that carry one; ``masks`` may be absent: no masks);
* ``o/<n>`` and ``o/<n>/mask`` -- the n-th recorded layer output on the
  first probe sample, and its mask (`LayerOutputs`). ``layer_outputs`` was
  added within format 1: a file without it loads with none recorded, and a
  reader that predates it ignores it.
* ``s/<n>``, ``t/in/<k>``, ``t/y/<k>``, ``t/w/<n>`` -- the training state's
  slots, and its step's inputs, targets and weights after the step
  (`TrainingState`; ``training`` is absent when it was not described).

``format`` names the layout; `load` refuses a file without it or with
another one (a newer writer, or a file that is not a description), saying
which it found.
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, List, Optional, Union

import numpy as np

from compat_clone.convert._format import (
    FORMAT,
    Description,
    LayerOutput,
    LayerOutputs,
    ProbeSet,
    SlotRecord,
    TrainingState,
    TrainingStep,
    WeightRecord,
)
from compat_clone.errors import DescriptionFileError, InvalidArgumentError

__all__ = ["save", "load"]

_JSON_ENTRY = "description.json"

PathLike = Union[str, "os.PathLike[str]"]


def save(description: Description, path: PathLike) -> str:
    """Writes `description` to one ``.npz`` file.

    The file is written next to its destination under a temporary name and
    moved into place once complete, so a failed save leaves no file.

    Args:
        description: what `describe` returned.
        path: where to write; ``.npz`` is appended when missing.

    Returns:
        The path written.

    Raises:
        InvalidArgumentError: `description` is not a `Description`.
        OSError: the file cannot be written.

    Example:

    >>> from compat_clone.convert import describe, save, load
    >>> path = save(describe(model), "/tmp/model.npz")   # doctest: +SKIP
    >>> load(path).source["family"]                        # doctest: +SKIP
    'tf_keras'
    """
    if not isinstance(description, Description):
        raise InvalidArgumentError(
            f"Expected a `Description` (from `compat_clone.convert.describe`). Received: {type(description).__name__}."
        )
    target = os.fspath(path)
    if not target.endswith(".npz"):
        target += ".npz"
    arrays: Dict[str, np.ndarray] = {}
    weights: List[Dict[str, Any]] = []
    for n, record in enumerate(description.weights):
        key = f"w/{n}"
        arrays[key] = np.asarray(record.value)
        weights.append({"layer": record.layer, "index": record.index, "name": record.name, "array": key})
    probes: List[Dict[str, Any]] = []
    for i, probe in enumerate(description.probes):
        entry: Dict[str, Any] = {"origin": probe.origin, "inputs": [], "outputs": []}
        for side, values in (("in", probe.inputs), ("out", probe.outputs)):
            for k, value in enumerate(values):
                key = f"p/{i}/{side}/{k}"
                arrays[key] = np.asarray(value)
                entry["inputs" if side == "in" else "outputs"].append(key)
        if any(m is not None for m in probe.masks):
            entry["masks"] = []
            for k, mask in enumerate(probe.masks):
                key = f"p/{i}/mask/{k}"
                if mask is not None:
                    arrays[key] = np.asarray(mask, dtype=bool)
                entry["masks"].append(None if mask is None else key)
        probes.append(entry)
    document = {
        "format": description.format,
        "source": description.source,
        "architecture": description.architecture,
        "notes": description.notes,
        "weights": weights,
        "probes": probes,
        "layer_outputs": _layer_outputs_entry(description.layer_outputs, arrays),
    }
    if description.training is not None:
        document["training"] = _training_entry(description.training, arrays)
    arrays[_JSON_ENTRY] = np.array(json.dumps(document))
    temporary = f"{target}.{os.getpid()}.partial.npz"
    try:
        with open(temporary, "wb") as handle:
            np.savez_compressed(handle, **arrays)  # type: ignore[arg-type]
        os.replace(temporary, target)
    finally:
        if os.path.exists(temporary):
            os.remove(temporary)
    return target


def load(path: PathLike) -> Description:
    """Reads a `Description` written by `save`.

    Args:
        path: the ``.npz`` file.

    Returns:
        The `Description`.

    Raises:
        DescriptionFileError: the file is not a description, or of another
            format version.
        FileNotFoundError: there is no such file.

    Example:

    >>> from compat_clone.convert import load
    >>> description = load("/tmp/model.npz")   # doctest: +SKIP
    """
    target = os.fspath(path)
    try:
        archive = np.load(target, allow_pickle=False)
    except (ValueError, OSError) as exc:
        if isinstance(exc, FileNotFoundError):
            raise
        raise DescriptionFileError(
            f"Cannot read {target!r} as a model description: {exc}. Expected a `.npz` "
            "file written by `compat_clone.convert.save`."
        ) from exc
    with archive:
        if not hasattr(archive, "files") or _JSON_ENTRY not in archive.files:
            raise DescriptionFileError(
                f"{target!r} is not a model description: it has no {_JSON_ENTRY!r} entry "
                f"(found {sorted(getattr(archive, 'files', []))[:5]}). Write it with "
                "`compat_clone.convert.save(describe(model), path)`."
            )
        try:
            document = json.loads(str(archive[_JSON_ENTRY][()]))
        except ValueError as exc:
            raise DescriptionFileError(f"{target!r}: its {_JSON_ENTRY!r} is not JSON: {exc}.") from exc
        found = document.get("format") if isinstance(document, dict) else None
        if found != FORMAT:
            raise DescriptionFileError(
                f"{target!r} holds a description of format {found!r}; this compat_clone "
                f"reads {FORMAT!r}. Describe the model again with this version of "
                "compat_clone (or install the version that wrote it)."
            )
        try:
            weights = [WeightRecord(w["layer"], int(w["index"]), w["name"], archive[w["array"]]) for w in document["weights"]]
            probes = [
                ProbeSet(
                    p["origin"],
                    [archive[k] for k in p["inputs"]],
                    [archive[k] for k in p["outputs"]],
                    [None if k is None else archive[k] for k in p.get("masks", [])],
                )
                for p in document["probes"]
            ]
            return Description(
                source=document["source"],
                architecture=document["architecture"],
                weights=weights,
                probes=probes,
                notes=document["notes"],
                format=found,
                layer_outputs=_read_layer_outputs(document, archive),
                training=_read_training(document.get("training"), archive),
            )
        except KeyError as exc:
            raise DescriptionFileError(
                f"{target!r} is an incomplete description: missing {exc}. Write it again with `compat_clone.convert.save`."
            ) from exc


def _layer_outputs_entry(recorded: LayerOutputs, arrays: Dict[str, np.ndarray]) -> Dict[str, Any]:
    """The ``layer_outputs`` entry of the JSON, its arrays added to `arrays` (``o/<n>``, ``o/<n>/mask``)."""
    records: List[Dict[str, Any]] = []
    for n, rec in enumerate(recorded.records):
        arrays[f"o/{n}"] = np.asarray(rec.value)
        if rec.mask is not None:
            arrays[f"o/{n}/mask"] = np.asarray(rec.mask, dtype=bool)
        records.append({"layer": rec.layer, "array": f"o/{n}", "mask": None if rec.mask is None else f"o/{n}/mask"})
    return {"records": records, "note": recorded.note}


def _read_layer_outputs(document: Dict[str, Any], archive: Any) -> LayerOutputs:
    """The `LayerOutputs` of a loaded description (none recorded, said so, in a file written before them)."""
    entry = document.get("layer_outputs")
    if entry is None:
        return LayerOutputs()
    records = [
        LayerOutput(r["layer"], archive[r["array"]], None if r.get("mask") is None else archive[r["mask"]])
        for r in entry["records"]
    ]
    return LayerOutputs(records, str(entry.get("note", "")))


def _training_entry(state: TrainingState, arrays: Dict[str, np.ndarray]) -> Dict[str, Any]:
    """The ``training`` entry of the JSON, its arrays added to `arrays` (``s/<n>``, ``t/...``)."""
    slots = []
    for n, slot in enumerate(state.slots):
        arrays[f"s/{n}"] = np.asarray(slot.value)
        slots.append({"layer": slot.layer, "index": slot.index, "role": slot.role, "array": f"s/{n}"})
    step: Optional[Dict[str, Any]] = None
    if state.step is not None:
        step = {"inputs": [], "targets": [], "loss": state.step.loss, "weights": []}
        for side, values in (("in", state.step.inputs), ("y", state.step.targets)):
            for k, value in enumerate(values):
                arrays[f"t/{side}/{k}"] = np.asarray(value)
                step["inputs" if side == "in" else "targets"].append(f"t/{side}/{k}")
        for n, record in enumerate(state.step.weights):
            arrays[f"t/w/{n}"] = np.asarray(record.value)
            step["weights"].append({"layer": record.layer, "index": record.index, "name": record.name, "array": f"t/w/{n}"})
    return {
        "loss": state.loss,
        "metrics": state.metrics,
        "weighted_metrics": state.weighted_metrics,
        "loss_weights": state.loss_weights,
        "optimizer": state.optimizer,
        "iterations": state.iterations,
        "scalars": state.scalars,
        "uncarried": state.uncarried,
        "step_note": state.step_note,
        "slots": slots,
        "step": step,
    }


def _read_training(entry: Any, archive: Any) -> Optional[TrainingState]:
    """The `TrainingState` of a loaded description (None: not described)."""
    if entry is None:
        return None
    step = entry.get("step")
    return TrainingState(
        loss=entry["loss"],
        metrics=entry.get("metrics"),
        weighted_metrics=entry.get("weighted_metrics"),
        loss_weights=entry.get("loss_weights"),
        optimizer=entry["optimizer"],
        iterations=int(entry["iterations"]),
        slots=[SlotRecord(s["layer"], int(s["index"]), s["role"], archive[s["array"]]) for s in entry["slots"]],
        scalars={str(k): float(v) for k, v in entry.get("scalars", {}).items()},
        uncarried=list(entry.get("uncarried", [])),
        step=None
        if step is None
        else TrainingStep(
            inputs=[archive[k] for k in step["inputs"]],
            targets=[archive[k] for k in step["targets"]],
            loss=float(step["loss"]),
            weights=[WeightRecord(w["layer"], int(w["index"]), w["name"], archive[w["array"]]) for w in step["weights"]],
        ),
        step_note=str(entry.get("step_note", "")),
    )
