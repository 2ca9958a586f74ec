"""A conversion from file to file, one half per process.

`describe_file` reads a saved Keras 2 model (`_source.read_model`) and writes
its description (`describe`, `save`); `rebuild_file` reads a description,
rebuilds it in Keras 3 (`rebuild`), proves it (`verify`), saves the `.keras`
file, loads that file back and proves it again. Each returns what the
command line prints, as JSON-able data. Each runs in the environment of its
Keras; `compat_clone.tools.convert` only chooses those environments and
starts the processes.
"""

from __future__ import annotations

import dataclasses
import os
import re
from typing import Any, Dict, List, Mapping, Optional, Tuple

import numpy as np

from compat_clone._walk import walk
from compat_clone.convert._tf_lambda import TF_LAMBDA_NAME
from compat_clone.errors import CompileError, ConversionMismatchError, InvalidArgumentError

__all__ = ["describe_file", "rebuild_file"]


def describe_file(
    model_path: str,
    out: str,
    *,
    family: str,
    inputs: Optional[str] = None,
    custom_objects: Optional[Mapping[str, Any]] = None,
    safe_mode: bool = True,
    weights: Optional[str] = None,
    build: Optional[Any] = None,
    build_label: str = "the --model function",
    compile: bool = False,
) -> Dict[str, Any]:
    """Describes the saved Keras 2 model at `model_path` into the description file `out`.

    Args:
        model_path: a `.h5` / `.keras` file or a SavedModel folder; a
            `to_json()` / `to_yaml()` architecture (``.json`` / ``.yaml``);
            with `build`, the weights file (`save_weights()`).
        out: the description file to write (`save`).
        family: ``"keras2"`` or ``"tf_keras"``: the Keras that reads it here.
        inputs: an ``.npz`` of probe inputs of the user's own (`read_inputs`).
        custom_objects: the source's own classes / functions by name.
        safe_mode: False lets Keras run the stored code of a `.keras` file's
            `Lambda` layers (`read_model`).
        weights: an architecture's weights file (`save_weights()`); without
            it an architecture is described with fresh weights.
        build: a function of the user's that builds the model (here, with
            this Keras); `model_path` is then its weights file.
        build_label: how messages name `build`.
        compile: load it compiled and describe its training state too
            (`describe(..., compile=True)`); where its Keras cannot load it
            compiled, the reason is part of the state's ``uncarried``.

    Returns:
        ``{"family", "version", "backend", "layers", "weights"}`` of the model
        read; ``weights`` is ``"file"`` (the saved model's own),
        ``"loaded"`` (a weights file loaded into it) or ``"fresh"`` (an
        architecture with no weights: the initializers' values); where
        `build` gives a subclassed model, which has no graph to describe,
        ``"reference"``: `out` is then a reference file of its outputs on
        probe inputs (`_reference.record_reference`), not a description; with
        `compile`, ``"training"``: ``{"optimizer", "iterations", "slots",
        "loss", "uncarried", "step_note"}``.

    Raises:
        InvalidArgumentError: this environment has another Keras family, or
            Keras could not load the file.
        SourceModelError: an architecture that is not one, a `build` that
            gives no model of this Keras, weights that do not fit.
    """
    from compat_clone.convert._describe import describe, has_graph
    from compat_clone.convert._io import save
    from compat_clone.convert._reference import record_reference
    from compat_clone.convert._source import (
        ARCHITECTURE_SUFFIXES,
        build_with,
        keras_for,
        load_weights,
        read_architecture,
        read_inputs,
        read_model,
    )
    from compat_clone.families.registry import family_of

    keras = keras_for(family)
    kept = "file"
    unloaded = ""
    if build is not None:
        model = build_with(build, family, build_label)
        load_weights(keras, family, model, model_path)
        kept = "loaded"
        if not has_graph(model):  # a subclassed model: its outputs recorded, for the same code run as Keras 3
            info = family_of(model)
            probe_inputs = read_inputs(inputs, model) if inputs else None
            recorded = record_reference(model, out, build_label, probe_inputs)
            return {
                "family": info.family,
                "version": info.version,
                "backend": info.backend,
                "layers": len(model.layers),
                "weights": kept,
                "reference": recorded,
            }
    elif model_path.lower().endswith(ARCHITECTURE_SUFFIXES):
        model = read_architecture(keras, model_path, custom_objects)
        if weights:
            load_weights(keras, family, model, weights)
        kept = "loaded" if weights else "fresh"
    else:
        try:
            model = read_model(keras, family, model_path, custom_objects, safe_mode=safe_mode, compile=compile)
        except Exception as e:
            if not compile:
                raise
            # its Keras cannot compile it from the file (a loss of its own without its code): said in the state
            unloaded = f"Keras {keras.__version__} cannot load it compiled ({type(e).__name__}: {str(e).strip()[:300]})"
            model = read_model(keras, family, model_path, custom_objects, safe_mode=safe_mode)
    info = family_of(model)
    probe = read_inputs(inputs, model) if inputs else None
    description = describe(model, probe_inputs=probe, compile=compile)
    result: Dict[str, Any] = {
        "family": info.family,
        "version": info.version,
        "backend": info.backend,
        "layers": len(model.layers),
        "weights": kept,
    }
    state = description.training
    if state is not None:
        if unloaded:
            state.uncarried = [unloaded]
        result["training"] = {
            "optimizer": state.optimizer.get("class_name"),
            "iterations": state.iterations,
            "slots": len(state.slots),
            "loss": state.loss,
            "uncarried": state.uncarried,
            "step_note": state.step_note,
        }
    save(description, out)
    return result


