"""Old tf.keras code that clones and compiles models with clone_and_build_model."""
import tensorflow as tf
from tensorflow import keras
import compat_clone


def replica(model):
    # a compiled copy, same optimizer settings
    return compat_clone.clone_model(model, compile=True)


def on_inputs(model, inputs):
    return compat_clone.clone_model(model, inputs, compile=True)


def uncompiled(model):
    return compat_clone.clone_model(model=model)


def flagged(model, flag):
    return compat_clone.clone_model(
        model,
        compile=flag,
    )


def with_targets(model, targets):
    return tf.keras.models.clone_and_build_model(model, target_tensors=targets)


def with_custom(model, objects):
    return keras.models.clone_and_build_model(model, custom_objects=objects)


def reset(model):
    return keras.models.clone_and_build_model(model, in_place_reset=True)


def estimator(model, step):
    return keras.models.clone_and_build_model(model, optimizer_iterations=step)
