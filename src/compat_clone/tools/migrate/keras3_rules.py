"""The `--to keras3` rule set as data: the rules, where old names live in Keras 3, the backend ops.

No libcst here (`keras3` reads these tables while it walks a module). Every
rewrite target is checked against `keras3_api.KERAS3_NAMES`, Keras 3's own
public names, so a name is only moved to a place that exists;
tests/migrate/test_migrate_keras3.py checks the tables against the installed
Keras 3 and tf_keras. docs/migrate.md's rule list is `render_rules_doc()`
(``python -m compat_clone.tools.migrate.keras3_rules --write docs/migrate.md``;
`make docs` runs it, and a test fails when the list is stale).
"""

from __future__ import annotations

import dataclasses
import re
import sys
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

from compat_clone.tools.migrate.keras3_api import KERAS3_NAMES, KERAS3_VERSION

__all__ = [
    "BACKEND_FIXES",
    "SAVE_SUFFIXES",
    "backend_rule",
    "message",
    "removed_fix",
    "GENERATOR_METHODS",
    "GENERATOR_WORKER_ARGS",
    "KERAS3_RULES",
    "KERAS3_TRIGGERS",
    "OPS",
    "OpRewrite",
    "Rule",
    "is_keras3_module",
    "is_optimizer_class",
    "keras3_rule",
    "keras3_target",
    "keras_rest",
    "render_rules_doc",
    "update_rules_doc",
]


@dataclasses.dataclass(frozen=True)
class Rule:
    """One rule of the `--to keras3` set.

    Attributes:
        id: the name reports carry (`[k3-...]`) and `# compat-clone: ok ID` marks.
        kind: `"rewrite"` (done where provably the same operation, else reported) or `"report"`.
        does: what it rewrites or reports.
        before: a short example of old code.
        after: what the rewrite makes of it, or the fix by hand.
        fix: for a report, what to do by hand.
        reported: for a rewrite rule, what its report says where the rewrite does not apply.
    """

    id: str
    kind: str
    does: str
    before: str
    after: str
    fix: str = ""
    reported: str = ""


