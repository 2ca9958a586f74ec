"""Keras 2 optimizers, losses and metrics as Keras 3's: the compat knowledge of a training state, as data.

A Keras 2 optimizer has a Keras 3 counterpart only where the update is the
same formula; each row below was read off both sources (standalone Keras
2.2.4-2.3.1 ``keras/optimizers.py``, tf.keras / tf_keras ``optimizer_v2`` and
``optimizers.legacy``, the optimizer of tf.keras 2.11+ / tf_keras, Keras 3.0-3.15
``keras/src/optimizers``), and the training step of the proof checks it.

Three optimizer APIs hold the state differently (`API_*`):

* standalone Keras 2: ``optimizer.weights`` is ``[iterations]`` then one group
  per role, each in the order of the model's trainable weights (`KERAS2_GROUPS`);
* ``optimizer_v2``: ``optimizer.get_slot(variable, name)`` (`V2_SLOTS`);
* the optimizer of tf.keras 2.11+ / tf_keras, which Keras 3's was written
  from: one list per role, indexed as the model's variables (`KERAS3_SLOTS`, the
  same attributes in both).

Slot roles are named as Keras 3 names its optimizer variables (``momentum``,
``velocity``, ...). Importing this module imports nothing.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Mapping, Optional, Tuple

__all__ = [
    "API_KERAS2",
    "API_V2",
    "API_NEW",
    "KERAS2_GROUPS",
    "V2_SLOTS",
    "KERAS3_SLOTS",
    "KERAS3_SCALARS",
    "not_exact",
    "LOSS_NAMES",
    "CLIPNORM",
    "DROPPED_KEYS",
    "RANDOM_IN_TRAINING",
]

API_KERAS2 = "keras2"  # standalone Keras 2.x
API_V2 = "optimizer_v2"  # tf.keras <= 2.10, and `optimizers.legacy` after
API_NEW = "optimizer"  # tf.keras 2.11+ / tf_keras (`keras.optimizers.Adam`), Keras 3's ancestor

#: standalone Keras 2: the groups of ``optimizer.weights`` after ``iterations``, in order (one variable per
#: trainable weight each; Adam without amsgrad keeps 1-element placeholders as ``velocity_hat``, not carried)
KERAS2_GROUPS: Dict[str, Tuple[str, ...]] = {
    "SGD": ("momentum",),
    "Adam": ("momentum", "velocity", "velocity_hat"),
    "Adamax": ("momentum", "norm"),
    "Adadelta": ("accumulated_grad", "accumulated_delta_var"),
    "RMSprop": ("velocity",),
    "Adagrad": ("accumulator",),
}

#: ``optimizer_v2``: the slot names of `get_slot`, by class, as roles
V2_SLOTS: Dict[str, Dict[str, str]] = {
    "SGD": {"momentum": "momentum"},
    "Adam": {"m": "momentum", "v": "velocity", "vhat": "velocity_hat"},
    "Adamax": {"m": "momentum", "v": "norm"},
    "Adadelta": {"accum_grad": "accumulated_grad", "accum_var": "accumulated_delta_var"},
    "RMSprop": {"rms": "velocity", "momentum": "momentum", "mg": "average_gradient"},
    "Adagrad": {"accumulator": "accumulator"},
}

#: Keras 3 (and the tf.keras 2.11+ / tf_keras optimizer): role -> the attribute holding one variable per trainable
#: variable, in the optimizer's own index (`_get_variable_index` / `_index_dict`)
KERAS3_SLOTS: Dict[str, Dict[str, str]] = {
    "SGD": {"momentum": "momentums"},
    "Adam": {"momentum": "_momentums", "velocity": "_velocities", "velocity_hat": "_velocity_hats"},
    "AdamW": {"momentum": "_momentums", "velocity": "_velocities", "velocity_hat": "_velocity_hats"},
    "Adamax": {"momentum": "_m", "norm": "_u"},
    "Adadelta": {"accumulated_grad": "_accumulated_grads", "accumulated_delta_var": "_accumulated_delta_vars"},
    "RMSprop": {"velocity": "_velocities", "momentum": "_momentums", "average_gradient": "_average_gradients"},
    "Adagrad": {"accumulator": "_accumulators"},
    "Nadam": {"momentum": "_momentums", "velocity": "_velocities"},
}

#: other state of an optimizer, one scalar variable each: role -> attribute (the same in both)
KERAS3_SCALARS: Dict[str, Dict[str, str]] = {"Nadam": {"u_product": "_u_product"}}

_EPSILON_INSIDE = (
    "Keras 3's {name} divides by sqrt(accumulator + epsilon), this one by sqrt(accumulator) + epsilon: "
    "another update, which no Keras 3 setting reproduces"
)
_NADAM = (
    "its momentum schedule is 0.96 ** (0.004 t) (`schedule_decay`), Keras 3's Nadam's 0.96 ** t: another update, "
    "which no Keras 3 setting reproduces"
)

#: (API, class) -> why its update is not Keras 3's, given its config (None: the same)
_NOT_EXACT: Dict[Tuple[str, str], Callable[[Mapping[str, Any]], Optional[str]]] = {
    (API_KERAS2, "RMSprop"): lambda c: _EPSILON_INSIDE.format(name="RMSprop"),
    (API_KERAS2, "Adagrad"): lambda c: _EPSILON_INSIDE.format(name="Adagrad"),
    (API_KERAS2, "Nadam"): lambda c: _NADAM,
    (API_V2, "Adagrad"): lambda c: _EPSILON_INSIDE.format(name="Adagrad"),
    (API_V2, "Nadam"): lambda c: _NADAM,
    # optimizer_v2's RMSprop without momentum computes in Python, sqrt(v) + epsilon; with momentum, TensorFlow's
    # ApplyRMSProp kernel, sqrt(v + epsilon) as Keras 3
    (API_V2, "RMSprop"): lambda c: None if c.get("momentum") else _EPSILON_INSIDE.format(name="RMSprop") + " (without momentum)",
}


def not_exact(api: str, class_name: str, config: Mapping[str, Any]) -> Optional[str]:
    """Why the optimizer `class_name` of `api` with `config` updates otherwise than Keras 3's, or None."""
    rule = _NOT_EXACT.get((api, class_name))
    return rule(config) if rule is not None else None


#: how each API's ``clipnorm`` reads in Keras 3: standalone Keras 2 clips the norm of all gradients together
CLIPNORM = {API_KERAS2: "global_clipnorm", API_V2: "clipnorm", API_NEW: "clipnorm"}

#: optimizer config keys that do nothing in Keras 3 and are dropped (said); ``lr`` is ``learning_rate``
DROPPED_KEYS = ("jit_compile", "is_legacy_optimizer", "name")

#: Keras 2 loss names Keras 3 spells otherwise (the same function)
LOSS_NAMES: Dict[str, str] = {
    "kullback_leibler_divergence": "kl_divergence",
    "logcosh": "log_cosh",
    "huber_loss": "huber",
    "cosine_proximity": "cosine_similarity",
}

#: layer config keys (and the classes they count for; None: any) that make a layer draw random numbers in training
RANDOM_IN_TRAINING: Tuple[Tuple[str, Optional[Tuple[str, ...]]], ...] = (
    ("rate", ("Dropout", "SpatialDropout1D", "SpatialDropout2D", "SpatialDropout3D", "GaussianDropout", "AlphaDropout")),
    ("stddev", ("GaussianNoise",)),
    ("dropout", None),
    ("recurrent_dropout", None),
)
