"""Reading a saved Keras 2 model file, in the environment of the Keras that wrote it.

`read_model` loads a `.h5` / `.keras` file or a SavedModel folder with the
Keras of its family (`keras_for`), uncompiled, working around what that
Keras cannot read of its own files: standalone Keras 2's `.h5` where h5py is
3.x (`_keras2_h5`), and tf.keras 2.12's NumPy scalars in a `.keras` config.
`read_inputs` reads the user's probe inputs (``--inputs``) for a model.
"""

from __future__ import annotations

import inspect
import json
import os
import re
import sys
import tempfile
import zipfile
from typing import Any, List, Mapping, Optional

from compat_clone.convert._keras2_h5 import load as load_h5_keras2
from compat_clone.convert._keras2_h5 import load_weights as load_weights_keras2
from compat_clone.convert._keras2_h5 import needs_own_reader
from compat_clone.errors import CompatCloneError, InvalidArgumentError, MissingCustomObjectError, SourceModelError
from compat_clone.families.installed import keras_module
from compat_clone.families.registry import entry, family_for

__all__ = ["keras_for", "read_model", "read_inputs", "read_architecture", "build_with", "load_weights", "ARCHITECTURE_SUFFIXES"]


def keras_for(family: str) -> Any:
    """The Keras module that reads `family`'s files in this environment.

    Raises:
        InvalidArgumentError: this environment's `keras` is of another family.
    """
    keras = keras_module(family)
    if keras is not sys.modules.get("keras"):  # `tf_keras`, or TF <= 2.5's in-tree `tensorflow.keras`
        return keras
    # The `keras` package serves several families (TF 2.12-2.15: tf.keras is `keras` 2.x): check its version.
    found = family_for("keras", keras.__version__)
    if found != family:
        raise InvalidArgumentError(
            f"This environment ({sys.prefix}) has keras {keras.__version__} ({found}); the model needs "
            f"{family}. Expected an environment of that family: pass --from with one of its matrix environments."
        )
    return keras


def read_model(
    keras: Any,
    family: str,
    path: str,
    custom_objects: Optional[Mapping[str, Any]] = None,
    safe_mode: bool = True,
    compile: bool = False,
) -> Any:
    """Loads the saved Keras 2 model at `path` with `keras` (of `family`), uncompiled unless `compile`.

    Standalone Keras 2 files go through `_keras2_h5` where h5py is 3.x
    (keras-team/keras #14265); the rest through Keras' own `load_model`.

    Args:
        keras: the Keras module that reads `family`'s files (`keras_for`).
        family: ``"keras2"`` or ``"tf_keras"``.
        path: a `.h5` / `.keras` file or a SavedModel folder.
        custom_objects: the source's own classes / functions by name, as
            Keras' `load_model` takes them.
        safe_mode: False lets a `.keras` file of tf.keras 2.13+ run the
            stored Python bytecode of its `Lambda` layers (Keras refuses it
            by default); only for files the user trusts.
        compile: load it compiled, with its optimizer's state, as its Keras
            does (`load_model(compile=True)`).

    Returns:
        The model.

    Raises:
        InvalidArgumentError: Keras could not load the file (its message, and
            the way out for layers of the user's own).
    """
    objects = dict(custom_objects or {})
    try:
        if entry(family).graph_mode and os.path.isfile(path) and needs_own_reader():
            return load_h5_keras2(keras, path, objects, compile=compile)
        kwargs: Any = {}
        if not safe_mode and "safe_mode" in inspect.signature(keras.models.load_model).parameters:
            kwargs["safe_mode"] = False
        try:
            return keras.models.load_model(path, custom_objects=objects or None, compile=compile, **kwargs)
        except (TypeError, ValueError) as e:
            if "__numpy__" not in str(e) or not zipfile.is_zipfile(path):
                raise
            # tf.keras 2.12 writes NumPy scalars of a layer's config into a
            # .keras file as {"class_name": "__numpy__", ...} and cannot read
            # them back (MobileNetV2's ReLU(6.)): read a copy whose config
            # holds the plain numbers, as later versions read the same file.
            with tempfile.TemporaryDirectory(prefix="compat-clone-keras-v3-") as tmp:
                plain = _plain_numbers_copy(path, os.path.join(tmp, os.path.basename(path)))
                return keras.models.load_model(plain, custom_objects=objects or None, compile=compile, **kwargs)
    except CompatCloneError:
        raise
    except Exception as e:  # Keras' own refusal (unknown layer, bad file): said with the fix
        if "<lambda>" in str(e) and "<lambda>" not in objects:
            layers = _lambda_activations(path)
            named = ", ".join(f"layer {layer!r} ({key}='<lambda>')" for layer, key in layers) or "a layer"
            raise MissingCustomObjectError(
                f"Keras {keras.__version__} could not load {path!r}: {named}: Keras 2 saved a lambda function by that name, without its code, so no Keras can "
                "read it back. Pass the function under that name"
                + (
                    " (one function for all of them: if they differ, save the model again with named functions)"
                    if len(layers) > 1
                    else ""
                )
                + ": `custom_objects={'<lambda>': fn}`",
                name="<lambda>",
                layers=[layer for layer, _ in layers],
                kind="activation",
            ) from e
        _refuse_unknown_layer(keras, "load", path, e, objects)
        fix = (
            "If you trust the file, pass --no-safe-mode to let it run its Lambda layers' code."
            if "safe_mode" in str(e)
            else "If the model uses layers or functions of your own, pass --custom-objects module:name."
        )
        raise InvalidArgumentError(
            f"Keras {keras.__version__} could not load {path!r}: {type(e).__name__}: {str(e).rstrip('.')}. {fix}"
        ) from e