KERAS3_RULES: Tuple[Rule, ...] = (
    Rule(
        "k3-import",
        "rewrite",
        "imports and attribute chains of tf.keras, tf_keras and Keras 2's internal modules, moved to the Keras 3 "
        "public name (`keras.engine.topology.Layer`, `keras.layers.merge.concatenate`, `keras.utils.np_utils`, ...); "
        "`import keras` added where a `tf.keras.X` chain needs it, `import tensorflow as tf` kept while still used",
        "from tensorflow.keras.layers import Dense; tf.keras.layers.Flatten()",
        "from keras.layers import Dense; keras.layers.Flatten()",
    ),
    Rule(
        "k3-removed-api",
        "report",
        "a Keras name that Keras 3 does not have (`ImageDataGenerator`, `keras.preprocessing.text`, "
        "`LocallyConnected2D`, an internal module with no public home)",
        "from keras.preprocessing.image import ImageDataGenerator",
        "(reported)",
        "the fix the report names; for data pipelines, `keras.utils.image_dataset_from_directory` and preprocessing layers",
    ),
    Rule(
        "k3-optimizer-lr",
        "rewrite",
        "`lr=` of a Keras optimizer constructor reached through an import",
        "keras.optimizers.Adam(lr=0.01)",
        "keras.optimizers.Adam(learning_rate=0.01)",
    ),
    Rule(
        "k3-optimizer-decay",
        "report",
        "`decay=` of a Keras optimizer constructor (Keras 3 optimizers do not take it)",
        "keras.optimizers.SGD(learning_rate=0.1, decay=1e-4)",
        "(reported)",
        "pass `learning_rate=keras.optimizers.schedules.InverseTimeDecay(LR, decay_steps=1, decay_rate=DECAY)`, "
        "Keras 2's `lr / (1 + decay * iterations)`",
    ),
    Rule(
        "k3-generator-method",
        "rewrite",
        "`fit_generator` / `evaluate_generator` / `predict_generator` in a file that imports Keras: `fit` / "
        "`evaluate` / `predict`, `generator=` becoming `x=`, positional arguments after the generator passed by "
        "name, and `verbose=0` (the old default of the last two) written out",
        "model.fit_generator(gen, 10, epochs=2)",
        "model.fit(gen, steps_per_epoch=10, epochs=2)",
        "call `fit` / `evaluate` / `predict` with the same arguments by name",
        "a `*_generator` call whose arguments do not map (`*args`, `**kwargs`, an unknown keyword)",
    ),
    Rule(
        "k3-generator-workers",
        "report",
        "a `*_generator` call passing `workers`, `use_multiprocessing` or `max_queue_size`, which Keras 3's `fit` does not take",
        "model.fit_generator(gen, workers=4, use_multiprocessing=True)",
        "(reported)",
        "make the data a `keras.utils.PyDataset` subclass whose `__init__` passes `workers=`, "
        "`use_multiprocessing=` and `max_queue_size=` to `super().__init__(**kwargs)`, then call `fit(dataset)`",
    ),
    Rule(
        "k3-save-format",
        "rewrite",
        "`save(PATH, save_format=F)` with a literal path whose suffix already says F (`.h5`/`.hdf5` for "
        '`"h5"`, `.keras` for `"keras"`): the argument dropped',
        'model.save("m.h5", save_format="h5")',
        'model.save("m.h5")',
    ),
    Rule(
        "k3-save-path",
        "report",
        "`save(...)` with `save_format=` the path does not settle, or a literal path with no suffix (a "
        "SavedModel folder in Keras 2)",
        'model.save("export_dir")',
        "(reported)",
        '`model.save("model.keras")` to save the model, or `model.export("export_dir")` for a SavedModel to serve',
    ),
    Rule(
        "k3-backend-op",
        "rewrite",
        "a `keras.backend` function with an exact `keras.ops` equivalent (the table below), where every "
        "argument maps; a default that differs is written out",
        "K.concatenate([a, b]); K.sum(x, axis=1)",
        "keras.ops.concatenate([a, b], axis=-1); keras.ops.sum(x, axis=1)",
        "where an argument does not map (or the op differs, as `K.sqrt`, which clips negatives), the report "
        "names the `keras.ops` call to write",
        "a `keras.backend` function whose `keras.ops` counterpart is not the same operation, or a call whose "
        "arguments do not map to it",
    ),
    Rule(
        "k3-backend-session",
        "report",
        "graph-mode backend functions Keras 3 removed: `K.function`, `K.placeholder`, `K.get_session`, "
        "`K.set_session`, `K.learning_phase`, `K.set_learning_phase`, `K.eval`, `K.get_value`, `K.set_value`, ...",
        "K.set_value(model.optimizer.lr, 0.01)",
        "(reported)",
        "the fix each report names: call the model (`model(x, training=False)`), `v.assign(x)`, "
        "`keras.ops.convert_to_numpy(v)`, ...",
    ),
    Rule(
        "k3-backend-removed",
        "report",
        "another `keras.backend` function Keras 3's `keras.backend` does not have",
        "K.int_shape(x)",
        "(reported)",
        "its `keras.ops` counterpart (https://keras.io/api/ops/), checked by hand",
    ),
    Rule(
        "k3-layer-weights",
        "report",
        "`weights=` given to a Keras layer's constructor, which Keras 3 layers do not take",
        "keras.layers.Embedding(100, 8, weights=[matrix])",
        "(reported)",
        "build the layer, then `layer.set_weights([matrix])` (for `Embedding`, "
        "`embeddings_initializer=keras.initializers.Constant(matrix)`)",
    ),
    Rule(
        "k3-add-loss",
        "report",
        "`add_loss(...)` outside a layer's `call` (a symbolic loss on a functional model)",
        "model.add_loss(keras.ops.mean(h))",
        "(reported)",
        "compute the loss inside a layer's `call` (`self.add_loss(...)`), or in a custom `compute_loss`",
    ),
    Rule(
        "k3-add-metric",
        "report",
        "`add_metric(...)`: Keras 3 raises `NotImplementedError` for it",
        'model.add_metric(h, name="h")',
        "(reported)",
        "pass the metric to `compile(metrics=[...])`, or keep a `keras.metrics.Mean` tracker and call its "
        "`update_state` in `call` / `train_step`",
    ),
    Rule(
        "k3-reset-states",
        "report",
        "`.reset_states()`: gone from `Model` and `Metric` in Keras 3 (stateful RNN layers keep it)",
        "model.reset_states()",
        "(reported)",
        "for a model, call `layer.reset_states()` on each stateful RNN layer; for a metric, `reset_state()`",
    ),
    Rule(
        "k3-tf-on-keras-tensor",
        "report",
        "a TensorFlow op (`tf.*`) applied to a KerasTensor (a name bound to `Input(...)` or to a layer's call)",
        "x = keras.Input((3,)); y = tf.reduce_sum(x, axis=1)",
        "(reported)",
        "use the `keras.ops` equivalent (`keras.ops.sum(x, axis=1)`), or wrap the TF code in a layer's `call`",
    ),
    Rule(
        "k3-lambda-tf",
        "report",
        "a `Lambda` layer whose body calls `tf.*`: tied to the TensorFlow backend, and its saved file needs `safe_mode=False`",
        "keras.layers.Lambda(lambda t: tf.reduce_mean(t, axis=1))",
        "(reported)",
        "use `keras.ops` in the body (`keras.ops.mean(t, axis=1)`), or write a small `Layer` subclass",
    ),
)

