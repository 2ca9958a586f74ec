"""What the codemod rewrites and reports, as data: no libcst here.

The homes of `clone_model`, the packages whose star imports may bring it in,
the words that make a file worth analysing, and the messages for the uses
that have nothing to be rewritten to.
"""

from __future__ import annotations

from typing import Optional, Tuple

from compat_clone.families.registry import MODEL_CLASS_NAMES

__all__ = [
    "ASSIGN_UPDATE_WHY",
    "RULES",
    "TAU_RANGE_WHY",
    "partial_lists_why",
    "temporaries_why",
    "CLONE_AND_BUILD_PARAMS",
    "CLONE_AND_BUILD_TARGETS",
    "CLONE_MODEL_HOMES",
    "CLONE_MODEL_TARGETS",
    "CUSTOM_OBJECTS_WHY",
    "DEEPCOPY_VERSIONS_FAILING",
    "DEEPCOPY_WHY",
    "GRAPH_UPDATE_WHY",
    "HARD_UPDATE_NOTE",
    "MODEL_CLASSES",
    "MULTI_GPU_WHY",
    "REMOVED_WHY",
    "REVIEW_RULES",
    "SOFT_UPDATE_NOTE",
    "TRIGGERS",
    "clone_and_build_why",
    "is_keras_module",
    "keras_root",
    "rule_of",
]

# Modules whose `clone_model` this tool rewrites, as the fully qualified
# import path a name resolves to (`import tensorflow as tf` makes
# `tf.keras.models` resolve to `tensorflow.keras.models`).
CLONE_MODEL_HOMES = frozenset(
    {
        # standalone Keras 2.0-2.3 (keras/models.py), Keras 2.4-2.15 and Keras 3
        "keras.models",
        "keras.api.models",
        "keras.api._v2.keras.models",
        "keras.src.models",
        "keras.src.models.cloning",
        "keras.models.cloning",
        # tf.keras (TF 1.x / 2.x), including the compat namespaces
        "tensorflow.keras.models",
        "tensorflow.python.keras.models",
        "tensorflow.compat.v1.keras.models",
        "tensorflow.compat.v2.keras.models",
        "tensorflow.contrib.keras.models",
        "tensorflow.contrib.keras.api.keras.models",
        # tf_keras (Keras 2 kept alive for TF >= 2.16)
        "tf_keras.models",
        "tf_keras.src.models",
        "tf_keras.src.models.cloning",
    }
)
CLONE_MODEL_TARGETS = frozenset(f"{home}.clone_model" for home in CLONE_MODEL_HOMES)

# Every use this tool rewrites or reports contains one of these words; a file
# without them is left alone without the scope analysis.
TRIGGERS = (
    b"clone_model",
    b"clone_and_build_model",
    b"multi_gpu_model",
    # the idioms (`idioms.py`): target updates, hand-rolled clones, deep copies
    b"set_weights",
    b"model_from_",
    b"from_config",
    b"deepcopy",
    b"update",
    b"assign",
    b"set_value",
)

# Top-level packages whose star imports may bring a `clone_model` in.
KERAS_ROOTS = ("keras", "tensorflow", "tf_keras")

MULTI_GPU_WHY = (
    "`multi_gpu_model` was removed (deprecated in Keras 2.3.1 / TF 2.2, gone in TF 2.4 and "
    "Keras 3); not rewritten. For data parallelism use `tf.distribute.MirroredStrategy`; to "
    "clone the model under /cpu:0 as its `cpu_relocation=True` did, use "
    '`compat_clone.clone_model(model, device="/cpu:0")`.'
)
CLONE_AND_BUILD_TARGETS = frozenset(f"{home}.clone_and_build_model" for home in CLONE_MODEL_HOMES)
# `clone_and_build_model`'s parameters in order (tf.keras 2.12-2.15, tf_keras 2.16-2.21).
CLONE_AND_BUILD_PARAMS = (
    "model",
    "input_tensors",
    "target_tensors",
    "custom_objects",
    "compile_clone",
    "in_place_reset",
    "optimizer_iterations",
    "optimizer_config",
)
# Its arguments with no `compat_clone.clone_model` equivalent (when not None / False), and the fix.
CLONE_AND_BUILD_NO_EQUIVALENT = {
    "target_tensors": "compile the clone yourself: `clone.compile(..., target_tensors=...)` (TF 1.x graph mode only)",
    "custom_objects": "wrap the call in `with keras.utils.custom_object_scope(custom_objects):`",
    "in_place_reset": "give the subclassed model a `get_config` (compat_clone rebuilds it "
    "from its config; it never resets a model in place)",
    "optimizer_iterations": "set `clone.optimizer.iterations` after the clone is compiled",
    "optimizer_config": "compile the clone yourself with "
    "`clone.compile(optimizer=type(model.optimizer).from_config(optimizer_config), ...)`",
}
CLONE_AND_BUILD_WHY = (
    "`clone_and_build_model` (tf.keras 2.x; gone in Keras 3) clones and compiles; not "
    "rewritten. Use `compat_clone.clone_model(model, compile=True)` (a new optimizer of "
    "the same config, the same losses and metrics)."
)


