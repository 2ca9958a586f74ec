"""The public functions: validate the arguments, then hand them to the clone driver.

Every phase of a clone after validation (family, compile settings, build,
compile, weights) runs in `families/_driver.py`.
"""

from __future__ import annotations

import numbers
from typing import Any, Callable, Optional

from compat_clone.errors import InvalidArgumentError, NotAModelError
from compat_clone.families.registry import family_of

# The clone engine (`families._driver` and what it imports) is loaded on the first
# call, not on `import compat_clone` (issue 46: the import stays within its 50 ms).

__all__ = ["clone_model", "copy_weights", "family_of"]


def _check_callable(value: Any, argname: str) -> None:
    if value is not None and not callable(value):
        raise InvalidArgumentError(
            f"Expected `{argname}` to be a callable taking a layer (or None). "
            f"Received: {argname}={value!r} of type {type(value).__name__}."
        )


def _check_bool(value: Any, argname: str) -> None:
    if not isinstance(value, bool):
        raise InvalidArgumentError(
            f"Expected `{argname}` to be True or False. Received: {argname}={value!r} of type {type(value).__name__}."
        )


def clone_model(
    model: Any,
    input_tensors: Any = None,
    clone_function: Optional[Callable[[Any], Any]] = None,
    *,
    call_function: Optional[Callable[..., Any]] = None,
    recursive: bool = False,
    copy_weights: bool = False,
    device: Any = None,
    name: Optional[str] = None,
    compile: bool = False,
    **kwargs: Any,
) -> Any:
    """Clones a Keras model, whichever Keras owns it.

    A drop-in replacement for `keras.models.clone_model` (Keras 3),
    `tf.keras.models.clone_model` / `tf_keras.models.clone_model` (Keras
    2.4-2.15) and standalone `keras.models.clone_model` (Keras 2.0-2.3): the
    positional arguments and defaults are the native ones, so a call that
    worked natively gives the same clone. The implementation is chosen from
    the model object (see `family_of`). Where the native call of a version is
    wrong or lacks a feature, `compat_clone` corrects or supplies it (the
    README's compatibility table lists them).

    The clone has new layers and new, freshly initialized variables unless
    `copy_weights=True`. Its variables live where the source's live (same
    device, same `tf.distribute` strategy or JAX layout) unless `device` names
    another place.

    Args:
        model: a Functional or Sequential model (or a subclass with a usable
            `get_config`) of any supported family.
        input_tensors: optional tensors to build the clone on, in the
            structure of `model.inputs` (forms accepted by the owning Keras:
            `Input` tensors, and for standalone Keras 2 also placeholders and
            variables).
        clone_function: callable `fn(layer) -> new_layer` applied to every
            non-input layer. Defaults to a config round trip
            (`layer.__class__.from_config(layer.get_config())`).
        call_function: callable `fn(layer, *args, **kwargs) -> outputs` used
            to call each cloned layer in a functional model (to wrap or add
            layers around a call). Supplied on Keras versions that lack it.
        recursive: whether to clone nested models layer by layer, applying
            `clone_function` (and `call_function`) at every nesting level,
            instead of passing them whole to `clone_function`.
        copy_weights: whether to copy every variable of the source (trainable
            or not, e.g. BatchNormalization statistics) into the clone,
            matched layer by layer, device to device.
        device: where to create the clone's variables: `None` (where the
            source's are), or a device string of the backend (`"/CPU:0"`,
            `"/GPU:0"`, `"cpu"`, `"cuda:0"`) or a JAX device.
        name: optional new name for the clone (defaults to the source's).
        compile: whether to compile the clone like the source (the source
            must be compiled): a new optimizer of the same class and config
            with fresh state (no slots, `iterations` at 0; a learning-rate
            schedule is part of the config), the same losses, `loss_weights`,
            `metrics` and `weighted_metrics` (loss and metric objects
            re-created from their configs, so no state is shared with the
            source's; functions and names as given), and the family's other
            compile settings (`run_eagerly`, `steps_per_execution`,
            `jit_compile`, Keras 3's `auto_scale_loss`, standalone Keras 2's
            `sample_weight_mode`). With `False` (the default) the clone is
            left as the family's own `clone_model` leaves it (recent Keras 3
            releases compile it from the source's serialized compile config).

    Returns:
        A new model of the same family and (where the family can) the same
        class as `model`.

    Raises:
        NotAModelError: (`TypeError`) `model` is not a Keras model.
        InvalidArgumentError: an argument has an unusable value or an unknown
            keyword was passed.
        InputTensorsError: `input_tensors` does not fit the model.
        CloneFunctionError: `clone_function` or `call_function` returned
            something unusable; the message names the layer. An exception
            they raise themselves reaches the caller unchanged (the same
            object, as with the native call), with a note naming the layer.
        UnsupportedModelError: a subclassed model cannot be rebuilt from its
            config.
        WeightsMismatchError: with `copy_weights=True`, when a variable
            differs (names it, with both shapes).
        DeviceNotFoundError: `device` does not exist.
        CompileError: with `compile=True`, the source was never compiled or
            a compile setting cannot be carried (names it); raised before
            anything is cloned where it can be read off the source.
        WeightsUnreadableError: (`RuntimeError`) with `copy_weights=True` on
            standalone Keras 2.3, in a thread whose TensorFlow session never
            saw the source's values (the message says how to enter it).

    Example:

    >>> import keras
    >>> import compat_clone
    >>> inputs = keras.Input((4,))
    >>> model = keras.Model(inputs, keras.layers.Dense(2)(inputs))
    >>> clone = compat_clone.clone_model(model, copy_weights=True, name="copy")
    >>> clone.name
    'copy'
    >>> model.compile(optimizer="adam", loss="mse", metrics=["mae"])
    >>> trainable = compat_clone.clone_model(model, compile=True)
    >>> type(trainable.optimizer).__name__
    'Adam'
    """
    if kwargs:
        raise InvalidArgumentError(
            f"Unexpected keyword argument(s): {', '.join(sorted(kwargs))}. "
            "Expected any of: input_tensors, clone_function, call_function, "
            "recursive, copy_weights, device, name, compile."
        )
    info = family_of(model)  # NotAModelError first, as native
    _check_callable(clone_function, "clone_function")
    _check_callable(call_function, "call_function")
    _check_bool(recursive, "recursive")
    _check_bool(copy_weights, "copy_weights")
    _check_bool(compile, "compile")
    if name is not None and (not isinstance(name, str) or not name):
        raise InvalidArgumentError(f"Expected `name` to be a non-empty string or None. Received: name={name!r}.")
    from compat_clone.families import _driver
    from compat_clone.families._types import CloneRequest

    request = CloneRequest(
        input_tensors=input_tensors,
        clone_function=clone_function,
        call_function=call_function,
        recursive=recursive,
        device=device,
        name=name,
        info=info,
        copy_weights=copy_weights,
        compile=compile,
    )
    return _driver.clone(model, request)