_RULE_IDS = {rule.id for rule in KERAS3_RULES}


def keras3_rule(rule_id: str) -> Rule:
    """The rule named `rule_id`.

    Raises:
        KeyError: no such rule.

    Example:

    >>> keras3_rule("k3-optimizer-lr").kind
    'rewrite'
    """
    for rule in KERAS3_RULES:
        if rule.id == rule_id:
            return rule
    raise KeyError(rule_id)


# A file is worth the scope analysis when it holds one of these.
KERAS3_TRIGGERS = (b"keras", b"_generator", b"save_format", b"add_loss", b"add_metric", b"reset_states")

# Where a Keras package starts, the longest first: `tensorflow.keras.layers.Dense` is `layers.Dense` of it.
_ROOTS = (
    "tensorflow.compat.v2.keras",
    "tensorflow.compat.v1.keras",
    "tensorflow.python.keras",
    "tensorflow.keras",
    "tf_keras",
    "keras",
)


def keras_rest(qualified: str) -> Optional[str]:
    """`qualified` less its Keras package (`""` for the package itself); None if no Keras package holds it.

    Keras 3's own implementation modules (`keras.src`) are not a Keras package here: nothing moves them.

    Example:

    >>> keras_rest("tensorflow.keras.layers.Dense"), keras_rest("tf_keras"), keras_rest("numpy.sum")
    ('layers.Dense', '', None)
    """
    for root in _ROOTS:
        if qualified == root:
            return ""
        if qualified.startswith(root + "."):
            rest = qualified[len(root) + 1 :]
            return None if rest == "src" or rest.startswith(("src.", "api.")) else rest
    return None


# Old internal modules whose names Keras 3 keeps in a public module: the old module (less its package) ->
# the public modules to look the name up in, in order. A name not found there is reported (k3-removed-api).
_LAYER_MODULES = [
    "merge",
    "core",
    "convolutional",
    "recurrent",
    "normalization",
    "pooling",
    "advanced_activations",
    "noise",
    "wrappers",
    "embeddings",
    "local",
    "convolutional_recurrent",
    "cudnn_recurrent",
    "dense_attention",
    "recurrent_v2",
    "normalization_v2",
    "experimental.preprocessing",
    "experimental",
    "preprocessing",
]
_MOVED_MODULES: Dict[str, Tuple[str, ...]] = {
    **{f"layers.{name}": ("layers",) for name in _LAYER_MODULES},
    **{
        f"engine.{name}": ("layers", "models")
        for name in ["topology", "base_layer", "input_layer", "input_spec", "training", "sequential", "functional", "network"]
    },
    "engine": ("layers", "models"),
    **{
        f"utils.{name}": ("utils",)
        for name in ["np_utils", "generic_utils", "data_utils", "io_utils", "vis_utils", "layer_utils", "conv_utils"]
    },
    "preprocessing.sequence": ("utils",),
    "preprocessing.image": ("utils",),
    "preprocessing.text": (),
}


def is_keras3_module(name: str) -> bool:
    """Whether `name` (`"keras.layers"`) is a public module of Keras 3.

    Example:

    >>> is_keras3_module("keras.layers"), is_keras3_module("keras.engine")
    (True, False)
    """
    return name in KERAS3_NAMES


def _exists(name: str) -> bool:
    module, _, attr = name.rpartition(".")
    return is_keras3_module(name) or attr in KERAS3_NAMES.get(module, ())


