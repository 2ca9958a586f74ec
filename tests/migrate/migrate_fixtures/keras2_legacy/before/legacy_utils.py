"""Helpers nobody dared to touch."""
from keras.models import *
import tensorflow as tf


def duplicate(model):
    return clone_model(model)


def by_name(module, model):
    return getattr(module, "clone_model")(model)


def compiled_copy(model):
    return tf.keras.models.clone_and_build_model(model, compile_clone=True)
