"""Hypothesis strategies: subclassed models (Model and Sequential subclasses), as data, written out as Python source.

`model_specs(caps)` draws a `ModelSpec`, `sequential_specs(caps)` a
`SequentialSpec`: plain data, independent of any framework, so they shrink
well. `source(spec, class_name)` writes the spec out as the Python a user
would write: one class (a `keras.Model` or `keras.Sequential` subclass, plus
a nested block class where drawn) and two functions, ``make(x, mask)`` (build
the model the way its user does, and call it once) and ``freeze(model)``
(what the user sets after building). `build(K, spec, x, mask)` runs that
source with the Keras module `K`, so the class is defined dynamically, per
example, and the source printed with a failure *is* the reproducer.

What the models hold (each a way a structural clone can go wrong):

* sub-layers made in ``__init__`` or in ``build()`` (the Keras guides' style:
  ``def build(self, input_shape): self.head = Dense(...)``), held in an
  attribute, a list, a tuple, a dict, a nested Sequential, functional or
  subclassed model, under attribute names that match no constructor parameter;
* constructor arguments stored under their own name, a private one, another
  name, or not at all (``num_classes`` sizing the head and never kept);
* a layer passed to the constructor (``Gen(backbone, num_classes=4)``),
  stored as ``self.backbone``, ``self._backbone`` or ``self.inner``;
* a layer called twice, directly or through a second attribute (shared);
* a weight of the model itself (``self.add_weight`` in ``__init__`` or ``build``);
* frozen parts (``trainable = False`` set in ``__init__`` or by the user
  afterwards) and a frozen model;
* ``call(inputs, training=None, mask=None)``: Dropout with a nonzero rate,
  BatchNormalization, and a mask handed to a pooling layer;
* Sequential subclasses whose layers come from the caller, from ``self.add``
  in ``__init__`` or from ``super().__init__(layers)``.

`caps` (`family_caps(K)`) says what the family under test can express; a
strategy draws nothing else. Dimensions are tiny (2-6 features, batch of 2).
"""

from __future__ import annotations

import dataclasses
import itertools
import linecache
import sys
from typing import Any, Dict, FrozenSet, List, Optional, Tuple, Union

import numpy as np
from hypothesis import strategies as st

# What a family can express (`family_caps`):
#   build          sub-layers and weights made in build()
#   model_weight   add_weight on the model itself
#   arithmetic     call returns arithmetic on a layer's output (a weight product)
#   mask           an explicit `mask` argument to the model's call
#   block          a subclassed model nested in another and called there
#   eager          the model is called eagerly (else through predict)
#   training       a nested model's call takes `training`
ALL_CAPS = frozenset({"build", "model_weight", "arithmetic", "mask", "block", "eager", "training"})

# -- the spec ------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Arg:
    """A constructor argument: its default, the value the example passes, and where the constructor keeps it."""

    name: str
    default: Any
    value: Any
    stored: str  # "as-is" (self.<name>), "private" (self._<name>), "renamed", "no" (used in __init__, never kept)

    @property
    def attribute(self) -> Optional[str]:
        return {"as-is": self.name, "private": "_" + self.name, "renamed": _RENAMED[self.name], "no": None}[self.stored]


_RENAMED = {"num_classes": "n_out", "width": "hidden_units", "rate": "drop_rate", "units": "size", "activation": "act"}


@dataclasses.dataclass(frozen=True)
class Leaf:
    """One layer: ``dense`` (units: an int or an argument's name), ``dropout`` (rate: a float or an
    argument's name), ``bn``, ``shared`` (a Dense called twice; `alias`: the second call through
    another attribute), ``pool`` (masked average pooling); a name in place of a value is the
    constructor argument of that name."""

    kind: str
    size: Union[int, float, str, None] = None
    alias: bool = False
    act: Optional[str] = None  # dense: an activation's name, or "activation" (the argument)


@dataclasses.dataclass(frozen=True)
class Slot:
    """Layers under one attribute of the model, applied in order by `call`."""

    attr: str
    holder: str  # attr | list | tuple | dict | sequential | functional | block
    made_in: str  # init | build | given (passed to the constructor as `backbone`)
    leaves: Tuple[Leaf, ...]
    in_dim: int
    frozen: str = ""  # "" | "init" (set where it is made) | "after" (set by the user once built)
    block_arg: Optional[Arg] = None  # holder "block": its own constructor argument


