"""The state preprocessing layers keep where a config round trip does not carry it, carried into a clone.

A layer adapted to data (`adapt()`) keeps what it learned outside its config:

- the lookup layers (`StringLookup`, `IntegerLookup`, `TextVectorization`)
  keep their vocabulary in a hash table, and in ``"tf_idf"`` mode their
  inverse document frequencies in a `tf.Variable` (Keras 3: neither is a
  weight; tf.keras / tf_keras: the table is a `VocabWeightHandler` among the
  layer's weights, which is not a variable);
- `Normalization` keeps its mean and variance, and tf.keras / tf_keras'
  `Discretization` its quantile summary, in non-trainable variables, from
  which `finalize_state()` derives what the call uses.

A native `clone_model` rebuilds each from its config: a lookup clone's table
is empty (`FailedPreconditionError` on the first call), the statistics are
reset. The clone carries them instead, and holds its own copies: adapting
the clone again leaves the source alone. Which layer keeps what is found by
feature (the methods it has), never by its class name: `get_vocabulary` /
`set_vocabulary` for a table, `adapt` and `finalize_state` for variables
derived from data.

Keras 3 on JAX or torch: the lookup layers and `Hashing` need TensorFlow
(they cannot be made without it), and so does `Discretization.adapt()`
(3.15 checks for a `tf.data.Dataset`); with TensorFlow installed they are
carried as on the TensorFlow backend. `Normalization` is carried on every
backend.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Tuple

from compat_clone._walk import walk
from compat_clone.errors import UnsupportedModelError

__all__ = [
    "assign_handlers",
    "carry_before_call",
    "carry_plain",
    "carry_state",
    "carry_table",
    "handler_spec",
    "holds_adapted_state",
    "is_weight_handler",
    "split_handlers",
]

Pair = Tuple[Any, Any]
Spec = Callable[[Any], Tuple[Tuple[Optional[int], ...], str]]


# -- lookup tables -----------------------------------------------------------------


def _has_table(layer: Any) -> bool:
    return callable(getattr(layer, "get_vocabulary", None)) and callable(getattr(layer, "set_vocabulary", None))


def _learned_size(layer: Any) -> int:
    """How many tokens the layer's table holds beyond its mask and OOV tokens."""
    return len(layer.get_vocabulary(include_special_tokens=False))


def _idf_weights(layer: Any, size: int) -> Any:
    """The layer's inverse document frequencies, one per token of its full vocabulary; None outside tf_idf."""
    lookup = getattr(layer, "_lookup_layer", layer)  # TextVectorization holds a StringLookup
    if getattr(lookup, "output_mode", None) != "tf_idf":
        return None
    weights = getattr(lookup, "idf_weights", None)
    if weights is None:
        return None
    # The variable is padded to `max_tokens` where `pad_to_max_tokens` is set.
    return weights.numpy()[:size]


def carry_table(source: Any, new: Any) -> None:
    """Sets the vocabulary of an adapted lookup layer (and its tf-idf weights) on its clone.

    `lookup-table-not-cloned`: a lookup layer's config names its vocabulary
    only where the constructor received one; an adapted table is left out,
    and the clone's is empty. Set before the clone is called, so an output
    whose width is the vocabulary's size (`"multi_hot"`, `"count"`,
    `"tf_idf"`) is as wide as the source's. A layer of another kind, one
    that was never adapted, or whose config carries its vocabulary already is
    left as it is.

    Args:
        source: a layer of the source model.
        new: its clone, made from its config, not yet called.

    Raises:
        UnsupportedModelError: where the clone does not accept the
            source's vocabulary (compat_clone's own step: native makes none).

    Example:

    >>> import keras, numpy as np
    >>> source = keras.layers.StringLookup()
    >>> source.adapt(np.array(["a", "b", "a"]))
    >>> new = keras.layers.StringLookup.from_config(source.get_config())
    >>> carry_table(source, new)
    >>> new.get_vocabulary()
    ['[UNK]', 'a', 'b']
    """
    if not _has_table(source) or type(new) is not type(source) or source.get_config().get("vocabulary") is not None:
        return
    try:
        if _learned_size(source) == 0 or _learned_size(new) != 0:
            return
        vocabulary = source.get_vocabulary(include_special_tokens=True)
        idf = _idf_weights(source, len(vocabulary))
        if idf is None:
            new.set_vocabulary(vocabulary)
        else:
            new.set_vocabulary(vocabulary, idf_weights=idf)
    except Exception as exc:
        raise UnsupportedModelError(
            f"Cannot carry the vocabulary of layer {source.name!r} ({type(source).__name__}) into its "
            f"clone: `set_vocabulary` raised {type(exc).__name__}: {exc}. Pass a `clone_function` "
            "that makes this layer with its vocabulary (`vocabulary=layer.get_vocabulary()`)."
        ) from exc


