"""The models users hold, part 1: subclassed models (registered in `holdings_registry.KINDS` on import, in order).

tests/clone/holdings.py says what a kind is and imports this module first.
"""

from __future__ import annotations

from typing import Any, Dict

import numpy as np

from tests.clone.features import NotApplicable, family_name
from tests.clone.holdings_registry import (
    Built,
    call_model,
    is_keras3,
    kind,
    no_keras2_arithmetic,
    public,
    require_subclassing,
    sample_input,
)

# -- subclassed models --------------------------------------------------------------------------


@kind("subclassed model without get_config (tensorflow#47048)")
def subclass_no_config(K: Any, tmp: str) -> Built:
    require_subclassing(K)

    @public
    class TwoDense(K.models.Model):
        def __init__(self) -> None:
            super().__init__()
            self.hidden = K.layers.Dense(8, activation="relu")
            self.out = K.layers.Dense(3)

        def call(self, inputs: Any) -> Any:
            return self.out(self.hidden(inputs))

    x = sample_input()
    return call_model(TwoDense(), x), x


@kind("subclassed model with get_config and constructor arguments")
def subclass_with_config(K: Any, tmp: str) -> Built:
    require_subclassing(K)

    @public
    class Mlp(K.models.Model):
        def __init__(self, units: int = 8, outputs: int = 2, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.units, self.outputs_ = units, outputs
            self.hidden = K.layers.Dense(units, activation="tanh")
            self.out = K.layers.Dense(outputs)

        def call(self, inputs: Any) -> Any:
            return self.out(self.hidden(inputs))

        def get_config(self) -> Dict[str, Any]:
            return {"units": self.units, "outputs": self.outputs_, "name": self.name}

    x = sample_input()
    return call_model(Mlp(units=5, outputs=3), x), x


@kind("subclassed model built by build(shape), never called")
def subclass_built(K: Any, tmp: str) -> Built:
    require_subclassing(K)
    no_keras2_arithmetic(K)

    @public
    class Built(K.models.Model):
        def __init__(self) -> None:
            super().__init__()
            self.inner = K.layers.Dense(4)

        def build(self, input_shape: Any) -> None:  # as Keras 3 asks: its layers built here
            self.inner.build(input_shape)
            super().build(input_shape)

        def call(self, inputs: Any) -> Any:
            return self.inner(inputs) * 2.0

    model = Built()
    model.build((None, 6))
    return model, sample_input()


@kind("layers passed to the constructor (Holder(encoder, head))")
def layers_in_constructor(K: Any, tmp: str) -> Built:
    require_subclassing(K)
    no_keras2_arithmetic(K)

    @public
    class Holder(K.models.Model):
        def __init__(self, encoder: Any, head: Any, scale: float = 1.0) -> None:
            super().__init__()
            self.encoder, self.head, self.scale = encoder, head, scale

        def call(self, inputs: Any) -> Any:
            return self.head(self.encoder(inputs)) * self.scale

    inputs = K.Input((6,))
    encoder = K.models.Model(inputs, K.layers.Dense(5, activation="relu")(inputs), name="encoder")
    x = sample_input()
    return call_model(Holder(encoder, K.layers.Dense(2), scale=3.0), x), x


@kind("a list of layers")
def list_of_layers(K: Any, tmp: str) -> Built:
    require_subclassing(K)

    @public
    class Stack(K.models.Model):
        def __init__(self, depth: int = 3, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.blocks = [K.layers.Dense(6, activation="relu") for _ in range(depth)]
            self.out = K.layers.Dense(2)

        def call(self, inputs: Any) -> Any:
            for block in self.blocks:
                inputs = block(inputs)
            return self.out(inputs)

    x = sample_input()
    return call_model(Stack(), x), x


@kind("a dict of layers")
def dict_of_layers(K: Any, tmp: str) -> Built:
    require_subclassing(K)

    @public
    class Heads(K.models.Model):
        def __init__(self, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.heads = {"a": K.layers.Dense(2), "b": K.layers.Dense(3)}

        def call(self, inputs: Any) -> Any:
            return K.layers.concatenate([self.heads["a"](inputs), self.heads["b"](inputs)])

    x = sample_input()
    return call_model(Heads(), x), x


@kind("a tuple of layers")
def tuple_of_layers(K: Any, tmp: str) -> Built:
    require_subclassing(K)

    @public
    class Pair(K.models.Model):
        def __init__(self) -> None:
            super().__init__()
            self.pair = (K.layers.Dense(4, activation="relu"), K.layers.Dense(2))

        def call(self, inputs: Any) -> Any:
            return self.pair[1](self.pair[0](inputs))

    x = sample_input()
    return call_model(Pair(), x), x


@kind("nested sub-models: a GAN pair (generator, discriminator)")
def gan_pair(K: Any, tmp: str) -> Built:
    require_subclassing(K)

    @public
    class Gan(K.models.Model):
        def __init__(self, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.generator = K.models.Sequential(
                [K.layers.Dense(8, activation="relu", input_shape=(6,)), K.layers.Dense(6)], name="generator"
            )
            self.discriminator = K.models.Sequential(
                [K.layers.Dense(4, activation="relu", input_shape=(6,)), K.layers.Dense(1)], name="discriminator"
            )

        def call(self, inputs: Any) -> Any:
            return self.discriminator(self.generator(inputs))

    x = sample_input()
    return call_model(Gan(), x), x


@kind("nested subclassed sub-models: encoder and decoder")
def encoder_decoder(K: Any, tmp: str) -> Built:
    require_subclassing(K)
    if family_name(K) == "keras2":  # its symbolic call asks the inner model's compute_output_shape
        raise NotApplicable("standalone Keras 2 cannot call a subclassed model inside another")

    @public
    class Encoder(K.models.Model):
        def __init__(self) -> None:
            super().__init__()
            self.dense = K.layers.Dense(3, activation="relu")

        def call(self, inputs: Any) -> Any:
            return self.dense(inputs)

    @public
    class Decoder(K.models.Model):
        def __init__(self) -> None:
            super().__init__()
            self.dense = K.layers.Dense(6)

        def call(self, inputs: Any) -> Any:
            return self.dense(inputs)

    @public
    class AutoEncoder(K.models.Model):
        def __init__(self) -> None:
            super().__init__()
            self.encoder, self.decoder = Encoder(), Decoder()

        def call(self, inputs: Any) -> Any:
            return self.decoder(self.encoder(inputs))

    x = sample_input()
    return call_model(AutoEncoder(), x), x


@kind("a variable of the model itself (add_weight in the Model)")
def model_variable(K: Any, tmp: str) -> Built:
    require_subclassing(K)
    if family_name(K) == "keras2":
        raise NotApplicable("standalone Keras 2's Model has no add_weight of its own before it is built")

    @public
    class Scaled(K.models.Model):
        def __init__(self, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.dense = K.layers.Dense(3)
            self.scale = self.add_weight(name="scale", shape=(3,), initializer="ones")

        def call(self, inputs: Any) -> Any:
            return self.dense(inputs) * self.scale

    x = sample_input()
    model = call_model(Scaled(), x)
    model.scale.assign(np.array([0.5, 2.0, -1.0], dtype="float32"))
    return model, x


@kind("trained BatchNormalization (moving statistics moved by fit)")
def trained_batchnorm(K: Any, tmp: str) -> Built:
    require_subclassing(K)

    @public
    class Normed(K.models.Model):
        def __init__(self, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.dense = K.layers.Dense(5)
            self.norm = K.layers.BatchNormalization()
            self.out = K.layers.Dense(1)

        def call(self, inputs: Any, training: Any = None) -> Any:
            return self.out(self.norm(self.dense(inputs), training=training))

    x = sample_input((16, 6))
    model = Normed()
    model.compile(optimizer="sgd", loss="mse")
    model.fit(x, np.ones((16, 1), "float32"), epochs=2, batch_size=8, verbose=0)
    return model, x


@kind("a frozen sub-model (trainable=False) inside a subclassed model")
def frozen_submodel(K: Any, tmp: str) -> Built:
    require_subclassing(K)

    @public
    class Tuned(K.models.Model):
        def __init__(self, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            inputs = K.Input((6,))
            self.base = K.models.Model(inputs, K.layers.Dense(4, activation="relu")(inputs), name="base")
            self.base.trainable = False
            self.head = K.layers.Dense(2)

        def call(self, inputs: Any) -> Any:
            return self.head(self.base(inputs))

    x = sample_input()
    return call_model(Tuned(), x), x


@kind("a custom train_step with a loss tracker, compiled and trained")
def custom_train_step(K: Any, tmp: str) -> Built:
    require_subclassing(K)
    if family_name(K) == "keras2":
        raise NotApplicable("standalone Keras 2 has no train_step")
    if is_keras3(K) and K.backend.backend() != "tensorflow":
        # train_step is backend code (tf.GradientTape here); the JAX and torch
        # spellings differ: the kind is the TF spelling, the class the point.
        raise NotApplicable(f"this train_step is TensorFlow code; backend {K.backend.backend()}")
    import tensorflow as tf

    metrics_class = K.metrics.Mean

    @public
    class Stepped(K.models.Model):
        def __init__(self) -> None:
            super().__init__()
            self.dense = K.layers.Dense(2)
            self.tracker = metrics_class(name="loss")

        def call(self, inputs: Any) -> Any:
            return self.dense(inputs)

        def train_step(self, data: Any) -> Dict[str, Any]:
            x, y = data
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(self(x, training=True) - y))
            grads = tape.gradient(loss, self.trainable_weights)
            self.optimizer.apply_gradients(zip(grads, self.trainable_weights))
            self.tracker.update_state(loss)
            return {"loss": self.tracker.result()}

    x = sample_input((8, 6))
    model = Stepped()
    model.compile(optimizer="sgd")
    model.fit(x, np.zeros((8, 2), "float32"), epochs=1, verbose=0)
    return model, x


@kind("mixed precision layers (dtype mixed_float16)")
def mixed_precision(K: Any, tmp: str) -> Built:
    require_subclassing(K)
    if family_name(K) == "keras2":
        raise NotApplicable("standalone Keras 2 has no dtype policies")

    @public
    class Mixed(K.models.Model):
        def __init__(self) -> None:
            super().__init__()
            self.hidden = K.layers.Dense(8, activation="relu", dtype="mixed_float16")
            self.out = K.layers.Dense(2, dtype="float32")

        def call(self, inputs: Any) -> Any:
            return self.out(self.hidden(inputs))

    x = sample_input()
    return call_model(Mixed(), x), x


@kind("a custom layer holding sub-layers, inside a subclassed model")
def custom_layer_inside(K: Any, tmp: str) -> Built:
    require_subclassing(K)

    @public
    class Block(K.layers.Layer):
        def __init__(self, units: int = 4, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.units = units
            self.inner = K.layers.Dense(units, activation="relu")
            self.skip = K.layers.Dense(units)

        def call(self, inputs: Any) -> Any:
            return self.inner(inputs) + self.skip(inputs)

        def compute_output_shape(self, input_shape: Any) -> Any:
            return tuple(input_shape)[:-1] + (self.units,)

        def get_config(self) -> Dict[str, Any]:
            return {**super().get_config(), "units": self.units}

    @public
    class WithBlock(K.models.Model):
        def __init__(self) -> None:
            super().__init__()
            self.block = Block(5)
            self.out = K.layers.Dense(2)

        def call(self, inputs: Any) -> Any:
            return self.out(self.block(inputs))

    x = sample_input()
    return call_model(WithBlock(), x), x


@kind("a plain Python attribute set after construction")
def python_attribute(K: Any, tmp: str) -> Built:
    require_subclassing(K)
    no_keras2_arithmetic(K)

    @public
    class Tempered(K.models.Model):
        def __init__(self, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.dense = K.layers.Dense(3)
            self.temperature = 1.0

        def call(self, inputs: Any) -> Any:
            return self.dense(inputs) / self.temperature

    x = sample_input()
    model = Tempered()
    model.temperature = 4.0  # set by the user after construction, read by call
    return call_model(model, x), x