@dataclasses.dataclass(frozen=True)
class ModelSpec:
    in_dim: int
    mask: bool  # input (batch, 3, in_dim), a mask handed to the model and to the pooling before the head
    signature: str  # "plain" call(inputs) | "training" call(inputs, training=None) | "mask" (+ mask=None)
    kwargs: bool  # __init__ takes **kwargs and hands them to super().__init__
    args: Tuple[Arg, ...]
    slots: Tuple[Slot, ...]  # the last one is the head, Dense(num_classes)
    scale: str  # "" | "init" | "build": a weight of the model, multiplying its input
    model_frozen: bool
    positional: bool  # make() passes every argument by position
    seed: int


@dataclasses.dataclass(frozen=True)
class SequentialSpec:
    style: str  # "list" (layers given by the caller) | "add" (self.add in __init__) | "super" (super().__init__(layers))
    in_dim: int
    with_input: bool  # a keras.Input first
    leaves: Tuple[Leaf, ...]  # the last one is the head
    num_classes: Optional[Arg]  # styles "add" and "super": the head's units
    kwargs: bool
    frozen: Tuple[int, ...]  # layer indices frozen by the user once built
    model_frozen: bool
    seed: int


Spec = Union[ModelSpec, SequentialSpec]


def family_caps(K: Any) -> FrozenSet[str]:
    """What subclassed models of `K`'s family can hold (see ALL_CAPS)."""
    from tests.clone.features import family_name

    if family_name(K) != "keras2":
        return ALL_CAPS
    # Standalone Keras 2.2-2.3 (graph mode): its Model has no add_weight before it is built, a
    # subclassed call must return a layer's output, it cannot call a subclassed model inside
    # another, its models run through predict (which takes no mask), and a model's call takes
    # no `training` (2.2.4: "call() got an unexpected keyword argument 'training'").
    return frozenset()


# -- drawing -------------------------------------------------------------------

_ATTRS = ("fc", "proj", "towers", "stem", "mixer", "trunk", "blocks", "pair", "core", "neck", "tail", "body", "lookup")
_HEADS = ("head", "classifier", "out_layer", "logits")
_DEFAULTS = {"num_classes": 3, "width": 4, "rate": 0.5, "units": 3, "activation": None}
_VALUES = {"num_classes": [2, 4, 5], "width": [2, 5, 6], "rate": [0.25, 0.75], "units": [2, 4, 5], "activation": ["relu", "tanh"]}


def _arg(draw: Any, name: str, must_store: bool = False) -> Arg:
    """An argument passed a value other than its default (now and then the default, not passed)."""
    value = draw(st.sampled_from(_VALUES[name] + [_DEFAULTS[name]]))
    stored = draw(st.sampled_from(["as-is", "private", "renamed"] if must_store else ["no", "as-is", "private", "renamed"]))
    return Arg(name, _DEFAULTS[name], value, stored)


class _Args:
    """The outer model's arguments, drawn where first used (a layer made in build() needs a kept one)."""

    def __init__(self, draw: Any) -> None:
        self.draw = draw
        self.args: Dict[str, Arg] = {}

    def use(self, name: str, in_build: bool) -> Optional[str]:
        """`name` if a layer may take its size from that argument here, else None (a literal size)."""
        arg = self.args.get(name)
        if arg is None:
            arg = self.args[name] = _arg(self.draw, name)
        if in_build and arg.stored == "no":
            return None
        return name


def _leaf(draw: Any, holder: str, dim: int, args: Optional[_Args], in_build: bool) -> Tuple[Leaf, int]:
    kinds = ["dense", "dense", "dropout", "bn"]
    if holder in ("attr", "list", "tuple", "dict"):
        kinds.append("shared")
    kind = draw(st.sampled_from(kinds))
    if kind == "dense":
        named = args.use("width", in_build) if args is not None and draw(st.booleans()) else None
        size: Any = named or draw(st.integers(2, 6))
        units = args.args["width"].value if named else size
        act = draw(st.sampled_from([None, None, "relu", "activation"]))
        if act == "activation":
            act = (args.use("activation", in_build) if args is not None else None) or "tanh"
        return Leaf("dense", size, act=act), units
    if kind == "dropout":
        named = args.use("rate", in_build) if args is not None and draw(st.booleans()) else None
        return Leaf("dropout", named or draw(st.sampled_from([0.2, 0.5]))), dim
    if kind == "shared":
        return Leaf("shared", dim, draw(st.booleans())), dim
    return Leaf("bn"), dim


