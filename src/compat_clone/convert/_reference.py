"""A subclassed Keras 2 model's weights-only file, proven through the user's code on both sides.

A subclassed model has no layer graph to describe. When the user's
``--model`` function builds one with the Keras that wrote the weights, the
weights load there natively and the model's outputs on probe inputs are
recorded (`record_reference`): a reference file, not a description. The same
function run as Keras 3 code in the target builds the model the weights are
placed into by structure (`map_weights`), and its outputs on the same inputs
must match the recorded ones (`check_reference`). Importing this module
imports no framework.
"""

from __future__ import annotations

import os
import tempfile
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from compat_clone.errors import ConversionMismatchError, SourceModelError

__all__ = ["SAMPLES", "record_reference", "check_reference", "is_reference"]

#: probe samples recorded for a subclassed model
SAMPLES = 4
_OPEN = 8  # the length of an open (None) dimension in random probes
_MARK = "compat_clone_reference"


def _flat_specs(model: Any) -> Optional[List[Tuple[Tuple[Optional[int], ...], str]]]:
    """(shape, dtype) of each input the model was called or built with; None when nothing recorded them."""
    inputs = getattr(model, "inputs", None)
    if inputs:
        out = []
        for t in inputs:
            shape = t.shape.as_list() if hasattr(t.shape, "as_list") else list(t.shape)
            out.append((tuple(None if d is None else int(d) for d in shape), getattr(t.dtype, "name", str(t.dtype))))
        return out
    getter = getattr(model, "_get_save_spec", None)
    spec = None
    if callable(getter):
        try:
            spec = getter(dynamic_batch=True)
        except TypeError:  # no `dynamic_batch` argument
            spec = getter()
    spec = spec if spec is not None else getattr(model, "_saved_model_inputs_spec", None)
    if spec is not None:
        import tensorflow as tf

        flat = tf.nest.flatten(spec)
        return [(tuple(s.shape.as_list()), s.dtype.name) for s in flat]
    shape = getattr(model, "_build_input_shape", None)
    if shape is not None and all(isinstance(d, (int, type(None))) for d in tuple(shape)):
        return [(tuple(shape), "float32")]
    return None


def _random(specs: Sequence[Tuple[Tuple[Optional[int], ...], str]], seed: int = 0) -> List[np.ndarray]:
    rng = np.random.default_rng(seed)
    arrays = []
    for dims, dtype in specs:
        shape = (SAMPLES,) + tuple(_OPEN if d is None else d for d in dims[1:])
        if dtype.startswith(("int", "uint")):
            arrays.append(rng.integers(1, 10, size=shape).astype(dtype))
        else:
            arrays.append(rng.standard_normal(shape).astype(dtype))
    return arrays


def record_reference(model: Any, out: str, label: str, inputs: Optional[List[Any]] = None) -> Dict[str, Any]:
    """Records a subclassed model's outputs on probe inputs in the reference file `out`.

    Args:
        model: the subclassed Keras 2 model the user's code built, its weights loaded.
        out: the ``.npz`` file to write.
        label: how messages name the user's function (``--model my_pkg:build``).
        inputs: probe inputs of the user's own (``--inputs``); else random
            ones, shaped as the inputs the model was called or built with.

    Returns:
        ``{"samples", "inputs", "outputs"}``: how many of each were recorded.

    Raises:
        SourceModelError: nothing says what the model takes (never called nor
            built with a shape) and no inputs were given, or it cannot run on them.

    Example:

    >>> import compat_clone.convert as cc                       # in the Keras 2 environment
    >>> model = my_models.build(); model.load_weights("weights.h5")  # doctest: +SKIP
    >>> cc.record_reference(model, "ref.npz", "my_models.build")     # doctest: +SKIP
    {'samples': 4, 'inputs': 1, 'outputs': 1}
    """
    if inputs is None:
        specs = _flat_specs(model)
        if specs is None:
            raise SourceModelError(
                f"{label} builds the subclassed model {model.name!r}, which has no layer graph and records no input "
                "shape (it was never called nor built with one): give the inputs to prove it on with --inputs FILE.npz."
            )
        inputs = _random(specs)
    arrays = [np.asarray(x) for x in inputs]
    from compat_clone.convert._probes import predict

    try:
        outputs = predict(model, arrays)
    except Exception as e:
        raise SourceModelError(
            f"{label} builds the subclassed model {model.name!r}, which could not run on the probe inputs "
            f"({type(e).__name__}: {str(e).strip()[:300]}): give inputs it takes with --inputs FILE.npz."
        ) from e
    data: Dict[str, Any] = {f"x{i}": a for i, a in enumerate(arrays)}
    data.update({f"y{i}": a for i, a in enumerate(outputs)})
    data[_MARK] = np.asarray(1)
    folder = os.path.dirname(os.path.abspath(out))
    handle, staging = tempfile.mkstemp(suffix=".npz", dir=folder)
    os.close(handle)
    np.savez(staging, **data)
    os.replace(staging, out)
    return {"samples": int(arrays[0].shape[0]), "inputs": len(arrays), "outputs": len(outputs)}


