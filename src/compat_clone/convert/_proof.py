"""The proof of a conversion: the converted model answers as the source did.

The source's outputs on the probe inputs are part of the `Description`
(recorded where the source ran); `verify` runs the converted model on the
same inputs and compares, output by output.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from compat_clone.convert._format import Description, ProbeSet
from compat_clone.convert._layer_outputs import first_difference, run_graph
from compat_clone.convert._names import top_names
from compat_clone.convert._probes import output_list
from compat_clone.errors import ConversionMismatchError, InvalidArgumentError

__all__ = ["OutputDiff", "Proof", "verify"]


@dataclasses.dataclass(frozen=True)
class OutputDiff:
    """How far one output of the converted model is from the source's.

    Attributes:
        index: the output's position.
        name: the output layer's name.
        max_abs: the largest ``|converted - source|`` over the probe samples.
        max_rel: the largest ``|converted - source| / |source|`` over the
            elements where ``|source| > atol`` (0 where there is none).
        ok: every compared element is within ``atol + rtol * |source|``
            (``numpy.allclose``'s rule).
        masked: how many positions the source's mask hides (not compared:
            their values mean nothing to Keras, and Keras versions fill
            them differently); 0 for an output with no mask.
        masked_max_abs: the largest ``|converted - source|`` at those
            positions, for information.
        nonfinite: how many compared positions the source answers NaN or
            ±inf at; the converted model must answer the same there (NaN
            for NaN, the same infinity), and the finite positions are
            compared as usual.
        nonfinite_differ: how many positions are NaN/inf in one model and
            not the same in the other (any makes `ok` False).
    """

    index: int
    name: str
    max_abs: float
    max_rel: float
    ok: bool
    masked: int = 0
    masked_max_abs: float = 0.0
    nonfinite: int = 0
    nonfinite_differ: int = 0

    def __str__(self) -> str:
        verdict = "ok" if self.ok else "ABOVE TOLERANCE"
        if self.nonfinite_differ:
            verdict = f"MISMATCH: NaN/inf at {self.nonfinite_differ} positions where the other model differs"
        text = f"output {self.name!r}: max |Δ| {self.max_abs:.1e}, max rel {self.max_rel:.1e} {verdict}"
        if self.nonfinite:
            text += (
                f" (the source produces NaN/inf at {self.nonfinite} positions, compared as equal; max |Δ| over the finite ones)"
            )
        if self.masked:
            text += f" ({self.masked} masked positions not compared, max |Δ| there {self.masked_max_abs:.1e})"
        return text


_ORIGINS = {"random": "random", "user": "your inputs"}


@dataclasses.dataclass(frozen=True)
class Proof:
    """The result of comparing a converted model with its source.

    Attributes:
        outputs: one `OutputDiff` per model output (worst over the probe sets).
        samples: how many probe samples were compared (all sets together).
        rtol: the relative tolerance used.
        atol: the absolute tolerance used.
        changes: what the conversion changed or dropped on purpose, one line
            each (e.g. an argument Keras 3 no longer takes and that changes
            nothing here); empty when it changed nothing.
        origins: where the probe inputs came from, ``"random"`` (drawn by
            `describe` for each input's shape, dtype and role) and/or
            ``"user"`` (given with ``probe_inputs`` / ``--inputs``).
        shapes: the shape of each probe input (batch first), of the first
            probe set: the lengths the open dimensions were probed at.
        first_differing_layer: on a failed proof, the first layer in graph
            order whose output on the first probe sample is not within
            tolerance of the source's (recorded by `describe`); "" when the
            proof passed or no layer could be named.
        layer_comparison: on a failed proof, what that comparison found, one
            sentence (the layer and its largest difference, or why no layer
            is named); "" when the proof passed.
        training: with a training state carried, the line of its training
            step's comparison (``training step: ...: OK``, or why none was
            compared); "" otherwise.
    """

    outputs: Tuple[OutputDiff, ...]
    samples: int
    rtol: float
    atol: float
    changes: Tuple[str, ...] = ()
    origins: Tuple[str, ...] = ()
    shapes: Tuple[Tuple[int, ...], ...] = ()
    first_differing_layer: str = ""
    layer_comparison: str = ""
    training: str = ""

    @property
    def ok(self) -> bool:
        """Whether every output is within tolerance."""
        return all(o.ok for o in self.outputs)

    @property
    def max_abs(self) -> float:
        """The largest absolute difference over all outputs."""
        return max((o.max_abs for o in self.outputs), default=0.0)

    @property
    def max_rel(self) -> float:
        """The largest relative difference over all outputs."""
        return max((o.max_rel for o in self.outputs), default=0.0)

    def to_json(self) -> Dict[str, Any]:
        """The proof as JSON-able data, its printed lines included (``line``, each output's ``text``)."""
        return {
            "line": str(self),
            "ok": bool(self.ok),
            "samples": int(self.samples),
            "rtol": self.rtol,
            "atol": self.atol,
            "origins": list(self.origins),
            "changes": list(self.changes),
            "shapes": [list(shape) for shape in self.shapes],
            "first_differing_layer": self.first_differing_layer,
            "layer_comparison": self.layer_comparison,
            "training": self.training,
            "outputs": [dict({f.name: getattr(o, f.name) for f in dataclasses.fields(o)}, text=str(o)) for o in self.outputs],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Proof:
        """The `Proof` that `to_json` wrote.

        Raises:
            InvalidArgumentError: `data` is not a proof's JSON (a key missing).
        """
        try:
            fields = [f.name for f in dataclasses.fields(OutputDiff)]
            outputs = tuple(
                OutputDiff(**dict({"index": k}, **{f: o[f] for f in fields if f in o})) for k, o in enumerate(data["outputs"])
            )
            return cls(
                outputs=outputs,
                samples=int(data["samples"]),
                rtol=float(data["rtol"]),
                atol=float(data["atol"]),
                changes=tuple(data.get("changes", ())),
                origins=tuple(data.get("origins", ())),
                shapes=tuple(tuple(int(d) for d in shape) for shape in data.get("shapes", ())),
                first_differing_layer=str(data.get("first_differing_layer", "")),
                layer_comparison=str(data.get("layer_comparison", "")),
                training=str(data.get("training", "")),
            )
        except (KeyError, TypeError) as exc:
            raise InvalidArgumentError(
                f"Expected a proof's JSON (`Proof.to_json()`). Received: {str(data)[:200]} (missing {exc})."
            ) from exc

    def __str__(self) -> str:
        n = len(self.outputs)
        verdict = "OK" if self.ok else "MISMATCH in " + ", ".join(repr(o.name) for o in self.outputs if not o.ok)
        where = " and ".join(_ORIGINS.get(o, o) for o in self.origins)
        nonfinite = sum(o.nonfinite for o in self.outputs)
        special = f"; the source produces NaN/inf at {nonfinite} positions" if nonfinite else ""
        shapes = " + ".join(str(tuple(shape)) for shape in self.shapes)
        return (
            f"proof: {n} output{'s' if n != 1 else ''} on {self.samples} probe samples"
            f"{f' ({where})' if where else ''}{f' of shape {shapes}' if shapes else ''}, "
            f"max |Δ| {self.max_abs:.1e}, max rel {self.max_rel:.1e} "
            f"(rtol {self.rtol:.0e}, atol {self.atol:.0e}){special}: {verdict}"
        )


def verify(
    description: Description,
    model: Any,
    *,
    rtol: float = 1e-5,
    atol: float = 1e-6,
    inputs: Optional[Sequence[ProbeSet]] = None,
    changes: Sequence[str] = (),
) -> Proof:
    """Runs `model` on the description's probes and compares with the source.

    Args:
        description: the source's `Description` (its probe sets hold the
            source's outputs).
        model: the converted Keras 3 model.
        rtol: relative tolerance (``numpy.allclose``'s rule).
        atol: absolute tolerance.
        inputs: probe sets to use instead of the description's (each a
            `ProbeSet` holding inputs and the source's outputs on them).
        changes: the conversion's changes, carried into the `Proof`.

    Returns:
        A `Proof`, every output within tolerance.

    Raises:
        ConversionMismatchError: an output differs above tolerance, the
            model gives another number or shape of outputs, or it fails to
            run; the error's ``proof`` attribute holds the measurements
            (None where there are none), and its message and
            ``proof.first_differing_layer`` the layer where the outputs
            first differ (from the description's `LayerOutputs`).
        InvalidArgumentError: a tolerance is negative, or there is no probe.

    Example:

    >>> proof = verify(description, keras3_model)   # doctest: +SKIP
    >>> print(proof)                                 # doctest: +SKIP
    proof: 1 output on 4 probe samples (random), max |Δ| 5.9e-08, max rel 1.3e-07 (rtol 1e-05, atol 1e-06): OK
    """
    _validate_tolerances(rtol, atol)
    probes = list(description.probes if inputs is None else inputs)
    if not probes:
        raise InvalidArgumentError(
            "Expected at least one probe set to verify the conversion on. Received none: "
            "describe the model with `samples >= 1` or pass `probe_inputs`."
        )
    names = [str(n) for n in getattr(model, "output_names", None) or []]
    worst: List[OutputDiff] = []
    samples = 0
    for probe in probes:
        got = _answers(model, probe)
        samples += len(probe.inputs[0]) if probe.inputs else 0
        for k, (mine, theirs) in enumerate(zip(got, probe.outputs)):
            name = names[k] if k < len(names) else f"output_{k}"
            diff = _compare(mine, theirs, rtol, atol, k, name, probe.mask_of(k))
            worst.append(diff) if k >= len(worst) else worst.__setitem__(k, _worse(worst[k], diff))
    proof = Proof(
        outputs=tuple(worst),
        samples=samples,
        rtol=float(rtol),
        atol=float(atol),
        changes=tuple(changes),
        origins=tuple(dict.fromkeys(p.origin for p in probes)),
        shapes=tuple(tuple(int(d) for d in np.shape(x)) for x in probes[0].inputs),
    )
    if not proof.ok:
        layer, found = first_difference(
            model,
            description.layer_outputs,
            description.probes[0].inputs if description.probes else probes[0].inputs,
            rtol,
            atol,
            top_names(description.architecture),
        )
        proof = dataclasses.replace(proof, first_differing_layer=layer, layer_comparison=found)
        culprit = (
            f"check the Keras 3 implementation of layer {layer!r}" if layer else "check the layers of the mismatching outputs"
        )
        raise ConversionMismatchError(
            f"The converted model does not answer as the source did: {proof}. {found} Nothing "
            "was returned. If the difference is rounding (e.g. mixed precision), pass "
            f"larger `rtol`/`atol`; otherwise a layer behaves differently in Keras 3: {culprit}.",
            proof=proof,
        )
    return proof


def _validate_tolerances(rtol: Any, atol: Any) -> None:
    for label, value in (("rtol", rtol), ("atol", atol)):
        if not isinstance(value, (int, float)) or value < 0:
            raise InvalidArgumentError(f"Expected `{label}` to be a number >= 0. Received: {label}={value!r}.")


def _answers(model: Any, probe: ProbeSet) -> List[np.ndarray]:
    """The converted model's outputs on one probe set, as many as the source's."""
    try:
        got = _run(model, probe.inputs)
    except Exception as exc:  # the target Keras cannot run what it built, on inputs the source computed
        import keras

        where = _failing_layer(model, probe.inputs)
        raise ConversionMismatchError(
            f"The converted model does not run in Keras {keras.__version__} on "
            f"{keras.backend.backend()}{where}, on probe inputs of shape "
            f"{' + '.join(str(np.shape(x)) for x in probe.inputs)} that the source computed: "
            f"{type(exc).__name__}: {str(exc).strip()[:600]}. The Keras 3 graph was built but this "
            "Keras version fails to compute it; a newer Keras 3 may (the command line's default target "
            "is the newest of the matrix)."
        ) from exc
    if len(got) != len(probe.outputs):
        raise ConversionMismatchError(
            f"The converted model gives {len(got)} outputs; the source gave "
            f"{len(probe.outputs)}. The conversion lost the model's structure: please "
            "report it with the description file."
        )
    return got


class _LayerFailed(Exception):
    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


def _failing_layer(model: Any, inputs: List[np.ndarray]) -> str:
    """`` at layer 'name'``: the first layer of a Functional model whose call fails on `inputs` ("" if unknown).

    The model's own graph walk (`run_graph`) calls each layer through a
    wrapper that names it when it raises.
    """

    def wrap(operation: Any) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            try:
                return operation(*args, **kwargs)
            except _LayerFailed:
                raise
            except Exception as exc:
                raise _LayerFailed(operation.name) from exc

        return call

    try:
        run_graph(model, inputs, wrap)
    except _LayerFailed as failed:
        return f" at layer {failed.name!r}"
    except Exception:  # the walk itself failed, or there is no graph to walk: no layer to name
        return ""
    return ""


def _run(model: Any, inputs: List[np.ndarray]) -> List[np.ndarray]:
    x: Any = inputs if len(inputs) > 1 else inputs[0]
    out = model.predict(x, batch_size=max(len(inputs[0]), 1), verbose=0)
    return [np.asarray(o) for o in output_list(model, out)]


def _worse(a: OutputDiff, b: OutputDiff) -> OutputDiff:
    """One output's differences over two probe sets: the larger gaps, the counts added."""
    return dataclasses.replace(
        a,
        max_abs=max(a.max_abs, b.max_abs),
        max_rel=max(a.max_rel, b.max_rel),
        ok=a.ok and b.ok,
        masked=a.masked + b.masked,
        masked_max_abs=max(a.masked_max_abs, b.masked_max_abs),
        nonfinite=a.nonfinite + b.nonfinite,
        nonfinite_differ=a.nonfinite_differ + b.nonfinite_differ,
    )


def _compared(mask: Optional[np.ndarray], shape: Tuple[int, ...]) -> Optional[np.ndarray]:
    """`mask` spread over an output of `shape` (True: compare), or None to compare all.

    A mask covers an output's leading dimensions (batch x steps for a
    sequence); one that does not fit them is ignored, never guessed at.
    """
    if mask is None:
        return None
    mask = np.asarray(mask, dtype=bool)
    if mask.ndim > len(shape) or tuple(shape[: mask.ndim]) != mask.shape:
        return None
    return np.broadcast_to(mask.reshape(mask.shape + (1,) * (len(shape) - mask.ndim)), shape)


def _compare(
    mine: np.ndarray,
    theirs: np.ndarray,
    rtol: float,
    atol: float,
    k: int,
    name: str,
    mask: Optional[np.ndarray] = None,
) -> OutputDiff:
    if mine.shape != theirs.shape:
        raise ConversionMismatchError(
            f"Output {name!r} of the converted model has shape {mine.shape}; the "
            f"source's has {theirs.shape}. A layer was mapped to one that computes "
            "another shape: please report it with the description file."
        )
    keep = _compared(mask, mine.shape)
    a = mine.astype(np.float64)
    b = theirs.astype(np.float64)
    hidden = OutputDiff(k, name, 0.0, 0.0, True)
    if keep is not None:
        off = ~keep
        if np.any(off):
            gap = np.abs(a[off] - b[off])
            gap = gap[np.isfinite(gap)]
            hidden = OutputDiff(k, name, 0.0, 0.0, True, int(np.count_nonzero(off)), float(gap.max()) if gap.size else 0.0)
        a, b = a[keep], b[keep]
    if a.size == 0:
        return hidden
    # NaN / inf: the same special value at the same position is equal (a
    # source that overflows on some probe), anything else there differs.
    fa, fb = np.isfinite(a), np.isfinite(b)
    same = ~fa & ~fb & ((np.isnan(a) & np.isnan(b)) | (a == b))
    differ = int(np.count_nonzero((~fa | ~fb) & ~same))
    both = fa & fb
    delta = np.abs(a[both] - b[both])
    scale = np.abs(b[both])
    big = scale > atol
    max_rel = float(np.max(delta[big] / scale[big])) if np.any(big) else 0.0
    ok = differ == 0 and bool(np.all(delta <= atol + rtol * scale))
    return OutputDiff(
        k,
        name,
        float(np.max(delta)) if delta.size else 0.0,
        max_rel,
        ok,
        hidden.masked,
        hidden.masked_max_abs,
        int(np.count_nonzero(~fb)),
        differ,
    )