def clone_and_build_why(argument: str) -> str:
    """The report for a `clone_and_build_model` call left alone because of `argument`.

    Args:
        argument: the parameter that has no `compat_clone.clone_model` equivalent.

    Returns:
        The message: what is not rewritten, why, and the fix by hand.

    Example:

    >>> clone_and_build_why("custom_objects").startswith("`clone_and_build_model(..., custom_objects=...)`")
    True
    """
    return (
        f"`clone_and_build_model(..., {argument}=...)`: `compat_clone.clone_model` has no "
        f"`{argument}`; not rewritten. Call `compat_clone.clone_model(model, compile=True)` "
        f"and {CLONE_AND_BUILD_NO_EQUIVALENT[argument]}."
    )


# Keras functions reported wherever they are imported or called: nothing to rewrite them to.
REMOVED_WHY = {
    "multi_gpu_model": MULTI_GPU_WHY,
    "clone_and_build_model": CLONE_AND_BUILD_WHY,
}


def is_keras_module(module: str) -> bool:
    """Whether `module` (a dotted name) belongs to one of the Keras packages.

    Args:
        module: an absolute module name, such as `"tensorflow.keras.utils"`.

    Returns:
        True when its top-level package is `keras`, `tensorflow` or `tf_keras`.

    Example:

    >>> is_keras_module("tf_keras.models"), is_keras_module("mylib.models")
    (True, False)
    """
    return module.partition(".")[0] in KERAS_ROOTS


# -- the idioms old codebases use instead of `clone_model` (idioms.py, docs/migrate.md)

# Where a Keras package's modules start: the `custom_object_scope` a rewritten
# hand-rolled clone enters is `<root>.utils.custom_object_scope`.
KERAS_PACKAGE_ROOTS = (
    "tensorflow.compat.v1.keras",
    "tensorflow.compat.v2.keras",
    "tensorflow.keras",
    "tf_keras",
    "keras",
)
# Hand-rolled clone functions, by the last part of their qualified name.
MODEL_FROM = frozenset({"model_from_config", "model_from_json", "model_from_yaml"})
# Keras classes whose `from_config(m.get_config())` rebuilds a model: the one
# set of model class names.
MODEL_CLASSES = MODEL_CLASS_NAMES


def keras_root(qualified: str) -> Optional[str]:
    """The Keras package a qualified name lives in (`"tensorflow.keras"`), None if none.

    Example:

    >>> keras_root("tensorflow.keras.models.model_from_json"), keras_root("mylib.models")
    ('tensorflow.keras', None)
    """
    for root in KERAS_PACKAGE_ROOTS:
        if qualified == root or qualified.startswith(root + "."):
            return root
    return None


