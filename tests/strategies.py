"""Hypothesis strategies: random functional graphs, as data, built with any family's Keras.

`graph_specs()` draws a `GraphSpec`: plain data (inputs, a list of ops, the
clone options), independent of any framework, so it shrinks well and prints
readably. `build_model(K, spec)` builds it with the Keras module `K` of the
family under test; `sample_inputs(spec)` makes a matching batch.

What the graphs hold (each a known trouble spot of native clones):

* several inputs and several outputs (every unconsumed tensor is an output);
* multi-output layers without mask support: a `Lambda` returning two
  tensors and a custom two-in/two-out layer (keras-team/keras #12202);
* masking: `Embedding(mask_zero=True)` on token inputs and `Masking` on
  float sequences, with the mask carried through `Dense`, merges and
  `GlobalAveragePooling1D`;
* shared layers (a `Dense` called on several tensors) and shared nested
  models (one functional or Sequential sub-model called twice);
* nested models that contain a `Lambda` (the config round trip of a Python
  function, Keras 3 safe mode);
* `BatchNormalization` (non-trainable statistics must be copied too).

Graphs stay small (at most 7 ops on 2-6 features, batch of 2) so that 200
examples per family fit the CI budget.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any, Dict, List, Tuple

import numpy as np
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

# -- settings profiles ---------------------------------------------------------
# ci: 200 examples per family, the same ones every run (derandomized), no
# example database written. dev: 20 examples, derandomized too: the matrix
# runs it in most environments of `make test`, whose result must not depend on
# the run (a fresh draw that fails once in a while is found by `nightly`, not
# by CI). nightly: 2000 fresh examples. Pick one with HYPOTHESIS_PROFILE=nightly;
# `ci` is the default.

_COMMON = dict(
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
    print_blob=True,
)
settings.register_profile("ci", max_examples=200, derandomize=True, database=None, **_COMMON)
settings.register_profile("nightly", max_examples=2000, **_COMMON)
settings.register_profile("dev", max_examples=20, derandomize=True, database=None, **_COMMON)
PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "ci")
SETTINGS = settings.get_profile(PROFILE if PROFILE in ("ci", "nightly", "dev") else "ci")


# -- the spec ----------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Tensor:
    """Static facts about one tensor of the graph (batch axis left out)."""

    kind: str  # "vec" (d,), "seq" (steps, d), "tok" (steps,) int tokens
    dim: int  # features; for "tok" the vocabulary size
    steps: int = 0
    masked: bool = False

    def same_shape(self, other: "Tensor") -> bool:
        return (self.kind, self.dim, self.steps) == (other.kind, other.dim, other.steps)


@dataclasses.dataclass(frozen=True)
class GraphSpec:
    inputs: Tuple[Tensor, ...]
    # each op: (name, args...) with tensor arguments as indices into the
    # list of tensors (inputs first, then every op's outputs in order)
    ops: Tuple[Tuple[Any, ...], ...]
    outputs: Tuple[int, ...]
    recursive: bool
    seed: int


# op name -> number of tensors it produces
_N_OUT = {"split": 2, "two_two": 2}


@st.composite
def graph_specs(draw: Any, max_ops: int = 7) -> GraphSpec:
    """A random functional graph (see the module docstring)."""
    tensors: List[Tensor] = []
    ops: List[Tuple[Any, ...]] = []
    consumed: set = set()
    denses: List[Tuple[int, int]] = []  # (op index, input dim) of Dense layers, for sharing
    nested: List[Tuple[int, int]] = []  # (op index, input dim) of nested models, for sharing

    def add(op: Tuple[Any, ...], outs: List[Tensor], uses: List[int]) -> None:
        ops.append(op)
        consumed.update(uses)
        tensors.extend(outs)

    n_inputs = draw(st.integers(1, 3))
    for _ in range(n_inputs):
        kind = draw(st.sampled_from(["vec", "vec", "seq", "tok"]))
        if kind == "tok":
            tensors.append(Tensor("tok", draw(st.integers(3, 6)), draw(st.integers(2, 3))))
        elif kind == "seq":
            tensors.append(Tensor("seq", draw(st.integers(2, 4)), draw(st.integers(2, 3))))
        else:
            tensors.append(Tensor("vec", draw(st.integers(2, 6))))
    inputs = tuple(tensors)
    # token inputs can only be embedded: do it first
    for i, t in enumerate(inputs):
        if t.kind == "tok":
            width = draw(st.integers(2, 4))
            add(("embed", i, t.dim, width), [Tensor("seq", width, t.steps, True)], [i])

    def float_idx(pred: Any = lambda t: True) -> List[int]:
        return [i for i, t in enumerate(tensors) if t.kind != "tok" and pred(t)]

    n_ops = draw(st.integers(1, max_ops))
    for _ in range(n_ops):
        choices = ["dense", "lambda"]
        if float_idx(lambda t: not t.masked):
            choices += ["bn", "split"]
        if float_idx(lambda t: t.kind == "seq"):
            choices += ["gap"]
        if float_idx(lambda t: t.kind == "seq" and not t.masked):
            choices += ["masking"]
        if any(float_idx(lambda t, d=d: t.dim == d) for _, d in denses):
            choices += ["shared"]
        if float_idx(lambda t: t.kind == "vec" and not t.masked):
            choices += ["nested"]
        pairs = [(a, b) for a in float_idx() for b in float_idx() if a < b and tensors[a].same_shape(tensors[b])]
        if pairs:
            choices += ["add"]
        if [p for p in pairs if not tensors[p[0]].masked and not tensors[p[1]].masked]:
            choices += ["two_two"]
        cat_pairs = [
            (a, b)
            for a in float_idx()
            for b in float_idx()
            if a < b and tensors[a].kind == tensors[b].kind and tensors[a].steps == tensors[b].steps
        ]
        if cat_pairs:
            choices += ["concat"]
        name = draw(st.sampled_from(choices))

        if name == "dense":
            i = draw(st.sampled_from(float_idx()))
            t = tensors[i]
            units = draw(st.integers(2, 6))
            act = draw(st.sampled_from([None, "relu", "tanh"]))
            denses.append((len(ops), t.dim))
            add(("dense", i, units, act), [Tensor(t.kind, units, t.steps, t.masked)], [i])
        elif name == "shared":
            j, d = draw(st.sampled_from([(j, d) for j, d in denses if float_idx(lambda t, d=d: t.dim == d)]))
            i = draw(st.sampled_from(float_idx(lambda t, d=d: t.dim == d)))
            t = tensors[i]
            add(("shared", j, i), [Tensor(t.kind, ops[j][2], t.steps, t.masked)], [i])
        elif name == "lambda":
            i = draw(st.sampled_from(float_idx()))
            t = tensors[i]
            # a Lambda on a masked tensor: the mask is not propagated
            add(("lambda", i, draw(st.sampled_from([0.5, 2.0, -1.0]))), [dataclasses.replace(t, masked=False)], [i])
        elif name == "bn":
            i = draw(st.sampled_from(float_idx(lambda t: not t.masked)))
            add(("bn", i), [tensors[i]], [i])
        elif name == "split":
            i = draw(st.sampled_from(float_idx(lambda t: not t.masked)))
            add(("split", i), [tensors[i], tensors[i]], [i])
        elif name == "two_two":
            a, b = draw(
                st.sampled_from([p for p in pairs if not tensors[p[0]].masked and not tensors[p[1]].masked])
            )
            add(("two_two", a, b), [tensors[a], tensors[a]], [a, b])
        elif name == "add":
            a, b = draw(st.sampled_from(pairs))
            t = tensors[a]
            add(("add", a, b), [dataclasses.replace(t, masked=t.masked or tensors[b].masked)], [a, b])
        elif name == "concat":
            a, b = draw(st.sampled_from(cat_pairs))
            ta, tb = tensors[a], tensors[b]
            add(("concat", a, b), [Tensor(ta.kind, ta.dim + tb.dim, ta.steps, ta.masked or tb.masked)], [a, b])
        elif name == "masking":
            i = draw(st.sampled_from(float_idx(lambda t: t.kind == "seq" and not t.masked)))
            add(("masking", i), [dataclasses.replace(tensors[i], masked=True)], [i])
        elif name == "gap":
            i = draw(st.sampled_from(float_idx(lambda t: t.kind == "seq")))
            add(("gap", i), [Tensor("vec", tensors[i].dim)], [i])
        elif name == "nested":
            i = draw(st.sampled_from(float_idx(lambda t: t.kind == "vec" and not t.masked)))
            d = tensors[i].dim
            reuse = [j for j, dim in nested if dim == d]
            if reuse and draw(st.booleans()):
                j = draw(st.sampled_from(reuse))
                add(("nested_again", j, i), [Tensor("vec", ops[j][4])], [i])
            else:
                hidden, out = draw(st.integers(2, 5)), draw(st.integers(2, 5))
                style = draw(st.sampled_from(["functional", "functional_lambda", "sequential"]))
                nested.append((len(ops), d))
                add(("nested", i, d, hidden, out, style), [Tensor("vec", out)], [i])

    # every input reaches an output: an unconsumed float input gets a Dense
    for i, t in enumerate(inputs):
        if i not in consumed:
            add(("dense", i, 2, None), [Tensor(t.kind, 2, t.steps, t.masked)], [i])
            denses.append((len(ops) - 1, t.dim))
    outputs = tuple(i for i in range(len(inputs), len(tensors)) if i not in consumed)
    return GraphSpec(inputs, tuple(ops), outputs, draw(st.booleans()), draw(st.integers(0, 2**16)))


# -- building ----------------------------------------------------------------

_CUSTOM: Dict[int, type] = {}


def two_in_two_out(K: Any) -> type:
    """A registered custom layer: [a, b] -> [a + b, a * b], no mask support."""
    cached = _CUSTOM.get(id(K))
    if cached is not None:
        return cached

    class TwoInTwoOut(K.layers.Layer):
        def call(self, inputs: Any) -> Any:
            a, b = inputs
            return [a + b, a * b]

        def compute_output_shape(self, input_shape: Any) -> Any:
            return [tuple(input_shape[0]), tuple(input_shape[0])]

    saving = getattr(K, "saving", None)
    register = getattr(saving, "register_keras_serializable", None) or getattr(
        getattr(K, "utils", None), "register_keras_serializable", None
    )
    if register is not None:
        TwoInTwoOut = register(package="compat_clone_tests")(TwoInTwoOut)
    else:  # standalone Keras 2.0-2.3
        K.utils.get_custom_objects()["TwoInTwoOut"] = TwoInTwoOut
    _CUSTOM[id(K)] = TwoInTwoOut
    return TwoInTwoOut


def _split(t: Any) -> Any:
    return [t * 2.0, t - 1.0]


def _nested_model(K: Any, dim: int, hidden: int, out: int, style: str) -> Any:
    if style == "sequential":
        return K.models.Sequential(
            [K.layers.Dense(hidden, activation="relu", input_shape=(dim,)), K.layers.Dense(out)]
        )
    x = K.Input((dim,))
    h = K.layers.Dense(hidden, activation="relu")(x)
    if style == "functional_lambda":
        h = K.layers.Lambda(lambda t: t * 0.5 + 1.0)(h)
    return K.models.Model(x, K.layers.Dense(out)(h))


def build_model(K: Any, spec: GraphSpec) -> Any:
    """Builds `spec` with the Keras module `K`; weights set from `spec.seed`."""
    from model_state import fill_weights

    tensors: List[Any] = []
    for t in spec.inputs:
        if t.kind == "tok":
            tensors.append(K.Input((t.steps,), dtype="int32"))
        elif t.kind == "seq":
            tensors.append(K.Input((t.steps, t.dim)))
        else:
            tensors.append(K.Input((t.dim,)))
    layers: Dict[int, Any] = {}
    for n, op in enumerate(spec.ops):
        name = op[0]
        if name == "embed":
            layer = K.layers.Embedding(op[2], op[3], mask_zero=True)
            outs = [layer(tensors[op[1]])]
        elif name == "dense":
            layer = K.layers.Dense(op[2], activation=op[3])
            outs = [layer(tensors[op[1]])]
        elif name == "shared":
            layer = layers[op[1]]
            outs = [layer(tensors[op[2]])]
        elif name == "lambda":
            scale = op[2]
            layer = K.layers.Lambda(lambda t, s=scale: t * s + 1.0)
            outs = [layer(tensors[op[1]])]
        elif name == "bn":
            layer = K.layers.BatchNormalization()
            outs = [layer(tensors[op[1]])]
        elif name == "split":
            layer = K.layers.Lambda(_split)
            outs = list(layer(tensors[op[1]]))
        elif name == "two_two":
            layer = two_in_two_out(K)()
            outs = list(layer([tensors[op[1]], tensors[op[2]]]))
        elif name == "add":
            layer = K.layers.Add()
            outs = [layer([tensors[op[1]], tensors[op[2]]])]
        elif name == "concat":
            layer = K.layers.Concatenate()
            outs = [layer([tensors[op[1]], tensors[op[2]]])]
        elif name == "masking":
            layer = K.layers.Masking(0.0)
            outs = [layer(tensors[op[1]])]
        elif name == "gap":
            layer = K.layers.GlobalAveragePooling1D()
            if not layer.supports_masking:  # standalone Keras 2.0-2.1: it refuses masks; an LSTM pools instead
                layer = K.layers.LSTM(int(tensors[op[1]].shape[-1]))
            outs = [layer(tensors[op[1]])]
        elif name == "nested":
            layer = _nested_model(K, op[2], op[3], op[4], op[5])
            outs = [layer(tensors[op[1]])]
        elif name == "nested_again":
            layer = layers[op[1]]
            outs = [layer(tensors[op[2]])]
        else:  # pragma: no cover
            raise ValueError(name)
        layers[n] = layer
        assert len(outs) == _N_OUT.get(name, 1)
        tensors.extend(outs)
    model = K.models.Model(tensors[: len(spec.inputs)], [tensors[i] for i in spec.outputs])
    return fill_weights(model, seed=spec.seed)


def sample_inputs(spec: GraphSpec, batch: int = 2) -> List[np.ndarray]:
    """A batch for `spec`'s inputs: zeros where a mask should cut something."""
    rng = np.random.default_rng(spec.seed + 1)
    out: List[np.ndarray] = []
    for t in spec.inputs:
        if t.kind == "tok":
            x = rng.integers(1, t.dim, size=(batch, t.steps)).astype("int32")
            x[0, -1] = 0  # padding: masked by Embedding(mask_zero=True)
        elif t.kind == "seq":
            x = rng.standard_normal((batch, t.steps, t.dim)).astype("float32")
            x[0, -1, :] = 0.0  # a step Masking(0.0) masks
        else:
            x = rng.standard_normal((batch, t.dim)).astype("float32")
        out.append(x)
    return out


def run_model(model: Any, xs: List[np.ndarray]) -> List[np.ndarray]:
    """The model's outputs on `xs` as a flat list of numpy arrays."""
    import compat_clone

    family = compat_clone.family_of(model).family
    feed: Any = xs if len(xs) > 1 else xs[0]
    result = model.predict(feed, batch_size=len(xs[0])) if family == "keras2" else model(feed, training=False)
    if not isinstance(result, (list, tuple)):
        result = [result]
    if family == "keras3":
        import keras

        return [np.asarray(keras.ops.convert_to_numpy(r)) for r in result]
    return [np.asarray(r) for r in result]


def describe(spec: GraphSpec) -> str:
    """One line per op, for failure messages."""
    lines = [f"inputs: {[dataclasses.astuple(t) for t in spec.inputs]}"]
    lines += [f"  {i}: {op}" for i, op in enumerate(spec.ops)]
    lines.append(f"outputs: {spec.outputs} recursive={spec.recursive} seed={spec.seed}")
    return "\n".join(lines)

