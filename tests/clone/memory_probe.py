"""Clone-and-discard cycles in a fresh interpreter; prints one JSON line.

Run by tests/clone/test_memory.py (one subprocess per family, so earlier tests do
not blur the numbers). Usage:

    python tests/clone/memory_probe.py FAMILY CYCLES WARMUP [keras2-mode]

FAMILY is keras3 / tf_keras / keras2. Resident memory is read after WARMUP
cycles and after the last one; `gc.collect()` runs every 10 cycles, and
`clear_session` never (the library must not leak). One exception, native and
documented in docs/memory.md: on Keras 3 with the TensorFlow backend every
`keras.Variable` made from a concrete value (the seed state of `Dropout`,
`GaussianNoise`, random augmentation layers) adds an entry of about 35 KB to
TensorFlow's eager kernel cache, whether or not anything is cloned; the
probe clears that cache (what `keras.backend.clear_session()` also does)
every 50 cycles so that what is measured is the clone itself.

keras2 modes: `grow` clones in one graph (the graph grows by design: every
clone adds ops), `fresh` uses the pattern docs/memory.md recommends (keep the
config and weights on the host; `K.clear_session()` and rebuild every cycle).
"""

from __future__ import annotations

import gc
import json
import os
import sys
import time
from typing import Any


def rss_bytes() -> int:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        import psutil  # not Linux: psutil (requirements/default.txt)

        return int(psutil.Process().memory_info().rss)


def mid_size_model(K: Any) -> Any:
    """About 670k parameters (2.7 MB) in 5 layers: heavy in memory, cheap to rebuild.

    Per-clone time is per layer (tf_keras traces every layer call), so few,
    wide layers: a leaked clone would add its 2.7 MB every cycle.
    """
    inputs = K.Input((128,))
    h = K.layers.Dense(1024, activation="relu")(inputs)
    h = K.layers.BatchNormalization()(h)
    h = K.layers.Dropout(0.1)(h)
    h = K.layers.Dense(512, activation="relu")(h)
    h = K.layers.Dense(10)(h)
    return K.models.Model(inputs, h)


def _kernel_cache_clearer(family: str) -> Any:
    if family != "keras3":
        return None
    import keras

    if keras.backend.backend() != "tensorflow":
        return None
    from tensorflow.python.eager import context

    return lambda: context.context().clear_kernel_cache()


def main(argv: Any) -> int:
    family, cycles, warmup = argv[1], int(argv[2]), int(argv[3])
    mode = argv[4] if len(argv) > 4 else "grow"
    from compat_clone.families.installed import keras_module  # the registry's answer; imports no framework itself

    K = keras_module(family)
    import compat_clone

    model = mid_size_model(K)
    clear_cache = _kernel_cache_clearer(family)
    host_copy = (model.get_config(), model.get_weights()) if mode == "fresh" else None
    graph_ops = []
    base = None
    start = time.perf_counter()
    for i in range(1, cycles + 1):
        if host_copy is not None:  # keras2 pattern: a fresh graph per cycle
            K.backend.clear_session()
            model = K.models.Model.from_config(host_copy[0])
            model.set_weights(host_copy[1])
        clone = compat_clone.clone_model(model, copy_weights=True)
        del clone
        if i % 10 == 0:
            gc.collect()
        if clear_cache is not None and i % 50 == 0:
            clear_cache()
        if family == "keras2" and i % max(1, cycles // 10) == 0:
            graph_ops.append(len(K.backend.get_session().graph.get_operations()))
        if i == warmup:
            gc.collect()
            base = rss_bytes()
    gc.collect()
    end = rss_bytes()
    print(
        json.dumps(
            {
                "family": family,
                "cycles": cycles,
                "warmup": warmup,
                "params": int(model.count_params()),
                "base_rss": base,
                "end_rss": end,
                "growth": (end - base) / base if base else None,
                "seconds": round(time.perf_counter() - start, 2),
                "graph_ops": graph_ops,
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