# -- plain data derived from data --------------------------------------------------------

# Attributes in which `adapt()` leaves plain data (lists, numpy arrays) rather
# than variables: Keras 3's `Discretization` (`bin_boundaries`, and the
# quantile `summary` a later `adapt` starts from). Its config carries the
# boundaries, but a layer made by a subclassed model's constructor is not
# rebuilt from its own config.
_PLAIN_ADAPTED = ("bin_boundaries", "summary")


def _is_empty(value: Any) -> bool:
    return value is None or (hasattr(value, "__len__") and len(value) == 0) or getattr(value, "size", 1) == 0


def carry_plain(source: Any, new: Any) -> None:
    """Copies what `adapt()` left in plain attributes of `source` into its clone, where the clone's are empty.

    Variables are never copied here (they would be shared): only lists and
    numpy arrays, each a new copy.

    Args:
        source: a layer of the source model.
        new: its clone.
    """
    if not callable(getattr(source, "adapt", None)) or type(new) is not type(source):
        return
    import copy

    for name in _PLAIN_ADAPTED:
        value = getattr(source, name, None)
        plain = isinstance(value, (list, tuple)) or type(value).__module__ == "numpy"
        if plain and not _is_empty(value) and _is_empty(getattr(new, name, None)):
            setattr(new, name, copy.deepcopy(value))


def carry_before_call(source: Any, new: Any) -> None:
    """What a layer adapted to data keeps outside its config, set on its clone before the clone is called.

    The lookup tables (`carry_table`) and plain adapted data (`carry_plain`):
    an output whose width follows them (a vocabulary's size, a number of
    bins) is then as wide as the source's when the clone is called.

    Args:
        source: a layer of the source model.
        new: its clone, not yet called.

    Raises:
        UnsupportedModelError: where the clone does not accept the source's vocabulary.
    """
    carry_table(source, new)
    carry_plain(source, new)
    if getattr(source, "input_bin_boundaries", ()) is None and getattr(new, "input_bin_boundaries", None) is not None:
        # `keras3-discretization-readapt`: Keras 3.0's config gives the adapted
        # boundaries to the constructor, which then refuses `adapt()`.
        new.input_bin_boundaries = None


# -- variables derived from data ---------------------------------------------------------


def _adapted_variables(layer: Any) -> List[Any]:
    """The non-trainable variables of a layer that `adapt()` fills (none for other layers)."""
    if not (callable(getattr(layer, "adapt", None)) and callable(getattr(layer, "finalize_state", None))):
        return []
    return [v for v in getattr(layer, "non_trainable_weights", None) or [] if not is_weight_handler(v)]


def _carry_variables(source: Any, new: Any, spec: Spec) -> List[Pair]:
    """(source, clone) pairs of an adapted layer's variables, checked; [] where nothing is to carry."""
    src = _adapted_variables(source)
    if not src:
        return []
    _build_like(source, new)
    dst = _adapted_variables(new)
    shapes = [(spec(a), spec(b)) for a, b in zip(src, dst)]
    if len(src) != len(dst) or any(a != b for a, b in shapes):
        raise UnsupportedModelError(
            f"Cannot carry the adapted state of layer {source.name!r} ({type(source).__name__}) into its "
            f"clone: the source holds variables {[s for s, _ in shapes] if len(src) == len(dst) else len(src)}, "
            f"the clone {[d for _, d in shapes] if len(src) == len(dst) else len(dst)}. Clone with "
            "`copy_weights=True`, or pass a `clone_function` that builds this layer like its source."
        )
    return list(zip(src, dst))


def _build_like(source: Any, new: Any) -> None:
    """Builds a clone layer not built yet (a subclassed model's, before its first call) as its source was."""
    if getattr(new, "built", False) or not getattr(source, "built", False):
        return
    if callable(getattr(source, "get_build_config", None)) and callable(getattr(new, "build_from_config", None)):
        config = source.get_build_config()  # Keras 3 (tf.keras 2.13+ has it too)
        if config:
            new.build_from_config(config)
            return
    shape = getattr(source, "_build_input_shape", None)  # tf.keras before 2.13
    if shape is not None:
        new.build(shape)


