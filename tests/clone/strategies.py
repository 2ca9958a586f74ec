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
# example database written. dev: 20 examples, derandomized too: our overlay
# (tests/matrix-overlay.toml) sets it in every environment of `make test`, whose result must not depend on
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
# `make test-wide` (COMPAT_CLONE_WIDE=1) draws the profile an environment's overlay entry names in
# COMPAT_CLONE_WIDE_PROFILE: `ci` (200) in one environment per family and backend, and in keras-2.3.1.
if os.environ.get("COMPAT_CLONE_WIDE") == "1" and os.environ.get("COMPAT_CLONE_WIDE_PROFILE"):
    PROFILE = os.environ["COMPAT_CLONE_WIDE_PROFILE"]
SETTINGS = settings.get_profile(PROFILE if PROFILE in ("ci", "nightly", "dev") else "ci")


# -- the spec ----------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Tensor:
    """Static facts about one tensor of the graph (batch axis left out)."""

    kind: str  # "vec" (d,), "seq" (steps, d), "tok" (steps,) int tokens
    dim: int  # features; for "tok" the vocabulary size
    steps: int = 0
    masked: bool = False

    def same_shape(self, other: Tensor) -> bool:
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


@dataclasses.dataclass
class _Draft:
    """The graph as it is drawn: its tensors and ops so far, and what a later op may share."""

    tensors: List[Tensor] = dataclasses.field(default_factory=list)
    ops: List[Tuple[Any, ...]] = dataclasses.field(default_factory=list)
    consumed: set = dataclasses.field(default_factory=set)
    denses: List[Tuple[int, int]] = dataclasses.field(default_factory=list)  # (op index, input dim) of Dense layers
    nested: List[Tuple[int, int]] = dataclasses.field(default_factory=list)  # (op index, input dim) of nested models

    def add(self, op: Tuple[Any, ...], outs: List[Tensor], uses: List[int]) -> None:
        self.ops.append(op)
        self.consumed.update(uses)
        self.tensors.extend(outs)

    def float_idx(self, pred: Any = lambda t: True) -> List[int]:
        return [i for i, t in enumerate(self.tensors) if t.kind != "tok" and pred(t)]

    def pairs(self) -> List[Tuple[int, int]]:
        """Float tensors of one shape, to add (or to feed the two-in/two-out layer)."""
        tensors, idx = self.tensors, self.float_idx()
        return [(a, b) for a in idx for b in idx if a < b and tensors[a].same_shape(tensors[b])]

    def unmasked_pairs(self) -> List[Tuple[int, int]]:
        return [p for p in self.pairs() if not self.tensors[p[0]].masked and not self.tensors[p[1]].masked]

    def cat_pairs(self) -> List[Tuple[int, int]]:
        """Float tensors of one kind and length, to concatenate."""
        tensors, idx = self.tensors, self.float_idx()
        return [
            (a, b)
            for a in idx
            for b in idx
            if a < b and tensors[a].kind == tensors[b].kind and tensors[a].steps == tensors[b].steps
        ]

    def choices(self) -> List[str]:
        """The ops that the tensors so far allow, in the order they are offered."""
        choices = ["dense", "lambda"]
        if self.float_idx(lambda t: not t.masked):
            choices += ["bn", "split"]
        if self.float_idx(lambda t: t.kind == "seq"):
            choices += ["gap"]
        if self.float_idx(lambda t: t.kind == "seq" and not t.masked):
            choices += ["masking"]
        if any(self.float_idx(lambda t, d=d: t.dim == d) for _, d in self.denses):
            choices += ["shared"]
        if self.float_idx(lambda t: t.kind == "vec" and not t.masked):
            choices += ["nested"]
        if self.pairs():
            choices += ["add"]
        if self.unmasked_pairs():
            choices += ["two_two"]
        if self.cat_pairs():
            choices += ["concat"]
        return choices


def _draw_inputs(draw: Any, g: _Draft) -> Tuple[Tensor, ...]:
    """One to three inputs; each token input embedded at once (it can only be embedded)."""
    n_inputs = draw(st.integers(1, 3))
    for _ in range(n_inputs):
        kind = draw(st.sampled_from(["vec", "vec", "seq", "tok"]))
        if kind == "tok":
            g.tensors.append(Tensor("tok", draw(st.integers(3, 6)), draw(st.integers(2, 3))))
        elif kind == "seq":
            g.tensors.append(Tensor("seq", draw(st.integers(2, 4)), draw(st.integers(2, 3))))
        else:
            g.tensors.append(Tensor("vec", draw(st.integers(2, 6))))
    inputs = tuple(g.tensors)
    for i, t in enumerate(inputs):
        if t.kind == "tok":
            width = draw(st.integers(2, 4))
            g.add(("embed", i, t.dim, width), [Tensor("seq", width, t.steps, True)], [i])
    return inputs