# Marks `compat_clone`'s own entry point: `compat_clone._native` never takes it
# for a native `clone_model`, and `patch()` never wraps it.
clone_model.__compat_clone__ = True  # type: ignore[attr-defined]


def _validate_tau(tau: Any) -> float:
    """`tau` as a float in (0, 1]; raises `InvalidArgumentError` quoting it otherwise."""
    # `bool` is an `int` (a `numbers.Real`), but `tau=True` is a mistake, not 1.0.
    if isinstance(tau, bool) or not isinstance(tau, numbers.Real):
        raise InvalidArgumentError(
            f"Expected `tau` to be a number in (0, 1] (1.0: an exact copy; e.g. "
            f"0.005 for a soft target update). Received: tau={tau!r} of type "
            f"{type(tau).__name__}. Pass a Python float (`float(tau)` for a "
            "0-d array or tensor). Nothing was copied."
        )
    try:
        value = float(tau)
    except (OverflowError, ValueError, TypeError):  # 10**400, an odd Real subclass
        value = float("nan")  # refused just below
    if not 0.0 < value <= 1.0:  # NaN compares false: refused too
        raise InvalidArgumentError(
            f"Expected `tau` in (0, 1]: 1.0 copies exactly, a smaller value "
            f"blends `tau * source + (1 - tau) * target`. Received: tau={tau!r}. "
            "Nothing was copied."
        )
    return value


def copy_weights(source: Any, target: Any, *, tau: float = 1.0) -> Any:
    """Copies every variable of `source` into `target`, device to device.

    Variables are matched layer by layer (by unique layer names, else by the
    order of the layers that hold weights), trainable or not, so
    BatchNormalization statistics travel too. Every shape and dtype is
    checked before anything is written: on a mismatch `target` is left
    exactly as it was. The copy never goes through host memory: variable to
    variable on TensorFlow and torch; on JAX a device-to-device copy onto
    each target's sharding.

    With `tau < 1` it is a soft (Polyak) update, as reinforcement learning
    uses for target networks: every floating-point variable of `target`
    becomes `tau * source + (1 - tau) * target`, computed on the target's
    device in one fused operation per backend (one cached graph op in
    standalone Keras 2, one cached `tf.function` on TensorFlow, one
    `jax.jit` on JAX, `torch._foreach_lerp_` on torch), reused across calls
    and across values of `tau`. Variables that are not floating point
    (counters, seed states) are copied exactly.

    Args:
        source: the model to copy from.
        target: a model of the same family and architecture (e.g. a clone).
        tau: a number in (0, 1]: the weight of `source` in the result.
            `1.0` (the default) copies exactly.

    Returns:
        `target`, for chaining.

    Raises:
        NotAModelError: either argument is not a Keras model.
        InvalidArgumentError: the two models belong to different families, or
            `tau` is not a number in (0, 1] (`bool` included); nothing is
            written.
        WeightsMismatchError: names the first mismatching variable, with the
            shape and dtype received and expected.
        WeightsUnreadableError: standalone Keras 2.3, in a thread whose
            TensorFlow session never saw the source's values.

    Example:

    >>> import keras
    >>> import compat_clone
    >>> model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    >>> clone = compat_clone.clone_model(model)
    >>> clone = compat_clone.copy_weights(model, clone)
    >>> clone = compat_clone.copy_weights(model, clone, tau=0.005)  # soft update
    """
    tau = _validate_tau(tau)
    src_info = family_of(source)
    try:
        tgt_info = family_of(target)
    except NotAModelError as exc:
        raise NotAModelError(str(exc).replace("`model`", "`target`")) from None
    if (src_info.family, src_info.package) != (tgt_info.family, tgt_info.package):
        raise InvalidArgumentError(
            f"`source` is a {src_info.package} {src_info.version} model "
            f"({src_info.family}) but `target` is a {tgt_info.package} "
            f"{tgt_info.version} model ({tgt_info.family}). Expected two models "
            "of the same Keras; clone the source with `compat_clone.clone_model`."
        )
    from compat_clone.families import _driver

    _driver.copy_weights(source, target, src_info, tau)
    return target