def rebuild_file(
    description_path: str,
    out: str,
    *,
    rtol: float,
    atol: float,
    custom_objects: Optional[Mapping[str, Any]] = None,
    compile: str = "",
) -> Dict[str, Any]:
    """Rebuilds a description file in Keras 3 and writes the proven model to `out`.

    The model is proven in memory, saved, loaded back from `out` and proven
    again: `out` is what the user gets. A failed proof removes `out`.

    Args:
        description_path: the file `describe_file` wrote.
        out: the `.keras` file to write.
        rtol: relative tolerance of the proof.
        atol: absolute tolerance of the proof.
        custom_objects: Keras 3 replacements by name (`rebuild`).
        compile: ``""`` the model is written uncompiled; ``"carry"`` compiled
            with the description's training state, which the file read back
            must hold and train one step with as the source did; ``"drop"``
            the same where all of it can be carried, else uncompiled (what
            could not be carried is returned as ``"dropped"``).

    Returns:
        ``{"ok": True, "proof", "keras", "backend", "lambdas", "formulas",
        "dropped"}``, or ``{"ok": False, "error", "proof"}`` when a proof
        failed (``proof`` is `Proof.to_json()`, or None).

    Raises:
        UnconvertibleLayerError: a layer has no Keras 3 counterpart.
        WeightsMismatchError: a layer's weights do not fit.
        CompileError: ``compile="carry"`` and part of the training state
            cannot be carried (each part named), or none was described.
    """
    import keras

    from compat_clone.convert._io import load
    from compat_clone.convert._proof import verify
    from compat_clone.convert._rebuild import rebuild
    from compat_clone.convert._recompile import verify_step

    description = load(description_path)
    carry, dropped = _compile_plan(description, compile, custom_objects)
    changes: List[str] = []
    model = rebuild(description, custom_objects=custom_objects or None, changes=changes, compile=carry)
    lambdas = [
        layer.name for _, layer in walk(model, models=True, wrapped=True) if type(layer).__name__ in ("Lambda", TF_LAMBDA_NAME)
    ]
    # compat_clone objects the file names (Keras 2 formulas, the TensorFlowOp layer):
    # Keras 3 loads it only with compat_clone.convert.custom_objects().
    formulas = sorted(set(re.findall(r'"(compat_clone>[A-Za-z0-9_]+)"', model.to_json())))
    step = "in memory"
    try:
        proof = verify(description, model, rtol=rtol, atol=atol, changes=changes)
        model.save(out)
        # The file is what the user gets: load it back and prove it too (its
        # Lambda layers' code is the source's, which the user chose to convert).
        step = "read back from its file"
        try:
            reloaded = keras.models.load_model(
                out, custom_objects=_by_own_names(custom_objects), compile=carry, safe_mode=not lambdas
            )
        except Exception as e:
            raise ConversionMismatchError(
                f"Keras {keras.__version__} cannot load the file it wrote: {type(e).__name__}: {str(e).strip()[:600]}"
            ) from e
        proof = verify(description, reloaded, rtol=rtol, atol=atol, changes=changes)
        if carry:
            _same_optimizer_state(model, reloaded)
            step = "trained"  # a training step that differs is Keras 3's training, not its saving
            proof = dataclasses.replace(proof, training=str(verify_step(description, reloaded, rtol=rtol, atol=atol)))
    except ConversionMismatchError as e:
        if os.path.exists(out):
            os.remove(out)
        error = str(e)
        if step == "read back from its file":
            error = (
                f"The converted model passed its proof in memory, but not once {step}: {error.rstrip('.')}. "
                f"Keras {keras.__version__}'s own saving loses part of this model (an upstream bug "
                "of that version); convert with a newer Keras 3 as --to (the default is the newest "
                "of the matrix)."
            )
        return {"ok": False, "error": error, "proof": None if e.proof is None else e.proof.to_json()}
    return {
        "ok": True,
        "proof": proof.to_json(),
        "keras": keras.__version__,
        "backend": keras.backend.backend(),
        "lambdas": lambdas,
        "formulas": formulas,
        "dropped": dropped,
    }


