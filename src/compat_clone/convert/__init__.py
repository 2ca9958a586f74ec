"""Keras 2 models (standalone keras 2.x, tf.keras, tf_keras) to Keras 3.

Two halves joined by a neutral description, because standalone Keras 2 and
tf.keras <= 2.15 cannot share a process with Keras 3:

* `describe(model)` (in the source's environment) -> `Description`:
  architecture, weights, probe inputs and the source's outputs on them;
* `save(description, path)` / `load(path)`: the description as one `.npz`;
* `rebuild(description)` (in a Keras 3 environment) -> a Keras 3 model;
* `verify(description, model)` -> `Proof`: outputs compared on the probes;
* `custom_objects()`: what Keras 3 needs to load a converted `.keras` file
  that computes a Keras 2 formula Keras 3 changed (standalone Keras 2's
  LSTM / GRU ``hard_sigmoid``).

`convert(model)` does all of it in one process, where both Kerases import
(`compat_clone.convert.convert(model)`, or `from compat_clone.convert import
convert`). Importing this package imports no framework.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, List, Mapping, Optional, Tuple, Union

from compat_clone.errors import InvalidArgumentError
from compat_clone.families.registry import FAMILIES

if TYPE_CHECKING:
    from compat_clone.convert._custom_objects import custom_objects
    from compat_clone.convert._describe import describe
    from compat_clone.convert._files import describe_file, rebuild_file
    from compat_clone.convert._format import FORMAT, Description, LayerOutput, LayerOutputs, ProbeSet, WeightRecord
    from compat_clone.convert._io import load, save
    from compat_clone.convert._proof import OutputDiff, Proof, verify
    from compat_clone.convert._rebuild import rebuild
    from compat_clone.convert._reference import check_reference, record_reference
    from compat_clone.convert._weights_map import Placed, map_weights

__all__ = [
    "FORMAT",
    "Description",
    "ProbeSet",
    "WeightRecord",
    "LayerOutput",
    "LayerOutputs",
    "OutputDiff",
    "Proof",
    "convert",
    "custom_objects",
    "describe",
    "describe_file",
    "rebuild_file",
    "save",
    "load",
    "rebuild",
    "verify",
    "map_weights",
    "Placed",
    "record_reference",
    "check_reference",
]

_TARGETS = tuple(name for name, found in FAMILIES.items() if found.conversion_target)

# Public name -> the module that defines it, imported on first use: the
# conversion's modules need NumPy (and a framework to do anything), so
# `import compat_clone.convert` works in an environment that has neither.
_LAZY = {
    "FORMAT": "_format",
    "Description": "_format",
    "ProbeSet": "_format",
    "WeightRecord": "_format",
    "LayerOutput": "_format",
    "LayerOutputs": "_format",
    "describe": "_describe",
    "describe_file": "_files",
    "rebuild_file": "_files",
    "custom_objects": "_custom_objects",
    "load": "_io",
    "save": "_io",
    "OutputDiff": "_proof",
    "Proof": "_proof",
    "verify": "_proof",
    "rebuild": "_rebuild",
    "map_weights": "_weights_map",
    "Placed": "_weights_map",
    "record_reference": "_reference",
    "check_reference": "_reference",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> List[str]:
    return sorted(set(globals()) | set(_LAZY))


def convert(
    model: Any,
    to: str = "keras3",
    *,
    custom_objects: Optional[Mapping[str, Any]] = None,
    probe_inputs: Any = None,
    rtol: float = 1e-5,
    atol: float = 1e-6,
    return_proof: bool = False,
    compile: bool = False,
) -> Union[Any, Tuple[Any, Proof]]:
    """Converts a Keras 2 model (tf_keras, tf.keras 2.x) into a trainable Keras 3 model.

    The Keras 3 model has the same graph (masks, shared layers and nested
    models kept) and the same weights, on whichever Keras 3 backend is
    active. The conversion is always proven: both models run on probe
    inputs (random ones of the right shapes, dtypes and roles, or
    `probe_inputs` instead) and their outputs must agree within `rtol`/`atol`,
    else nothing is returned. Needs `keras` 3 importable next to the
    model's Keras (e.g. `tf_keras` 2.16+); otherwise use `describe` and
    `save` in the source's environment and `load`, `rebuild` and `verify`
    in a Keras 3 one.

    Args:
        model: a Functional or Sequential tf_keras / tf.keras 2.x model
            (standalone Keras 2 models convert through a description file).
        to: the target, ``"keras3"`` (the only one).
        custom_objects: Keras 3 replacements by name: a custom layer's class
            name -> its Keras 3 class; a `Lambda` layer's name -> a Keras 3
            function; a function a `Lambda` names -> its Keras 3 version.
        probe_inputs: inputs of your own to prove the conversion on,
            instead of random ones (an array, or a list in input order).
        rtol: relative tolerance of the proof.
        atol: absolute tolerance of the proof.
        return_proof: also return the `Proof` (largest differences per
            output, and what the conversion changed on purpose).
        compile: carry the training state of the compiled `model`: its loss,
            metrics and loss weights, its optimizer (class and
            hyperparameters, mapped to Keras 3's) and the optimizer's slots
            and iteration count; the result is compiled and trains on from
            where the source stopped. Proven too: one training step on the
            same batch must give the same weights (`Proof.training`), unless
            the model draws random numbers in training (said there). The
            source is left as it was.

    Returns:
        The Keras 3 model, or ``(model, proof)`` with ``return_proof=True``.

    Raises:
        UnconvertibleLayerError: a layer with no Keras 3 counterpart (a
            `Lambda` calling TensorFlow, a custom layer not in
            `custom_objects`, a layer Keras 3 dropped), named with the way out.
        ConversionMismatchError: the outputs differ above tolerance (its
            ``proof`` attribute holds the measurements).
        ProbeInputError: the source computes none of the random probes
            (its open dimensions tried at every length within a memory
            budget): pass `probe_inputs`.
        CompileError: with ``compile=True``, part of the training state
            has no Keras 3 counterpart (a loss of your own not in
            `custom_objects`, an optimizer Keras 3 updates otherwise), each
            part named; convert without ``compile=True`` to leave it behind.
        InvalidArgumentError: an argument of the wrong kind.

    Example:

    >>> import tf_keras
    >>> from compat_clone.convert import convert
    >>> inputs = tf_keras.Input((3,))
    >>> source = tf_keras.Model(inputs, tf_keras.layers.Dense(2)(inputs))
    >>> model, proof = convert(source, return_proof=True)
    >>> type(model).__module__.split(".")[0], proof.ok
    ('keras', True)
    """
    if to not in _TARGETS:
        raise InvalidArgumentError(f"Expected `to` to be one of {list(_TARGETS)}. Received: to={to!r}.")
    if custom_objects is not None and not isinstance(custom_objects, Mapping):
        raise InvalidArgumentError(
            "Expected `custom_objects` to be a dict of names to Keras 3 classes or functions. "
            f"Received: custom_objects={type(custom_objects).__name__}."
        )
    from compat_clone.convert._describe import describe
    from compat_clone.convert._proof import verify
    from compat_clone.convert._rebuild import rebuild

    description = describe(model, probe_inputs=probe_inputs, compile=bool(compile))
    changes: List[str] = []
    converted = rebuild(description, custom_objects=custom_objects, changes=changes, compile=bool(compile))
    proof = verify(description, converted, rtol=rtol, atol=atol, changes=changes)
    if compile:
        import dataclasses

        from compat_clone.convert._recompile import verify_step

        proof = dataclasses.replace(proof, training=str(verify_step(description, converted, rtol=rtol, atol=atol)))
    return (converted, proof) if return_proof else converted
