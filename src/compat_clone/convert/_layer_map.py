"""Keras 2 layer configs to Keras 3 ones: the tables, and the one function that reads them.

Data first: what Keras 3 dropped, what it renamed, which arguments it no
longer takes and when dropping one changes nothing. `map_config` applies
them to one layer's config and says what it changed; what it cannot map it
refuses with `UnconvertibleLayerError`, never guessing.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable, Dict, List, Optional, Tuple

from compat_clone.errors import UnconvertibleLayerError

__all__ = ["REMOVED_LAYERS", "RENAMED_ARGUMENTS", "DROPPABLE_ARGUMENTS", "map_config", "accepted_arguments"]

#: Layer classes Keras 3 has not: the release that dropped them, and the way out.
REMOVED_LAYERS: Dict[str, Tuple[str, str]] = {
    "LocallyConnected1D": ("Keras 3.0", "rebuild it from `Conv1D` layers or write a custom Keras 3 layer"),
    "LocallyConnected2D": ("Keras 3.0", "rebuild it from `Conv2D` layers or write a custom Keras 3 layer"),
    "ThresholdedReLU": ("Keras 3.0", "use `keras.layers.ReLU(threshold=theta)` (equal except at x == theta)"),
    "DenseFeatures": ("Keras 3.0", "use Keras 3 preprocessing layers or `keras.utils.FeatureSpace`"),
    "CuDNNLSTM": ("tf.keras 2.0", "use `LSTM` (Keras 3 picks cuDNN by itself)"),
    "CuDNNGRU": ("tf.keras 2.0", "use `GRU(reset_after=True)` (Keras 3 picks cuDNN by itself)"),
    "TensorFlowOpLayer": ("Keras 3.0", "raw TensorFlow ops in the graph: rewrite them with `keras.ops`"),
    "TFOpLayer": ("Keras 3.0", "raw TensorFlow ops in the graph: rewrite them with `keras.ops`"),
    "DenseFeaturesV2": ("Keras 3.0", "use `keras.utils.FeatureSpace`"),
}


def _any(value: Any) -> bool:
    return True


def _equals(expected: Any) -> Callable[[Any], bool]:
    def check(value: Any) -> bool:
        return bool(value == expected)

    return check


#: Arguments renamed by Keras 3, per class (``"*"``: every class).
RENAMED_ARGUMENTS: Dict[str, Dict[str, str]] = {
    "LeakyReLU": {"alpha": "negative_slope"},
}

_RNN_DROPPABLE: Dict[str, Tuple[Callable[[Any], bool], str]] = {
    # A compute strategy of Keras 2 (fused vs. split matmuls): same maths.
    "implementation": (_any, "a Keras 2 compute strategy; the maths is the same"),
    "time_major": (_equals(False), "batch-major is Keras 3's only layout"),
}

#: Arguments Keras 3 no longer takes, per class (``"*"``: every class): a
#: check on the value (dropping it must change nothing) and why it may go.
DROPPABLE_ARGUMENTS: Dict[str, Dict[str, Tuple[Callable[[Any], bool], str]]] = {
    "*": {
        "batch_input_shape": (_any, "the input shape lives on the Input layer"),
        "input_dim": (_any, "the input shape lives on the Input layer"),
        "input_length": (_any, "the input shape lives on the Input layer"),
        "batch_size": (_any, "the input shape lives on the Input layer"),
    },
    "Embedding": {
        "input_length": (_any, "Keras 3 reads the sequence length from the input"),
    },
    "LSTM": _RNN_DROPPABLE,
    "GRU": _RNN_DROPPABLE,
    "SimpleRNN": _RNN_DROPPABLE,
    "RNN": _RNN_DROPPABLE,
    "ConvLSTM1D": _RNN_DROPPABLE,
    "ConvLSTM2D": _RNN_DROPPABLE,
    "ConvLSTM3D": _RNN_DROPPABLE,
    "LSTMCell": _RNN_DROPPABLE,
    "GRUCell": _RNN_DROPPABLE,
    "BatchNormalization": {
        "fused": (_any, "a Keras 2 kernel choice; the maths is the same"),
        "renorm": (_equals(False), "batch renormalization is off"),
        "renorm_clipping": (lambda v: v is None or v == {}, "batch renormalization is off"),
        "renorm_momentum": (_any, "batch renormalization is off"),
        "virtual_batch_size": (_equals(None), "no virtual batches"),
        "adjustment": (_equals(None), "no adjustment function"),
    },
    "InputLayer": {
        "ragged": (_equals(False), "the input is not ragged"),
    },
    "DepthwiseConv2D": {
        "groups": (_equals(1), "one group"),
        "filters": (_any, "the depth multiplier sets the output channels"),
        "kernel_initializer": (_any, "depthwise layers use `depthwise_initializer`"),
        "kernel_regularizer": (_equals(None), "no kernel regularizer"),
        "kernel_constraint": (_equals(None), "no kernel constraint"),
    },
    "Conv1D": {"groups": (_equals(1), "one group")},
    "MultiHeadAttention": {
        "query_shape": (_any, "the shapes the layer was built on; Keras 3 reads them when it builds"),
        "key_shape": (_any, "the shapes the layer was built on; Keras 3 reads them when it builds"),
        "value_shape": (_any, "the shapes the layer was built on; Keras 3 reads them when it builds"),
        "softmax_robust_masking": (_equals(False), "the usual masked softmax"),
    },
}
# Keras 2 gave every convolution a `groups` argument; Keras 3 keeps it on the
# plain ones only.
for _name in ("Conv1DTranspose", "Conv2DTranspose", "Conv3DTranspose", "DepthwiseConv1D"):
    DROPPABLE_ARGUMENTS[_name] = {"groups": (_equals(1), "one group")}
# ... and its separable ones the plain kernel's settings too, unused by them.
for _name in ("SeparableConv1D", "SeparableConv2D"):
    DROPPABLE_ARGUMENTS[_name] = {
        "groups": (_equals(1), "one group"),
        "kernel_initializer": (_any, "separable layers use `depthwise_`/`pointwise_initializer`"),
        "kernel_regularizer": (_equals(None), "no kernel regularizer"),
        "kernel_constraint": (_equals(None), "no kernel constraint"),
    }
# Keras 2's random augmentation layers chose a random-number generator; Keras 3
# has one (seeded by `seed`), and these layers pass inputs through at inference.
for _name in (
    "RandomBrightness",
    "RandomContrast",
    "RandomCrop",
    "RandomFlip",
    "RandomHeight",
    "RandomRotation",
    "RandomTranslation",
    "RandomWidth",
    "RandomZoom",
):
    DROPPABLE_ARGUMENTS[_name] = {"rng_type": (_any, "Keras 3 has one random-number generator, seeded by `seed`")}

# Keys of an object's serialized dict that Keras 3 does not read.
_SERIALIZATION_KEYS = ("module", "registered_name", "shared_object_id", "build_config")

# Activation names whose maths changed in Keras 3: mapped to functions that
# compute the Keras 2 formula (see `_keras2_activation`).
_CHANGED_ACTIVATIONS = ("hard_sigmoid",)

_ACTIVATION_KEYS = ("activation", "recurrent_activation")


def accepted_arguments(cls: type) -> Optional[set[str]]:
    """Constructor argument names of a Keras 3 class (its bases' included); None if open."""
    names: set[str] = set()
    for klass in cls.__mro__:
        init = klass.__dict__.get("__init__")
        if init is None:
            continue
        try:
            params = inspect.signature(init).parameters.values()
        except (TypeError, ValueError):
            return None
        names.update(p.name for p in params if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL))
        # A custom class taking **kwargs may consume anything: do not judge.
        if klass.__module__.partition(".")[0] != "keras" and klass is cls and any(p.kind is p.VAR_KEYWORD for p in params):
            return None
    names.discard("self")
    return names