HARD_UPDATE_NOTE = (
    "rewritten to `compat_clone.copy_weights({source}, {target})`. Nothing in this file shows "
    "that `{target}` is built like `{source}` (a clone of it, or the same builder call): "
    "`copy_weights` pairs variables layer by layer and checks every shape and dtype first, so "
    "two models whose layers differ but whose weight lists line up by order, which "
    "the old code filled by order (`set_weights` or a loop over the lists, casting dtypes), make it raise `WeightsMismatchError` with "
    "the target unchanged; and it takes models only (keep `set_weights` for two layers)."
)
SOFT_UPDATE_NOTE = (
    "rewritten to `compat_clone.copy_weights({source}, {target}, tau={tau})`. The host-list "
    "form (and a loop over the variables) blended every weight, non-float ones too (then cast back); `copy_weights` blends "
    "floating-point variables and copies the others exactly, and refuses a `tau` outside "
    "(0, 1]. " + HARD_UPDATE_NOTE.split(". ", 1)[1]
)
GRAPH_UPDATE_WHY = (
    "soft target update built as graph ops (`(target_weight, tau * source_weight + (1 - tau) "
    "* target_weight)` for `K.function(..., updates=...)`, `K.update`, `tf.assign`); not "
    "rewritten: the ops run later, wherever their function or session runs, which this tool "
    "cannot follow. Where they run, call `compat_clone.copy_weights(source, target, tau=tau)` "
    "(one cached graph op in standalone Keras 2) and drop the ops."
)
ASSIGN_UPDATE_WHY = (
    "soft target update by variable assignment (`t.assign(tau * s + (1 - tau) * t)`) over "
    "variables this tool cannot follow to two models' lists (a loop over `zip(T.weights, S.weights)` alone is "
    "rewritten); not rewritten: the lists chosen decide what is "
    "blended, and which pairs by order. Use `compat_clone.copy_weights(source, target, tau=tau)`: every floating-point "
    "variable, trainable or not, blended; the others copied exactly."
)
# Checked by tests/migrate/test_migrate_idioms.py::test_deepcopy_of_a_model_as_the_report_says.
DEEPCOPY_VERSIONS_FAILING = ">=3.0,<3.3"
DEEPCOPY_WHY = (
    "`copy.deepcopy({arg})`: if `{arg}` is a Keras model, whether a deep copy works depends on "
    "the release (Keras 3.0 to 3.2 fail on a built model: `ValueError: You cannot add new elements of "
    "state` in 3.0 and 3.2, a `TypeError` from `DTypePolicy` in 3.1, and standalone Keras 2.0-2.1 on TensorFlow 1.x a "
    "`TypeError` (`can't pickle _thread.RLock objects`); others copy through Python's object protocol, not through the model's "
    "config); not rewritten (this tool cannot tell a model from other objects). Use "
    "`compat_clone.clone_model({arg}, copy_weights=True)`."
)
CUSTOM_OBJECTS_WHY = (
    "hand-rolled clone (`{function}`) with `{argument}`, which `compat_clone.clone_model` "
    "does not take; not rewritten. Use `compat_clone.clone_model({model})` (with "
    "`copy_weights=True` to keep the weights) inside "
    "`with keras.utils.custom_object_scope(custom_objects):`."
)


# -- rule names: what a report is about, and how a reviewed site is marked (docs/migrate.md, "CI")

# A use that needs a decision, not a fix: whether the object is a Keras model (this tool cannot tell).
REVIEW_RULES = frozenset({"deepcopy"})
# The rule table: each rule a report can fall under, and what it covers (docs/migrate.md lists them,
# tests/migrate/test_migrate_updates.py checks that it does).
RULES = {
    "clone-model": "a `clone_model` the tool cannot follow or rewrite (a value, a lookup by name, a star import)",
    "multi-gpu-model": "`multi_gpu_model`: removed, nothing to rewrite it to",
    "clone-and-build-model": "`clone_and_build_model` with an argument `clone_model` has no equivalent for",
    "custom-objects": "a hand-rolled clone given `custom_objects` where no `custom_object_scope` can be put",
    "graph-update": "a soft update built as graph ops (`K.function(updates=...)`, `K.update`, `tf.assign`)",
    "list-update": "a soft update on host lists (a comprehension or loop over zipped `get_weights()`) whose "
    "temporaries are used elsewhere",
    "array-update": "an update by NumPy arithmetic (`np.array(S.get_weights())`, then `T.set_weights(...)`) whose "
    "temporaries are used elsewhere",
    "variable-copy": "a per-variable copy (`K.set_value(t, K.get_value(s))`, `t.assign(s)` over zipped variable "
    "lists) over lists other than both models' `weights` (`trainable_weights`, `variables`, ...)",
    "assign-update": "a per-variable blend (`t.assign(tau * s + (1 - tau) * t)`) over lists other than both "
    "models' `weights`, or over lists the tool cannot read",
    "tau-range": "a soft update whose literal `tau` is outside (0, 1], which `copy_weights` refuses",
    "deepcopy": "`copy.deepcopy` of what may be a Keras model (a site to review)",
}
# What each update idiom is called in its reports, by rule.
_UPDATE_FORMS = {
    "list-update": "soft target update on host lists (over zipped `get_weights()`)",
    "array-update": "target update by NumPy arithmetic (`np.array(...get_weights())`, then `set_weights`)",
    "variable-copy": "per-variable copy (`K.set_value(t, K.get_value(s))` / `t.assign(s)` over zipped variable lists)",
    "assign-update": "soft target update by variable assignment",
}