@st.composite
def model_specs(draw: Any, caps: FrozenSet[str] = ALL_CAPS) -> ModelSpec:
    """A `keras.Model` subclass (see the module docstring)."""
    in_dim = draw(st.integers(2, 4))
    mask = "mask" in caps and draw(st.sampled_from([False, False, True]))
    signature = "mask" if mask else draw(st.sampled_from(["plain", "training"] if "training" in caps else ["plain"]))
    names = iter(draw(st.permutations(_ATTRS)))
    made = ["init", "build"] if "build" in caps else ["init"]
    args = _Args(draw)
    slots: List[Slot] = []
    dim, given, block = in_dim, False, False
    for _ in range(draw(st.integers(1, 3))):
        holders = ["attr", "list", "tuple", "dict", "sequential", "functional"] + (
            ["block"] if "block" in caps and not block else []
        )
        holder = draw(st.sampled_from(holders))
        places = made + ([] if given or holder in ("list", "tuple", "dict") else ["given"])
        made_in = draw(st.sampled_from(places))
        given, block = given or made_in == "given", block or holder == "block"  # one of each: one `backbone`, one block class
        leaves, start = [], dim
        for _ in range(1 if holder == "attr" else draw(st.integers(1, 3))):
            leaf, dim = _leaf(draw, holder, dim, args if made_in != "given" and holder != "block" else None, made_in == "build")
            if made_in == "given" and leaf.kind == "shared":
                leaf, dim = Leaf("dense", leaf.size), dim
            leaves.append(leaf)
        block_arg = None
        if holder == "block" and any(leaf.kind == "dense" for leaf in leaves):
            block_arg = _arg(draw, "units")
            first = next(i for i, leaf in enumerate(leaves) if leaf.kind == "dense")
            leaves[first] = Leaf("dense", "units")
            dim = _dims(leaves, start, block_arg.value)
        attr = {"as-is": "backbone", "private": "_backbone", "renamed": "inner"}[
            draw(st.sampled_from(["as-is", "private", "renamed"]))
        ]
        frozen = draw(st.sampled_from(["", "", "init", "after"]))
        slots.append(Slot(attr if made_in == "given" else next(names), holder, made_in, tuple(leaves), start, frozen, block_arg))
    if mask:
        slots.append(Slot("pool", "attr", "init", (Leaf("pool"),), dim))
    head_in = draw(st.sampled_from(made))
    args.args["num_classes"] = _arg(draw, "num_classes", must_store=head_in == "build")
    head = Slot(
        draw(st.sampled_from(_HEADS)), "attr", head_in, (Leaf("dense", "num_classes"),), dim, draw(st.sampled_from(["", "after"]))
    )
    scale = draw(st.sampled_from([""] + (made if "model_weight" in caps and "arithmetic" in caps else [])))
    used = _used_args(slots + [head])
    return ModelSpec(
        in_dim=in_dim,
        mask=mask,
        signature=signature,
        kwargs=draw(st.booleans()),
        args=tuple(a for name, a in sorted(args.args.items()) if name in used),
        slots=tuple(slots) + (head,),
        scale=scale,
        model_frozen=draw(st.sampled_from([False, False, False, True])),
        positional=draw(st.booleans()),
        seed=draw(st.integers(0, 2**16)),
    )


def _dims(leaves: List[Leaf], dim: int, units_value: int) -> int:
    for leaf in leaves:
        if leaf.kind == "dense":
            dim = units_value if leaf.size == "units" else int(leaf.size)  # type: ignore[arg-type]
    return dim


def _used_args(slots: List[Slot]) -> set:
    sizes = {leaf.size for slot in slots for leaf in slot.leaves if isinstance(leaf.size, str)}
    return (sizes | {leaf.act for slot in slots for leaf in slot.leaves if leaf.act == "activation"}) - {"units"}


