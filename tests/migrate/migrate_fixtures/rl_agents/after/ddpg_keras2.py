"""A DDPG agent, Keras 2 graph style (target updates as ops run by `K.function`)."""
import keras.backend as K
from keras.layers import Concatenate, Dense, Input
from keras.models import Model

from util import clone_model, get_soft_target_model_updates, hard_update, soft_update
import compat_clone


def actor_network(n_states, n_actions):
    state = Input((n_states,))
    hidden = Dense(16, activation="relu")(state)
    return Model(state, Dense(n_actions, activation="tanh")(hidden))


def critic_network(n_states, n_actions):
    state, action = Input((n_states,)), Input((n_actions,))
    hidden = Dense(16, activation="relu")(Concatenate()([state, action]))
    return Model([state, action], Dense(1)(hidden))


class DDPGAgent:
    def __init__(self, n_states=3, n_actions=1, tau=0.01):
        self.tau = tau
        self.actor = actor_network(n_states, n_actions)
        self.target_actor = clone_model(self.actor)
        self.critic = critic_network(n_states, n_actions)
        self.target_critic = compat_clone.clone_model(self.critic, copy_weights=True)

    def compile(self):
        updates = get_soft_target_model_updates(self.target_actor, self.actor, self.tau)
        self.update_target_actor_fn = K.function([], [], updates=updates)

    def update_target_actor(self):
        self.update_target_actor_fn([])

    def update_target_critic(self):
        compat_clone.copy_weights(self.critic, self.target_critic, tau=self.tau)

    def sync_targets(self):
        hard_update(self.target_actor, self.actor)
        hard_update(self.target_critic, self.critic)

    def soften_targets(self, tau):
        soft_update(self.target_actor, self.actor, tau)
