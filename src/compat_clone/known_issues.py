"""What each family's native `clone_model` gets wrong: the one table of it.

Data, not code. One row per upstream problem: an id (cited by the code that
handles it, in a comment), the family, the versions where the native call
misbehaves (a `packaging` specifier over the owning package's version), the
symptom, the place that handles it, and the feature checks that show it
(named checks of the test suite's `tests/clone/feature_checks.py`).

The table is the only place a version claim about a native bug is written:
`compat-clone doctor` prints the rows that apply to the installed versions,
and `tests/clone/test_native_bugs.py` is generated from it: in every matrix
environment each row's checks must fail natively *exactly* where the row's
versions say (and pass elsewhere), and pass through `compat_clone` everywhere,
so the table cannot drift from what the releases do.

What a wrapper of the native call must keep whatever the release (compat_clone's
own past mistakes, not upstream bugs) is the other table, `wrapper_rules`.
"""

from __future__ import annotations

import dataclasses
from typing import List, Tuple

__all__ = ["KnownIssue", "KNOWN_ISSUES", "affects", "issues_for", "issue"]


@dataclasses.dataclass(frozen=True)
class KnownIssue:
    """One upstream problem of a native `clone_model`.

    Attributes:
        id: short stable name, cited by the code that handles it.
        family: ``"keras2"``, ``"tf_keras"`` or ``"keras3"``.
        versions: where the native call misbehaves: a specifier over the
            version of the package that owns the model (``keras``,
            ``tf_keras``), e.g. ``"<2.2.5"``; ``" | "`` joins ranges (a
            problem fixed, then brought back by a later patch).
        symptom: what the user sees.
        handled_by: the module (and function) of compat_clone that fixes it.
        checks: the feature checks (``tests/clone/feature_checks.py``) that show it.
        upstream: the upstream report, where there is one.
    """

    id: str
    family: str
    versions: str
    symptom: str
    handled_by: str
    checks: Tuple[str, ...]
    upstream: str = ""


_K2 = "compat_clone.families.keras2"
_TF = "compat_clone.families.tf_keras"
_K3 = "compat_clone.families.keras3"
_CORE = "compat_clone.families._cloner"