def keras3_target(qualified: str) -> Optional[str]:
    """Where an old Keras name lives in Keras 3 (a name that exists there), or None if it has no home there.

    The longest part of the name that is a Keras 3 module or name is moved; what follows it
    (`Layer.__init__`) is kept. A name that is not Keras's gives None too (`keras_rest`).

    Args:
        qualified: a fully qualified name, such as `"tensorflow.keras.layers.Dense"`.

    Returns:
        The Keras 3 name (`"keras.layers.Dense"`), or None.

    Example:

    >>> keras3_target("tensorflow.keras.layers.Dense"), keras3_target("keras.engine.topology.Layer")
    ('keras.layers.Dense', 'keras.layers.Layer')
    >>> keras3_target("keras.layers.merge.concatenate"), keras3_target("keras.utils.np_utils.to_categorical")
    ('keras.layers.concatenate', 'keras.utils.to_categorical')
    >>> keras3_target("tensorflow.keras.preprocessing.image.ImageDataGenerator") is None
    True
    """
    rest = keras_rest(qualified)
    if rest is None:
        return None
    parts = rest.split(".") if rest else []
    for k in range(len(parts), -1, -1):
        head, tail = parts[:k], parts[k:]
        found = _move(head)
        if found is None:
            continue
        if tail and is_keras3_module(found):
            return None  # a module of Keras 3 without that name
        return ".".join([found, *tail])
    return None


def _move(parts: Sequence[str]) -> Optional[str]:
    """The Keras 3 name of `keras.<parts>` (the old name less its package), None if it has none."""
    name = ".".join(["keras", *parts])
    if _exists(name):
        return name
    if len(parts) >= 2:
        module, attr = ".".join(parts[:-1]), parts[-1]
        if module in _MOVED_MODULES:
            for home in _MOVED_MODULES[module]:
                if attr in KERAS3_NAMES[f"keras.{home}"]:
                    return f"keras.{home}.{attr}"
            return None
    if ".".join(parts) in _MOVED_MODULES:
        return None  # the old module itself has no one home in Keras 3
    return None


def is_optimizer_class(target: str) -> bool:
    """Whether `target` (a Keras 3 name) is an optimizer class, whose constructor takes `learning_rate`.

    Example:

    >>> is_optimizer_class("keras.optimizers.Adam"), is_optimizer_class("keras.optimizers.schedules")
    (True, False)
    """
    module, _, name = target.rpartition(".")
    return module == "keras.optimizers" and name[:1].isupper() and name != "LossScaleOptimizer" and _exists(target)


# -- keras.backend -> keras.ops


@dataclasses.dataclass(frozen=True)
class OpRewrite:
    """A `keras.backend` function and the `keras.ops` function that computes the same.

    Attributes:
        op: the `keras.ops` name.
        params: the backend function's parameters, in order (tf.keras 2.15 / tf_keras).
        renames: backend parameter -> the op's name for it (the same position).
        explicit: backend parameter -> its backend default, written out when the call omits it
            because the op's default differs.
        only: the backend parameters a call may pass (default: all of `params`); with another, the call
            is reported.
    """

    op: str
    params: Tuple[str, ...]
    renames: Mapping[str, str] = dataclasses.field(default_factory=dict)
    explicit: Mapping[str, str] = dataclasses.field(default_factory=dict)
    only: Optional[Tuple[str, ...]] = None


def _op(
    op: str, params: str, renames: Optional[Dict[str, str]] = None, explicit: Optional[Dict[str, str]] = None, only: str = ""
) -> OpRewrite:
    return OpRewrite(op, tuple(params.split()), renames or {}, explicit or {}, tuple(only.split()) or None)