@st.composite
def sequential_specs(draw: Any, caps: FrozenSet[str] = ALL_CAPS) -> SequentialSpec:
    """A `keras.Sequential` subclass (see the module docstring)."""
    in_dim = draw(st.integers(2, 4))
    style = draw(st.sampled_from(["list", "add", "super"]))
    leaves = []
    for _ in range(draw(st.integers(0, 3))):
        kind = draw(st.sampled_from(["dense", "dense", "dropout", "bn"]))
        size = draw(st.integers(2, 6)) if kind == "dense" else draw(st.sampled_from([0.2, 0.5])) if kind == "dropout" else None
        leaves.append(Leaf(kind, size))
    num_classes = None if style == "list" else _arg(draw, "num_classes")
    leaves.append(Leaf("dense", "num_classes" if num_classes else draw(st.integers(2, 5))))
    frozen = tuple(sorted(draw(st.sets(st.integers(0, len(leaves) - 1), max_size=2))))
    return SequentialSpec(
        style=style,
        in_dim=in_dim,
        with_input=draw(st.booleans()) if "eager" in caps else True,  # graph-mode Keras builds no Sequential by predict
        leaves=tuple(leaves),
        num_classes=num_classes,
        kwargs=draw(st.booleans()),
        frozen=frozen,
        model_frozen=draw(st.sampled_from([False, False, False, True])),
        seed=draw(st.integers(0, 2**16)),
    )


# -- writing the source ----------------------------------------------------------


def _layer_expr(leaf: Leaf, size_of: Dict[str, str]) -> str:
    size = size_of.get(leaf.size, repr(leaf.size)) if isinstance(leaf.size, str) else repr(leaf.size)
    if leaf.kind in ("dense", "shared"):
        act = "" if leaf.act is None else f", activation={size_of.get(leaf.act, repr(leaf.act))}"
        return f"K.layers.Dense({size}{act})"
    if leaf.kind == "dropout":
        return f"K.layers.Dropout({size})"
    if leaf.kind == "bn":
        return "K.layers.BatchNormalization()"
    return "K.layers.GlobalAveragePooling1D()"


def _shape(dim: int, mask: bool) -> str:
    return f"(3, {dim})" if mask else f"({dim},)"


def _element(slot: Slot, i: int) -> str:
    """The expression of leaf `i` of `slot`, relative to the model (`self.` prefixed by the caller)."""
    if slot.holder in ("list", "tuple"):
        return f"{slot.attr}[{i}]"
    if slot.holder == "dict":
        return f"{slot.attr}[{_key(slot, i)!r}]"
    if slot.holder == "sequential":
        return f"{slot.attr}.layers[{i}]"
    if slot.holder == "functional":
        return f"{slot.attr}.layers[{i + 1}]"  # its InputLayer first
    if slot.holder == "block":
        return f"{slot.attr}.parts[{i}]"
    return slot.attr


def _key(slot: Slot, i: int) -> str:
    return f"{slot.leaves[i].kind}{i}"


def _make_slot(slot: Slot, mask: bool, size_of: Dict[str, str], block_class: str, into: str) -> List[str]:
    """Lines that make `slot`'s layers and assign them to `into` (`self.<attr>` or a local name)."""
    exprs = [_layer_expr(leaf, size_of) for leaf in slot.leaves]
    if slot.holder == "attr":
        lines = [f"{into} = {exprs[0]}"]
    elif slot.holder == "list":
        lines = [f"{into} = [{', '.join(exprs)}]"]
    elif slot.holder == "tuple":
        lines = [f"{into} = ({', '.join(exprs)},)"]
    elif slot.holder == "dict":
        lines = [f"{into} = {{{', '.join(f'{_key(slot, i)!r}: {e}' for i, e in enumerate(exprs))}}}"]
    elif slot.holder == "sequential":
        lines = [f"{into} = K.models.Sequential([{', '.join(exprs)}])"]
    elif slot.holder == "functional":
        var = slot.attr.strip("_")
        lines = [f"{var}_in = K.Input({_shape(slot.in_dim, mask)})", f"{var} = {var}_in"]
        lines += [f"{var} = {e}({var})" for e in exprs]
        lines.append(f"{into} = K.models.Model({var}_in, {var})")
    else:
        arg = slot.block_arg
        lines = [f"{into} = {block_class}({'' if arg is None or arg.value == arg.default else f'units={arg.value!r}'})"]
    for i, leaf in enumerate(slot.leaves):
        if leaf.kind == "shared" and leaf.alias:
            target = into + _element(slot, i)[len(slot.attr) :]
            lines.append(f"{into}_again{i} = {target}")
    if slot.frozen == "init":
        lines.append(
            f"{into}.trainable = False"
            if slot.holder not in ("list", "tuple", "dict")
            else f"{into.split('.')[0]}.{_element(slot, 0)}.trainable = False"
        )
    return lines