# Keras 3.3.3 (a patch release, the one that gave `clone_model` `call_function`) is where
# eight keras3 rows start or end, not 3.3.0: the table's 3.3 environment pins 3.3.3,
# and 3.3.0-3.3.2 were measured in environments derived by `compat-clone matrix
# --bisect keras3` (test_native_bugs.py there; docs/matrix.md, "Where did it break?").
KNOWN_ISSUES: Tuple[KnownIssue, ...] = (
    KnownIssue(
        "keras2-12202-masks",
        "keras2",
        "<2.2.5",
        "a layer with several outputs and no mask support gets one mask for all of "
        "them; the clone fails with 'Could not compute output'",
        "compat_clone.families._keras2_parts.map_arguments (masks recomputed per output by the core walk)",
        ("multi_output_no_mask", "lambda_pair_into_add"),
        "keras-team/keras #12202, fixed by #12205 in 2.2.5",
    ),
    KnownIssue(
        "keras2-mutates-source",
        "keras2",
        "<2.4",
        "the clone writes `mask=` into the source's own call arguments (a layer that takes a mask, called with a "
        "keyword argument): the source is changed, and a second clone is fed the first clone's mask",
        "compat_clone.families._keras2_parts.map_arguments (a copy of the node's arguments, the source's mask left out)",
        ("clone_twice_call_arguments",),
    ),
    KnownIssue(
        "keras2-rnn-state-twice",
        "keras2",
        ">=2.1,<2.2.5",
        "an RNN called with `initial_state=` is called again with its states both in "
        "its input list and as `initial_state=`: the clone fails an assertion",
        f"{_K2}.Keras2.arguments",
        ("rnn_initial_state",),
    ),
    KnownIssue(
        "keras2-subclass-lost",
        "keras2",
        "<2.4",
        "a functional model of a `Model` subclass with its own `get_config` comes back as a plain Model",
        f"{_CORE}.Cloner._clone_functional (rebuilt from its config: {_K2}.Keras2.rebuild_from_config)",
        ("functional_subclass",),
    ),
    KnownIssue(
        "keras2-no-clone-function",
        "keras2",
        "<2.4",
        "no `clone_function` argument for every layer (2.0-2.2 have none; 2.3 only for functional models)",
        f"{_CORE}.Cloner.clone_layer",
        ("clone_function_every_layer",),
    ),
    KnownIssue(
        "lookup-table-not-cloned",
        "keras3",
        ">=3.0",
        "an adapted `StringLookup` / `IntegerLookup` / `TextVectorization` is rebuilt from its "
        "config, which holds no adapted vocabulary: the clone's table is empty and its first call "
        "raises FailedPreconditionError ('Table not initialized'); `set_weights` cannot fill it "
        "(the table is not a weight), nor the tf-idf weights",
        "compat_clone.families._layer_state.carry_table (from _cloner.Cloner._default_clone, "
        "before the clone is called; _driver._carry_state for layers rebuilt with a whole model)",
        ("lookup_adapted",),
    ),
    KnownIssue(
        "lookup-table-not-cloned",
        "tf_keras",
        ">=2.0",
        "an adapted `StringLookup` / `IntegerLookup` / `TextVectorization` is rebuilt from its "
        "config, which holds no adapted vocabulary: the clone's table is empty and its first call "
        "raises FailedPreconditionError until `set_weights` fills it",
        "compat_clone.families._layer_state.carry_table (from _cloner.Cloner._default_clone, "
        "before the clone is called; _driver._carry_state for layers rebuilt with a whole model)",
        ("lookup_adapted",),
    ),
    KnownIssue(
        "tf-keras-shadowed-cell",
        "tf_keras",
        "==2.12.*",
        "keras 2.12's `keras.layers` also exports GRUCellV1 and LSTMCellV1, whose class names are GRUCell and "
        "LSTMCell: an RNN's config names its cell by class name, so the clone of an RNN over a V1 cell holds the "
        "V2 cell, with no error",
        "compat_clone.families.tf_keras.TfKeras.config_round_trip (the held layers whose name Keras resolves "
        "to another class given by that name)",
        ("rnn_shadowed_cell",),
    ),
    KnownIssue(
        "keras3-discretization-readapt",
        "keras3",
        "<3.9",
        "the clone of an adapted `Discretization` receives the adapted boundaries as constructor "
        "arguments (`bin_boundaries` with `num_bins`), so adapting the clone raises ValueError "
        "('Cannot adapt a Discretization layer that has been initialized with `bin_boundaries`')",
        "compat_clone.families._layer_state.carry_before_call (the clone's boundaries marked adapted, "
        "its quantile summary copied)",
        ("discretization_readapt",),
        "keras-team/keras #20971 (merged 2025-03-04; 3.0 affected and 3.15 fixed are checked here)",
    ),
    KnownIssue(
        "adapted-state-not-cloned",
        "keras3",
        ">=3.0",
        "an adapted `Normalization` is rebuilt with mean 0 and variance 1: its statistics are "
        "variables the clone re-initializes (and `set_weights` writes them without re-running "
        "`finalize_state()`, so the clone still uses 0 and 1)",
        "compat_clone.families._layer_state.carry_state (from _driver._carry_state; with "
        "copy_weights, weights.refresh_derived_state)",
        ("normalization_adapted",),
    ),
    KnownIssue(
        "adapted-state-not-cloned",
        "tf_keras",
        ">=2.0",
        "an adapted `Normalization` (mean, variance) or `Discretization` (its quantile summary) "
        "keeps what it learned in variables the clone re-initializes: the clone normalizes with "
        "0 and 1, and puts every value in bin 0",
        "compat_clone.families._layer_state.carry_state (from _driver._carry_state; with "
        "copy_weights, weights.refresh_derived_state)",
        ("normalization_adapted", "discretization_adapted"),
    ),
    KnownIssue(
        "no-call-function",
        "keras2",
        "<2.4",
        "no `call_function` argument",
        f"{_CORE}.Cloner.call",
        ("call_function",),
    ),
    KnownIssue(
        "no-call-function",
        "tf_keras",
        ">=2.0",
        "no `call_function` argument",
        f"{_CORE}.Cloner.call",
        ("call_function",),
    ),
    KnownIssue(
        "no-call-function",
        "keras3",
        "<3.3.3",
        "no `call_function` argument",
        f"{_CORE}.Cloner.call",
        ("call_function",),
    ),
    KnownIssue(
        "no-recursive",
        "keras2",
        "<2.4",
        "no `recursive` argument: nested models are one unit",
        f"{_CORE}.Cloner.clone_layer",
        ("recursive_nested",),
    ),
    KnownIssue(
        "no-recursive",
        "tf_keras",
        ">=2.0",
        "no `recursive` argument: nested models are one unit",
        f"{_CORE}.Cloner.clone_layer",
        ("recursive_nested",),
    ),
    KnownIssue(
        "no-recursive",
        "keras3",
        "<3.14",
        "no `recursive` argument before 3.3.3, and it stops after the first nesting level before 3.14",
        f"{_CORE}.Cloner.clone_layer",
        ("recursive_nested",),
    ),
    KnownIssue(
        "keras2-sequential-name",
        "keras2",
        "<2.2",
        "a nested Sequential comes back renamed (`sequential_N`): its config is the bare list of its layers, without the name",
        f"{_K2}.Keras2.config_round_trip",
        ("nested_sequential_name",),
    ),
    KnownIssue(
        "keras3-input-layer-name",
        "keras3",
        ">=3.3.3",
        "an Input made without a name comes back named after its tensor (`keras_tensor_N`), "
        "not its layer (`input_layer_N`): the clone's layer names differ from the source's "
        "(3.0-3.2 rebuild a plain clone from its config, which keeps them)",
        f"{_K3}.Keras3.input_specs",
        ("input_layer_name", "nested_sequential_name"),
    ),
    KnownIssue(
        "keras2-app-unregistered",
        "keras2",
        "<2.2",
        "a model holding keras.applications' MobileNet (2.0-2.1: its `relu6` activation and, "
        "before 2.1.5, its DepthwiseConv2D) fails the clone with 'Unknown activation function:relu6': "
        "Keras does not register them",
        f"{_K2}.Keras2.config_round_trip",
        ("app_unregistered_objects",),
    ),
    KnownIssue(
        "trainable-model",
        "keras2",
        "<2.4",
        "`model.trainable = False` is lost by the clone",
        f"{_CORE}.restore_trainable",
        ("trainable_false",),
    ),
    KnownIssue(
        "trainable-model",
        "tf_keras",
        ">=2.0",
        "`model.trainable = False` is lost by the clone",
        f"{_CORE}.restore_trainable",
        ("trainable_false",),
    ),
    KnownIssue(
        "trainable-model",
        "keras3",
        ">=3.3.3",
        "`model.trainable = False` on a functional model is lost by the clone",
        f"{_CORE}.restore_trainable",
        ("trainable_false",),
    ),
    KnownIssue(
        "tf-keras-single-list-call",
        "tf_keras",
        ">=2.0",
        "a layer called on a one-element list (`Concatenate()([x])`) fails to clone",
        f"{_TF}.TfKeras.clone_functional_whole (the core walk keeps the call's structure)",
        ("single_input_concatenate",),
        "keras-team/keras #17700",
    ),
    KnownIssue(
        "lambda-safe-mode",
        "keras3",
        "<3.3.3 | ==3.12.4 | >=3.15.1",
        "a `Lambda` holding a Python lambda is refused by the config round trip "
        "(safe-mode deserialization, enforced again by the 3.12.4 and 3.15.1 "
        "patches); turning safe mode off globally would be unsafe",
        "compat_clone.families._core.Family.clone_lambda (rebuilt from the live function; a layer holding one "
        "is rebuilt under Family.unsafe_scope, this thread and this call only)",
        ("lambda_python_function", "lambda_pair_into_add", "multi_output_no_mask"),
    ),
    KnownIssue(
        "keras3-unregistered-layer",
        "keras3",
        "<3.3.3",
        "a functional model holding a layer class of the user's own that is not registered "
        "(`@keras.saving.register_keras_serializable()`) cannot be cloned: the native clone is a round trip "
        "through the whole model's config, which cannot find the class by its name (TypeError: 'could not be "
        "deserialized properly')",
        "compat_clone.families._core.Family.config_round_trip (each layer rebuilt by its own class, never looked up by name)",
        ("clone_twice_call_arguments",),
    ),
    KnownIssue(
        "keras3-sequential-input-tensors",
        "keras3",
        "<3.7",
        "cloning a Sequential model onto `input_tensors` fails with 'A symbolic KerasTensor cannot be used as a boolean'",
        f"{_K3}.Keras3._sequential_on",
        ("sequential_input_tensors",),
    ),
    KnownIssue(
        "keras3-functional-output-list",
        "keras3",
        "==3.4.*",
        "a nested single-output Functional model comes back from `from_config` with a "
        "one-element list as its output, so a clone of `TimeDistributed(<model>)` "
        "fails with \"Cannot convert '3' to a shape\"",
        f"{_K3}.Keras3.config_round_trip (_restore_single_outputs)",
        ("timedistributed_nested_model",),
    ),
    KnownIssue(
        "keras3-subclass-lost",
        "keras3",
        ">=3.3.3",
        "a functional model of a `Model` subclass with its own constructor (keras_hub "
        "backbones and tasks, a user's subclass) comes back as a plain Functional",
        f"{_CORE}.Cloner._clone_functional (rebuilt from its config: Family.rebuild_own_config)",
        ("functional_subclass",),
    ),
    KnownIssue(
        "keras3-sparse-inputs",
        "keras3",
        ">=3.3.3",
        "`sparse=True` / `ragged=True` inputs come back dense",
        f"{_K3}.Keras3.input_specs",
        ("sparse_input",),
    ),
    KnownIssue(
        "keras3-compiled-clone-config",
        "keras3",
        "<3.3.3 | >=3.9",
        "cloning a compiled model compiles the clone from the source's serialized compile "
        "config: an unregistered loss, metric or optimizer class fails the whole clone "
        "with TypeError 'Could not locate function'",
        f"{_K3}.Keras3.compile_config_loads (our walk, no compile from config)",
        ("compiled_custom_loss",),
    ),
    # The models users hold (tests/clone/test_holdings.py shows each beside the native recipe; no
    # feature check of tests/clone/feature_checks.py: the kinds live in tests/clone/holdings.py).
    KnownIssue(
        "subclass-clone-unbuilt",
        "tf_keras",
        ">=2.0",
        "a subclassed model rebuilt from its config has no variables until it is called: "
        "`set_weights` / a weight copy into the clone fails until the user calls it once",
        f"{_CORE}.Cloner._clone_subclassed ({_TF}.TfKeras.build_like: the first call's input signature, traced)",
        ("subclass_config_built",),
    ),
    KnownIssue(
        "subclass-layers-in-constructor",
        "keras3",
        ">=3.0",
        "a subclassed model whose constructor received layers (`Holder(encoder, head)`) "
        "cannot be cloned: its config cannot hold a layer (NotImplementedError / TypeError)",
        f"{_CORE}.Cloner._clone_subclassed (compat_clone.families._structure.structural_clone)",
        ("subclass_unstored_argument",),
    ),
    KnownIssue(
        "subclass-layers-in-constructor",
        "tf_keras",
        ">=2.0",
        "a subclassed model whose constructor received layers (`Holder(encoder, head)`) "
        "cannot be cloned: its config cannot hold a layer (TypeError)",
        f"{_CORE}.Cloner._clone_subclassed (compat_clone.families._structure.structural_clone)",
        ("subclass_unstored_argument",),
    ),
    KnownIssue(
        "subclass-config-differs",
        "keras3",
        ">=3.0",
        "a subclassed model whose `get_config` leaves out a constructor argument is rebuilt with "
        "the argument's default (a head of 3 units for 6), silently, where its class can be found",
        f"{_CORE}.Cloner._clone_subclassed (compat_clone.families._structure.differences, then the structural clone)",
        ("subclass_config_omits",),
    ),
    KnownIssue(
        "subclass-config-differs",
        "tf_keras",
        ">=2.0",
        "a subclassed model whose `get_config` leaves out a constructor argument is rebuilt with "
        "the argument's default (a head of 3 units for 6), silently",
        f"{_CORE}.Cloner._clone_subclassed (compat_clone.families._structure.differences, then the structural clone)",
        ("subclass_config_omits",),
    ),
    KnownIssue(
        "keras3-build-made-layers",
        "keras3",
        ">=3.0",
        "a subclassed model whose own `build()` makes its sub-layers and weights comes back from "
        "its config unbuilt (`build_from_config` warns that it cannot build it): a weight copy "
        "into the clone fails until the user calls it",
        f"{_K3}.Keras3.build_like (the clone called on inputs of the source's build shapes)",
        ("subclass_build_layers",),
    ),
    KnownIssue(
        "sequential-subclass-lost",
        "keras2",
        ">=2.0",
        "a `Sequential` subclass comes back as a plain `Sequential`: its methods and attributes are gone",
        f"{_CORE}.Cloner._keep_class",
        ("sequential_subclass",),
    ),
    KnownIssue(
        "sequential-subclass-lost",
        "tf_keras",
        ">=2.0",
        "a `Sequential` subclass comes back as a plain `Sequential`: its methods and attributes are gone",
        f"{_CORE}.Cloner._keep_class",
        ("sequential_subclass",),
    ),
    KnownIssue(
        "sequential-subclass-lost",
        "keras3",
        ">=3.0",
        "a `Sequential` subclass comes back as a plain `Sequential`: its methods and attributes are gone",
        f"{_CORE}.Cloner._keep_class",
        ("sequential_subclass",),
    ),
    KnownIssue(
        "subclass-plain-attribute-lost",
        "tf_keras",
        ">=2.0",
        "a plain attribute set on a subclassed model after construction (`model.temperature "
        "= 4.0`) is lost by the clone, which computes other outputs, silently",
        "compat_clone.families._structure.copy_plain_attributes",
        ("subclass_plain_attribute",),
    ),
    KnownIssue(
        "tf-keras-revived-layer",
        "tf_keras",
        ">=2.0",
        "a layer revived from a SavedModel loaded without its class cannot be rebuilt from "
        "its config: the clone fails or computes something else",
        f"{_CORE}.Cloner._refuse_revived (refused, the native exception with the reason)",
        (),
    ),
)


