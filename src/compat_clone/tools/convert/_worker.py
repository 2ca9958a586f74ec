"""One half of `compat-clone convert`, run inside an environment's own interpreter.

    python -m compat_clone.tools.convert._worker describe --family F --model PATH --out DESC.npz
        [--inputs X.npz] [--custom-objects module:name ...]
    python -m compat_clone.tools.convert._worker rebuild --description DESC.npz --out MODEL.keras
        --rtol R --atol A [--custom-objects module:name ...]

`describe` loads the saved Keras 2 model with the Keras of its family and
writes its neutral description (`compat_clone.convert.describe` / `save`);
`rebuild` rebuilds it in Keras 3, proves it (`verify`), saves the `.keras`
file, loads that file back and proves it again. The last line of stdout is
``COMPAT_CLONE_RESULT <json>``; a refusal exits 1 with the message on stderr,
a failed proof exits 3.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import inspect
import json
import os
import re
import sys
import tempfile
import zipfile
from typing import Any, Dict, List, Optional, Sequence

from compat_clone.errors import CompatCloneError, InvalidArgumentError
from compat_clone.tools.convert import _keras2_h5

RESULT_MARK = "COMPAT_CLONE_RESULT "
EXIT_REFUSED = 1
EXIT_PROOF_FAILED = 3


def custom_objects(specs: Sequence[str]) -> Dict[str, Any]:
    """Resolves ``module:name`` specs in this interpreter: ``{name: object}``.

    ``module:name`` imports `module` and takes its attribute `name` (dots walk
    nested attributes: ``module:Outer.Inner``); an attribute that is a dict is
    merged as a whole ``custom_objects`` mapping.

    Args:
        specs: the ``--custom-objects`` values.

    Returns:
        The mapping to pass to Keras.

    Raises:
        InvalidArgumentError: a malformed spec, a module that does not import,
            an attribute that is not there.
    """
    out: Dict[str, Any] = {}
    if specs:
        sys.path.insert(0, os.getcwd())  # the user's modules next to their models
    for spec in specs:
        module_name, sep, attr = spec.partition(":")
        if not sep or not module_name or not attr:
            raise InvalidArgumentError(
                f"Expected --custom-objects as module:name (e.g. my_layers:Scale). Received: {spec!r}."
            )
        try:
            value: Any = importlib.import_module(module_name)
        except ImportError as e:
            raise InvalidArgumentError(
                f"--custom-objects {spec!r}: module {module_name!r} does not import in {sys.prefix!r} "
                f"({e}). It must be importable in both environments (run from its folder, or install it)."
            ) from e
        for part in attr.split("."):
            if not hasattr(value, part):
                raise InvalidArgumentError(
                    f"--custom-objects {spec!r}: {module_name!r} has no attribute {attr!r} in {sys.prefix!r}."
                )
            value = getattr(value, part)
        if isinstance(value, dict):
            out.update(value)
        else:
            out[attr.split(".")[-1]] = value
    return out


def keras_for(family: str) -> Any:
    """The Keras module that reads `family`'s files here."""
    from compat_clone._dispatch import family_for

    if family == "tf_keras":
        try:
            return importlib.import_module("tf_keras")
        except ImportError:
            pass  # TF <= 2.15: tf.keras is the `keras` 2.x package
        if importlib.util.find_spec("keras") is None:
            # TF <= 2.5: tf.keras lives inside TensorFlow (no `keras` package).
            return importlib.import_module("tensorflow").keras
    keras = importlib.import_module("keras")
    found = family_for("keras", keras.__version__)
    if found != family:
        raise InvalidArgumentError(
            f"This environment ({sys.prefix}) has keras {keras.__version__} ({found}); the model needs "
            f"{family}. Expected an environment of that family: pass --from with one of its matrix environments."
        )
    return keras


