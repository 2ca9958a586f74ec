"""What a drop-in wrapper of the native `clone_model` must keep: the table of the rules.

Data, not code. Not upstream bugs (those are `compat_clone.known_issues`):
each row is a way a wrapper, compat_clone included before the row, was
worse than the native call it wraps, the code that keeps the rule (citing
the id in a comment) and the tests that show it beside the native call.
"""

from __future__ import annotations

import dataclasses
from typing import Tuple

__all__ = ["WrapperRule", "WRAPPER_RULES"]


@dataclasses.dataclass(frozen=True)
class WrapperRule:
    """What a drop-in wrapper of the native `clone_model` must keep, in every family.

    Not an upstream bug: each row is a way a wrapper (compat_clone included,
    before these rows) is worse than the native call it wraps, the code that
    prevents it (citing the id) and the tests that show it side by side.

    Attributes:
        id: short stable name, cited by the code that keeps the rule.
        symptom: what the user saw where the rule was broken.
        handled_by: the module (and function) of compat_clone that keeps it.
        tests: the tests that check it against the native call.
    """

    id: str
    symptom: str
    handled_by: str
    tests: Tuple[str, ...]


WRAPPER_RULES: Tuple[WrapperRule, ...] = (
    WrapperRule(
        "native-alias-rebound",
        "`keras.models.clone_model = compat_clone.clone_model` (by hand or by "
        "`compat_clone.patch()`) made every clone raise RecursionError (tf_keras 2.21, "
        "Keras 3.15): the wrapper called the public name it had replaced",
        "compat_clone._native.clone_model_of (the native function from its defining module); "
        "compat_clone._patch never rebinds a defining module that compat_clone calls",
        ("tests/clone/test_no_recursion.py::test_public_name_rebound_by_hand_never_recurses", "tests/clone/test_patch.py"),
    ),
    WrapperRule(
        "wrapped-user-exception",
        "an exception raised by the user's `clone_function` / `call_function` came back "
        "as `CloneFunctionError` (a ValueError): a library's `except RuntimeError` (tfmot's "
        "missing QuantizeConfig) no longer caught it; the native call lets it through",
        "compat_clone.families._cloner.Cloner._user_clone / _user_call (the same "
        "object re-raised, a note naming the layer added with compat_clone.errors.add_note)",
        (
            "tests/clone/test_native_guarantees.py::test_user_exceptions_pass_through_unchanged",
            "tests/clone/test_tfmot.py::test_a_layer_without_quantize_config_fails_as_natively",
        ),
    ),
    WrapperRule(
        "native-exception-type",
        "a layer whose config round trip (`layer.__class__.from_config(layer.get_config())`, "
        "the native default clone) failed came back as `UnsupportedModelError` (a ValueError) "
        "where the native `clone_model` lets the original through (e.g. a TypeError from "
        "`from_config`), and the same for Keras 3's native rebuild of a subclassed model. "
        "The rule: a call the native clone also makes lets its exception through, the same "
        "object with compat_clone's advice as a note; a step native does not make (a `Lambda` "
        "rebuilt from its live function, a subclassed-model rebuild where native refuses the "
        "model: standalone Keras 2, tf.keras before 2.7) raises compat_clone's own error",
        "compat_clone.families._cloner.Cloner.clone_layer (errors.layer_rebuild_note), "
        "compat_clone.families.keras3.Keras3.clone_subclassed and "
        "compat_clone.families._core.Family.clone_subclassed (errors.subclassed_rebuild_note; "
        "the latter asks the native call, on the failure path only, whether it fails alike); "
        "Family.clone_lambda and Keras3.config_round_trip keep UnsupportedModelError for "
        "their own steps",
        (
            "tests/clone/test_native_guarantees.py::test_failed_round_trip_keeps_native_exception_type",
            "tests/clone/test_errors.py::test_custom_layer_whose_config_misses_an_argument",
        ),
    ),
    WrapperRule(
        "copy-weight-handler",
        "`clone_model(copy_weights=True)` and `copy_weights` of a model holding an adapted "
        "lookup layer (tf.keras / tf_keras) raised AttributeError: 'VocabWeightHandler' object "
        "has no attribute 'dtype': the table is listed among the layer's weights but is no "
        "variable. The native `set_weights` fills it",
        "compat_clone.families.tf_keras.TfKeras.variable_spec / assign_pairs "
        "(_layer_state.handler_spec, split_handlers, assign_handlers: the table copied as "
        "`set_weights` copies it, after the variables)",
        (
            "tests/clone/test_layer_state.py::test_copy_weights_carries_what_set_weights_carries",
            "tests/clone/test_layer_state.py::test_clone_carries_adapted_state",
        ),
    ),
    WrapperRule(
        "zeros-unknown-shape",
        "`clone_model(copy_weights=True)` of an adapted tf.keras / tf_keras `Discretization` "
        "raised ValueError: Can't convert Python sequence with mixed types to Tensor: the zeros "
        "that replace initializers were asked for its summary of shape (2, None); the native "
        "clone and `set_weights` work",
        "compat_clone.families._skip_init._wrap (a variable of unknown shape keeps its own initializer)",
        ("tests/clone/test_layer_state.py::test_clone_carries_adapted_state",),
    ),
    WrapperRule(
        "copy-shared-variable",
        "`copy_weights(source, target, tau=)` where a target variable is also a source "
        "variable (models sharing a layer, pairs by order) read it after writing it on "
        "TensorFlow 2 and torch: a wrong blend. The native `target.set_weights("
        "source.get_weights())` reads every value first",
        "compat_clone.placement.tensorflow (assign_tf, _TfBlend) and "
        "compat_clone.placement.torch (_tensors, TorchBackend.assign): aliased sources read before any write",
        (
            "tests/clone/test_soft_update.py::test_soft_update_where_a_target_is_another_pairs_source",
            "tests/clone/test_native_guarantees.py::test_copy_weights_with_shared_variables_matches_set_weights",
        ),
    ),
)
