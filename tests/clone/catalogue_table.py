"""The layer catalogue's table: how to build each layer class, as data.

Why data: the catalogue (tests/clone/catalogue.py) reads the layer classes from the
Keras module at run time; what each needs to be built (constructor
arguments, the inputs' per-sample shapes and dtype, how it is called,
whether it is adapted, whether it is an RNN cell) is one row here, keyed by
class name and shared by every family, so a class that several Keras
releases export is built the same way in each. A class with no row is built
by convention (`DEFAULT`: no arguments, one float input of shape ``(4,)``);
a row's `skip` says why a class is not built at all.

Arguments that must be made per case (a wrapper's inner layer, a cell, a
SavedModel's path, another framework's module) are `Make` values, called
with the Keras module and a folder.
"""

from __future__ import annotations

import inspect
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Mapping, Optional, Tuple

__all__ = ["Make", "Spec", "TABLE", "DEFAULT", "spec_for", "ABSTRACT_REASON", "VEC", "SEQ", "IMG", "VOL"]

#: How an abstract base's `skip` begins: the coverage test reads it as a class that cannot run anywhere.
ABSTRACT_REASON = "abstract"

# Per-sample shapes, named once: a vector, a sequence (steps, features), an
# image (height, width, channels) large enough for the 8x8 tiles of the
# histogram equalizers, a volume (depth, height, width, channels).
VEC = (4,)
SEQ = (5, 3)
IMG = (8, 8, 3)
VOL = (4, 4, 4, 2)


@dataclass(frozen=True)
class Make:
    """A constructor argument made per case: `fn(K, tmp)` (a layer, a cell, a saved model's path)."""

    fn: Callable[[Any, str], Any]


@dataclass(frozen=True)
class Spec:
    """How to build one layer class.

    Args:
        kwargs: constructor arguments; a `Make` value is made per case.
        inputs: the inputs' per-sample shapes, one per input.
        dtype: the inputs' dtype (``float32``, ``int32`` or ``string``).
        call: how the layer takes several inputs: ``"list"`` (one list),
            ``"args"`` (positional), ``"dict"`` (``{"x": input}``).
        adapt: the layer is adapted on the case's input before it is placed.
        cell: the class is an RNN cell, placed inside ``rnn(cell)``.
        rnn: the layer a cell goes in: ``RNN``, or ``ConvRNN2D`` for
            standalone Keras 2.2-2.3's convolutional cell.
        op: for a class Keras makes itself, never called by users' code:
            the InputLayer (made by ``Input()``; its op adds a linear
            Activation) and tf.keras 2.x's TFOpLambda, SlicingOpLambda and the
            ragged tensor's ClassMethod, InstanceMethod and InstanceProperty
            (made when a TensorFlow function meets a Keras tensor):
            ``op(K, x)`` is that code, run on a model's input; the class is
            built by running it, never by its constructor, as users get it.
        gpu: the class runs on a GPU only (no CPU kernel): not built where
            TensorFlow sees none.
        skip: why the table does not build the class at all ('' to build).
    """

    kwargs: Mapping[str, Any] = field(default_factory=dict)
    inputs: Tuple[Tuple[int, ...], ...] = (VEC,)
    dtype: str = "float32"
    call: str = "one"
    adapt: bool = False
    cell: bool = False
    rnn: str = "RNN"
    op: Optional[Callable[[Any, Any], Any]] = None
    gpu: bool = False
    skip: str = ""


def _spec(kwargs: Optional[Mapping[str, Any]] = None, *inputs: Tuple[int, ...], **rest: Any) -> Spec:
    rest.setdefault("inputs", tuple(inputs) or (VEC,))
    return Spec(kwargs=dict(kwargs or {}), **rest)


def _layer(name: str, *args: Any, **kwargs: Any) -> Make:
    """A layer of the family under test, made per case (a wrapper's inner layer, a cell)."""
    return Make(lambda K, tmp: getattr(K.layers, name)(*args, **kwargs))


def _saved_model(K: Any, tmp: str) -> str:
    """A tiny SavedModel exported by Keras 3 (for `TFSMLayer`), once per folder."""
    path = os.path.join(tmp, "tfsm")
    if not os.path.isdir(path):
        inputs = K.Input(VEC)
        model = K.models.Model(inputs, K.layers.Dense(3)(inputs))
        # `verbose` came with Keras 3.6; before it, export always printed what it wrote
        quiet = {"verbose": False} if "verbose" in inspect.signature(model.export).parameters else {}
        model.export(path, **quiet)
    return path