_REDUCE = "x axis keepdims"
# Each checked against tf_keras.backend's and keras.ops' signatures by tests/migrate/test_migrate_keras3.py.
OPS: Dict[str, OpRewrite] = {
    **{name: _op(name, _REDUCE) for name in ["sum", "mean", "max", "min", "prod", "std", "var", "all", "any"]},
    **{
        name: _op(name, "x")
        for name in ["square", "exp", "log", "abs", "sign", "sin", "cos", "sigmoid", "tanh", "softplus", "softsign"]
    },
    **{name: _op(name, "x y", {"x": "x1", "y": "x2"}) for name in ["maximum", "minimum", "equal", "greater", "less"]},
    "pow": _op("power", "x a", {"x": "x1", "a": "x2"}),
    "concatenate": _op("concatenate", "tensors axis", {"tensors": "xs"}, {"axis": "-1"}),
    "reshape": _op("reshape", "x shape", {"shape": "newshape"}),
    "cast": _op("cast", "x dtype"),
    "softmax": _op("softmax", "x axis"),
    "expand_dims": _op("expand_dims", "x axis", explicit={"axis": "-1"}),
    "squeeze": _op("squeeze", "x axis"),
    "stack": _op("stack", "x axis"),
    "transpose": _op("transpose", "x"),
    "argmax": _op("argmax", "x axis", explicit={"axis": "-1"}),
    "argmin": _op("argmin", "x axis", explicit={"axis": "-1"}),
    "cumsum": _op("cumsum", "x axis", explicit={"axis": "0"}),
    "zeros_like": _op("zeros_like", "x dtype name", only="x dtype"),
    "ones_like": _op("ones_like", "x dtype name", only="x dtype"),
    "elu": _op("elu", "x alpha"),
    "not_equal": _op("not_equal", "x y", {"x": "x1", "y": "x2"}),
    "dtype": _op("dtype", "x"),
    # K.tile turns an int into [n] and tf.tile takes one repeat per axis: NumPy's tile does the same on
    # every input K.tile accepts
    "tile": _op("tile", "x n", {"n": "repeats"}),
    "permute_dimensions": _op("transpose", "x pattern", {"pattern": "axes"}),
    # K.dot of N-D tensors contracts x's last axis with y's second-to-last, as NumPy's dot does
    "dot": _op("dot", "x y", {"x": "x1", "y": "x2"}),
    "relu": _op("relu", "x alpha max_value threshold", only="x"),
    # K.clip turns None bounds into -inf / inf and a max below the min into the min: equal only for
    # number literals with min <= max (`keras3.Keras3Analyzer` checks)
    "clip": _op("clip", "x min_value max_value", {"min_value": "x_min", "max_value": "x_max"}),
}

# Backend functions Keras 3 does not have, with the fix by hand: rule k3-backend-session for the graph-mode ones.
_SESSION = [
    "function",
    "placeholder",
    "get_session",
    "set_session",
    "learning_phase",
    "set_learning_phase",
    "eval",
    "get_value",
    "set_value",
    "batch_get_value",
    "batch_set_value",
    "symbolic",
]
BACKEND_FIXES: Dict[str, str] = {
    "function": "call the model or a `keras.Model(inputs, outputs)` built on the tensors you need (`m(x, training=False)`)",
    "placeholder": "use `keras.Input(shape=...)`",
    "get_session": "remove it: Keras 3 runs eagerly and has no session",
    "set_session": "remove it: Keras 3 runs eagerly and has no session",
    "learning_phase": "pass `training=` to the model's or layer's call instead",
    "set_learning_phase": "pass `training=` to the model's or layer's call instead",
    "eval": "use `keras.ops.convert_to_numpy(x)`",
    "get_value": "use `keras.ops.convert_to_numpy(v)` (for an optimizer's rate, `float(opt.learning_rate)`)",
    "set_value": "use `v.assign(x)` (for an optimizer's rate, `opt.learning_rate = x`)",
    "batch_get_value": "use `[keras.ops.convert_to_numpy(v) for v in vs]`",
    "batch_set_value": "use `v.assign(x)` for each pair",
    "symbolic": "remove it: Keras 3 has no graph scope",
    "sqrt": "`K.sqrt` clips negatives to 0 first: `keras.ops.sqrt(keras.ops.maximum(x, 0.0))`",
    "int_shape": "use `tuple(x.shape)`",
    "shape": "use `keras.ops.shape(x)` (a tuple, not a tensor)",
    "variable": "use `keras.Variable(value, dtype=...)`",
    "batch_dot": "use `keras.ops.einsum` or `keras.ops.matmul`",
    "flatten": "use `keras.ops.reshape(x, (-1,))`",
    "one_hot": "use `keras.ops.one_hot(x, num_classes)` (its dtype follows `keras.config.floatx()`)",
    "random_normal": "use `keras.random.normal`",
    "random_uniform": "use `keras.random.uniform`",
    "l2_normalize": "use `keras.utils.normalize` or `x / keras.ops.norm(x, axis=..., keepdims=True)`",
    "stop_gradient": "use `keras.ops.stop_gradient(x)`",
    "gradients": "use `tf.GradientTape` (TensorFlow backend) or your backend's gradient API",
    "update": "use `v.assign(x)`",
    "update_add": "use `v.assign_add(x)`",
    "update_sub": "use `v.assign_sub(x)`",
    "arange": "use `keras.ops.arange(start, stop, step)` (`K.arange` casts to `dtype` only when it is not "
    "`'int32'`, its default)",
    "ones": "use `keras.ops.ones(shape)` (`K.ones` made a variable when the shape was known: `keras.Variable(...)`)",
    "zeros": "use `keras.ops.zeros(shape)` (`K.zeros` made a variable when the shape was known: `keras.Variable(...)`)",
    "constant": "use `keras.ops.convert_to_tensor(value, dtype=keras.config.floatx())` (`K.constant`'s dtype defaults to floatx)",
    "gather": "use `keras.ops.take(reference, indices, axis=0)`",
    "switch": "use `keras.ops.where(condition, then, else)` (or `keras.ops.cond` for a scalar condition)",
    "in_train_phase": "take `training=None` in `call` and branch on it (`if training: ...`)",
    "random_binomial": "use `keras.random.binomial` or `keras.ops.cast(keras.random.uniform(shape) < p, dtype)` "
    "with a `keras.random.SeedGenerator`",
    "bias_add": "use `x + bias` (channels last)",
    "round": "use `keras.ops.round(x)` (check the rounding of halves)",
    "repeat": "use `keras.ops.repeat(keras.ops.expand_dims(x, 1), n, axis=1)`",
    "binary_crossentropy": "use `keras.losses.binary_crossentropy` or `keras.ops.binary_crossentropy` (check `from_logits`)",
    "categorical_crossentropy": "use `keras.ops.categorical_crossentropy` (check `from_logits`)",
    "sparse_categorical_crossentropy": "use `keras.ops.sparse_categorical_crossentropy`",
}


