"""The layer catalogue: every public layer class a Keras exports, built from a table, in four containers.

Why: the suite's other models are chosen by hand, so a layer nobody thought
of (a new preprocessing layer, a cell, a wrapper) can clone wrongly without a
test noticing. Here the classes are read from the Keras module at run time
(`exported_layers`: every class of ``K.layers`` that subclasses its `Layer`,
aliases folded into one name), so a Keras release that adds a layer adds a
case; tests/clone/test_catalogue.py clones each one natively and through
compat_clone and compares.

What a class needs to be built is data: `TABLE` (tests/clone/catalogue_table.py)
maps a class name to a `Spec` (constructor arguments, the inputs' per-sample
shapes and dtype, how the layer is called, whether it is adapted, whether a
cell goes inside an `RNN` or a `ConvRNN2D`). A class the table does not name is built by
convention: no arguments, one float input of shape ``(4,)``. Where the table cannot build a
class (it needs JAX on a TensorFlow backend, it is abstract) `build` raises
`NotBuilt` with the reason, and the test lists it by name; nothing is left
out silently.

Each case is one class in one container (`CONTAINERS`):

* ``functional``: ``Model(inputs, layer(inputs))``;
* ``sequential``: ``Sequential([input, layer])``, where the layer takes one
  input (`NotApplicable` otherwise);
* ``holder``: a `Model` subclass holding the layer under another attribute
  name (``self.inner``), given to its constructor, as users hold layers; the
  native `clone_model` cannot rebuild it (its config cannot hold a layer);
* ``holder_config``: the same, with a `get_config` that serializes the layer
  (as Keras asks), so the native `clone_model` can rebuild it: where native
  passes here, compat_clone must too.

A class Keras makes itself is built by running the code that makes it (the
row's ``op``) in a functional model, which is the ``functional`` case; the
other containers hold that model, as users hold the model such a layer lives
in: the InputLayer (``Input()``; its case: the input, a linear Activation) and
the layers Keras makes when TensorFlow code meets a Keras tensor (tf.keras 2.12
exports TFOpLambda, SlicingOpLambda and the ragged tensor's ClassMethod,
InstanceMethod, InstanceProperty). A GPU-only class (CuDNNGRU, CuDNNLSTM) is
not built where TensorFlow sees no GPU, and the reason says so.

A layer that supports masks and takes one float sequence is preceded by
``Masking`` (the first sample's last step masked), in every container, so
the mask travels through the clone too. Shapes are tiny (batch 2, a few
units) and every case is called directly, never with `predict` (except in
graph-mode standalone Keras 2, which has only `predict`).

The cases' outcomes travel in pytest's reports (`PROPERTY`, `MISSING`);
`gather` and `summary_lines` turn them into the per-family table that
conftest.py prints at the end of the run and writes as JSON.
"""

from __future__ import annotations

import inspect
import re
import sys
import traceback
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Sequence, Tuple

import numpy as np

from tests.clone.catalogue_table import ABSTRACT_REASON, Make, Spec, spec_for
from tests.clone.features import NotApplicable, family_name, predict, skip_without_subclassed_models

__all__ = [
    "CONTAINERS",
    "ABSTRACT_REASON",
    "NEEDS_GPU",
    "NotBuilt",
    "Case",
    "exported_layers",
    "build",
    "outputs",
    "layers_of",
    "adapted_state",
    "one_line",
    "PROPERTY",
    "MISSING",
    "gather",
    "summary_lines",
    "worse_than_native",
]

CONTAINERS = ("functional", "sequential", "holder", "holder_config")
BATCH = 2
WORDS = ("the", "cat", "sat", "on", "a", "mat")  # the string inputs' words


#: How the reason begins for a GPU-only class where TensorFlow sees no GPU (it cannot run here at all: not a gap
#: of the table; the table's abstract rows begin with `ABSTRACT_REASON`).
NEEDS_GPU = "needs a GPU"


class NotBuilt(Exception):
    """The table cannot build this class here; the message says why."""


def exported_layers(K: Any) -> Dict[str, type]:
    """Every public layer class of ``K.layers``, by one name each (its own ``__name__`` where exported under it).

    Read from the module at run time: a class counts where it subclasses
    ``K.layers.Layer``; its aliases (``Conv2D`` / ``Convolution2D``) are one
    class, named once.
    """
    base = getattr(K.layers, "Layer", None)
    names: Dict[type, List[str]] = {}
    for name in sorted(dir(K.layers)):
        if name.startswith("_"):
            continue
        obj = getattr(K.layers, name, None)
        if inspect.isclass(obj) and base is not None and issubclass(obj, base):
            names.setdefault(obj, []).append(name)
    return {(cls.__name__ if cls.__name__ in found else found[0]): cls for cls, found in names.items()}