def issue(issue_id: str) -> List[KnownIssue]:
    """The rows with id `issue_id` (one per family it affects)."""
    rows = [row for row in KNOWN_ISSUES if row.id == issue_id]
    if not rows:
        raise KeyError(f"no known issue {issue_id!r}; ids: {sorted({r.id for r in KNOWN_ISSUES})}")
    return rows


def issues_for(family: str, version: str) -> List[KnownIssue]:
    """The known native problems of `family` at `version`.

    Args:
        family: ``"keras2"``, ``"tf_keras"`` or ``"keras3"``.
        version: the owning package's version, e.g. ``"3.15.1"``.

    Returns:
        The rows whose family matches and whose versions contain `version`.

    Example:

    >>> [row.id for row in issues_for("keras2", "2.2.4")][:2]
    ['keras2-12202-masks', 'keras2-rnn-state-twice']
    """
    return [row for row in KNOWN_ISSUES if row.family == family and affects(row, version)]


def affects(row: KnownIssue, version: str) -> bool:
    """Whether `version` of the row's package lies in one of the row's ranges.

    Example:

    >>> affects(issue("lambda-safe-mode")[0], "3.12.4"), affects(issue("lambda-safe-mode")[0], "3.13.2")
    (True, False)
    """
    from packaging.specifiers import SpecifierSet
    from packaging.version import Version

    parsed = Version(version)
    return any(SpecifierSet(part.strip()).contains(parsed, prereleases=True) for part in row.versions.split("|"))