# Backend functions with a `keras.ops` counterpart that is not the same operation (or not by the same arguments).
_OP_COUNTERPARTS = frozenset(
    [
        "sqrt",
        "batch_dot",
        "flatten",
        "one_hot",
        "stop_gradient",
        "round",
        "repeat",
        "shape",
        "binary_crossentropy",
        "categorical_crossentropy",
        "sparse_categorical_crossentropy",
    ]
)


def backend_rule(name: str) -> str:
    """The rule a `keras.backend.<name>` Keras 3 lacks is reported by.

    Example:

    >>> backend_rule("function"), backend_rule("sqrt"), backend_rule("int_shape")
    ('k3-backend-session', 'k3-backend-op', 'k3-backend-removed')
    """
    if name in _SESSION:
        return "k3-backend-session"
    return "k3-backend-op" if name in _OP_COUNTERPARTS or name in OPS else "k3-backend-removed"


# Old data-pipeline names with a fix of their own (reported by k3-removed-api).
REMOVED_FIXES: Dict[str, str] = {
    "preprocessing.image.ImageDataGenerator": "load images with `keras.utils.image_dataset_from_directory` and "
    "augment with preprocessing layers (`keras.layers.RandomFlip`, `RandomRotation`, ...)",
    "preprocessing.text": "use `keras.layers.TextVectorization`",
    "preprocessing.sequence.TimeseriesGenerator": "use `keras.utils.timeseries_dataset_from_array`",
    "layers.CuDNNLSTM": "use `keras.layers.LSTM` (it runs the cuDNN kernel where it can)",
    "layers.CuDNNGRU": "use `keras.layers.GRU(reset_after=True)` (it runs the cuDNN kernel where it can)",
    "utils.Sequence": "subclass `keras.utils.PyDataset`",
    "wrappers.scikit_learn": "use `keras.wrappers.SKLearnClassifier` / `SKLearnRegressor`",
}


def removed_fix(qualified: str) -> str:
    """The fix for an old Keras name that has no home in Keras 3.

    Example:

    >>> removed_fix("tensorflow.keras.preprocessing.text.Tokenizer")
    'use `keras.layers.TextVectorization`'
    """
    rest = keras_rest(qualified) or ""
    for key, fix in REMOVED_FIXES.items():
        if rest == key or rest.startswith(key + "."):
            return fix
    return f"find its Keras {KERAS3_VERSION.rpartition('.')[0]} replacement (https://keras.io/api/) and change it by hand"


# -- fit_generator & co