def _copy_call(source: str, target: str, tau: Optional[str]) -> str:
    return f"`compat_clone.copy_weights({source}, {target}" + (f", tau={tau})`" if tau is not None else ")`")


def temporaries_why(rule: str, source: str, target: str, tau: Optional[str], names: str) -> str:
    """The report for an update idiom left alone because what it binds (`names`) is used elsewhere.

    Example:

    >>> temporaries_why("array-update", "m", "t", "0.1", "`mw`").endswith("`compat_clone.copy_weights(m, t, tau=0.1)`.")
    True
    """
    return (
        f"{_UPDATE_FORMS[rule]}: not rewritten, because {names} (which the update binds) is used elsewhere too. "
        f"Replace the update by {_copy_call(source, target, tau)}."
    )


def partial_lists_why(rule: str, source: str, target: str, tau: Optional[str], lists: Tuple[str, str]) -> str:
    """The report for a per-variable loop over lists other than every variable of each model.

    Example:

    >>> "copies every variable" in partial_lists_why("variable-copy", "s", "t", None, ("trainable_weights",) * 2)
    True
    """
    zipped = f"`zip({target}.{lists[0]}, {source}.{lists[1]})`"
    if lists == ("variables", "variables"):
        return (
            f"{_UPDATE_FORMS[rule]} over {zipped}; not rewritten: in Keras 3 `variables` also holds each layer's "
            "random-seed state (Dropout's `seed_generator_state`), which this loop copies and "
            f"{_copy_call(source, target, tau)} does not (in Keras 2 the lists are the same). If the seed state "
            f"does not matter (it only decides which units dropout drops), replace the loop by "
            f"{_copy_call(source, target, tau)}, else keep it."
        )
    return (
        f"{_UPDATE_FORMS[rule]} over {zipped}; not rewritten: {_copy_call(source, target, tau)} "
        "copies every variable of the model (trainable or not), which this loop does not, so the two are not the "
        "same operation. Keep the loop if only those variables are meant; if every variable is, "
        f"replace it by {_copy_call(source, target, tau)}."
    )


TAU_RANGE_WHY = (
    "target update with `tau={tau}`, outside (0, 1]; not rewritten: `compat_clone.copy_weights` raises "
    "`ValueError` for it. `tau=0` leaves the target as it is (delete the update); `tau=1` is a copy "
    "(`compat_clone.copy_weights({source}, {target})`); a `tau` above 1 or below 0 extrapolates, which "
    "`copy_weights` does not do: keep the update as it is."
)


def rule_of(why: str) -> str:
    """The rule a report's message belongs to, a key of `RULES`: the name `# compat-clone: ok RULE` gives.

    Example:

    >>> rule_of(GRAPH_UPDATE_WHY), rule_of(DEEPCOPY_WHY.format(arg="m"))
    ('graph-update', 'deepcopy')
    """
    if why.startswith("`copy.deepcopy("):
        return "deepcopy"
    if why == GRAPH_UPDATE_WHY:
        return "graph-update"
    for rule, form in _UPDATE_FORMS.items():
        if why.startswith(form):
            return rule
    if why.startswith("target update with `tau="):
        return "tau-range"
    if why.startswith("hand-rolled clone ("):
        return "custom-objects"
    if MULTI_GPU_WHY in why:
        return "multi-gpu-model"
    if why.startswith("`clone_and_build_model"):
        return "clone-and-build-model"
    return "clone-model"
