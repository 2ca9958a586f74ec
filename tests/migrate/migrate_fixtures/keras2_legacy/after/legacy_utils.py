"""Helpers nobody dared to touch."""
from keras.models import *
import compat_clone


def duplicate(model):
    return clone_model(model)


def by_name(module, model):
    return getattr(module, "clone_model")(model)


def compiled_copy(model):
    return compat_clone.clone_model(model, compile=True)