def _jax_layer(K: Any, tmp: str) -> Any:
    import jax.numpy as jnp

    return jnp.ones((4, 3))


def _flax_module(K: Any, tmp: str) -> Any:
    import flax.linen

    return flax.linen.Dense(3)


def _torch_module(K: Any, tmp: str) -> Any:
    import torch

    return torch.nn.Linear(4, 3)


def _tf() -> Any:
    import tensorflow as tf

    return tf


def _feature_columns(K: Any, tmp: str) -> Any:
    return [_tf().feature_column.numeric_column("x", shape=VEC)]


def _ragged(x: Any) -> Any:
    """A ragged tensor made from a batch of float rows, their trailing zeros dropped (a ClassMethod layer on a Keras tensor)."""
    return _tf().RaggedTensor.from_tensor(x, padding=0.0)


def _pools(name: str, **kwargs: Any) -> Dict[str, Spec]:
    """A 1D, 2D and 3D variant of a layer family, each on its shape."""
    return {f"{name}{d}D": _spec(kwargs, shape) for d, shape in ((1, SEQ), (2, IMG), (3, VOL))}


_TWO_VECTORS = {"inputs": (VEC, VEC), "call": "list"}
_TWO_SEQUENCES = {"inputs": (SEQ, SEQ)}
_IMAGE = {"inputs": (IMG,)}

