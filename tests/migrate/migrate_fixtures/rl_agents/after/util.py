"""Model helpers shared by the agents, in the style of Keras 2 era RL libraries."""
import compat_clone
from keras.utils import custom_object_scope


def clone_model(model, custom_objects={}):
    """A copy of `model` with its weights: the target network."""
    # Requires Keras 1.0.7 since get_config has breaking changes.
    with custom_object_scope(custom_objects or {}):
        clone = compat_clone.clone_model(model, copy_weights=True)
    return clone


def clone_architecture(model):
    """The same layers with fresh weights."""
    return compat_clone.clone_model(model)


def hard_update(target, source):
    compat_clone.copy_weights(source, target)


def soft_update(target, source, tau):
    compat_clone.copy_weights(source, target, tau=tau)


def get_soft_target_model_updates(target, source, tau):
    """Graph ops that move `target` towards `source` (run them with `K.function`)."""
    target_weights = target.trainable_weights + sum([l.non_trainable_weights for l in target.layers], [])
    source_weights = source.trainable_weights + sum([l.non_trainable_weights for l in source.layers], [])
    assert len(target_weights) == len(source_weights)

    # Create updates.
    updates = []
    for tw, sw in zip(target_weights, source_weights):
        updates.append((tw, tau * sw + (1. - tau) * tw))
    return updates
