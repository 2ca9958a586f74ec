"""A DQN agent with a target network, tf.keras / Keras 3 eager style."""
import copy

import keras

from util import clone_architecture, clone_model
import compat_clone


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
        compat_clone.copy_weights(self.model, self.target_model)

    def update_target_soft(self):
        compat_clone.copy_weights(self.model, self.target_model, tau=self.tau)

    def update_target_by_index(self, tau):
        compat_clone.copy_weights(self.model, self.target_model, tau=tau)

    def update_target_variables(self):
        compat_clone.copy_weights(self.model, self.target_model, tau=self.tau)

    def snapshot(self):
        snap = compat_clone.clone_model(self.model, copy_weights=True)
        return snap

    def checkpoint(self):
        return clone_model(self.model)

    def backup(self):
        return copy.deepcopy(self.model)
