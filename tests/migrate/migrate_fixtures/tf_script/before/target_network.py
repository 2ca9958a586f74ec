"""Keep a slowly updated target network, DQN style (TF 2.x era code)."""
import numpy as np
import tensorflow as tf
from tensorflow.keras.layers import Dense
from tensorflow.keras.models import (
    Sequential,
    clone_model,  # used for the target network
)


def q_network(n_actions=4):
    return Sequential(
        [tf.keras.Input((6,)), Dense(32, activation="relu"), Dense(n_actions)],
        name="q",
    )


class Agent:
    def __init__(self, tau=0.1):
        self.tau = tau
        self.online = q_network()
        self.target = clone_model(self.online)
        self.target.set_weights(self.online.get_weights())

    def snapshot(self):
        frozen = tf.keras.models.clone_model(self.online); frozen.set_weights(self.online.get_weights())
        frozen.trainable = False
        return frozen

    def soft_update(self):
        mixed = [
            self.tau * w + (1.0 - self.tau) * t
            for w, t in zip(self.online.get_weights(), self.target.get_weights())
        ]
        self.target.set_weights(mixed)


agent = Agent()
snapshot = agent.snapshot()
states = np.zeros((2, 6), dtype="float32")
agent.soft_update()
