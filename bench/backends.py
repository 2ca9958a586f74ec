"""One `Ops` per backend: what the cases need from a framework, each method a few lines.

The base class is TensorFlow eager (tf.keras, Keras 3 on TensorFlow); the
others override what differs. Frameworks are imported inside the methods, so
a worker with only JAX or only torch never imports TensorFlow.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List


class Ops:
    """What the cases need from one backend. The base is TensorFlow eager (tf.keras, Keras 3 on TF)."""

    def __init__(self, K: Any) -> None:
        self.K = K

    def tensors(self, model: Any) -> List[Any]:
        """The framework tensors behind the model's variables.

        A Keras 3 variable holds its tensor in `.value`; a tf.keras variable
        is the tensor (its `value` is a method).
        """
        return [v if callable(getattr(v, "value", None)) else v.value for v in model.weights]

    def settle(self, model: Any) -> Any:
        """Waits until `model` is usable (its device work done, its variables initialized); returns it."""
        import tensorflow as tf

        if tf.config.list_logical_devices("GPU"):
            tf.test.experimental.sync_devices()
        return model

    def refresh(self, model: Any) -> None:
        """Gives each variable a buffer of its own (untimed), as a new clone has."""
        import tensorflow as tf

        for t in self.tensors(model):
            t.assign(tf.zeros(t.shape, t.dtype), read_value=False)

    def raw_copy(self, source: Any, target: Any = None) -> Callable[[], Any]:
        """The framework copying the source's tensors and nothing else: the floor of any copy.

        Into new buffers; on torch, given a `target`, into the target's own
        buffers, as `copy_weights` does there.
        """
        import tensorflow as tf

        tensors = self.tensors(source)
        return lambda: [tf.raw_ops.DeepCopy(x=t) for t in tensors]

    def soft_references(self, source: Any, target: Any, tau: float) -> Dict[str, Callable[[], Any]]:
        """Other ways to blend the same variables, measured beside `copy_weights(tau=)` (none by default)."""
        return {}

    def where(self, model: Any) -> str:
        t = self.tensors(model)[0]
        return str(getattr(t, "device", "") or getattr(t, "sharding", "") or "?")


class Keras2Ops(Ops):
    """Standalone Keras 2 in a TF1 graph: one session runs everything."""

    def tensors(self, model: Any) -> List[Any]:
        return list(model.weights)

    def settle(self, model: Any) -> Any:
        self.K.backend.get_session()  # initializes the variables no session has seen yet
        return model

    def refresh(self, model: Any) -> None:
        import numpy as np

        self.K.backend.batch_set_value([(v, np.zeros(self.K.backend.int_shape(v), "float32"))
                                        for v in model.weights])

    def raw_copy(self, source: Any, target: Any = None) -> Callable[[], Any]:
        import tensorflow as tf  # the compat.v1 module the keras2_on_tf2 fix-up installs

        copied = tf.group(*[tf.raw_ops.DeepCopy(x=v.value()) for v in source.weights])
        return lambda: self.K.backend.get_session().run(copied)

    def soft_references(self, source: Any, target: Any, tau: float) -> Dict[str, Callable[[], Any]]:
        """The soft update's floor and its previous way, as raw TF1 graph ops on the same variables.

        * ``one_pass``: `target -= tau * source`, one fused in-place kernel
          (`ApplyGradientDescent`) per variable: it reads source and target
          and writes the target once, the least memory traffic of any blend
          in place. It is not a blend (it leaves out `- tau * target`): its
          time is the floor a blend can reach.
        * ``two_pass``: compat_clone's blend before the one-pass kernel: two
          in-place passes, `target -= tau * target`, then `target -= -tau *
          source`, the target read and written twice.
        """
        import tensorflow as tf  # the compat.v1 module the keras2_on_tf2 fix-up installs

        pairs = list(zip(source.weights, target.weights))
        alpha = tf.constant(tau, tf.float32)
        floor = tf.group(*[tf.raw_ops.ApplyGradientDescent(var=d, alpha=alpha, delta=s) for s, d in pairs])
        passes = []
        for s, d in pairs:
            first = tf.raw_ops.ApplyGradientDescent(var=d, alpha=alpha, delta=d)
            with tf.control_dependencies([first]):
                passes.append(tf.raw_ops.ApplyGradientDescent(var=d, alpha=-alpha, delta=s))
        two = tf.group(*passes)
        return {"one_pass": lambda: self.K.backend.get_session().run(floor),
                "two_pass": lambda: self.K.backend.get_session().run(two)}

    def where(self, model: Any) -> str:
        return "default device (CPU)"


class JaxOps(Ops):
    def settle(self, model: Any) -> Any:
        import jax

        jax.block_until_ready(self.tensors(model))
        return model

    def refresh(self, model: Any) -> None:
        import jax.numpy as jnp

        for v in model.weights:
            v.assign(jnp.zeros(v.shape, v.dtype))
        self.settle(model)

    def raw_copy(self, source: Any, target: Any = None) -> Callable[[], Any]:
        import jax

        arrays = self.tensors(source)
        return lambda: jax.block_until_ready(jax.device_put(arrays, [a.sharding for a in arrays], may_alias=False))


class TorchOps(Ops):
    def tensors(self, model: Any) -> List[Any]:
        return [v.value.detach() for v in model.weights]

    def settle(self, model: Any) -> Any:
        import torch

        if torch.cuda.is_available():
            torch.cuda.synchronize()
        return model

    def refresh(self, model: Any) -> None:
        pass  # copy_ writes into the target's own buffers

    def raw_copy(self, source: Any, target: Any = None) -> Callable[[], Any]:
        import torch

        src = self.tensors(source)
        dst = None if target is None else self.tensors(target)

        def run() -> Any:
            with torch.no_grad():
                out = [t.clone() for t in src] if dst is None else torch._foreach_copy_(dst, src)
            self.settle(source)
            return out

        return run


def ops_for(family: str, K: Any) -> Ops:
    if family == "keras2":
        return Keras2Ops(K)
    backend = K.backend.backend() if family == "keras3" else "tensorflow"
    return {"jax": JaxOps, "torch": TorchOps}.get(backend, Ops)(K)