@dataclass
class Case:
    """One built case: the model, its inputs, the class under test, and the model's outputs on them (`want`,
    computed once when it is built: both sides' clones are compared with it)."""

    model: Any
    x: Any
    cls: type
    masked: bool
    want: List[np.ndarray]


def _sample(shape: Sequence[int], dtype: str, seed: int) -> np.ndarray:
    rng = np.random.RandomState(seed)
    full = (BATCH, *shape)
    if dtype == "string":
        return np.array([" ".join(rng.choice(WORDS, 3)) for _ in range(int(np.prod(full)))], dtype=object).reshape(full)
    if dtype.startswith("int"):
        values = rng.randint(1, 5, size=full).astype(dtype)
        values[0, ..., -1] = 0  # a padding token: what Embedding(mask_zero=True) masks
        return values
    return rng.rand(*full).astype(dtype)


def _inputs(spec: Spec, masked: bool) -> List[np.ndarray]:
    xs = [_sample(shape, spec.dtype, seed) for seed, shape in enumerate(spec.inputs)]
    if masked:
        xs[0][0, -1] = 0.0  # the first sample's last step: masked by Masking(0.0)
    return xs


def _make(K: Any, cls: type, spec: Spec, tmp: str) -> Any:
    kwargs = {key: value.fn(K, tmp) if isinstance(value, Make) else value for key, value in spec.kwargs.items()}
    return cls(**kwargs)


def _apply(layer: Any, xs: Any, call: str) -> Any:
    xs = list(xs) if isinstance(xs, (list, tuple)) else [xs]
    if call == "list":
        return layer(xs)
    if call == "args":
        return layer(*xs)
    if call == "dict":
        return layer({"x": xs[0]})
    return layer(xs[0])


_HOLDERS: Dict[Tuple[int, bool], type] = {}


