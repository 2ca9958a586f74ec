"""Target networks for reinforcement learning: a frozen copy of a model that follows it by soft updates."""

from __future__ import annotations

from typing import Any

import keras


def target_of(model: Any) -> Any:
    """A copy of `model` with its weights and its frozen state, to be updated by `follow`."""
    target = keras.models.clone_model(model)
    target.set_weights(model.get_weights())
    return target


def follow(target: Any, model: Any, tau: float) -> None:
    """Moves `target`'s weights a fraction `tau` of the way to `model`'s."""
    target.set_weights([tau * w + (1.0 - tau) * t for w, t in zip(model.get_weights(), target.get_weights())])