# Class name -> how to build it. Names not here are built by convention (`DEFAULT`).
TABLE: Dict[str, Spec] = {
    # core, activations, regularization
    "Activation": _spec({"activation": "relu"}),
    "Dense": _spec({"units": 3}),
    "EinsumDense": _spec({"equation": "ab,bc->ac", "output_shape": 3}),
    "Embedding": _spec({"input_dim": 10, "output_dim": 3, "mask_zero": True}, (5,), dtype="int32"),
    "ReversibleEmbedding": _spec({"input_dim": 10, "output_dim": 3}, (5,), dtype="int32"),
    "Lambda": _spec({"function": lambda x: x * 2.0}),
    "Masking": _spec({"mask_value": 0.0}, SEQ),
    "Dropout": _spec({"rate": 0.5}),
    "AlphaDropout": _spec({"rate": 0.5}),
    "GaussianDropout": _spec({"rate": 0.5}),
    "GaussianNoise": _spec({"stddev": 0.1}),
    "SpatialDropout1D": _spec({"rate": 0.5}, SEQ),
    "SpatialDropout2D": _spec({"rate": 0.5}, IMG),
    "SpatialDropout3D": _spec({"rate": 0.5}, VOL),
    "GroupNormalization": _spec({"groups": 2}),
    "SpectralNormalization": _spec({"layer": _layer("Dense", 3)}),
    # the input of every model, made by `Input()`, never called by users: its case is the model of its input and a
    # linear Activation (Keras 3.10-3.13 refuse a model whose output is its input; TF 1 cannot feed and fetch one tensor)
    "InputLayer": _spec(op=lambda K, x: K.layers.Activation("linear")(x)),
    "AbstractRNNCell": Spec(skip=f"{ABSTRACT_REASON}: a cell subclasses it with its own `call` and `state_size`"),
    "Recurrent": Spec(skip=f"{ABSTRACT_REASON}: standalone Keras 2's base of its recurrent layers, whose `step` is a template"),
    "ConvRecurrent2D": Spec(skip=f"{ABSTRACT_REASON}: standalone Keras 2's base of ConvLSTM2D, whose `step` is a template"),
    # merging and attention
    "Add": _spec(**_TWO_VECTORS),
    "Subtract": _spec(**_TWO_VECTORS),
    "Multiply": _spec(**_TWO_VECTORS),
    "Average": _spec(**_TWO_VECTORS),
    "Maximum": _spec(**_TWO_VECTORS),
    "Minimum": _spec(**_TWO_VECTORS),
    "Concatenate": _spec(**_TWO_VECTORS),
    "Merge": _spec({"mode": "sum"}, **_TWO_VECTORS),  # standalone Keras 2.0-2.1's legacy merge layer
    "Dot": _spec({"axes": 1}, **_TWO_VECTORS),
    "Attention": _spec(call="list", **_TWO_SEQUENCES),
    "AdditiveAttention": _spec(call="list", **_TWO_SEQUENCES),
    "MultiHeadAttention": _spec({"num_heads": 2, "key_dim": 2}, call="args", **_TWO_SEQUENCES),
    "GroupQueryAttention": _spec({"head_dim": 2, "num_query_heads": 2, "num_key_value_heads": 1}, call="args", **_TWO_SEQUENCES),
    # convolution, pooling, reshaping
    **_pools("Conv", filters=2, kernel_size=2),
    **{f"Conv{d}DTranspose": _spec({"filters": 2, "kernel_size": 2}, s) for d, s in ((1, SEQ), (2, IMG), (3, VOL))},
    "DepthwiseConv1D": _spec({"kernel_size": 2}, SEQ),
    "DepthwiseConv2D": _spec({"kernel_size": 2}, IMG),
    "SeparableConv1D": _spec({"filters": 2, "kernel_size": 2}, SEQ),
    "SeparableConv2D": _spec({"filters": 2, "kernel_size": 2}, IMG),
    "LocallyConnected1D": _spec({"filters": 2, "kernel_size": 2}, SEQ),
    "LocallyConnected2D": _spec({"filters": 2, "kernel_size": 2}, IMG),
    "ConvLSTM1D": _spec({"filters": 2, "kernel_size": 2}, (3, 5, 2)),
    "ConvLSTM2D": _spec({"filters": 2, "kernel_size": 2}, (3, 4, 4, 2)),
    "ConvLSTM3D": _spec({"filters": 2, "kernel_size": 2}, (3, 4, 4, 4, 1)),
    **_pools("AveragePooling", pool_size=2),
    **_pools("MaxPooling", pool_size=2),
    **_pools("GlobalAveragePooling"),
    **_pools("GlobalMaxPooling"),
    **_pools("AdaptiveAveragePooling", output_size=2),
    **_pools("AdaptiveMaxPooling", output_size=2),
    **_pools("Cropping", cropping=1),
    **_pools("UpSampling"),
    **_pools("ZeroPadding"),
    "Flatten": _spec(None, IMG),
    "Permute": _spec({"dims": (2, 1)}, SEQ),
    "RepeatVector": _spec({"n": 2}),
    "Reshape": _spec({"target_shape": (2, 2)}),
    # recurrent: layers on a sequence, cells inside RNN(cell)
    "LSTM": _spec({"units": 2}, SEQ),
    "GRU": _spec({"units": 2}, SEQ),
    "SimpleRNN": _spec({"units": 2}, SEQ),
    "RNN": _spec({"cell": _layer("SimpleRNNCell", 2)}, SEQ),
    # standalone Keras 2.2-2.3: the convolutional RNN over its cell, and 2.0-2.2's legacy MaxoutDense
    "ConvRNN2D": _spec({"cell": _layer("ConvLSTM2DCell", 2, 2)}, (3, 4, 4, 2)),
    "ConvLSTM2DCell": _spec({"filters": 2, "kernel_size": 2}, (3, 4, 4, 2), cell=True, rnn="ConvRNN2D"),
    "MaxoutDense": _spec({"output_dim": 2}),
    "LSTMCell": _spec({"units": 2}, SEQ, cell=True),
    "GRUCell": _spec({"units": 2}, SEQ, cell=True),
    "SimpleRNNCell": _spec({"units": 2}, SEQ, cell=True),
    # tf.keras 2.x's RNN cell wrappers (TF 1's cell wrappers, in Keras): each around a GRU cell, inside RNN(cell);
    # the residual one adds the step's input to the cell's output, so the cell has the input's width
    "DeviceWrapper": _spec({"cell": _layer("GRUCell", 2), "device": "/cpu:0"}, SEQ, cell=True),
    "DropoutWrapper": _spec({"cell": _layer("GRUCell", 2)}, SEQ, cell=True),
    "ResidualWrapper": _spec({"cell": _layer("GRUCell", 3)}, SEQ, cell=True),
    "CuDNNGRU": _spec({"units": 2}, SEQ, gpu=True),
    "CuDNNLSTM": _spec({"units": 2}, SEQ, gpu=True),
    "StackedRNNCells": _spec({"cells": Make(lambda K, tmp: [K.layers.LSTMCell(2), K.layers.GRUCell(2)])}, SEQ, cell=True),
    "Bidirectional": _spec({"layer": _layer("LSTM", 2)}, SEQ),
    "TimeDistributed": _spec({"layer": _layer("Dense", 2)}, SEQ),
    "Wrapper": _spec({"layer": _layer("Dense", 2)}),
    # preprocessing: adapted where they adapt
    "Normalization": _spec(adapt=True),
    "Discretization": _spec({"num_bins": 3}, adapt=True),
    "StringLookup": _spec(None, (3,), dtype="string", adapt=True),
    "IntegerLookup": _spec(None, (3,), dtype="int32", adapt=True),
    "TextVectorization": _spec({"max_tokens": 10, "output_sequence_length": 4}, (1,), dtype="string", adapt=True),
    "CategoryEncoding": _spec({"num_tokens": 6, "output_mode": "multi_hot"}, (3,), dtype="int32"),
    "Hashing": _spec({"num_bins": 5}, (3,), dtype="int32"),
    "HashedCrossing": _spec({"num_bins": 5}, (1,), (1,), dtype="int32", call="list"),
    "Rescaling": _spec({"scale": 0.5}),
    "Resizing": _spec({"height": 4, "width": 4}, IMG),
    "CenterCrop": _spec({"height": 4, "width": 4}, IMG),
    "RandomCrop": _spec({"height": 4, "width": 4}, IMG),
    "RandomBrightness": _spec({"factor": 0.2}, IMG),
    "RandomContrast": _spec({"factor": 0.2}, IMG),
    "RandomRotation": _spec({"factor": 0.1}, IMG),
    "RandomTranslation": _spec({"height_factor": 0.1, "width_factor": 0.1}, IMG),
    "RandomZoom": _spec({"height_factor": 0.1}, IMG),
    "RandomHeight": _spec({"factor": 0.1}, IMG),
    "RandomWidth": _spec({"factor": 0.1}, IMG),
    "RandomHue": _spec({"factor": 0.5}, IMG),
    "RandomSaturation": _spec({"factor": 0.5}, IMG),
    "RandomSharpness": _spec({"factor": 0.5}, IMG),
    "RandomColorDegeneration": _spec({"factor": 0.5}, IMG),
    "RandomPosterization": _spec({"factor": (1, 4)}, IMG),
    "RandomShear": _spec({"x_factor": 0.1}, IMG),
    "MaxNumBoundingBoxes": _spec({"max_number": 3}, IMG),
    "MelSpectrogram": _spec(
        {"fft_length": 16, "sequence_stride": 8, "sampling_rate": 8000, "num_mel_bins": 4, "max_freq": 4000.0}, (64,)
    ),
    "STFTSpectrogram": _spec({"frame_length": 16, "frame_step": 8, "fft_length": 16, "window": None}, (64, 1)),
    "RandomFourierFeatures": _spec({"output_dim": 3, "scale": 2.0}),
    "Pipeline": _spec({"layers": Make(lambda K, tmp: [K.layers.Rescaling(0.5), K.layers.Dense(3)])}),
    # layers that need a saved model, another framework or feature columns
    "TFSMLayer": _spec({"filepath": Make(_saved_model)}),
    "JaxLayer": _spec({"call_fn": lambda params, inputs: inputs @ params, "params": Make(_jax_layer)}),
    "FlaxLayer": _spec({"module": Make(_flax_module)}),
    "TorchModuleWrapper": _spec({"module": Make(_torch_module)}),
    "DenseFeatures": _spec({"feature_columns": Make(_feature_columns)}, call="dict"),
    # tf.keras 2.x: the layers Keras makes when TensorFlow code meets a Keras tensor in a functional model
    "TFOpLambda": _spec(op=lambda K, x: _tf().math.square(x)),
    "SlicingOpLambda": _spec(None, SEQ, op=lambda K, x: x[:, 1:, :2]),
    "ClassMethod": _spec(None, (5,), op=lambda K, x: _ragged(x).to_tensor(default_value=0.0)),
    "InstanceMethod": _spec(None, (5,), op=lambda K, x: _ragged(x).row_lengths()),
    "InstanceProperty": _spec(None, (5,), op=lambda K, x: _ragged(x).flat_values),
}
# The image layers that need no argument take an image too.
for _name in (
    "AugMix",
    "AutoContrast",
    "ContrastLimitedAdaptiveHistogramEqualization",
    "CutMix",
    "Equalization",
    "MixUp",
    "RandAugment",
    "RandomColorJitter",
    "RandomElasticTransform",
    "RandomErasing",
    "RandomFlip",
    "RandomGaussianBlur",
    "RandomGrayscale",
    "RandomInvert",
    "RandomPerspective",
    "Solarization",
):
    TABLE[_name] = Spec(**_IMAGE)  # type: ignore[arg-type]
DEFAULT = Spec()


def spec_for(name: str, cls: type) -> Spec:
    """The table's row for a class: its name, else any name of its (`TABLE` is keyed by the usual name), else `DEFAULT`."""
    for candidate in (name, cls.__name__):
        if candidate in TABLE:
            return TABLE[candidate]
    return DEFAULT