def _call_slot(slot: Slot, signature: str) -> List[str]:
    training = ", training=training" if signature != "plain" else ""
    if slot.holder in ("sequential", "functional", "block"):
        return [f"h = self.{slot.attr}(h{training})"]
    lines = []
    for i, leaf in enumerate(slot.leaves):
        this = f"self.{_element(slot, i)}"
        if leaf.kind == "shared":
            again = f"self.{slot.attr}_again{i}" if leaf.alias else this
            lines.append(f"h = {again}({this}(h))")
        elif leaf.kind in ("dropout", "bn"):
            lines.append(f"h = {this}(h{training})")
        elif leaf.kind == "pool":
            lines.append(f"h = {this}(h, mask=mask)")
        else:
            lines.append(f"h = {this}(h)")
    return lines


def _block_source(name: str, slot: Slot) -> List[str]:
    arg = slot.block_arg
    lines = [f"class {name}(K.models.Model):"]
    lines.append(f"    def __init__(self, units={arg.default!r}, **kwargs):" if arg else "    def __init__(self, **kwargs):")
    lines.append("        super().__init__(**kwargs)")
    if arg and arg.attribute:
        lines.append(f"        self.{arg.attribute} = units")
    exprs = [_layer_expr(leaf, {"units": "units"}) for leaf in slot.leaves]
    lines += [
        f"        self.parts = [{', '.join(exprs)}]",
        "",
        "    def call(self, inputs, training=None):",
        "        h = inputs",
    ]
    for i, leaf in enumerate(slot.leaves):
        lines.append(f"        h = self.parts[{i}](h{', training=training' if leaf.kind in ('dropout', 'bn') else ''})")
    return lines + ["        return h", "", ""]


def _first_call(eager: bool, mask: bool) -> str:
    if not eager:  # graph-mode Keras: built by its first predict
        return "    model.predict(x)"
    return "    model(x, mask=mask)" if mask else "    model(x)"


def _model_source(spec: ModelSpec, name: str, eager: bool) -> str:
    block_class = name + "Block"
    lines: List[str] = []
    for slot in spec.slots:
        if slot.holder == "block":
            lines += _block_source(block_class, slot)
    given = next((slot for slot in spec.slots if slot.made_in == "given"), None)
    params = (
        (["backbone"] if given else []) + [f"{a.name}={a.default!r}" for a in spec.args] + (["**kwargs"] if spec.kwargs else [])
    )
    lines += [f"class {name}(K.models.Model):", f"    def __init__(self, {', '.join(params)}):"]
    lines.append("        super().__init__(**kwargs)" if spec.kwargs else "        super().__init__()")
    init_size = {a.name: a.name for a in spec.args}
    build_size = {a.name: f"self.{a.attribute}" for a in spec.args if a.attribute}
    lines += [f"        self.{a.attribute} = {a.name}" for a in spec.args if a.attribute]
    build: List[str] = []
    for slot in spec.slots:
        if slot.made_in == "given":
            lines.append(f"        self.{slot.attr} = backbone")
        elif slot.made_in == "init":
            lines += ["        " + line for line in _make_slot(slot, spec.mask, init_size, block_class, f"self.{slot.attr}")]
        else:
            build += ["        " + line for line in _make_slot(slot, spec.mask, build_size, block_class, f"self.{slot.attr}")]
    if spec.scale == "init":
        lines.append(f'        self.scale = self.add_weight(name="scale", shape=({spec.in_dim},), initializer="ones")')
    elif spec.scale == "build":
        build.append('        self.scale = self.add_weight(name="scale", shape=(input_shape[-1],), initializer="ones")')
    if build:
        lines += ["", "    def build(self, input_shape):"] + build
    sig = {"plain": "inputs", "training": "inputs, training=None", "mask": "inputs, training=None, mask=None"}[spec.signature]
    lines += ["", f"    def call(self, {sig}):", "        h = inputs"]
    if spec.scale:
        lines.append("        h = h * self.scale")
    for slot in spec.slots:
        lines += ["        " + line for line in _call_slot(slot, spec.signature)]
    lines += ["        return h", "", ""]

    # make(): what the user writes to get the model, called once
    lines.append("def make(x, mask=None):")
    if given:
        lines += ["    " + line for line in _make_slot(given, spec.mask, {}, block_class, "backbone")]
    if spec.positional:
        passed = (["backbone"] if given else []) + [repr(a.value) for a in spec.args]
    else:
        passed = (["backbone"] if given else []) + [f"{a.name}={a.value!r}" for a in spec.args if a.value != a.default]
    lines.append(f"    model = {name}({', '.join(passed)})")
    lines += [_first_call(eager, spec.mask), "    return model", "", ""]
    lines.append("def freeze(model):")
    after = [slot for slot in spec.slots if slot.frozen == "after"]
    lines += [f"    model.{_element(slot, 0)}.trainable = False" for slot in after]
    if spec.model_frozen:
        lines.append("    model.trainable = False")
    lines.append("    return model")
    return "\n".join(lines) + "\n"


