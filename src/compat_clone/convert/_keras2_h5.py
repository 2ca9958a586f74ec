"""Reading a standalone Keras 2.0-2.3 `.h5` model where h5py is 3.x.

Keras 2.2.x-2.3.1's `load_model` calls `.decode("utf-8")` on the HDF5 string
attributes (`model_config`, `keras_version`, ...) and tests attribute arrays
for truth; h5py 3.0 returns `str` and arrays there, so `load_model` fails on
every file (keras-team/keras #14265). The matrix environments of standalone
Keras run h5py 3 (TF 2.15 needs it). This reader does what
`keras.engine.saving._deserialize_model` does, reading the attributes as text:
the architecture through the model's own `model_from_config`, the weights in
layer order through its own `preprocess_weights_for_loading` (the conversions
for files of older Keras versions and other backends), set in one batch.
"""

from __future__ import annotations

import json
from typing import Any, List, Mapping, Optional

from compat_clone.errors import InvalidArgumentError

__all__ = ["load", "load_weights", "needs_own_reader"]


def _text(value: Any) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def needs_own_reader() -> bool:
    """True where h5py returns `str` attributes (3.0+), which standalone Keras cannot read."""
    import h5py  # type: ignore[import-untyped, import-not-found, unused-ignore]

    return int(h5py.__version__.split(".")[0]) >= 3


def load(keras: Any, path: str, custom_objects: Optional[Mapping[str, Any]], compile: bool = False) -> Any:
    """Loads the model saved at `path` by standalone Keras 2 `model.save()`, uncompiled unless `compile`.

    Args:
        keras: the standalone `keras` module.
        path: the `.h5` file.
        custom_objects: names -> classes / functions, as `load_model` takes them.
        compile: compile it as the file's ``training_config`` says and set the
            optimizer's state from its ``optimizer_weights``, as Keras 2's own
            `load_model` does (a file saved uncompiled loads uncompiled).

    Returns:
        The model, its weights set.

    Raises:
        InvalidArgumentError: the file holds no model, or its weights do not
            fit the architecture it records.
    """
    import h5py  # type: ignore[import-untyped, import-not-found, unused-ignore]
    from keras.engine import saving

    with h5py.File(path, "r") as f:
        if "model_config" not in f.attrs:
            raise InvalidArgumentError(
                f"{path!r} holds no model_config: it is a weights file. Expected a file written by model.save()."
            )
        config = json.loads(_text(f.attrs["model_config"]))
        model = saving.model_from_config(config, custom_objects=dict(custom_objects or {}))
        _set_weights(keras, model, f.get("model_weights", f), path)
        if compile and "training_config" in f.attrs:
            _compile(keras, model, f, json.loads(_text(f.attrs["training_config"])), dict(custom_objects or {}))
    return model


def _compile(keras: Any, model: Any, f: Any, config: Any, custom_objects: Any) -> None:
    """`keras.engine.saving._deserialize_model`'s compile, reading the HDF5 attributes as text; a state that does
    not fit the optimizer raises (Keras 2 only warns, and trains from a fresh state)."""
    import numpy as np
    from keras import losses, optimizers

    def named(value: Any) -> Any:
        if isinstance(value, list):
            return [named(v) for v in value]
        if isinstance(value, dict):
            return {k: named(v) for k, v in value.items()}
        return custom_objects.get(value, value) if isinstance(value, str) else value

    loss = config["loss"]
    if isinstance(loss, dict) and "class_name" in loss:
        loss = losses.get(loss)
    model.compile(
        optimizer=optimizers.deserialize(config["optimizer_config"], custom_objects=custom_objects),
        loss=named(loss),
        metrics=named(config.get("metrics")),
        weighted_metrics=named(config.get("weighted_metrics")),
        loss_weights=config.get("loss_weights"),
        sample_weight_mode=config.get("sample_weight_mode"),
    )
    if "optimizer_weights" in f:
        model._make_train_function()
        group = f["optimizer_weights"]
        values = [np.asarray(group[_text(n)]) for n in group.attrs["weight_names"]]
        model.optimizer.set_weights(values)


def load_weights(keras: Any, model: Any, path: str) -> None:
    """Sets `model`'s weights from the `.h5` file at `path` (`save_weights()`, or `model.save()`'s weights), as
    standalone Keras 2's `load_weights` does by layer order, reading the attributes as text (h5py 3).

    Raises:
        InvalidArgumentError: the file's weights do not fit the model's layers.
    """
    import h5py  # type: ignore[import-untyped, import-not-found, unused-ignore]

    with h5py.File(path, "r") as f:
        _set_weights(keras, model, f.get("model_weights", f), path)


def _set_weights(keras: Any, model: Any, group: Any, path: str) -> None:
    """The weights of an HDF5 group written by standalone Keras 2, set into `model` in layer order, in one batch."""
    import numpy as np
    from keras.engine import saving

    version = _text(group.attrs["keras_version"]) if "keras_version" in group.attrs else "1"
    backend = _text(group.attrs["backend"]) if "backend" in group.attrs else None
    saved = []
    for name in (_text(n) for n in group.attrs["layer_names"]):
        weight_names = [_text(w) for w in group[name].attrs["weight_names"]]
        if weight_names:
            saved.append((name, [np.asarray(group[name][w]) for w in weight_names]))
    layers = [layer for layer in model.layers if layer.weights]
    if len(saved) != len(layers):
        raise InvalidArgumentError(
            f"{path!r} holds weights for {len(saved)} layers, the model has {len(layers)} layers "
            "with weights. Expected the weights of this model."
        )
    pairs: List[Any] = []
    for layer, (name, values) in zip(layers, saved):
        values = saving.preprocess_weights_for_loading(layer, values, version, backend, reshape=False)
        if len(values) != len(layer.weights):
            raise InvalidArgumentError(
                f"{path!r}: saved layer {name!r} has {len(values)} weights, layer {layer.name!r} of the "
                f"model expects {len(layer.weights)}. Expected the weights of this model."
            )
        pairs += zip(layer.weights, values)
    keras.backend.batch_set_value(pairs)
