"""Weight copy: `compat_clone.copy_weights` vs `set_weights(get_weights())` vs a raw copy.

One run, every Keras family this environment has (Keras 3 on its backend,
`tf_keras` / `tf.keras` where TensorFlow is installed, standalone Keras 2 in
its TF1 graph):

* ``copy_weights``: `compat_clone.copy_weights(source, target)` (planning and
  shape/dtype checks included): variable to variable on TensorFlow, one
  batched `device_put` on JAX, in-place `copy_` on torch, one cached grouped
  assign op on standalone Keras 2.
* ``get_set``: `target.set_weights(source.get_weights())`, the peers' way: a
  round trip through host memory (NumPy).
* ``raw``: the framework copying the same tensors and nothing else
  (`tf.raw_ops.DeepCopy`, eagerly or as one graph op for Keras 2,
  `jax.device_put(..., may_alias=False)`, `torch.Tensor.clone`): the floor
  for a real copy.

Before each timed call the target's variables are given fresh buffers of
their own (untimed), so each copy starts where a new clone starts. Methods
are interleaved rep by rep (A B C A B C ...), `gc.collect()` first; results
are medians. Device work is awaited before the clock stops
(`block_until_ready`, `torch.cuda.synchronize`, a TF device sync).

On TensorFlow a variable-to-variable assign shares the source's buffer
(TensorFlow's copy-on-write: a later in-place update of either side copies
first), so ``copy_weights`` can beat ``raw``; on JAX and torch it *is* a raw
copy (JAX arrays are not shared: Keras donates state buffers in `fit`).

    python bench/bench_copy.py [--mb 134] [--reps 15] [--family keras3] [--device cuda:0] [--json OUT]
"""

from __future__ import annotations

import argparse
import gc
import importlib
import json
import os
import platform
import statistics
import sys
import time
from typing import Any, Callable, Dict, List, Optional

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

WIDTH = 2048  # a Dense(2048) on 2048 inputs holds 16.8 MB of float32


# -- environment -------------------------------------------------------------------


def _importable(name: str) -> bool:
    try:
        importlib.import_module(name)
    except Exception:
        return False
    return True


def families() -> List[str]:
    """The families this environment can run: `keras3` (any backend), `tf_keras`."""
    found = []
    if _importable("keras"):
        import keras

        release = tuple(int(part) for part in keras.__version__.split(".")[:2])
        if release >= (3, 0):
            found.append("keras3")
        elif release >= (2, 4):
            found.append("tf_keras")
        else:
            found.append("keras2")  # standalone Keras 2.0-2.3, TF1 graph mode
    if "tf_keras" not in found and _importable("tf_keras"):
        found.append("tf_keras")
    return found


def keras_module(family: str) -> Any:
    if family == "tf_keras":
        try:
            return importlib.import_module("tf_keras")
        except ImportError:
            import tensorflow as tf

            return tf.keras
    return importlib.import_module("keras")


def backend_of(family: str) -> str:
    if family in ("keras3", "keras2"):
        import keras

        return str(keras.backend.backend())
    return "tensorflow"


