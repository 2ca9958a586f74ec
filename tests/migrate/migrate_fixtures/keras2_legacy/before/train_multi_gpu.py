"""Train on several GPUs (Keras 2.2 era code)."""
from __future__ import print_function

import keras
from keras.layers import Dense
from keras.models import Sequential
from keras.utils import multi_gpu_model

clone = keras.models.clone_model   # shorthand used below


def build():
    model = Sequential()
    model.add(Dense(8, activation="relu", input_shape=(4,)))
    model.add(Dense(1))
    return model


model = build()
try:
    parallel = multi_gpu_model(model, gpus=2, cpu_relocation=True)
except ValueError:
    # fewer than 2 GPUs: train the template model itself
    parallel = model
parallel.compile("sgd", "mse")

backup = clone(model)
backup.set_weights(model.get_weights())

# exponential moving average of the weights, kept in a twin
ema = keras.models.clone_model(model)
ema.set_weights(model.get_weights())
