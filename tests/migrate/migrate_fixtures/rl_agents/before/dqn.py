"""A DQN agent with a target network, tf.keras / Keras 3 eager style."""
import copy

import keras

from util import clone_architecture, clone_model


def build_q_network(n_states, n_actions):
    return keras.Sequential(
        [
            keras.layers.Dense(16, activation="relu", input_shape=(n_states,)),
            keras.layers.BatchNormalization(),
            keras.layers.Dense(n_actions),
        ]
    )


class DQNAgent:
    def __init__(self, n_states=4, n_actions=2, tau=0.05):
        self.tau = tau
        self.model = build_q_network(n_states, n_actions)
        self.target_model = build_q_network(n_states, n_actions)
        self.fresh = clone_architecture(self.model)

    def update_target_hard(self):
        # copy the online network into the target network
        self.target_model.set_weights(self.model.get_weights())

    def update_target_soft(self):
        self.target_model.set_weights(
            [
                self.tau * w + (1 - self.tau) * tw
                for w, tw in zip(self.model.get_weights(), self.target_model.get_weights())
            ]
        )

    def update_target_by_index(self, tau):
        weights = self.model.get_weights()
        target_weights = self.target_model.get_weights()
        for i in range(len(target_weights)):
            target_weights[i] = weights[i] * tau + target_weights[i] * (1 - tau)
        self.target_model.set_weights(target_weights)

    def update_target_variables(self):
        for t, s in zip(self.target_model.weights, self.model.weights):
            t.assign(self.tau * s + (1 - self.tau) * t)

    def snapshot(self):
        snap = keras.Sequential.from_config(self.model.get_config())
        snap.set_weights(self.model.get_weights())
        return snap

    def checkpoint(self):
        return clone_model(self.model)

    def backup(self):
        return copy.deepcopy(self.model)
