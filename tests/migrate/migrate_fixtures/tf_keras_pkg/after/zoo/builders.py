import tf_keras as keras
import compat_clone


def build_mlp(width=8, seed=0):
    keras.utils.set_random_seed(seed)
    inputs = keras.Input((4,))
    hidden = keras.layers.Dense(width, activation="tanh")(inputs)
    return keras.Model(inputs, keras.layers.Dense(1)(hidden), name="mlp")


def widen(model, factor=2):
    """A copy of `model` whose hidden Dense layers are `factor` times wider."""
    def clone_function(layer):
        config = layer.get_config()
        if isinstance(layer, keras.layers.Dense) and config["units"] > 1:
            config["units"] *= factor
        return layer.__class__.from_config(config)

    return compat_clone.clone_model(model, clone_function=clone_function)