# Keras 2's parameters in order (tf.keras 2.15, tf_keras), the Keras 3 method, and what its default differs in.
GENERATOR_METHODS: Dict[str, Tuple[str, Tuple[str, ...], Dict[str, str]]] = {
    "fit_generator": (
        "fit",
        tuple(
            [
                "generator",
                "steps_per_epoch",
                "epochs",
                "verbose",
                "callbacks",
                "validation_data",
                "validation_steps",
                "validation_freq",
                "class_weight",
                "max_queue_size",
                "workers",
                "use_multiprocessing",
                "shuffle",
                "initial_epoch",
            ]
        ),
        {},
    ),
    "evaluate_generator": (
        "evaluate",
        tuple(["generator", "steps", "callbacks", "max_queue_size", "workers", "use_multiprocessing", "verbose"]),
        {"verbose": "0"},
    ),
    "predict_generator": (
        "predict",
        tuple(["generator", "steps", "callbacks", "max_queue_size", "workers", "use_multiprocessing", "verbose"]),
        {"verbose": "0"},
    ),
}
GENERATOR_WORKER_ARGS = ("workers", "use_multiprocessing", "max_queue_size")

# What a `save(path, save_format=F)` path must end with for the argument to change nothing.
SAVE_SUFFIXES = {"h5": (".h5", ".hdf5"), "keras": (".keras",)}


def message(rule_id: str, what: str, fix: str = "") -> str:
    """A report's text: what was found, that it was not rewritten, and the fix by hand.

    Example:

    >>> message("k3-add-metric", "`m.add_metric(h)`").startswith("`m.add_metric(h)`: `add_metric(...)`: Keras 3 raises")
    True
    """
    rule = keras3_rule(rule_id)
    return f"{what}: {rule.reported or rule.does}; not rewritten. Fix: {fix or rule.fix}."


# -- the rule list in docs/migrate.md

_DOC_START = "<!-- migrate-rules:keras3:start -->\n"
_DOC_END = "<!-- migrate-rules:keras3:end -->"
_DOC_RE = re.compile(re.escape(_DOC_START) + ".*?" + re.escape(_DOC_END), re.S)


def render_rules_doc() -> str:
    """docs/migrate.md's list of the `--to keras3` rules and backend ops, from `KERAS3_RULES` and `OPS`.

    Example:

    >>> render_rules_doc().splitlines()[0]
    '| rule | kind | what | before | after / fix |'
    """
    lines = ["| rule | kind | what | before | after / fix |", "|---|---|---|---|---|"]
    for rule in KERAS3_RULES:
        after = f"`{rule.after}`" if rule.kind == "rewrite" else rule.fix
        lines.append(f"| `{rule.id}` | {rule.kind} | {rule.does} | `{rule.before}` | {after} |")
    lines += ["", "`k3-backend-op` rewrites these, `K.name(...)` to `keras.ops.op(...)`:", ""]
    lines += ["| `keras.backend` | `keras.ops` | arguments renamed | written out when omitted |", "|---|---|---|---|"]
    for name, op in sorted(OPS.items()):
        renames = ", ".join(f"`{a}` -> `{b}`" for a, b in op.renames.items()) or "-"
        explicit = ", ".join(f"`{a}={b}`" for a, b in op.explicit.items()) or "-"
        only = f" (only `{'`, `'.join(op.only)}`)" if op.only else ""
        lines.append(f"| `K.{name}` | `keras.ops.{op.op}`{only} | {renames} | {explicit} |")
    return "\n".join(lines) + "\n"


def update_rules_doc(text: str) -> str:
    """`text` (docs/migrate.md) with its generated rule list replaced by `render_rules_doc()`.

    Raises:
        ValueError: `text` has no `<!-- migrate-rules:keras3:start/end -->` markers.
    """
    if not _DOC_RE.search(text):
        raise ValueError(
            f"Expected the markers {_DOC_START.strip()} and {_DOC_END} in the text. Received a text without them: "
            "add them where the rule list belongs."
        )
    return _DOC_RE.sub(lambda _: _DOC_START + render_rules_doc() + _DOC_END, text)


def main(argv: Optional[List[str]] = None) -> int:
    """``python -m compat_clone.tools.migrate.keras3_rules --write docs/migrate.md``: rewrites the rule list."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 2 or args[0] != "--write":
        print("usage: python -m compat_clone.tools.migrate.keras3_rules --write FILE.md", file=sys.stderr)
        return 2
    path = Path(args[1])
    text = path.read_text(encoding="utf-8")
    new = update_rules_doc(text)
    if new != text:
        path.write_text(new, encoding="utf-8")
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