def load_source(keras: Any, family: str, path: str, objects: Dict[str, Any], safe_mode: bool = True) -> Any:
    """Loads the saved Keras 2 model at `path` with `keras` (of `family`), uncompiled.

    Standalone Keras 2 files go through `_keras2_h5` where h5py is 3.x
    (keras-team/keras #14265); the rest through Keras' own `load_model`.

    Args:
        keras: the Keras module that reads `family`'s files (`keras_for`).
        family: ``"keras2"`` or ``"tf_keras"``.
        path: a `.h5` / `.keras` file or a SavedModel folder.
        objects: custom objects by name (`custom_objects`).
        safe_mode: False lets a `.keras` file of tf.keras 2.13+ run the
            stored Python bytecode of its `Lambda` layers (Keras refuses it
            by default); only for files the user trusts.

    Returns:
        The model.

    Raises:
        InvalidArgumentError: Keras could not load the file (its message, and
            the way out for layers of the user's own).
    """
    try:
        if family == "keras2" and os.path.isfile(path) and _keras2_h5.needs_own_reader():
            return _keras2_h5.load(keras, path, objects)
        kwargs: Dict[str, Any] = {}
        if not safe_mode and "safe_mode" in inspect.signature(keras.models.load_model).parameters:
            kwargs["safe_mode"] = False
        try:
            return keras.models.load_model(path, custom_objects=objects or None, compile=False, **kwargs)
        except (TypeError, ValueError) as e:
            if "__numpy__" not in str(e) or not zipfile.is_zipfile(path):
                raise
            # tf.keras 2.12 writes NumPy scalars of a layer's config into a
            # .keras file as {"class_name": "__numpy__", ...} and cannot read
            # them back (MobileNetV2's ReLU(6.)): read a copy whose config
            # holds the plain numbers, as later versions read the same file.
            with tempfile.TemporaryDirectory(prefix="compat-clone-keras-v3-") as tmp:
                plain = _plain_numbers_copy(path, os.path.join(tmp, os.path.basename(path)))
                return keras.models.load_model(plain, custom_objects=objects or None, compile=False, **kwargs)
    except CompatCloneError:
        raise
    except Exception as e:  # Keras' own refusal (unknown layer, bad file): said with the fix
        fix = ("If you trust the file, pass --no-safe-mode to let it run its Lambda layers' code."
               if "safe_mode" in str(e) else
               "If the model uses layers or functions of your own, pass --custom-objects module:name.")
        raise InvalidArgumentError(
            f"Keras {keras.__version__} could not load {path!r}: {type(e).__name__}: {str(e).rstrip('.')}. {fix}"
        ) from e


def _plain_numbers(value: Any) -> Any:
    if isinstance(value, dict):
        config = value.get("config")
        if value.get("class_name") == "__numpy__" and isinstance(config, dict) and "value" in config:
            return config["value"]
        return {k: _plain_numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain_numbers(v) for v in value]
    return value


def _plain_numbers_copy(path: str, copy: str) -> str:
    """Copies the .keras zip at `path` to `copy`, NumPy scalars of its config.json as plain numbers."""
    with zipfile.ZipFile(path) as source, zipfile.ZipFile(copy, "w", zipfile.ZIP_DEFLATED) as target:
        for item in source.infolist():
            data = source.read(item.filename)
            if item.filename == "config.json":
                data = json.dumps(_plain_numbers(json.loads(data))).encode("utf-8")
            target.writestr(item, data)
    return copy


def _load_inputs(path: str, model: Any) -> List[Any]:
    import numpy as np

    with np.load(path, allow_pickle=False) as data:
        arrays = {k: data[k] for k in data.files}
    names = [getattr(t, "name", "").split(":")[0] for t in model.inputs]
    if set(arrays) == set(names) and len(names) > 1:
        return [arrays[n] for n in names]
    return list(arrays.values())


def _describe(args: argparse.Namespace) -> Dict[str, Any]:
    os.environ["COMPAT_CLONE_CONVERT_SIDE"] = "source"  # for a --custom-objects module serving both sides
    keras = keras_for(args.family)
    from compat_clone import family_of
    from compat_clone.convert import describe, save

    model = load_source(keras, args.family, args.model, custom_objects(args.custom_objects),
                        safe_mode=not args.no_safe_mode)
    info = family_of(model)
    probe = _load_inputs(args.inputs, model) if args.inputs else None
    description = describe(model, probe_inputs=probe)
    save(description, args.out)
    return {"family": info.family, "version": info.version, "backend": info.backend,
            "layers": len(model.layers)}