def holder_class(K: Any, config: bool = False) -> type:
    """`Holder`: a `Model` subclass of `K` that holds the layer under test as ``self.inner``.

    As users write one: the layer is given to the constructor. With `config`,
    `ConfigHolder` also writes its layers into `get_config` (as Keras asks of
    a class whose constructor takes arguments), so the native `clone_model`
    can rebuild it from its config; the plain `Holder` cannot be rebuilt so.
    """
    if (id(K), config) in _HOLDERS:
        return _HOLDERS[(id(K), config)]
    call_layer = _apply

    class Holder(K.models.Model):  # type: ignore[misc,name-defined]
        def __init__(self, layer: Any, masking: Any = None, style: str = "one", **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.inner = layer
            self.masking = masking
            self.style = style

        def call(self, x: Any) -> Any:
            if self.masking is not None:
                x = self.masking(x)
            return call_layer(self.inner, x, self.style)

    class ConfigHolder(Holder):
        def get_config(self) -> Dict[str, Any]:
            held = {"layer": self.inner, "masking": self.masking}
            layers = {key: K.layers.serialize(value) for key, value in held.items() if value is not None}
            return {"name": self.name, "trainable": self.trainable, "style": self.style, **layers}

        @classmethod
        def from_config(cls, config: Dict[str, Any], custom_objects: Any = None) -> Any:
            config = dict(config)
            for key in ("layer", "masking"):
                if config.get(key) is not None:
                    config[key] = K.layers.deserialize(config[key])
            return cls(**config)

    _HOLDERS[(id(K), config)] = ConfigHolder if config else Holder
    return _HOLDERS[(id(K), config)]


def _input(K: Any, shape: Tuple[int, ...], dtype: str) -> Any:
    return K.Input(shape=shape, dtype=dtype)


def _input_layer(K: Any, shape: Tuple[int, ...], dtype: str) -> Any:
    if family_name(K) == "keras3":
        return K.Input(shape=shape, dtype=dtype)
    return K.layers.InputLayer(input_shape=shape, dtype=dtype)


def _gpu() -> bool:
    """Whether TensorFlow sees a GPU (the CuDNN layers have no CPU kernel)."""
    import tensorflow as tf

    return bool(tf.config.experimental.list_physical_devices("GPU"))  # TensorFlow 1.14 to 2.x


def _op_model(K: Any, name: str, cls: type, spec: Spec) -> Any:
    """``Model(x, op(x))``: the functional model in which Keras makes class `cls` itself (``Input()``, or TensorFlow
    code run on a Keras tensor); the other containers hold this model, as users hold the model such a layer lives in."""
    inputs = _input(K, spec.inputs[0], spec.dtype)
    model = K.models.Model(inputs, spec.op(K, inputs))
    if not any(type(layer) is cls for layer in layers_of(model)):
        raise NotBuilt(f"the table's op made no {name}: {[type(layer).__name__ for layer in layers_of(model)]}")
    return model


def _rnn(K: Any, name: str, cell: type) -> Any:
    """The layer class `name` a cell goes in: from ``K.layers``, else from the cell's own module (standalone Keras 2.3
    exports ConvLSTM2DCell but not the ConvRNN2D beside it)."""
    found = getattr(K.layers, name, None) or getattr(sys.modules[cell.__module__], name, None)
    if found is None:
        raise NotBuilt(f"no {name} to hold the cell {cell.__name__}: neither {K.__name__}.layers nor {cell.__module__} has one")
    return found


def build(K: Any, name: str, cls: type, container: str, tmp: str) -> Case:
    """The case of class `cls` (exported as `name`) in `container`, built, adapted and called once.

    Raises:
        NotApplicable: the container cannot hold this layer (Sequential and several inputs).
        NotBuilt: the table cannot build the class here (the reason is the message).
    """
    spec = spec_for(name, cls)
    if spec.skip:
        raise NotBuilt(spec.skip)
    if spec.gpu and not _gpu():  # the class's, in every container: one reason for the coverage test to read
        raise NotBuilt(f"{NEEDS_GPU}: {name} has GPU kernels only, and TensorFlow sees no GPU here")
    if container == "sequential" and (len(spec.inputs) > 1 or spec.call != "one"):
        raise NotApplicable("a Sequential model takes one input into one layer")
    if container.startswith("holder"):
        skip_without_subclassed_models(K)
    try:
        if spec.op is not None:
            placed = _op_model(K, name, cls, spec)
        else:
            layer = _make(K, cls, spec, tmp)
            if spec.adapt:
                layer.adapt(_inputs(spec, False)[0])
            placed = _rnn(K, spec.rnn, cls)(layer) if spec.cell else layer
        masked = (
            spec.op is None
            and len(spec.inputs) == 1
            and len(spec.inputs[0]) == 2
            and spec.dtype == "float32"
            and bool(placed.supports_masking)
        )
        masking = K.layers.Masking(mask_value=0.0) if masked else None
        # an op's inputs: the first sample's last step zero (from_tensor drops it: ragged rows of two lengths)
        x = _inputs(spec, masked or spec.op is not None)
        shapes = spec.inputs
        if spec.op is not None and container == "functional":
            model = placed
        elif container == "functional":
            ins = [_input(K, shape, spec.dtype) for shape in shapes]
            h = [masking(ins[0])] if masking is not None else ins
            model = K.models.Model(ins if len(ins) > 1 else ins[0], _apply(placed, h, spec.call))
        elif container == "sequential":
            stack = [_input_layer(K, shapes[0], spec.dtype), *([masking] if masking is not None else []), placed]
            model = K.models.Sequential(stack)
        else:
            model = holder_class(K, config=container == "holder_config")(placed, masking, spec.call)
        feed = x if len(x) > 1 else x[0]
        want = outputs(model, feed)
    except (NotApplicable, NotBuilt):
        raise
    except Exception as exc:  # the table's arguments do not build it here: listed with the reason
        raise NotBuilt(one_line(exc)) from exc
    return Case(model=model, x=feed, cls=cls, masked=masked, want=want)


def one_line(exc: BaseException) -> str:
    """The exception's type and message on one line, without terminal colours, cut at 300 characters."""
    text = "".join(traceback.format_exception_only(type(exc), exc))
    text = " ".join(re.sub(r"\x1b\[[0-9;]*m", "", text).split())
    return text if len(text) <= 300 else text[:297] + "..."


def outputs(model: Any, x: Any) -> List[np.ndarray]:
    """The model's inference outputs as NumPy arrays: a direct call (`predict` in graph-mode Keras 2)."""
    return predict(model, x)


def layers_of(model: Any) -> List[Any]:
    """Every layer `model` holds, at any depth, in its own order."""
    flatten = getattr(model, "_flatten_layers", None)
    if callable(flatten):
        return list(flatten(include_self=False))
    from compat_clone._walk import walk  # standalone Keras 2: no `_flatten_layers`

    return [layer for _, layer in walk(model, models=True)]


def adapted_state(layer: Any) -> Dict[str, Any]:
    """What `adapt` leaves in a layer: a vocabulary, bin boundaries, the mean and variance it normalizes with
    (Keras 3 derives them from its weights when `adapt` finishes: a weight copy alone does not set them)."""
    state: Dict[str, Any] = {}
    vocabulary = getattr(layer, "get_vocabulary", None)
    if callable(vocabulary):
        state["vocabulary"] = [v.decode() if isinstance(v, bytes) else v for v in vocabulary()]
    for name in ("bin_boundaries", "mean", "variance"):  # Discretization's, Normalization's
        value = getattr(layer, name, None)
        if value is not None and not callable(value):
            state[name] = [round(float(v), 5) for v in np.ravel(np.asarray(value))]
    return state


# -- the report: what each case recorded, gathered from pytest's reports ----------------------

PROPERTY = "catalogue"  # a case's outcome, in its report's user_properties
MISSING = "catalogue_not_built"  # the coverage test's classes the table cannot build, with why


def worse_than_native(row: Mapping[str, Any]) -> bool:
    """A case where compat_clone is worse than native: wrong, failing where native passes, or refusing without a message."""
    ours = row.get("ours")
    return ours == "wrong" or (row.get("native") == "pass" and ours != "pass") or (ours == "refused" and not row.get("detail"))


def gather(reports: Sequence[Any]) -> Dict[str, Any]:
    """Per family: the Keras, the cases' rows, per container the counts, the classes not built, the cases worse than native."""
    families: Dict[str, Any] = {}
    for report in reports:
        if getattr(report, "when", None) != "call":
            continue
        for key, value in getattr(report, "user_properties", ()):
            if key not in (PROPERTY, MISSING):
                continue
            fam = families.setdefault(value["family"], {"cases": [], "not_built": {}, "exported": None})
            if key == MISSING:
                fam["exported"], fam["not_built"] = value["exported"], dict(value["not_built"])
            else:
                fam["keras"] = value["keras"]
                fam["cases"].append(dict(value))
    for fam in families.values():
        fam["cases"].sort(key=lambda row: (row["layer"], CONTAINERS.index(row["container"])))
        fam["containers"] = {
            container: {
                "built": sum(row["built"] == "yes" for row in rows),
                "not_built": sum(row["built"] == "no" for row in rows),
                "n/a": sum(row["built"] == "n/a" for row in rows),
                "native_pass": sum(row.get("native") == "pass" for row in rows),
                "compat_clone_pass": sum(row.get("ours") == "pass" for row in rows),
                "masked": sum(bool(row.get("masked")) for row in rows),
            }
            for container in CONTAINERS
            for rows in [[row for row in fam["cases"] if row["container"] == container]]
        }
        fam["worse"] = [row for row in fam["cases"] if row["built"] == "yes" and worse_than_native(row)]
    return families


def summary_lines(families: Mapping[str, Any]) -> List[str]:
    """The terminal summary's section: one block per family."""
    lines: List[str] = []
    for family, fam in sorted(families.items()):
        head = f"{family} ({fam.get('keras', '?')})"
        if fam["exported"] is not None:
            built = fam["exported"] - len(fam["not_built"])
            head += f": {fam['exported']} layer classes exported, {built} built by the table"
        lines.append(head)
        for container, n in fam["containers"].items():
            lines.append(
                f"  {container:<13} {n['built']:>4} built, native {n['native_pass']:>4} pass, "
                f"compat_clone {n['compat_clone_pass']:>4} pass ({n['masked']} masked, {n['not_built']} not built, {n['n/a']} n/a)"
            )
        for name, why in sorted(fam["not_built"].items()):
            lines.append(f"  not built: {name}: {why}")
        for row in fam["worse"]:
            lines.append(
                f"  WORSE than native: {row['layer']} in {row['container']}: compat_clone {row['ours']}: {row['detail']} "
                f"(native {row['native']}{': ' + row['native_detail'] if row['native_detail'] else ''})"
            )
    return lines