def _compile_plan(description: Any, compile: str, custom_objects: Optional[Mapping[str, Any]]) -> Tuple[bool, List[str]]:
    """(carry the training state, what is dropped) for `rebuild_file`'s `compile`; refuses where it must be carried."""
    from compat_clone.convert._recompile import plan_compile, refusal

    if compile not in ("", "carry", "drop"):
        raise InvalidArgumentError(f"Expected `compile` to be '', 'carry' or 'drop'. Received: compile={compile!r}.")
    if not compile:
        return False, []
    state = description.training
    if state is None:
        raise CompileError(
            "The description holds no training state: describe the model with compile=True (on the command line: --compile)."
        )
    uncarried = plan_compile(state, custom_objects).uncarried
    if uncarried and compile == "carry":
        raise refusal(uncarried)
    return not uncarried, uncarried


def _same_optimizer_state(model: Any, reloaded: Any) -> None:
    """Raises `ConversionMismatchError` where the file read back does not hold the optimizer state set in memory."""
    import keras

    mine, theirs = list(model.optimizer.variables), list(getattr(reloaded.optimizer, "variables", []) or [])
    differ = len(mine) != len(theirs) or any(
        not np.array_equal(keras.ops.convert_to_numpy(a), keras.ops.convert_to_numpy(b)) for a, b in zip(mine, theirs)
    )
    if differ:
        raise ConversionMismatchError(
            f"Keras {keras.__version__} does not read back the optimizer state it saved ({len(mine)} variables set, "
            f"{len(theirs)} read back, or other values)."
        )


def _by_own_names(custom_objects: Optional[Mapping[str, Any]]) -> Optional[Dict[str, Any]]:
    """`custom_objects`, each function also under its own name: Keras 3 saves a function so
    (one passed as ``'<lambda>'`` for a Keras 2 activation comes back as ``'swish2'``)."""
    if not custom_objects:
        return None
    found = dict(custom_objects)
    for value in custom_objects.values():
        if callable(value) and not isinstance(value, type):
            found.setdefault(str(getattr(value, "__name__", "")), value)
    return found
