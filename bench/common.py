"""What every benchmark case shares: sizes, model builders, the environment, timing.

Imported inside an environment by `bench/worker.py`; it imports no framework
at module level, so a worker runs wherever `compat_clone` and one Keras are
installed (TensorFlow is not needed for Keras 3 on JAX or torch).
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import os
import time
from importlib import metadata
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

from backends import Ops

RECURSION_LIMIT = 100_000  # Keras 3.15 / tf_keras 2.21 walk a graph recursively
STACK_BYTES = 512 * 1024 * 1024
Times = Dict[str, Dict[str, List[float]]]  # method -> {"wall": [...], "cpu": [...]}


@dataclasses.dataclass(frozen=True)
class Plan:
    """How much to measure: the full run, or `QUICK` (a smoke run, not for the record)."""

    pairs: int = 4  # clone pairs per case (even: each side goes first half the time)
    growth: Tuple[int, ...] = (500, 1000, 2000, 4000)
    copy_mb: float = 134.0  # weight copy: Dense(2048) layers holding this many MB
    copy_reps: int = 15
    heavy_layers: int = 8  # the weight-heavy model: heavy_layers x Dense(heavy_width)
    heavy_width: int = 4096  # 8 x 4096 x 4096 float32: 537 MB
    heavy_reps: int = 3
    soft_reps: int = 11  # soft update on the heavy model: ~0.1-1 s a call, and noisy
    gpu_chain: int = 300  # GPU clone overhead: a chain of Dense(64)
    gpu_heavy_layers: int = 4  # GPU weights: gpu_heavy_layers x Dense(gpu_heavy_width) ...
    gpu_heavy_width: int = 16384  # ... 4 x 16384 x 16384 float32: 4.3 GB
    gpu_reps: int = 11  # GPU copies, blends and clones of that model, interleaved
    import_runs: int = 15
    count_calls: bool = True  # cProfile'd clones: calls ratio and compat_clone's own share


QUICK = Plan(
    pairs=2,
    growth=(100, 200, 400, 800),
    copy_mb=17.0,
    copy_reps=3,
    heavy_layers=2,
    heavy_width=1024,
    heavy_reps=2,
    soft_reps=3,
    gpu_chain=30,
    gpu_heavy_layers=2,
    gpu_heavy_width=1024,
    gpu_reps=3,
    import_runs=3,
    count_calls=False,
)


# --------------------------------------------------------------------------- models


def dense_chain(K: Any, depth: int, width: int = 16) -> Any:
    """`depth` Dense(width) layers one after the other, on `width` inputs."""
    inputs = x = K.Input((width,))
    for _ in range(depth):
        x = K.layers.Dense(width)(x)
    return K.Model(inputs, x)


def relu_chain(K: Any, depth: int, width: int = 8) -> Any:
    """`depth` weightless ReLU layers: the clone's per-layer bookkeeping is all there is."""
    inputs = x = K.Input((width,))
    for _ in range(depth):
        x = K.layers.ReLU()(x)
    return K.Model(inputs, x)


def shared_dag(K: Any, branches: int = 200, width: int = 16, shared: int = 4) -> Any:
    """`branches` parallel branches reusing `shared` Dense layers, summed at the end."""
    inputs = K.Input((width,))
    common = [K.layers.Dense(width, name=f"shared_{i}") for i in range(shared)]
    outputs = []
    for b in range(branches):
        h = K.layers.Dense(width)(common[b % shared](inputs))
        outputs.append(common[(b + 1) % shared](h))
    return K.Model(inputs, K.layers.Add()(outputs))


# --------------------------------------------------------------------------- environment


def families_here() -> List[str]:
    """The Keras families to measure in this environment.

    The matrix runner exports the table's claim (`COMPAT_CLONE_EXPECT_FAMILY`);
    elsewhere (the project's `.venv`) every installed Keras package counts,
    its family given by compat_clone's own version rule.
    """
    claimed = os.environ.get("COMPAT_CLONE_EXPECT_FAMILY")
    if claimed:
        return [claimed]
    from compat_clone.families.installed import installed_families

    found: List[str] = []
    for family, _, _ in installed_families():
        if family not in found:
            found.append(family)
    return found


def keras_module(family: str) -> Any:
    """The Keras that builds models of `family` in this environment (the family registry's answer)."""
    from compat_clone.families.installed import keras_module as registry_keras_module

    return registry_keras_module(family)


def versions() -> Dict[str, str]:
    out = {}
    for dist in (
        "compat-clone",
        "keras",
        "tf_keras",
        "tensorflow",
        "tensorflow-cpu",
        "jax",
        "jaxlib",
        "torch",
        "numpy",
        "keras_applications",
    ):
        with contextlib.suppress(metadata.PackageNotFoundError):
            out[dist] = metadata.version(dist)
    return out


# --------------------------------------------------------------------------- timing


def interleave(
    methods: Mapping[str, Callable[[], Any]],
    reps: int,
    *,
    before_rep: Optional[Callable[[int], None]] = None,
    before_each: Optional[Callable[[], None]] = None,
    warmup: bool = True,
) -> Times:
    """Times each method `reps` times, interleaved: rep i starts at method i (A B, B A, ...).

    `gc.collect()` and `before_each` run untimed before every call; what a
    call returns is dropped after the clock stops. Both wall time and this
    process's CPU time (all threads) are kept.
    """
    names = list(methods)
    if warmup:
        for name in names:
            if before_each:
                before_each()
            methods[name]()
    out: Times = {name: {"wall": [], "cpu": []} for name in names}
    for rep in range(reps):
        if before_rep:
            before_rep(rep)
        k = rep % len(names)
        for name in names[k:] + names[:k]:
            if before_each:
                before_each()
            gc.collect()
            cpu0, wall0 = time.process_time(), time.perf_counter()
            result = methods[name]()
            wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
            del result
            out[name]["wall"].append(wall)
            out[name]["cpu"].append(cpu)
    return out


def peak_rss(fn: Callable[[], Any]) -> Tuple[Any, int]:
    """Runs `fn`; returns its result and the process's peak resident memory (bytes) while it ran.

    Linux: the kernel's high-water mark (`VmHWM`), reset first through
    `/proc/self/clear_refs`. Elsewhere: psutil, sampled every millisecond.
    """
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return fn(), _proc_status_kb("VmHWM") * 1024
    except OSError:
        pass
    import threading

    import psutil

    proc, peak, done = psutil.Process(), [0], threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], proc.memory_info().rss)
            time.sleep(0.001)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        result = fn()
    finally:
        done.set()
        sampler.join()
    return result, max(peak[0], proc.memory_info().rss)


def rss() -> int:
    try:
        return _proc_status_kb("VmRSS") * 1024
    except OSError:
        import psutil

        return int(psutil.Process().memory_info().rss)


def _proc_status_kb(field: str) -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise OSError(f"no {field} in /proc/self/status")


@dataclasses.dataclass
class Ctx:
    """One family in one worker process: its Keras, its backend's `Ops`, the plan, the device."""

    family: str
    K: Any
    ops: Ops
    plan: Plan
    device: Optional[str] = None

    def fresh(self) -> None:
        """New name counters, and for standalone Keras 2 a new TF1 graph (which keeps every clone)."""
        gc.collect()
        self.K.backend.clear_session()
        gc.collect()

    def placed(self) -> Any:
        """Builds under this scope land on `device` (Keras 3 only; None: the backend's default)."""
        import contextlib

        return contextlib.nullcontext() if self.device is None else self.K.device(self.device)