def _draw_layer(draw: Any, g: _Draft, name: str) -> None:
    """One op of the single-input layers: dense, shared, lambda, bn, split, masking, gap."""
    tensors = g.tensors
    if name == "dense":
        i = draw(st.sampled_from(g.float_idx()))
        t = tensors[i]
        units = draw(st.integers(2, 6))
        act = draw(st.sampled_from([None, "relu", "tanh"]))
        g.denses.append((len(g.ops), t.dim))
        g.add(("dense", i, units, act), [Tensor(t.kind, units, t.steps, t.masked)], [i])
    elif name == "shared":
        j, d = draw(st.sampled_from([(j, d) for j, d in g.denses if g.float_idx(lambda t, d=d: t.dim == d)]))
        i = draw(st.sampled_from(g.float_idx(lambda t, d=d: t.dim == d)))
        t = tensors[i]
        g.add(("shared", j, i), [Tensor(t.kind, g.ops[j][2], t.steps, t.masked)], [i])
    elif name == "lambda":
        i = draw(st.sampled_from(g.float_idx()))
        t = tensors[i]
        # a Lambda on a masked tensor: the mask is not propagated
        g.add(("lambda", i, draw(st.sampled_from([0.5, 2.0, -1.0]))), [dataclasses.replace(t, masked=False)], [i])
    elif name == "bn":
        i = draw(st.sampled_from(g.float_idx(lambda t: not t.masked)))
        g.add(("bn", i), [tensors[i]], [i])
    elif name == "split":
        i = draw(st.sampled_from(g.float_idx(lambda t: not t.masked)))
        g.add(("split", i), [tensors[i], tensors[i]], [i])
    elif name == "masking":
        i = draw(st.sampled_from(g.float_idx(lambda t: t.kind == "seq" and not t.masked)))
        g.add(("masking", i), [dataclasses.replace(tensors[i], masked=True)], [i])
    elif name == "gap":
        i = draw(st.sampled_from(g.float_idx(lambda t: t.kind == "seq")))
        g.add(("gap", i), [Tensor("vec", tensors[i].dim)], [i])


def _draw_merge(draw: Any, g: _Draft, name: str) -> None:
    """One op on two tensors: two_two, add, concat."""
    tensors = g.tensors
    if name == "two_two":
        a, b = draw(st.sampled_from(g.unmasked_pairs()))
        g.add(("two_two", a, b), [tensors[a], tensors[a]], [a, b])
    elif name == "add":
        a, b = draw(st.sampled_from(g.pairs()))
        t = tensors[a]
        g.add(("add", a, b), [dataclasses.replace(t, masked=t.masked or tensors[b].masked)], [a, b])
    elif name == "concat":
        a, b = draw(st.sampled_from(g.cat_pairs()))
        ta, tb = tensors[a], tensors[b]
        g.add(("concat", a, b), [Tensor(ta.kind, ta.dim + tb.dim, ta.steps, ta.masked or tb.masked)], [a, b])


def _draw_nested(draw: Any, g: _Draft) -> None:
    """A nested model on a vector: one drawn before, called again, or a new one."""
    i = draw(st.sampled_from(g.float_idx(lambda t: t.kind == "vec" and not t.masked)))
    d = g.tensors[i].dim
    reuse = [j for j, dim in g.nested if dim == d]
    if reuse and draw(st.booleans()):
        j = draw(st.sampled_from(reuse))
        g.add(("nested_again", j, i), [Tensor("vec", g.ops[j][4])], [i])
    else:
        hidden, out = draw(st.integers(2, 5)), draw(st.integers(2, 5))
        style = draw(st.sampled_from(["functional", "functional_lambda", "sequential"]))
        g.nested.append((len(g.ops), d))
        g.add(("nested", i, d, hidden, out, style), [Tensor("vec", out)], [i])


@st.composite
def graph_specs(draw: Any, max_ops: int = 7) -> GraphSpec:
    """A random functional graph (see the module docstring)."""
    g = _Draft()
    inputs = _draw_inputs(draw, g)
    n_ops = draw(st.integers(1, max_ops))
    for _ in range(n_ops):
        name = draw(st.sampled_from(g.choices()))
        if name == "nested":
            _draw_nested(draw, g)
        elif name in ("two_two", "add", "concat"):
            _draw_merge(draw, g, name)
        else:
            _draw_layer(draw, g, name)

    # every input reaches an output: an unconsumed float input gets a Dense
    for i, t in enumerate(inputs):
        if i not in g.consumed:
            g.add(("dense", i, 2, None), [Tensor(t.kind, 2, t.steps, t.masked)], [i])
            g.denses.append((len(g.ops) - 1, t.dim))
    outputs = tuple(i for i in range(len(inputs), len(g.tensors)) if i not in g.consumed)
    return GraphSpec(inputs, tuple(g.ops), outputs, draw(st.booleans()), draw(st.integers(0, 2**16)))


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
        return K.models.Sequential([K.layers.Dense(hidden, activation="relu", input_shape=(dim,)), K.layers.Dense(out)])
    x = K.Input((dim,))
    h = K.layers.Dense(hidden, activation="relu")(x)
    if style == "functional_lambda":
        h = K.layers.Lambda(lambda t: t * 0.5 + 1.0)(h)
    return K.models.Model(x, K.layers.Dense(out)(h))


def build_model(K: Any, spec: GraphSpec) -> Any:
    """Builds `spec` with the Keras module `K`; weights set from `spec.seed`."""
    from tests.clone.model_state import fill_weights

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