def _rebuild(args: argparse.Namespace) -> Dict[str, Any]:
    import keras

    from compat_clone.convert import load, rebuild, verify
    from compat_clone.errors import ConversionMismatchError

    os.environ["COMPAT_CLONE_CONVERT_SIDE"] = "target"
    objects = custom_objects(args.custom_objects)
    description = load(args.description)
    changes: List[str] = []
    model = rebuild(description, custom_objects=objects or None, changes=changes)
    lambdas = [layer.name for layer in _all_layers(model) if type(layer).__name__ == "Lambda"]
    # compat_clone objects the file names (Keras 2 formulas, the TensorFlowOp layer):
    # Keras 3 loads it only with compat_clone.convert.custom_objects().
    formulas = sorted(set(re.findall(r'"(compat_clone>[A-Za-z0-9_]+)"', model.to_json())))
    step = "in memory"
    try:
        proof = verify(description, model, rtol=args.rtol, atol=args.atol, changes=changes)
        model.save(args.out)
        # The file is what the user gets: load it back and prove it too (its
        # Lambda layers' code is the source's, which the user chose to convert).
        step = "read back from its file"
        try:
            reloaded = keras.models.load_model(args.out, custom_objects=objects or None, compile=False,
                                               safe_mode=not lambdas)
        except Exception as e:
            raise ConversionMismatchError(f"Keras {keras.__version__} cannot load the file it wrote: "
                                          f"{type(e).__name__}: {str(e).strip()[:600]}") from e
        proof = verify(description, reloaded, rtol=args.rtol, atol=args.atol, changes=changes)
    except ConversionMismatchError as e:
        if os.path.exists(args.out):
            os.remove(args.out)
        error = str(e)
        if step != "in memory":
            error = (f"The converted model passed its proof in memory, but not once {step}: {error.rstrip('.')}. "
                     f"Keras {keras.__version__}'s own saving loses part of this model (an upstream bug "
                     "of that version); convert with a newer Keras 3 as --to (the default is the newest "
                     "of the matrix).")
        return {"ok": False, "error": error, "proof": _proof_json(e.proof)}
    return {"ok": True, "proof": _proof_json(proof), "keras": keras.__version__,
            "backend": keras.backend.backend(), "lambdas": lambdas, "formulas": formulas}


def _all_layers(model: Any) -> List[Any]:
    found: List[Any] = []
    for layer in getattr(model, "layers", []):
        found.append(layer)
        found.extend(_all_layers(layer))
        wrapped = getattr(layer, "layer", None)  # TimeDistributed / Bidirectional's
        if wrapped is not None:
            found.append(wrapped)
    return found


def _proof_json(proof: Any) -> Optional[Dict[str, Any]]:
    if proof is None:
        return None
    return {
        "line": str(proof),
        "ok": bool(proof.ok),
        "samples": int(proof.samples),
        "origins": list(proof.origins),
        "changes": list(proof.changes),
        "outputs": [{"name": o.name, "max_abs": float(o.max_abs), "max_rel": float(o.max_rel), "ok": bool(o.ok),
                     "masked": int(o.masked), "masked_max_abs": float(o.masked_max_abs),
                     "nonfinite": int(o.nonfinite), "nonfinite_differ": int(o.nonfinite_differ), "text": str(o)}
                    for o in proof.outputs],
    }


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m compat_clone.tools.convert._worker")
    sub = parser.add_subparsers(dest="step", required=True)
    d = sub.add_parser("describe")
    d.add_argument("--family", required=True, choices=("keras2", "tf_keras"))
    d.add_argument("--model", required=True)
    d.add_argument("--out", required=True)
    d.add_argument("--inputs")
    d.add_argument("--no-safe-mode", action="store_true")
    d.add_argument("--custom-objects", nargs="*", default=[])
    r = sub.add_parser("rebuild")
    r.add_argument("--description", required=True)
    r.add_argument("--out", required=True)
    r.add_argument("--rtol", type=float, required=True)
    r.add_argument("--atol", type=float, required=True)
    r.add_argument("--custom-objects", nargs="*", default=[])
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Runs one step; prints ``COMPAT_CLONE_RESULT <json>`` last and returns the exit status."""
    args = _parser().parse_args(argv)
    try:
        result = _describe(args) if args.step == "describe" else _rebuild(args)
    except CompatCloneError as e:
        print(f"{type(e).__name__}: {e}", file=sys.stderr)
        return EXIT_REFUSED
    print(RESULT_MARK + json.dumps(result), flush=True)
    return EXIT_PROOF_FAILED if result.get("ok") is False else 0


if __name__ == "__main__":
    sys.exit(main())
