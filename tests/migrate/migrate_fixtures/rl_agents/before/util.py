"""Model helpers shared by the agents, in the style of Keras 2 era RL libraries."""
from keras import models


def clone_model(model, custom_objects={}):
    """A copy of `model` with its weights: the target network."""
    # Requires Keras 1.0.7 since get_config has breaking changes.
    config = {
        'class_name': model.__class__.__name__,
        'config': model.get_config(),
    }
    clone = models.model_from_config(config, custom_objects=custom_objects)
    clone.set_weights(model.get_weights())
    return clone


def clone_architecture(model):
    """The same layers with fresh weights."""
    return models.model_from_json(model.to_json())


def hard_update(target, source):
    target.set_weights(source.get_weights())


def soft_update(target, source, tau):
    new_weights = []
    for s, t in zip(source.get_weights(), target.get_weights()):
        new_weights.append(tau * s + (1. - tau) * t)
    target.set_weights(new_weights)


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