def _refuse_unknown_layer(keras: Any, verb: str, path: str, e: Exception, objects: Mapping[str, Any]) -> None:
    """Raises `MissingCustomObjectError` when Keras' error `e` names a layer class it was not given; else returns."""
    unknown = re.search(r"Unknown layer:? '?([A-Za-z_][\w.>]*)'?", str(e))
    if unknown and unknown.group(1) not in objects:
        name = unknown.group(1).rpartition(">")[2]
        raise MissingCustomObjectError(
            f"Keras {keras.__version__} could not {verb} {path!r}: it holds a layer of class {name!r}, a custom "
            f"layer of the model's own, and was given no class for it. Pass its class: "
            f"`custom_objects={{{name!r}: {name}}}`",
            name=name,
            layers=[],
            kind="layer",
        ) from e


#: the file names an architecture without weights comes in: `model.to_json()` / `model.to_yaml()`
ARCHITECTURE_SUFFIXES = (".json", ".yaml", ".yml")


class _TupleLoader:  # built on first use: PyYAML is imported only for a YAML file
    loader: Any = None


def _yaml_config(text: str, path: str) -> Any:
    """A YAML architecture (Keras 2's `to_yaml`, which writes Python tuples as ``!!python/tuple``) as plain data."""
    try:
        import yaml  # type: ignore[import-untyped, import-not-found, unused-ignore]
    except ImportError as e:
        raise SourceModelError(
            f"{path!r} is YAML, and PyYAML is not installed in {sys.prefix!r} to read it. Install pyyaml there, or "
            "write the architecture as JSON (model.to_json())."
        ) from e
    if _TupleLoader.loader is None:

        class Loader(yaml.SafeLoader):  # type: ignore[misc, name-defined, unused-ignore]
            pass

        Loader.add_constructor("tag:yaml.org,2002:python/tuple", lambda loader, node: list(loader.construct_sequence(node)))
        _TupleLoader.loader = Loader
    return yaml.load(text, Loader=_TupleLoader.loader)  # noqa: S506 - a safe loader that also reads tuples


