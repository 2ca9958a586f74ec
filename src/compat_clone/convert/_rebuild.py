"""The Keras 3 half of a conversion: a `Description` back into a live model.

`rebuild` reads only the description (no Keras 2 object), so it runs in any
Keras 3 environment and on any backend. The model is built by calling Keras 3
layers on Keras 3 tensors in the order of the source's graph, so masks,
shared layers (one layer, several nodes) and nested models come out as Keras 3
builds them; then every weight is written, in Keras 3's variable order.
"""

from __future__ import annotations

import importlib
from typing import Any, Dict, List, Mapping, Optional

from compat_clone.convert._format import Description
from compat_clone.convert._functions import keras2_function
from compat_clone.convert._graph import functional, is_model_entry
from compat_clone.convert._lambdas import InlineLambda, lambda_layer
from compat_clone.convert._layer_map import REMOVED_LAYERS, map_config
from compat_clone.convert._names import keras3_names, valid_name
from compat_clone.convert._tf_ops import OPS, PendingOp, check_call, describe_use, op_layer_class
from compat_clone.errors import InvalidArgumentError, MissingCustomObjectError, UnconvertibleLayerError

__all__ = ["rebuild"]

# Layers tf.keras 2.4+ recorded for TensorFlow functions called on Keras tensors.
_TF_OP_CLASSES = ("TFOpLambda", "SlicingOpLambda")
# Config keys holding a wrapped layer (Bidirectional, TimeDistributed, RNN).
_LAYER_KEYS = ("layer", "backward_layer", "cell")


def rebuild(
    description: Description,
    *,
    custom_objects: Optional[Mapping[str, Any]] = None,
    changes: Optional[List[str]] = None,
    compile: bool = False,
) -> Any:
    """Builds the Keras 3 model a `Description` describes, weights included.

    Args:
        description: from `describe` (or `load`).
        custom_objects: Keras 3 replacements, by name: a custom layer's class
            name -> its Keras 3 class; a `Lambda` layer's name -> a Keras 3
            function (or layer) to use in its place; a function name used by
            a `Lambda` -> its Keras 3 function.
        changes: when given, what the conversion changed on purpose is
            appended to it, one line each.
        compile: compile it with the description's training state (loss,
            metrics, optimizer), the optimizer's slots and iteration count
            set (`describe(..., compile=True)` recorded them).

    Returns:
        A Keras 3 Functional or Sequential model, on the active backend.

    Raises:
        UnconvertibleLayerError: a layer with no Keras 3 counterpart, a
            `Lambda` whose function calls TensorFlow, a custom class missing
            from `custom_objects`, or an argument Keras 3 does not take.
        WeightsMismatchError: a layer's weights do not fit its Keras 3
            counterpart.
        CompileError: with `compile`, part of the training state has no
            Keras 3 counterpart (each part named), or none was described.

    Example:

    >>> from compat_clone.convert import load, rebuild
    >>> model = rebuild(load("/tmp/model.npz"))   # doctest: +SKIP
    """
    if not isinstance(description, Description):
        raise InvalidArgumentError(
            f"Expected a `Description` (from `compat_clone.convert.describe` or `load`). Received: {type(description).__name__}."
        )
    import keras

    from compat_clone.convert._weights import write_weights

    builder = _Builder(keras, description, dict(custom_objects or {}), changes if changes is not None else [])
    arch = description.architecture
    model = builder.model(arch["class_name"], arch["config"], "", None)
    line = describe_use(builder.tf_ops)
    if line:
        builder.changes.append(line)
    write_weights(model, description, builder.origin)
    if compile:
        from compat_clone.convert._recompile import recompile

        builder.changes.extend(recompile(model, description, custom_objects))
    return model