def _sequential_source(spec: SequentialSpec, name: str, eager: bool) -> str:
    size_of = {"num_classes": "num_classes"}
    # standalone Keras 2 takes an InputLayer, not an Input tensor, in a Sequential's list
    first = f"K.Input(({spec.in_dim},))" if eager else f"K.layers.InputLayer(input_shape=({spec.in_dim},))"
    exprs = ([first] if spec.with_input else []) + [_layer_expr(leaf, size_of) for leaf in spec.leaves]
    lines = [f"class {name}(K.models.Sequential):"]
    arg = spec.num_classes
    if spec.style == "list":
        lines += ["    def n_layers(self):", "        return len(self.layers)", "", ""]
    else:
        params = [f"num_classes={arg.default!r}"] + (["**kwargs"] if spec.kwargs else [])  # type: ignore[union-attr]
        lines.append(f"    def __init__(self, {', '.join(params)}):")
        kwargs = "**kwargs" if spec.kwargs else ""
        if spec.style == "super":
            lines.append(f"        super().__init__([{', '.join(exprs)}]{', ' if kwargs else ''}{kwargs})")
        else:
            lines.append(f"        super().__init__({kwargs})")
            lines += [f"        self.add({e})" for e in exprs]
        if arg is not None and arg.attribute:
            lines.append(f"        self.{arg.attribute} = num_classes")
        lines += ["", ""]
    lines.append("def make(x, mask=None):")
    if spec.style == "list":
        lines.append(f"    model = {name}([{', '.join(exprs)}])")
    else:
        passed = "" if arg is None or arg.value == arg.default else f"num_classes={arg.value!r}"
        lines.append(f"    model = {name}({passed})")
    lines += [_first_call(eager, False), "    return model", "", "", "def freeze(model):"]
    lines += [f"    model.layers[{i}].trainable = False" for i in spec.frozen]
    if spec.model_frozen:
        lines.append("    model.trainable = False")
    lines.append("    return model")
    return "\n".join(lines) + "\n"


def source(spec: Spec, class_name: str, eager: bool = True) -> str:
    """The Python a user would write for `spec`: its class(es), ``make(x, mask)`` and ``freeze(model)``.

    `eager`: ``make`` builds the model by calling it (else by ``predict``, graph-mode Keras)."""
    if isinstance(spec, ModelSpec):
        return _model_source(spec, class_name, eager)
    return _sequential_source(spec, class_name, eager)


# -- building and running ----------------------------------------------------------

_COUNTER = itertools.count()


@dataclasses.dataclass
class Generated:
    model: Any
    code: str  # the source it was built from
    x: np.ndarray
    mask: Optional[np.ndarray]
    paths: List[Tuple[str, str]]  # (path from the model, e.g. "towers[1]", expected class name) of every leaf


