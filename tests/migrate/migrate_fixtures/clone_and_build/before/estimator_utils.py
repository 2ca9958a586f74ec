"""Old tf.keras code that clones and compiles models with clone_and_build_model."""
import tensorflow as tf
from tensorflow import keras


def replica(model):
    # a compiled copy, same optimizer settings
    return tf.keras.models.clone_and_build_model(model)


def on_inputs(model, inputs):
    return tf.keras.models.clone_and_build_model(model, inputs, None, None, True)


def uncompiled(model):
    return keras.models.clone_and_build_model(model=model, compile_clone=False, in_place_reset=False)


def flagged(model, flag):
    return keras.models.clone_and_build_model(
        model,
        compile_clone=flag,
        optimizer_iterations=None,
    )


def with_targets(model, targets):
    return tf.keras.models.clone_and_build_model(model, target_tensors=targets)


def with_custom(model, objects):
    return keras.models.clone_and_build_model(model, custom_objects=objects)


def reset(model):
    return keras.models.clone_and_build_model(model, in_place_reset=True)


def estimator(model, step):
    return keras.models.clone_and_build_model(model, optimizer_iterations=step)