class _Builder:
    """Builds layers and models from Keras 2 configs, in Keras 3."""

    def __init__(self, keras: Any, description: Description, custom: Dict[str, Any], changes: List[str]) -> None:
        self.keras = keras
        self.description = description
        self.custom = custom
        self.changes = changes
        # id of each rebuilt layer -> the path of its source layer (the two
        # differ where a source name is not a valid Keras 3 name)
        self.origin: Dict[int, str] = {}
        # TensorFlow function name -> how many TFOpLambda layers called it
        self.tf_ops: Dict[str, int] = {}

    # -- classes and activations -------------------------------------------

    def activation(self, name: str) -> Any:
        return keras2_function(name)

    def layer_class(self, class_name: str, path: str) -> Any:
        short = class_name.rpartition(">")[2]
        for key in (class_name, short):
            if key in self.custom:
                return self.custom[key]
        found = getattr(self.keras.layers, short, None)
        if isinstance(found, type) and class_name == short:
            return found
        found = self.application_class(short, path)
        if found is not None:
            return found
        if short in REMOVED_LAYERS:
            since, advice = REMOVED_LAYERS[short]
            raise UnconvertibleLayerError(
                f"Layer {path!r} is a {short}, which Keras has no longer had since {since}: "
                f"{advice}. Or pass a Keras 3 class in `custom_objects={{{short!r}: ...}}`."
            )
        raise MissingCustomObjectError(
            f"Layer {path!r} is of class {class_name!r}, which is not a Keras "
            f"{self.keras.__version__} layer (a custom layer of the source model). "
            f"Pass its Keras 3 implementation: `convert(model, custom_objects={{{short!r}: "
            "MyLayerForKeras3})`",
            name=short,
            layers=[path],
            kind="layer",
        )

    def own_activations(self, mapped: Dict[str, Any], path: str) -> None:
        """Activations saved by a name of the user's own (``'<lambda>'``, ``'swish2'``): `custom_objects`' functions."""
        # a function given as '<lambda>' is saved by the source under its own name
        own = {str(getattr(fn, "__name__", "")): fn for fn in self.custom.values() if callable(fn) and not isinstance(fn, type)}
        for key in ("activation", "recurrent_activation"):
            value = mapped.get(key)
            if not isinstance(value, str) or (value != "<lambda>" and hasattr(self.keras.activations, value)):
                continue
            function = self.custom.get(value, own.get(value))
            if function is not None:
                mapped[key] = function
                self.changes.append(f"{path}: {key}={value!r} computed by the function given for it")
                continue
            saved = (
                "Keras 2 saved a lambda function by that name, without its code, so no Keras can compute it from the file"
                if value == "<lambda>"
                else "a function of the source model's own"
            )
            raise MissingCustomObjectError(
                f"Layer {path!r} has {key}={value!r}: {saved}. Pass the function: "
                f"`convert(model, custom_objects={{{value!r}: fn}})`",
                name=value,
                layers=[path],
                kind="activation",
            )

    def application_class(self, class_name: str, path: str) -> Any:
        """Keras 3's own class for a layer class of a Keras 2 `keras.applications` model.

        ConvNeXt's `LayerScale` and `StochasticDepth` and InceptionResNetV2's
        `CustomScaleLayer` live in their application's module, in Keras 2 and
        in Keras 3 alike (same arguments, same weights; the proof checks).
        """
        for note in self.description.notes_for(path):
            if note["kind"] != "application_class" or note["class"] != class_name:
                continue
            application = note["module"].rpartition(".applications.")[2]
            try:
                module = importlib.import_module(f"keras.src.applications.{application}")
            except ImportError:
                return None
            found = getattr(module, class_name, None)
            if isinstance(found, type):
                self.changes.append(
                    f"{path}: {class_name} of {note['module']} rebuilt as Keras "
                    f"{self.keras.__version__}'s own (keras.src.applications.{application})"
                )
                return found
        return None

    # -- one layer ---------------------------------------------------------

    def layer(self, entry: Dict[str, Any], path: str, keras3_name: Optional[str] = None) -> Any:
        """One layer (or nested model) of the source, built in Keras 3.

        Args:
            entry: its ``{"class_name", "config", ...}``.
            path: its source path, for messages and its weights.
            keras3_name: the name it gets (`keras3_names`); by default its
                source name made valid.
        """
        class_name = entry["class_name"]
        config = entry["config"]
        name = str(config.get("name", path.rsplit("/", 1)[-1]))
        new_name = keras3_name or valid_name(name)
        if is_model_entry(class_name):
            return self.model(class_name, config, path + "/", new_name)
        built = self.leaf(entry, path, name, new_name)
        self.origin[id(built)] = path
        return built

    def leaf(self, entry: Dict[str, Any], path: str, name: str, new_name: str) -> Any:
        class_name = entry["class_name"]
        config = dict(entry["config"], name=new_name)
        if class_name == "Lambda":
            return lambda_layer(self, dict(config, name=name), path, new_name)
        if class_name in _TF_OP_CLASSES and name not in self.custom:
            return self.tf_op(config, path, new_name)
        if name in self.custom and not isinstance(self.custom[name], type):
            replacement = self.custom[name]
            self.changes.append(f"{path}: replaced by custom_objects[{name!r}]")
            return replacement
        cls = self.layer_class(class_name, path)
        is_custom = cls is not getattr(self.keras.layers, class_name.rpartition(">")[2], None)
        mapped = map_config(class_name, config, path, cls, self.changes, self.activation)
        self.own_activations(mapped, path)
        for key, value in mapped.items():
            # Keras 3.0 deserializes some initializers by their new class name
            # only (`OrthogonalInitializer`): build the ones its module names.
            if key.endswith("_initializer") and isinstance(value, dict) and "class_name" in value:
                initializer: Any = getattr(self.keras.initializers, value["class_name"], None)
                if initializer is not None and hasattr(initializer, "from_config"):
                    mapped[key] = initializer.from_config(value.get("config", {}))
        for key in _LAYER_KEYS:
            inner = mapped.get(key)
            if isinstance(inner, dict) and "class_name" in inner:
                mapped[key] = self.layer(inner, path + "/" + str(inner["config"].get("name", key)))
        if isinstance(mapped.get("cells"), list):
            mapped["cells"] = [self.layer(c, f"{path}/{c['config'].get('name', i)}") for i, c in enumerate(mapped["cells"])]
        try:
            if is_custom and hasattr(cls, "from_config"):
                return cls.from_config(mapped)
            built = cls(**mapped)
        except UnconvertibleLayerError:
            raise
        except Exception as exc:  # Keras 3 refused the mapped arguments
            raise UnconvertibleLayerError(
                f"Layer {path!r}: Keras {self.keras.__version__}'s {cls.__name__} refused the "
                f"converted config ({type(exc).__name__}: {exc}). Pass a Keras 3 layer for it "
                f"in `custom_objects={{{name!r}: ...}}`."
            ) from exc
        return built

    def tf_op(self, config: Dict[str, Any], path: str, new_name: str) -> PendingOp:
        """A `TFOpLambda` / `SlicingOpLambda`: built at its call (`op_call`)."""
        function = str(config.get("function"))
        if function not in OPS:
            check_call(function, path, {})
        self.tf_ops[function] = self.tf_ops.get(function, 0) + 1
        return PendingOp(function, new_name, path)

    def op_call(self, pending: PendingOp, args: Any, kwargs: Dict[str, Any]) -> Any:
        """Calls a TensorFlow function's Keras 3 layer; its constants go in its config."""
        kwargs = {k: v for k, v in kwargs.items() if k != "name"}  # a TensorFlow op name only
        check_call(pending.function, pending.path, kwargs)
        tensors = {k: v for k, v in kwargs.items() if _holds_tensor(self.keras, v)}
        constants = {k: v for k, v in kwargs.items() if k not in tensors}
        if pending.layer is None:
            pending.layer = op_layer_class()(function=pending.function, arguments=constants, name=pending.name)
            self.origin[id(pending.layer)] = pending.path
        elif pending.layer.arguments != constants:
            raise UnconvertibleLayerError(
                f"Layer {pending.path!r} calls `tf.{pending.function}` twice with different "
                f"constant arguments ({pending.layer.arguments} and {constants}); rebuild the "
                "source so that each call has its own layer."
            )
        return pending.layer(args, tensors) if tensors else pending.layer(args)

    # -- models -----------------------------------------------------------

    def model(self, class_name: str, config: Any, prefix: str, name: Optional[str]) -> Any:
        if name is None and isinstance(config, dict) and config.get("name") is not None:
            name = valid_name(str(config["name"]))
        if class_name == "Sequential":
            return self.sequential(config, prefix, name)
        return functional(self, config, prefix, name)

    def keras3_names(self, names: List[str], prefix: str) -> Dict[str, str]:
        """Keras 3 names for one model's layers (`_names.keras3_names`), the renames reported once per model."""
        result = keras3_names(names)
        renamed = [(name, new) for name, new in result.items() if new != name]
        if renamed:
            shown = ", ".join(f"{a!r} -> {b!r}" for a, b in renamed[:3])
            more = f" and {len(renamed) - 3} more" if len(renamed) > 3 else ""
            where = f"model {prefix.rstrip('/')!r}" if prefix else "the model"
            self.changes.append(
                f"{where}: {len(renamed)} layer name(s) held '/', which Keras 3 names cannot: renamed {shown}{more}"
            )
        return result

    def input_layer(self, config: Dict[str, Any], path: str, keras3_name: Optional[str] = None) -> Any:
        mapped = map_config("InputLayer", config, path, self.keras.layers.InputLayer, self.changes, self.activation)
        shape = config.get("batch_input_shape", config.get("batch_shape"))
        if shape is None:
            raise UnconvertibleLayerError(
                f"Input layer {path!r} has no shape in the description (config {config!r}). "
                "Describe a model built on `Input(shape=...)`."
            )
        name = config.get("name")
        kwargs: Dict[str, Any] = {
            "batch_shape": tuple(shape),
            "name": keras3_name or (None if name is None else valid_name(str(name))),
        }
        if mapped.get("dtype") is not None:
            kwargs["dtype"] = mapped["dtype"]
        if mapped.get("sparse"):
            kwargs["sparse"] = True
        return self.keras.Input(**kwargs)

    def sequential(self, config: Any, prefix: str, name: Optional[str]) -> Any:
        entries = config if isinstance(config, list) else config["layers"]
        names = self.keras3_names([str(e["config"].get("name", "")) for e in entries], prefix)
        layers: List[Any] = []
        first = True
        for entry in entries:
            cfg = entry["config"]
            path = prefix + cfg.get("name", "")
            if entry["class_name"] == "InputLayer":
                layers.append(self.input_layer(cfg, path, names.get(cfg.get("name", ""))))
                first = False
                continue
            if first and cfg.get("batch_input_shape") is not None:
                layers.append(
                    self.input_layer(
                        {
                            "batch_input_shape": cfg["batch_input_shape"],
                            "dtype": cfg.get("dtype"),
                            "name": cfg["name"] + "_input",
                        },
                        path,
                    )
                )
            first = False
            layers.append(self.layer(entry, path, names.get(cfg.get("name", ""))))
        inline = [layer for layer in layers if isinstance(layer, InlineLambda)]
        if not inline:
            return self.keras.Sequential(layers, name=name)
        # a Lambda computed inline (`_lambdas`) is no layer a Sequential can hold: the same steps as a Functional model
        if not isinstance(layers[0], self.keras.KerasTensor):
            raise UnconvertibleLayerError(
                f"Sequential model {prefix.rstrip('/') or name!r} holds a Lambda computed inline with keras.ops, which "
                "needs the model's input shape, and the description has none. Build the source on an Input (or with "
                "input_shape=) and describe it again."
            )
        tensor = layers[0]
        for layer in layers[1:]:
            tensor = layer(tensor)
        self.changes.append(
            f"{'model ' + repr(prefix.rstrip('/')) if prefix else 'the model'}: a Sequential model rebuilt as a "
            "Functional one (the same layers in order), since a Lambda in it is computed inline"
        )
        return self.keras.Model(layers[0], tensor, name=name)


def _holds_tensor(keras: Any, value: Any) -> bool:
    if isinstance(value, (list, tuple)):
        return any(_holds_tensor(keras, v) for v in value)
    return isinstance(value, keras.KerasTensor)