def _plain(obj: Any) -> Any:
    """A serialized object without the keys Keras 3 does not read, recursively."""
    if isinstance(obj, dict):
        return {k: _plain(v) for k, v in obj.items() if k not in _SERIALIZATION_KEYS}
    if isinstance(obj, list):
        return [_plain(v) for v in obj]
    return obj


def _dtype(value: Any) -> Any:
    """A Keras 2 dtype or dtype policy as Keras 3 takes it (a name)."""
    if isinstance(value, dict) and value.get("class_name") in ("Policy", "DTypePolicy", "PolicyV1"):
        return value.get("config", {}).get("name")
    return value


def _initializer(value: Any) -> Any:
    if isinstance(value, dict) and value.get("class_name") == "VarianceScaling":
        config = dict(value.get("config", {}))
        # Keras 2's "normal" meant a truncated normal; Keras 3 spells it out.
        if config.get("distribution") == "normal":
            config["distribution"] = "truncated_normal"
        return {"class_name": "VarianceScaling", "config": config}
    return value


def map_config(
    class_name: str,
    config: Dict[str, Any],
    path: str,
    keras3_class: type,
    changes: List[str],
    activation: Callable[[str], Any],
) -> Dict[str, Any]:
    """One layer's Keras 2 config as its Keras 3 class takes it.

    Args:
        class_name: the Keras 2 class name.
        config: its Keras 2 config (not modified).
        path: the layer's path, for messages.
        keras3_class: the class it becomes.
        changes: what was changed on purpose is appended here, one line each.
        activation: maps an activation name whose maths changed in Keras 3
            to a function computing the Keras 2 formula.

    Returns:
        The config for ``keras3_class(**config)`` (wrapped layers still as
        dicts, built by the caller).

    Raises:
        UnconvertibleLayerError: an argument Keras 3 does not take, with a
            value that matters.
    """
    out: Dict[str, Any] = {}
    renames = {**RENAMED_ARGUMENTS.get("*", {}), **RENAMED_ARGUMENTS.get(class_name, {})}
    for key, value in config.items():
        new_key = renames.get(key, key)
        if new_key != key:
            changes.append(f"{path}: argument `{key}` renamed `{new_key}` (Keras 3 name)")
        value = _plain(value)
        if new_key == "dtype":
            value = _dtype(value)
        elif new_key.endswith("_initializer"):
            value = _initializer(value)
        elif new_key in _ACTIVATION_KEYS and value in _CHANGED_ACTIVATIONS:
            changes.append(f"{path}: {new_key}={value!r} computed with the Keras 2 formula (Keras 3 changed its maths)")
            value = activation(value)
        out[new_key] = value
    if class_name == "BatchNormalization" and isinstance(out.get("axis"), list):
        axes = out["axis"]
        if len(axes) != 1:
            raise UnconvertibleLayerError(
                f"Layer {path!r} (BatchNormalization) normalizes over axes {axes}; Keras 3's "
                "BatchNormalization takes one axis. Reshape so one axis holds the features, "
                "or use `LayerNormalization`/a custom layer."
            )
        out["axis"] = axes[0]
    if class_name == "GRU" and "reset_after" not in out:
        out["reset_after"] = False  # Keras 2 < 2.1.3 wrote no flag: its GRU was reset-before
    accepted = accepted_arguments(keras3_class)
    if accepted is None:
        return out
    droppable = {**DROPPABLE_ARGUMENTS["*"], **DROPPABLE_ARGUMENTS.get(class_name, {})}
    for key in list(out):
        if key in accepted:
            continue
        value = out.pop(key)
        rule = droppable.get(key)
        if rule is not None and rule[0](value):
            if key not in DROPPABLE_ARGUMENTS["*"]:  # those moved to the Input, not dropped
                changes.append(f"{path}: dropped `{key}={value!r}` ({rule[1]})")
            continue
        why = f" ({rule[1]} only when it is the default)" if rule is not None else ""
        raise UnconvertibleLayerError(
            f"Layer {path!r} ({class_name}) has `{key}={value!r}`, an argument Keras 3's "
            f"{keras3_class.__name__} does not take{why}. Nothing converts it as is: "
            f"pass a Keras 3 layer for it in `custom_objects={{{path.rsplit('/', 1)[-1]!r}: ...}}`, "
            "or change the source model."
        )
    return out
