"""Target-network updates as user code wrote them (issue 47): NumPy arithmetic, per-variable loops."""

import numpy as np
import tensorflow as tf
import compat_clone


def soft_update_arrays(model, target, tau):
    # blend the online weights into the target
    # target side
    compat_clone.copy_weights(model, target, tau=tau)


def hard_update_array(model, target):
    compat_clone.copy_weights(model, target)


def soft_update_comprehension(model, target, tau):
    # Polyak averaging
    compat_clone.copy_weights(model, target, tau=tau)


def hard_update_set_value(target, source):
    # one variable at a time
    compat_clone.copy_weights(source, target)


def hard_update_assign(target, source):
    compat_clone.copy_weights(source, target)


def hard_update_variables(target, source):
    for t, s in zip(target.variables, source.variables):
        t.assign(s)


def soft_update_assign(target, source, tau):
    compat_clone.copy_weights(source, target, tau=tau)


def soft_update_set_value(target, source, tau):
    compat_clone.copy_weights(source, target, tau=tau)


def hard_update_trainable(target, source):
    for t, s in zip(target.trainable_weights, source.trainable_weights):
        t.assign(s)


def soft_update_trainable(target, source, tau):
    for t, s in zip(target.trainable_variables, source.trainable_variables):
        t.assign(tau * s + (1 - tau) * t)


def frozen_update(model, target):
    target.set_weights([0 * w + (1 - 0) * tw for w, tw in zip(model.get_weights(), target.get_weights())])


def overshoot(model, target):
    mw = np.array(model.get_weights(), dtype=object)
    tw = np.array(target.get_weights(), dtype=object)
    target.set_weights(1.5 * mw + (1 - 1.5) * tw)


def logged_update(model, target, tau):
    mw = np.array(model.get_weights(), dtype=object)
    target.set_weights(tau * mw + (1 - tau) * np.array(target.get_weights(), dtype=object))
    return mw


def eager_step(model, target):
    with tf.GradientTape():
        pass
    for t, s in zip(target.weights, source_weights(model)):
        t.assign(s)


def source_weights(model):
    return model.weights