def read_architecture(keras: Any, path: str, custom_objects: Optional[Mapping[str, Any]] = None) -> Any:
    """The model a `model.to_json()` / `to_yaml()` file describes, built by `keras` with fresh weights.

    Raises:
        SourceModelError: the file is not a Keras architecture, or `keras` cannot build it.
    """
    with open(path, encoding="utf-8") as f:
        text = f.read()
    try:
        config = _yaml_config(text, path) if path.lower().endswith((".yaml", ".yml")) else json.loads(text)
    except ValueError as e:
        raise SourceModelError(f"{path!r} cannot be read as an architecture ({e}). Expected the text of model.to_json().") from e
    if not isinstance(config, dict) or "class_name" not in config or "config" not in config:
        raise SourceModelError(
            f"{path!r} is not a Keras architecture: expected the text of model.to_json() (an object with "
            "`class_name` and `config`)."
        )
    objects = dict(custom_objects or {})
    try:
        return keras.models.model_from_json(json.dumps(config), custom_objects=objects or None)
    except Exception as e:
        _refuse_unknown_layer(keras, "build", path, e, objects)
        raise SourceModelError(f"Keras {keras.__version__} could not build {path!r}: {type(e).__name__}: {e}") from e


def build_with(function: Any, family: str, label: str) -> Any:
    """The model `function()` builds (the user's code, run here), checked to be a model of `family`.

    Raises:
        SourceModelError: it raised, or returned something that is not a model of this environment's Keras.
    """
    from compat_clone.families.registry import family_of

    try:
        model = function()
    except Exception as e:
        raise SourceModelError(f"{label}() raised {type(e).__name__}: {e}. Expected it to build and return the model.") from e
    try:
        found = family_of(model).family
    except Exception:
        found = None
    if found != family:
        raise SourceModelError(
            f"{label}() returned {type(model).__name__!r}"
            + (f", a {found} model" if found else ", which is not a Keras model")
            + f". Expected a model of the Keras that wrote the weights ({family}): build it with that Keras."
        )
    return model


def load_weights(keras: Any, family: str, model: Any, path: str) -> None:
    """Loads the HDF5 weights at `path` into `model` (built by `keras` of `family`), natively where Keras can.

    Raises:
        SourceModelError: the weights do not fit the model (Keras' message).
    """
    try:
        if entry(family).graph_mode and needs_own_reader():
            load_weights_keras2(keras, model, path)
        else:
            model.load_weights(path)
    except CompatCloneError as e:
        raise SourceModelError(str(e)) from e
    except Exception as e:
        raise SourceModelError(
            f"Keras {keras.__version__} could not load the weights {path!r} into the model: {type(e).__name__}: {e}. "
            "Expected the weights this model's code saved (save_weights())."
        ) from e


def _lambda_activations(path: str) -> List[Any]:
    """(layer, key) of each activation a saved model's config names ``'<lambda>'`` (.h5, .keras; [] if unread)."""
    text: Any = None
    try:
        if zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as archive:
                text = archive.read("config.json").decode("utf-8")
        elif os.path.isfile(path):
            import h5py  # type: ignore[import-untyped, import-not-found, unused-ignore]

            with h5py.File(path, "r") as f:
                text = f.attrs.get("model_config")
    except Exception:  # the file was refused already; the message names no layer then
        return []
    if text is None:
        return []
    found: List[Any] = []

    def visit(entry: Any) -> None:
        if isinstance(entry, dict):
            config = entry.get("config")
            if isinstance(config, dict):
                found.extend(
                    (config.get("name", "?"), key)
                    for key in ("activation", "recurrent_activation")
                    if config.get(key) == "<lambda>"
                )
            for value in entry.values():
                visit(value)
        elif isinstance(entry, list):
            for value in entry:
                visit(value)

    visit(json.loads(text.decode("utf-8") if isinstance(text, bytes) else text))
    return found


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


def read_inputs(path: str, model: Any) -> List[Any]:
    """The probe inputs saved at `path` (``np.savez``) for `model`, in its input order.

    Arrays named after the model's inputs are put in their order; otherwise
    they are taken in the order they were saved.
    """
    import numpy as np

    with np.load(path, allow_pickle=False) as data:
        arrays = {k: data[k] for k in data.files}
    names = [getattr(t, "name", "").split(":")[0] for t in model.inputs]
    if set(arrays) == set(names) and len(names) > 1:
        return [arrays[n] for n in names]
    return list(arrays.values())
