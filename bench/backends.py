"""One `Ops` per backend: what the cases need from a framework, each method a few lines.

The base class is TensorFlow eager (tf.keras, Keras 3 on TensorFlow); the
others override what differs. Frameworks are imported inside the methods, so
a worker with only JAX or only torch never imports TensorFlow.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional


class Ops:
    """What the cases need from one backend. The base is TensorFlow eager (tf.keras, Keras 3 on TF)."""

    # Whether `raw_copy(source, target)` moves the bytes (the soft case's "one raw copy of the same bytes"):
    # TensorFlow eager's `assign` of a tensor shares its buffer (copy on write), so there the soft case
    # copies into new buffers.
    copies_into_target = False

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
        """The framework's fastest copy of the source's tensors and nothing else: the anchor of any copy.

        Given a `target`, into the target's variables (`copy_weights`'s job),
        else into new buffers (a clone's); `raw_copy_op` names the op.
        TensorFlow: `assign` of each source tensor to its target variable,
        else `DeepCopy`.
        """
        import tensorflow as tf

        tensors = self.tensors(source)
        if target is None:
            return lambda: [tf.raw_ops.DeepCopy(x=t) for t in tensors]
        pairs = list(zip(tensors, self.tensors(target)))
        return lambda: [d.assign(s, read_value=False) for s, d in pairs]

    def raw_copy_op(self, into_target: bool) -> str:
        """The op `raw_copy` times, in words (each report row names the op it was measured against)."""
        return "tf.Variable.assign(tensor)" if into_target else "tf.raw_ops.DeepCopy"

    def raw_blend(self, source: Any, target: Any, tau: float) -> Optional[Callable[[], Any]]:
        """The framework's fastest blend of the target toward the source in place (None: it has none)."""
        return None

    def raw_blend_op(self) -> str:
        return "-"

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

        self.K.backend.batch_set_value([(v, np.zeros(self.K.backend.int_shape(v), "float32")) for v in model.weights])

    def raw_copy(self, source: Any, target: Any = None) -> Callable[[], Any]:
        import tensorflow as tf  # the compat.v1 module the keras2_on_tf2 fix-up installs

        if target is None:
            copied = tf.group(*[tf.raw_ops.DeepCopy(x=v.value()) for v in source.weights])
        else:
            copied = tf.group(*[d.assign(s.value()) for s, d in zip(source.weights, target.weights)])
        return lambda: self.K.backend.get_session().run(copied)

    def raw_copy_op(self, into_target: bool) -> str:
        return "tf.compat.v1 assign(tensor), one session run" if into_target else "tf.raw_ops.DeepCopy, one session run"

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
        return {
            "one_pass": lambda: self.K.backend.get_session().run(floor),
            "two_pass": lambda: self.K.backend.get_session().run(two),
        }

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
        """One batched `device_put(may_alias=False)` into new buffers (a target's, if given, untouched)."""
        import jax

        arrays = self.tensors(source)
        return lambda: jax.block_until_ready(jax.device_put(arrays, [a.sharding for a in arrays], may_alias=False))

    def raw_copy_op(self, into_target: bool) -> str:
        return "jax.device_put(may_alias=False)"

    def raw_blend(self, source: Any, target: Any, tau: float) -> Optional[Callable[[], Any]]:
        """One jitted blend with the target's arrays donated: written in place, then rebound to the variables."""
        import jax

        src = self.tensors(source)
        blend = jax.jit(lambda s, t: [ti + tau * (si - ti) for si, ti in zip(s, t)], donate_argnums=1)

        def run() -> Any:
            out = blend(src, [v._value for v in target.weights])
            for v, o in zip(target.weights, out):
                v._direct_assign(o)
            return jax.block_until_ready(out)

        return run

    def raw_blend_op(self) -> str:
        return "jax.jit blend, target donated (in place)"


class TorchOps(Ops):
    copies_into_target = True

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
        """`Tensor.copy_` per tensor into the target's own buffers, else `clone()` per tensor: memcpy-class."""
        import torch

        src = self.tensors(source)
        dst = None if target is None else self.tensors(target)

        def run() -> Any:
            with torch.no_grad():
                out = [t.clone() for t in src] if dst is None else [d.copy_(s) for d, s in zip(dst, src)]
            self.settle(source)
            return out

        return run

    def raw_copy_op(self, into_target: bool) -> str:
        return "torch Tensor.copy_ per tensor" if into_target else "torch Tensor.clone per tensor"

    def raw_blend(self, source: Any, target: Any, tau: float) -> Optional[Callable[[], Any]]:
        import torch

        src, dst = self.tensors(source), self.tensors(target)

        def lerp() -> Any:
            with torch.no_grad():
                torch._foreach_lerp_(dst, src, tau)
            return self.settle(target)

        return lerp

    def raw_blend_op(self) -> str:
        return "torch._foreach_lerp_"


def ops_for(family: str, K: Any) -> Ops:
    if family == "keras2":
        return Keras2Ops(K)
    backend = K.backend.backend() if family == "keras3" else "tensorflow"
    return {"jax": JaxOps, "torch": TorchOps}.get(backend, Ops)(K)