def holds_adapted_state(model: Any) -> bool:
    """Whether any layer under `model` (itself included) can keep state outside its config: an `adapt()`
    method or a lookup table. Where none can, `carry_state` has nothing to do and its pairing walk is skipped."""
    flatten = getattr(model, "_flatten_layers", None)
    if callable(flatten):  # Keras 3, tf.keras / tf_keras: every tracked layer, nested ones included
        layers = list(flatten(include_self=True))
    else:  # standalone Keras 2 (no preprocessing layers): its models' layers
        layers = [model, *(layer for _, layer in walk(model, models=True, wrapped=True))]
    return any(callable(getattr(layer, "adapt", None)) or _has_table(layer) for layer in layers)


def carry_state(
    layer_pairs: List[Pair],
    spec: Spec,
    assign: Callable[[List[Pair]], None],
    variables: bool,
) -> None:
    """Carries each adapted layer's state into its clone, once the clone is built.

    Tables and plain data not set yet (layers rebuilt with a whole model's
    config, not one by one) are set (`carry_before_call`). With
    `variables`, the variables that `adapt()` fills (`Normalization`'s mean and variance, tf.keras'
    `Discretization` summary) are copied, all shapes checked before the
    first write, and each clone layer recomputes what it derives from them
    (`adapted-state-not-cloned`). Without (`copy_weights=True` copies them
    next), only the tables.

    Args:
        layer_pairs: (source layer, clone layer) pairs; other pairs are skipped.
        spec: the family's `variable_spec`.
        assign: the family's `assign_pairs`.
        variables: whether to copy the adapted variables.

    Raises:
        UnsupportedModelError: where a clone layer's variables differ from its source's.
    """
    seen: Dict[int, Pair] = {}
    for src, dst in layer_pairs:
        if type(src) is type(dst) and src is not dst:
            seen.setdefault(id(src), (src, dst))
    pairs: List[Pair] = []
    finish: List[Any] = []
    for src, dst in seen.values():
        carry_before_call(src, dst)
        if variables:
            found = _carry_variables(src, dst, spec)
            if found:
                pairs.extend(found)
                finish.append(dst)
    if pairs:
        assign(pairs)
        for layer in finish:
            layer.finalize_state()


# -- weights that are not variables ------------------------------------------------------


def is_weight_handler(weight: Any) -> bool:
    """Whether a layer's weight is a tf.keras `TrackableWeightHandler` (a lookup table), not a variable."""
    return (
        not hasattr(weight, "dtype")
        and callable(getattr(weight, "get_tensors", None))
        and callable(getattr(weight, "set_weights", None))
    )


def handler_spec(weight: Any) -> Tuple[Tuple[Optional[int], ...], str]:
    """(shape, dtype name) of a weight handler for the copy's checks: a table of any size, its key dtype."""
    dtype = getattr(weight, "_dtype", None)
    return (None,), f"table of {getattr(dtype, 'name', dtype)}"


def split_handlers(pairs: List[Pair]) -> Tuple[List[Pair], List[Pair]]:
    """(weight-handler pairs, variable pairs) of checked (source, target) pairs."""
    handlers = [(s, d) for s, d in pairs if is_weight_handler(s) and is_weight_handler(d)]
    rest = [(s, d) for s, d in pairs if not (is_weight_handler(s) and is_weight_handler(d))]
    return handlers, rest


def assign_handlers(pairs: List[Pair]) -> None:
    """Copies the tables of (source, target) weight-handler pairs, exactly.

    `copy-weight-handler`: tf.keras / tf_keras list a lookup layer's table
    among its weights as a `VocabWeightHandler`, which `set_weights` fills;
    the copy does the same, so it carries what native `set_weights` carries.
    """
    import numpy as np

    for src, dst in pairs:
        tokens = src.get_tensors()
        # A table already equal is left as it is (a soft update every step): `set_weights`
        # makes a new table, which a function traced on the old one would not see.
        if not all(np.array_equal(np.asarray(a), np.asarray(b)) for a, b in zip(tokens, dst.get_tensors())):
            dst.set_weights(tokens)