def _versions() -> Dict[str, str]:
    from importlib import metadata

    out = {}
    for dist in ("keras", "tf_keras", "tensorflow", "tensorflow-cpu", "jax", "jaxlib", "torch"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            pass
    return out


# -- one backend's primitives --------------------------------------------------------


class Ops:
    """Sync, fresh target buffers and a raw copy, for one backend."""

    def __init__(self, family: str, backend: str) -> None:
        self.family = family
        self.backend = backend

    def inner(self, variable: Any) -> Any:
        if self.backend == "tensorflow" and self.family == "keras3":
            return variable.value
        if self.family == "keras3":
            return variable.value
        return variable

    def sync(self, variables: List[Any]) -> None:
        if self.family == "keras2":
            return  # session.run returns when the ops have run
        if self.backend == "jax":
            import jax

            jax.block_until_ready([v.value for v in variables])
        elif self.backend == "torch":
            import torch

            if torch.cuda.is_available():
                torch.cuda.synchronize()
        elif self.backend == "tensorflow":
            import tensorflow as tf

            sync = getattr(getattr(tf.test, "experimental", None), "sync_devices", None)
            if sync is not None and tf.config.list_logical_devices("GPU"):
                sync()

    def refresh(self, variables: List[Any]) -> None:
        """Gives each target variable a buffer of its own (as a new clone has)."""
        if self.family == "keras2":
            import keras
            import numpy as np

            keras.backend.batch_set_value([(v, np.zeros(keras.backend.int_shape(v), "float32")) for v in variables])
        elif self.backend == "tensorflow":
            import tensorflow as tf

            for v in variables:
                tv = self.inner(v)
                tv.assign(tf.zeros(tv.shape, tv.dtype), read_value=False)
        elif self.backend == "jax":
            import jax.numpy as jnp

            for v in variables:
                v.assign(jnp.zeros(v.shape, v.dtype))
        # torch: copy_ writes into the target's own buffers already.
        self.sync(variables)

    def raw_copy(self, variables: List[Any]) -> Callable[[], Any]:
        """A function copying the tensors of `variables` with the framework alone."""
        if self.family == "keras2":
            import keras
            import tensorflow as tf  # the compat.v1 module the fix-up installed

            # One graph op copying every variable (built once, run in Keras's session).
            copied = tf.group(*[tf.raw_ops.DeepCopy(x=v.value()) for v in variables])

            def run_graph() -> Any:
                return keras.backend.get_session().run(copied)

            return run_graph
        if self.backend == "tensorflow":
            import tensorflow as tf

            tensors = [self.inner(v) for v in variables]

            def run() -> Any:
                return [tf.raw_ops.DeepCopy(x=t) for t in tensors]

            return run
        if self.backend == "jax":
            import jax

            arrays = [v.value for v in variables]
            shardings = [a.sharding for a in arrays]

            def run_jax() -> Any:
                out = jax.device_put(arrays, shardings, may_alias=False)
                jax.block_until_ready(out)
                return out

            return run_jax
        if self.backend == "torch":
            import torch

            tensors = [v.value.detach() for v in variables]

            def run_torch() -> Any:
                with torch.no_grad():
                    return [t.clone() for t in tensors]

            return run_torch
        raise ValueError(f"no raw copy for backend {self.backend!r}")

    def device_of(self, variable: Any) -> str:
        inner = self.inner(variable)
        for attr in ("device", "sharding"):
            value = getattr(inner, attr, None)
            if value is not None and not callable(value) and str(value):
                return str(value)
        return "default device (CPU)" if self.family == "keras2" else "?"


# -- the measurement ---------------------------------------------------------------------


def build(K: Any, layers: int, seed: int) -> Any:
    import numpy as np

    inputs = x = K.Input((WIDTH,))
    for _ in range(layers):
        x = K.layers.Dense(WIDTH)(x)
    model = K.models.Model(inputs, x)
    rng = np.random.default_rng(seed)
    model.set_weights([rng.standard_normal(tuple(w.shape), dtype="float32") for w in model.weights])
    return model


def _placed(family: str, backend: str, device: Optional[str]) -> Any:
    import contextlib

    if device is None:
        return contextlib.nullcontext()
    if backend == "tensorflow":
        import tensorflow as tf

        return tf.device(device)
    import keras

    return keras.device(device)


def measure(family: str, mb: float, reps: int, device: Optional[str]) -> Dict[str, Any]:
    import numpy as np

    import compat_clone

    K = keras_module(family)
    backend = backend_of(family)
    ops = Ops(family, backend)
    layers = max(1, round(mb * 1e6 / ((WIDTH * WIDTH + WIDTH) * 4)))
    with _placed(family, backend, device):
        source = build(K, layers, seed=0)
    target = compat_clone.clone_model(source)  # where the source is
    nbytes = sum(int(np.prod(w.shape)) * 4 for w in source.weights)
    raw = ops.raw_copy(source.weights)

    def copy_weights() -> None:
        compat_clone.copy_weights(source, target)

    def get_set() -> None:
        target.set_weights(source.get_weights())

    methods: Dict[str, Callable[[], Any]] = {"copy_weights": copy_weights, "get_set": get_set, "raw": raw}
    times: Dict[str, List[float]] = {name: [] for name in methods}
    for name, fn in methods.items():  # warm-up (first-call tracing, allocator)
        ops.refresh(target.weights)
        fn()
        ops.sync(target.weights)
    for _ in range(reps):
        for name, fn in methods.items():
            ops.refresh(target.weights)
            gc.collect()
            start = time.perf_counter()
            out = fn()
            ops.sync(target.weights)
            times[name].append(time.perf_counter() - start)
            del out
    # The copy is exact.
    ops.refresh(target.weights)
    copy_weights()
    for a, b in zip(source.get_weights(), target.get_weights()):
        assert np.array_equal(a, b)
    med = {name: statistics.median(ts) for name, ts in times.items()}
    return {
        "family": family,
        "backend": backend,
        "keras": f"{K.__name__.split('.')[0]} {K.__version__}",
        "device": ops.device_of(target.weights[0]),
        "layers": layers,
        "mb": round(nbytes / 1e6, 1),
        "reps": reps,
        "median_s": med,
        "min_s": {name: min(ts) for name, ts in times.items()},
        "speedup_vs_get_set": med["get_set"] / med["copy_weights"],
        "ratio_to_raw": med["copy_weights"] / med["raw"],
    }


def _fmt_ms(seconds: float) -> str:
    return f"{seconds * 1e3:9.2f} ms"


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mb", type=float, default=134.0, help="weights per model, in MB (default 134)")
    parser.add_argument("--reps", type=int, default=15, help="timed repetitions per method (default 15)")
    parser.add_argument("--family", choices=("keras3", "tf_keras", "keras2"), action="append", help="family (repeatable); default: every one here")
    parser.add_argument("--device", default=None, help="build the source there (e.g. cuda:0, /GPU:0); default: the backend's default")
    parser.add_argument("--json", default=None, help="write the results to this file")
    args = parser.parse_args(argv)

    chosen = args.family or families()
    if not chosen:
        print("no Keras family importable here", file=sys.stderr)
        return 2
    results = []
    for family in chosen:
        res = measure(family, args.mb, args.reps, args.device)
        results.append(res)
        med = res["median_s"]
        print(
            f"{res['keras']} [{res['backend']}] on {res['device']}: {res['mb']} MB in {res['layers']} Dense layers, "
            f"median of {res['reps']}"
        )
        low = res["min_s"]
        print(f"  copy_weights {_fmt_ms(med['copy_weights'])}  (min {_fmt_ms(low['copy_weights'])})")
        print(
            f"  get/set      {_fmt_ms(med['get_set'])}  (min {_fmt_ms(low['get_set'])})"
            f"   copy_weights is {res['speedup_vs_get_set']:.1f}x faster"
        )
        print(
            f"  raw copy     {_fmt_ms(med['raw'])}  (min {_fmt_ms(low['raw'])})"
            f"   copy_weights / raw = {res['ratio_to_raw']:.2f}"
        )
        sys.stdout.flush()
    if args.json:
        payload = {
            "bench": "copy",
            "command": " ".join([os.path.basename(sys.executable)] + sys.argv),
            "python": platform.python_version(),
            "machine": platform.machine(),
            "cpus": os.cpu_count(),
            "versions": _versions(),
            "results": results,
        }
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(payload, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
