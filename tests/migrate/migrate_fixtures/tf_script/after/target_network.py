"""Keep a slowly updated target network, DQN style (TF 2.x era code)."""
import numpy as np
import tensorflow as tf
from tensorflow.keras.layers import Dense
from tensorflow.keras.models import (
    Sequential,
)
from compat_clone import clone_model  # used for the target network
import compat_clone


def q_network(n_actions=4):
    return Sequential(
        [tf.keras.Input((6,)), Dense(32, activation="relu"), Dense(n_actions)],
        name="q",
    )


class Agent:
    def __init__(self, tau=0.1):
        self.tau = tau
        self.online = q_network()
        self.target = clone_model(self.online, copy_weights=True)

    def snapshot(self):
        frozen = compat_clone.clone_model(self.online, copy_weights=True)
        frozen.trainable = False
        return frozen

    def soft_update(self):
        compat_clone.copy_weights(self.online, self.target, tau=self.tau)


agent = Agent()
snapshot = agent.snapshot()
states = np.zeros((2, 6), dtype="float32")
agent.soft_update()