def is_reference(path: str) -> bool:
    """Whether `path` is a reference file `record_reference` wrote (not a description)."""
    with np.load(path, allow_pickle=False) as data:
        return _MARK in data.files


def check_reference(model: Any, path: str, *, rtol: float, atol: float) -> Dict[str, Any]:
    """The Keras 3 `model`'s outputs on the reference's inputs, held against the recorded ones.

    Args:
        model: the Keras 3 model, its weights in place (`map_weights`).
        path: the reference file `record_reference` wrote.
        rtol: relative tolerance (NumPy's `allclose` rule).
        atol: absolute tolerance.

    Returns:
        ``{"ok", "line", "outputs"}``: the proof's line and one text per output.

    Raises:
        ConversionMismatchError: another number of outputs, or another shape.

    Example:

    >>> import compat_clone.convert as cc                       # in the Keras 3 environment
    >>> model = my_models.build(); cc.map_weights(model, "weights.h5")  # doctest: +SKIP
    >>> cc.check_reference(model, "ref.npz", rtol=1e-5, atol=1e-6)["ok"]  # doctest: +SKIP
    True
    """
    import keras

    with np.load(path, allow_pickle=False) as data:
        xs = [data[f"x{i}"] for i in range(sum(k.startswith("x") for k in data.files))]
        ys = [data[f"y{i}"] for i in range(sum(k.startswith("y") for k in data.files))]
    x: Any = xs if len(xs) > 1 else xs[0]
    got = model(x, training=False)
    answers = [np.asarray(keras.ops.convert_to_numpy(g)) for g in (list(got) if isinstance(got, (list, tuple)) else [got])]
    if len(answers) != len(ys):
        raise ConversionMismatchError(f"The Keras 3 model answers with {len(answers)} outputs; the source answered {len(ys)}.")
    texts, worst, ok = [], (0.0, 0.0), True
    for i, (a, y) in enumerate(zip(answers, ys)):
        if a.shape != y.shape:
            raise ConversionMismatchError(f"Output {i} has shape {a.shape} in Keras 3; the source's is {y.shape}.")
        diff = np.abs(a.astype("float64") - y.astype("float64"))
        rel = diff / np.maximum(np.abs(y.astype("float64")), 1e-12)
        fits = bool(np.allclose(a, y, rtol=rtol, atol=atol))
        ok = ok and fits
        worst = (max(worst[0], float(diff.max(initial=0.0))), max(worst[1], float(rel.max(initial=0.0))))
        texts.append(f"output {i}: max |Δ| {float(diff.max(initial=0.0)):.1e} {'ok' if fits else 'DIFFERS'}")
    line = (
        f"proof: {len(ys)} output(s) on {len(xs[0])} probe samples recorded by the source, max |Δ| {worst[0]:.1e}, "
        f"max rel {worst[1]:.1e} (rtol {rtol:g}, atol {atol:g}): {'OK' if ok else 'FAILED'}"
    )
    return {"ok": ok, "line": line, "outputs": texts}