def sample(spec: Spec, batch: int = 2) -> Tuple[np.ndarray, Optional[np.ndarray]]:
    """A batch for `spec` and, for a masked model, its mask (the last step of the first sample masked)."""
    rng = np.random.default_rng(spec.seed + 1)
    if isinstance(spec, ModelSpec) and spec.mask:
        mask = np.ones((batch, 3), bool)
        mask[0, -1] = False
        return rng.standard_normal((batch, 3, spec.in_dim)).astype("float32"), mask
    return rng.standard_normal((batch, spec.in_dim)).astype("float32"), None


def leaf_paths(spec: Spec) -> List[Tuple[str, str]]:
    """Where each drawn layer sits in the built model, with its class name."""
    names = {
        "dense": "Dense",
        "shared": "Dense",
        "dropout": "Dropout",
        "bn": "BatchNormalization",
        "pool": "GlobalAveragePooling1D",
    }
    if isinstance(spec, SequentialSpec):
        return [(f"layers[{i}]", names[leaf.kind]) for i, leaf in enumerate(spec.leaves)]
    return [(_element(slot, i), names[leaf.kind]) for slot in spec.slots for i, leaf in enumerate(slot.leaves)]


def build(K: Any, spec: Spec, eager: bool = True) -> Generated:
    """Defines `spec`'s class(es) with Keras module `K`, makes the model, fills its weights from the
    spec's seed and applies what the user froze. The classes are findable as `<this module>.<name>`
    (as users' module-level classes are)."""
    from tests.clone.model_state import fill_weights

    name = f"Gen{next(_COUNTER)}{'Seq' if isinstance(spec, SequentialSpec) else ''}"
    code = source(spec, name, eager)
    namespace: Dict[str, Any] = {"K": K, "__name__": __name__}
    filename = f"<generated {name}>"
    # inspect (and so AutoGraph and tracebacks) reads the source of its methods from here
    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
    exec(compile(code, filename, "exec"), namespace)  # noqa: S102 (the spec's own source)
    module = sys.modules[__name__]
    for key, value in namespace.items():
        if isinstance(value, type) and key.startswith(name):
            setattr(module, key, value)
    x, mask = sample(spec)
    model = namespace["make"](x, mask)
    fill_weights(model, seed=spec.seed)
    namespace["freeze"](model)
    return Generated(model, code, x, mask, leaf_paths(spec))


def resolve(model: Any, path: str) -> Any:
    """The object at `path` ("towers[1]", "core.layers[2]", "pair['dense0']") under `model`."""
    return eval("model." + path, {}, {"model": model})  # noqa: S307 (paths written by leaf_paths)


def labels(spec: Spec) -> List[str]:
    """What an example holds, for Hypothesis' statistics (`event`)."""
    if isinstance(spec, SequentialSpec):
        out = [f"sequential subclass: {spec.style}", f"input layer: {spec.with_input}"]
        if spec.num_classes is not None:
            out.append(
                f"num_classes: {'default' if spec.num_classes.value == spec.num_classes.default else 'passed'}, stored {spec.num_classes.stored}"
            )
        return out + (["frozen layer"] if spec.frozen else []) + (["frozen model"] if spec.model_frozen else [])
    out = [f"call: {spec.signature}"] + (["arguments passed by position"] if spec.positional else [])
    out += sorted({f"holder {slot.holder} made in {slot.made_in}" for slot in spec.slots})
    out += [f"arg {a.name}: {'default' if a.value == a.default else 'passed'}, stored {a.stored}" for a in spec.args]
    out += [f"block units stored {slot.block_arg.stored}" for slot in spec.slots if slot.block_arg]
    out += [f"given stored as {slot.attr}" for slot in spec.slots if slot.made_in == "given"]
    out += sorted(
        {
            f"shared layer{' via alias' if leaf.alias else ''}"
            for slot in spec.slots
            for leaf in slot.leaves
            if leaf.kind == "shared"
        }
    )
    out += sorted({f"frozen {slot.frozen}" for slot in spec.slots if slot.frozen})
    out += ([f"model weight in {spec.scale}"] if spec.scale else []) + (["frozen model"] if spec.model_frozen else [])
    return out
