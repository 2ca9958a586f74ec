"""Clones live where their source lives; weights move device to device.

Runs on the CPU, so CI can run it, and on a machine with a GPU too (the
device a clone lands on by default is read, never assumed to be the CPU):

* TensorFlow split into two logical CPUs. Logical devices must be configured
  before TensorFlow initializes, so those checks run in a fresh interpreter:
  this file, run as a script (`python tests/test_placement.py tf OUT`), does
  every TF check once per module and writes one JSON record per check; each
  test below asserts its record. Same for a MultiWorkerMirroredStrategy of two
  worker processes on 127.0.0.1 and for JAX with four host devices
  (`XLA_FLAGS=--xla_force_host_platform_device_count=4`), taken from
  `jax.devices("cpu")`: on a GPU machine JAX's default devices are the GPUs.
* In-process: a bad device raises `DeviceNotFoundError` before anything is
  built, copies are exact, not shared, and atomic (a mismatch leaves the
  target bit for bit unchanged), torch `"cpu"` and the default device.

Each test skips where its backend is absent; the matrix runs every env.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import traceback
from typing import Any, Callable, Dict, List, Optional

import pytest
from tests._py import zip_strict
from tests.conftest import xla_flags

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
WORKER_TIMEOUT = 300

# -- what this environment has ------------------------------------------------


def _keras3_backend() -> Optional[str]:
    try:
        import keras
    except Exception:
        return None
    if not keras.__version__.startswith("3."):
        return None
    return str(keras.backend.backend())


def _tf_families() -> List[str]:
    """Families under test here whose models live in TensorFlow."""
    from conftest import families_under_test

    found = []
    for fam in families_under_test():
        if fam == "keras3" and _keras3_backend() == "tensorflow":
            found.append(fam)
        elif fam == "tf_keras":
            found.append(fam)
    return found


if __name__ == "__main__":
    # A worker: nothing may touch TensorFlow before its devices are configured.
    TF_FAMILIES: List[str] = []
    BACKEND: Optional[str] = None
    KERAS3_UNDER_TEST = False
else:
    TF_FAMILIES = _tf_families()
    BACKEND = _keras3_backend()
    KERAS3_UNDER_TEST = "keras3" in __import__("conftest").families_under_test()

needs_tf = pytest.mark.skipif(not TF_FAMILIES, reason="no TensorFlow-based Keras family under test here")
needs_jax = pytest.mark.skipif(
    not (KERAS3_UNDER_TEST and BACKEND == "jax"), reason="Keras 3 on JAX is not under test here"
)
needs_torch = pytest.mark.skipif(
    not (KERAS3_UNDER_TEST and BACKEND == "torch"), reason="Keras 3 on torch is not under test here"
)


# -- builders (plain functions; shared by the tests and the workers) -----------


def build(K: Any, units: int = 3, seed: int = 0) -> Any:
    """A small functional model with trainable and non-trainable variables."""
    inputs = K.Input((4,), name="x")
    h = K.layers.Dense(8, name="dense_a")(inputs)
    h = K.layers.BatchNormalization(name="bn")(h)
    outputs = K.layers.Dense(units, name="dense_b")(h)
    model = K.models.Model(inputs, outputs, name="placed")
    _fill(model, seed)
    return model


def _fill(model: Any, seed: int) -> None:
    import numpy as np

    rng = np.random.default_rng(seed)
    # get_weights() order (standalone Keras 2 lists `model.weights` differently).
    model.set_weights([rng.standard_normal(w.shape).astype("float32") for w in model.get_weights()])


def weights_np(model: Any) -> List[Any]:
    import numpy as np

    return [np.array(w.numpy() if hasattr(w, "numpy") else w) for w in model.get_weights()]


def assert_same_weights(a: Any, b: Any) -> None:
    import numpy as np

    wa, wb = weights_np(a), weights_np(b)
    assert len(wa) == len(wb)
    for x, y in zip_strict(wa, wb):
        assert x.dtype == y.dtype and x.shape == y.shape
        assert np.array_equal(x, y)


# -- running a fresh interpreter ---------------------------------------------------


def _run_script(args: List[str], env: Dict[str, str], timeout: int = WORKER_TIMEOUT) -> "subprocess.CompletedProcess[str]":
    full_env = dict(os.environ)
    full_env.update(env)
    full_env.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    full_env["PYTHONPATH"] = os.pathsep.join([HERE, ROOT, full_env.get("PYTHONPATH", "")])
    return subprocess.run(
        [sys.executable, os.path.abspath(__file__), *args],
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
    )


def _once_per_run(tmp_path_factory: Any, name: str, produce: Callable[[], Any]) -> Any:
    """`produce()` once per test run, even when pytest-xdist spreads the tests.

    Under xdist every worker process has its own module fixtures; the workers
    of one run share the parent of their base temp folders (the xdist recipe
    for once-per-session fixtures), so the first worker to get the lock runs
    the (slow, multi-process) worker and the others read its file.
    """
    if not os.environ.get("PYTEST_XDIST_WORKER") or os.name != "posix":
        return produce()
    import fcntl

    base = str(tmp_path_factory.getbasetemp().parent / f"placement_{name}")
    with open(base + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.path.exists(base + ".json"):
            with open(base + ".json", encoding="utf-8") as fh:
                return json.load(fh)
        result = produce()
        with open(base + ".json", "w", encoding="utf-8") as fh:
            json.dump(result, fh)
        return result


def _records(
    tmp_path_factory: Any, mode: str, env: Optional[Dict[str, str]] = None, extra: Optional[List[str]] = None
) -> Dict[str, Any]:
    return dict(_once_per_run(tmp_path_factory, mode, lambda: _run_worker(mode, env, extra)))


def _run_worker(mode: str, env: Optional[Dict[str, str]], extra: Optional[List[str]]) -> Dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "out.json")
        proc = _run_script([mode, out, *(extra or [])], env or {})
        if not os.path.exists(out):
            pytest.fail(f"worker {mode!r} wrote no results (rc={proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}")
        with open(out, encoding="utf-8") as fh:
            return dict(json.load(fh))


def _expect(records: Dict[str, Any], key: str) -> Dict[str, Any]:
    if key not in records:
        pytest.fail(f"no record {key!r}; the worker recorded {sorted(records)}")
    rec = records[key]
    if rec.get("error"):
        pytest.fail(f"{key} failed in the worker:\n{rec['error']}")
    return dict(rec)


# ==============================================================================
# TensorFlow: two logical CPUs, Mirrored / OneDevice strategies (fresh process)
# ==============================================================================


@pytest.fixture(scope="module")
def tf_records(tmp_path_factory: Any) -> Dict[str, Any]:
    return _records(tmp_path_factory, "tf")


TF_CHECKS = [
    "device_like_source",
    "explicit_device",
    "mirrored",
    "one_device",
    "copy_across_devices",
    "enclosing_strategy_scope",
    "sync_on_read_sum_refused_first",
]


@needs_tf
@pytest.mark.per_claim  # worker interpreters with virtual devices: 35-57 s per environment under load
@pytest.mark.parametrize("family", TF_FAMILIES)
@pytest.mark.parametrize("check", TF_CHECKS)
def test_tf_placement(tf_records: Dict[str, Any], family: str, check: str) -> None:
    rec = _expect(tf_records, f"{family}:{check}")
    assert rec["ok"] is True


@needs_tf
@pytest.mark.parametrize("family", TF_FAMILIES)
def test_tf_native_clone_ignores_the_source_device(tf_records: Dict[str, Any], family: str) -> None:
    """Side by side: natively a model built on /CPU:1 is cloned onto /CPU:0."""
    rec = _expect(tf_records, f"{family}:device_like_source")
    assert rec["source"].endswith("CPU:1")
    assert rec["compat"].endswith("CPU:1")
    assert rec["native"].endswith("CPU:0")


@needs_tf
@pytest.mark.parametrize("family", TF_FAMILIES)
def test_tf_native_clone_drops_the_strategy(tf_records: Dict[str, Any], family: str) -> None:
    rec = _expect(tf_records, f"{family}:mirrored")
    assert rec["native_distributed"] is False
    assert rec["compat_distributed"] is True


# -- MultiWorkerMirroredStrategy: two worker processes on loopback -----------------


def _free_ports(n: int) -> List[int]:
    socks = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


@pytest.fixture(scope="module")
def mwms_records(tmp_path_factory: Any) -> List[Dict[str, Any]]:
    return list(_once_per_run(tmp_path_factory, "mwms", _run_two_workers))


def _run_two_workers() -> List[Dict[str, Any]]:
    ports = _free_ports(2)
    cluster = {"worker": [f"127.0.0.1:{p}" for p in ports]}
    with tempfile.TemporaryDirectory() as tmp:
        procs = []
        outs = []
        for index in range(2):
            out = os.path.join(tmp, f"worker{index}.json")
            outs.append(out)
            env = dict(os.environ)
            env["TF_CONFIG"] = json.dumps({"cluster": cluster, "task": {"type": "worker", "index": index}})
            env["TF_CPP_MIN_LOG_LEVEL"] = "3"
            env["PYTHONPATH"] = os.pathsep.join([HERE, ROOT, env.get("PYTHONPATH", "")])
            # Loopback only: no proxy may intercept the workers' gRPC channels.
            for var in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "grpc_proxy"):
                env.pop(var, None)
            env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost"
            procs.append(
                subprocess.Popen(
                    [sys.executable, os.path.abspath(__file__), "mwms", out],
                    env=env,
                    cwd=ROOT,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    text=True,
                )
            )
        logs = []
        for proc in procs:
            try:
                logs.append(proc.communicate(timeout=WORKER_TIMEOUT)[0])
            except subprocess.TimeoutExpired:
                for p in procs:
                    p.kill()
                pytest.fail("MultiWorkerMirroredStrategy workers did not finish in time")
        results = []
        for out, log in zip_strict(outs, logs):
            if not os.path.exists(out):
                pytest.fail(f"a worker wrote no results:\n{log[-6000:]}")
            with open(out, encoding="utf-8") as fh:
                results.append(dict(json.load(fh)))
        return results


@pytest.mark.soak
@needs_tf
@pytest.mark.parametrize("family", TF_FAMILIES)
def test_multi_worker_mirrored(mwms_records: List[Dict[str, Any]], family: str) -> None:
    task_ids = []
    for index, records in enumerate(mwms_records):
        rec = _expect(records, f"{family}:multi_worker")
        assert rec["ok"] is True, f"worker {index}"
        assert rec["is_mwms"] is True
        assert rec["workers"] == 2
        task_ids.append(rec["task_id"])
    assert sorted(task_ids) == [0, 1]


# ==============================================================================
# JAX: four host devices, keras.distribution layouts (fresh process)
# ==============================================================================


@pytest.fixture(scope="module")
def jax_records(tmp_path_factory: Any) -> Dict[str, Any]:
    return _records(tmp_path_factory, "jax", {"XLA_FLAGS": xla_flags("--xla_force_host_platform_device_count=4"), "KERAS_BACKEND": "jax"})


JAX_CHECKS = [
    "device_put_source",
    "model_parallel_layout",
    "data_parallel_layout",
    "explicit_device",
    "explicit_sharding",
    "copy_keeps_target_sharding",
    "copy_survives_donation",
]


@needs_jax
@pytest.mark.parametrize("check", JAX_CHECKS)
def test_jax_placement(jax_records: Dict[str, Any], check: str) -> None:
    rec = _expect(jax_records, f"keras3:{check}")
    assert rec["ok"] is True


@needs_jax
def test_jax_native_clone_drops_the_layout(jax_records: Dict[str, Any]) -> None:
    rec = _expect(jax_records, "keras3:model_parallel_layout")
    assert rec["native_sharded"] is False
    assert rec["compat_sharded"] is True


# ==============================================================================
# In-process: every backend
# ==============================================================================

BAD_DEVICES = ["cuda:7", "/GPU:9", "tpu:3", "no-such-device"]


@pytest.mark.parametrize("bad", BAD_DEVICES)
def test_bad_device_raises_before_building(K: Any, family: str, bad: str) -> None:
    import compat_clone

    if family == "keras2":
        pytest.skip("standalone Keras 2 placement is tested with its adapter")
    model = build(K)
    built: List[str] = []

    def spy(layer: Any) -> Any:
        built.append(layer.name)
        return layer.__class__.from_config(layer.get_config())

    with pytest.raises(compat_clone.DeviceNotFoundError) as info:
        compat_clone.clone_model(model, clone_function=spy, device=bad)
    assert not built, f"layers were built before the device was checked: {built}"
    message = str(info.value)
    assert repr(bad) in message
    assert "Available devices" in message
    assert isinstance(info.value, ValueError)


def test_bad_device_type_raises(K: Any, family: str) -> None:
    import compat_clone

    if family == "keras2":
        pytest.skip("standalone Keras 2 placement is tested with its adapter")
    with pytest.raises(compat_clone.DeviceNotFoundError, match="42"):
        compat_clone.clone_model(build(K), device=42)


def test_copy_is_exact_and_not_shared(K: Any, family: str) -> None:
    import numpy as np

    import compat_clone

    model = build(K, seed=1)
    clone = compat_clone.clone_model(model, copy_weights=True)
    assert_same_weights(model, clone)
    for src, dst in zip_strict(model.weights, clone.weights):
        assert src is not dst
        sv, dv = getattr(src, "value", src), getattr(dst, "value", dst)
        assert sv is not dv
    # Writing the clone leaves the source alone (no aliasing that leaks).
    # (set_weights: a variable's `assign` only builds an op in standalone
    # Keras 2's graph mode, and nothing would be written.)
    before = weights_np(model)
    written = clone.get_weights()
    written[0] = np.full_like(written[0], 7)
    clone.set_weights(written)
    assert (weights_np(clone)[0] == 7).all()  # the write happened
    after = weights_np(model)
    for x, y in zip_strict(before, after):
        assert (x == y).all()


def test_copy_mismatch_leaves_target_bit_for_bit(K: Any, family: str) -> None:
    import compat_clone

    source = build(K, units=3, seed=2)
    target = build(K, units=5, seed=3)  # differs in the *last* layer only
    before = [w.tobytes() for w in weights_np(target)]
    with pytest.raises(compat_clone.WeightsMismatchError):
        compat_clone.copy_weights(source, target)
    assert [w.tobytes() for w in weights_np(target)] == before


def test_copy_weights_device_none_default_places_with_source(K: Any, family: str) -> None:
    """device=None on one default device: the clone's variables share it."""
    import compat_clone

    if family == "keras2":
        pytest.skip("standalone Keras 2 placement is tested with its adapter")
    model = build(K)
    clone = compat_clone.clone_model(model)
    source_places = [_where(v) for v in model.weights]
    assert "?" not in source_places, source_places  # a placement was read for every variable
    assert [_where(v) for v in clone.weights] == source_places


def _where(variable: Any) -> str:
    value = getattr(variable, "_value", None)
    for obj in (value, variable):
        if obj is None:
            continue
        sharding = getattr(obj, "sharding", None)
        if sharding is not None:
            return str(sorted(d.id for d in sharding.device_set))
        device = getattr(obj, "device", None)
        if device is not None and not callable(device):
            return str(device)
    return "?"


@needs_tf
def test_tf_sync_on_read_sum_target_refused_before_any_write() -> None:
    """The TF assignment phase plans every pair first: a refusal writes nothing."""
    check_sync_on_read_sum_refused(["/CPU:0"])


def check_sync_on_read_sum_refused(devices: List[str]) -> None:
    """A copy into a SUM-aggregated, sync-on-read variable (a MirroredStrategy over `devices`) is
    refused before anything is written: the other pair's target keeps its zeros."""
    import numpy as np
    import tensorflow as tf

    from compat_clone import InvalidArgumentError, placement as _placement

    strategy = tf.distribute.MirroredStrategy(devices)
    a = tf.Variable(np.ones(3, "float32"))
    b = tf.Variable(np.zeros(3, "float32"))
    with strategy.scope():
        c = tf.Variable(
            np.zeros(3, "float32"),
            synchronization=tf.VariableSynchronization.ON_READ,
            aggregation=tf.VariableAggregation.SUM,
        )
    with pytest.raises(InvalidArgumentError, match="Nothing was copied"):
        _placement.assign_tf([(a, b), (a, c)])
    assert b.numpy().tolist() == [0, 0, 0]


# -- torch ---------------------------------------------------------------------------


@needs_torch
@pytest.mark.parametrize("device", [None, "cpu", "CPU:0", "/CPU:0"])
def test_torch_cpu(device: Optional[str]) -> None:
    """`device="cpu"` puts the clone on the CPU; `device=None` where the source is.

    The source is built where Keras puts new tensors, read here from a new
    tensor: the first GPU where torch has one, the CPU otherwise.
    """
    import keras
    import torch

    import compat_clone

    default = keras.ops.zeros((1,)).device
    model = build(keras, seed=4)
    assert [v.value.device for v in model.weights] == [default] * len(model.weights)
    expected = default if device is None else torch.device("cpu")
    clone = compat_clone.clone_model(model, device=device, copy_weights=True)
    assert [v.value.device for v in clone.weights] == [expected] * len(clone.weights)
    assert_same_weights(model, clone)
    for src, dst in zip_strict(model.weights, clone.weights):
        assert src.value.data_ptr() != dst.value.data_ptr()


@needs_torch
def test_torch_copy_into_other_model_in_place() -> None:
    """copy_ in place: the target keeps its own Parameter objects and buffers."""
    import keras

    import compat_clone

    source, target = build(keras, seed=5), build(keras, seed=6)
    params = [v.value for v in target.weights]
    ptrs = [p.data_ptr() for p in params]
    compat_clone.copy_weights(source, target)
    assert [v.value for v in target.weights] == params
    assert [v.value.data_ptr() for v in target.weights] == ptrs
    assert_same_weights(source, target)


# -- one GPU (torch, JAX): runs on a machine with one, skips elsewhere ---------------


def _platform(tensor: Any) -> str:
    """`gpu` or `cpu`: where a torch tensor or a JAX array lives."""
    if hasattr(tensor, "devices"):  # a JAX array
        return ",".join(sorted({d.platform for d in tensor.devices()}))
    return "gpu" if tensor.device.type == "cuda" else str(tensor.device.type)


def _platforms(model: Any) -> List[str]:
    return [_platform(v.value) for v in model.weights]


def _gpu_default() -> bool:
    """Whether Keras 3 on torch / JAX puts new tensors on a GPU here."""
    if not KERAS3_UNDER_TEST or BACKEND not in ("torch", "jax"):
        return False
    import keras

    return _platform(keras.ops.zeros((1,))) == "gpu"


needs_gpu = pytest.mark.skipif(not _gpu_default() if __name__ != "__main__" else True,
                               reason="Keras 3 on torch / JAX with a GPU is not under test here")


@needs_gpu
def test_gpu_clone_of_a_cpu_source_stays_on_the_cpu() -> None:
    """A source built under `keras.device("cpu")` on a GPU machine: its clone is on the CPU too.

    The native clone, built under no device scope, lands on the default
    device; where that is the GPU the test shows both side by side.
    """
    import keras

    import compat_clone

    with keras.device("cpu:0"):
        source = build(keras, seed=7)
    assert set(_platforms(source)) == {"cpu"}
    clone = compat_clone.clone_model(source, copy_weights=True)
    assert set(_platforms(clone)) == {"cpu"}, _platforms(clone)
    assert_same_weights(source, clone)
    native = keras.models.clone_model(source)
    print(f"native clone_model of a CPU source ({BACKEND}): on {sorted(set(_platforms(native)))}")


@needs_gpu
@pytest.mark.parametrize("to", ["gpu:0", "cpu"])
def test_gpu_device_argument_both_ways(to: str) -> None:
    """`device=` moves a clone to the GPU from a CPU source and to the CPU from a GPU source, exactly."""
    import keras

    import compat_clone

    with keras.device("cpu:0" if to == "gpu:0" else "gpu:0"):
        source = build(keras, seed=8)
    clone = compat_clone.clone_model(source, device=to, copy_weights=True)
    assert set(_platforms(clone)) == {to.split(":")[0]}, _platforms(clone)
    assert set(_platforms(source)) != set(_platforms(clone))
    assert_same_weights(source, clone)
    with keras.device(to):  # usable where it is, with inputs made there
        out = clone(keras.ops.ones((2, 4)), training=False)
    assert tuple(out.shape) == (2, 3) and _platform(out) == to.split(":")[0]


@needs_gpu
def test_gpu_copy_weights_across_devices_and_soft_update() -> None:
    """copy_weights from a GPU source into a CPU target and back, and a soft update on the GPU."""
    import numpy as np

    import keras

    import compat_clone

    with keras.device("gpu:0"):
        on_gpu = build(keras, seed=9)
        gpu_target = build(keras, seed=10)
    with keras.device("cpu:0"):
        on_cpu = build(keras, seed=11)
    before = weights_np(gpu_target)
    compat_clone.copy_weights(on_gpu, on_cpu)
    assert set(_platforms(on_cpu)) == {"cpu"}
    assert_same_weights(on_gpu, on_cpu)
    compat_clone.copy_weights(on_gpu, gpu_target, tau=0.005)
    assert set(_platforms(gpu_target)) == {"gpu"}
    for (src, old), new in zip_strict(zip_strict(weights_np(on_gpu), before), weights_np(gpu_target)):
        if np.issubdtype(old.dtype, np.floating):
            np.testing.assert_allclose(new, 0.005 * src + 0.995 * old, rtol=1e-5, atol=1e-6)


# ==============================================================================
# Workers (this file run as a script in a fresh interpreter)
# ==============================================================================


class _Recorder:
    def __init__(self) -> None:
        self.records: Dict[str, Any] = {}

    def run(self, key: str, fn: Callable[[], Optional[Dict[str, Any]]]) -> None:
        try:
            extra = fn() or {}
            self.records[key] = {"ok": True, **extra}
        except BaseException:  # recorded; the test reports it
            self.records[key] = {"ok": False, "error": traceback.format_exc()}

    def write(self, path: str) -> None:
        with open(path, "w", encoding="utf-8") as fh:
            json.dump(self.records, fh, indent=1, default=str)


def _keras_for(family: str) -> Any:
    from conftest import keras_module

    return keras_module(family)


def _tf_var(v: Any) -> Any:
    import tensorflow as tf

    if isinstance(v, tf.Variable):
        return v
    inner = getattr(v, "_value", None)
    return inner if inner is not None else v


def _device_of(v: Any) -> str:
    return str(_tf_var(v).device)


def _is_distributed(v: Any) -> bool:
    import tensorflow as tf

    return isinstance(_tf_var(v), tf.distribute.DistributedValues)


def _outputs(model: Any) -> Any:
    import numpy as np

    x = np.linspace(-1, 1, 8 * 4).reshape(8, 4).astype("float32")
    y = model(x, training=False)
    return np.array(y)


def _worker_tf(out: str) -> None:
    import tensorflow as tf

    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration(), tf.config.LogicalDeviceConfiguration()]
    )
    import numpy as np

    import compat_clone

    rec = _Recorder()
    for family in _tf_families():
        K = _keras_for(family)

        def device_like_source(K: Any = K) -> Dict[str, Any]:
            with tf.device("/CPU:1"):
                model = build(K)
            native = K.models.clone_model(model)
            clone = compat_clone.clone_model(model, copy_weights=True)
            assert all(_device_of(v).endswith("CPU:1") for v in clone.weights), [_device_of(v) for v in clone.weights]
            assert_same_weights(model, clone)
            np.testing.assert_array_equal(_outputs(model), _outputs(clone))
            return {
                "source": _device_of(model.weights[0]),
                "compat": _device_of(clone.weights[0]),
                "native": _device_of(native.weights[0]),
            }

        def explicit_device(K: Any = K) -> None:
            model = build(K)
            for spelling in ("/CPU:1", "cpu:1", "/device:CPU:1", "/job:localhost/replica:0/task:0/device:CPU:1"):
                clone = compat_clone.clone_model(model, device=spelling, copy_weights=True)
                assert all(_device_of(v).endswith("CPU:1") for v in clone.weights), spelling
                assert_same_weights(model, clone)
            clone = compat_clone.clone_model(model, device=tf.config.list_logical_devices("CPU")[1])
            assert all(_device_of(v).endswith("CPU:1") for v in clone.weights)
            strategy = tf.distribute.MirroredStrategy(["/CPU:0", "/CPU:1"])
            clone = compat_clone.clone_model(model, device=strategy)
            assert all(_is_distributed(v) for v in clone.weights)

        def mirrored(K: Any = K) -> Dict[str, Any]:
            strategy = tf.distribute.MirroredStrategy(["/CPU:0", "/CPU:1"])
            with strategy.scope():
                model = build(K, seed=7)
            assert all(_is_distributed(v) for v in model.weights)
            native = K.models.clone_model(model)
            clone = compat_clone.clone_model(model, copy_weights=True)  # outside the scope
            for src, dst in zip_strict(model.weights, clone.weights):
                assert _is_distributed(dst), type(_tf_var(dst))
                assert _tf_var(dst)._distribute_strategy is strategy
                assert [c.device for c in _tf_var(dst).values] == [c.device for c in _tf_var(src).values]
                for c_src, c_dst in zip_strict(_tf_var(src).values, _tf_var(dst).values):
                    np.testing.assert_array_equal(c_src.numpy(), c_dst.numpy())
            np.testing.assert_array_equal(_outputs(model), _outputs(clone))  # callable outside the scope
            # copy_weights between two clones of the strategy, replica by replica.
            other = compat_clone.clone_model(model)
            compat_clone.copy_weights(model, other)
            for src, dst in zip_strict(model.weights, other.weights):
                assert len(_tf_var(dst).values) == 2
                for c_src, c_dst in zip_strict(_tf_var(src).values, _tf_var(dst).values):
                    np.testing.assert_array_equal(c_src.numpy(), c_dst.numpy())
            # A plain model copies into the mirrored clone (every replica written).
            plain = build(K, seed=8)
            compat_clone.copy_weights(plain, other)
            for src, dst in zip_strict(plain.weights, other.weights):
                assert len(_tf_var(dst).values) == 2
                for c_dst in _tf_var(dst).values:
                    np.testing.assert_array_equal(np.array(src.numpy()), c_dst.numpy())
            return {
                "native_distributed": all(_is_distributed(v) for v in native.weights),
                "compat_distributed": all(_is_distributed(v) for v in clone.weights),
            }

        def one_device(K: Any = K) -> None:
            strategy = tf.distribute.OneDeviceStrategy("/CPU:1")
            with strategy.scope():
                model = build(K, seed=9)
            clone = compat_clone.clone_model(model, copy_weights=True)
            for v in clone.weights:
                assert _tf_var(v)._distribute_strategy is strategy
                assert _device_of(v).endswith("CPU:1")
            np.testing.assert_array_equal(_outputs(model), _outputs(clone))

        def copy_across_devices(K: Any = K) -> None:
            with tf.device("/CPU:1"):
                model = build(K, seed=10)
            clone = compat_clone.clone_model(model, device="/CPU:0")
            compat_clone.copy_weights(model, clone)
            assert all(_device_of(v).endswith("CPU:0") for v in clone.weights)
            assert_same_weights(model, clone)

        def enclosing_strategy_scope(K: Any = K) -> None:
            # device=None inside the caller's strategy scope: the caller's choice governs.
            model = build(K, seed=11)
            strategy = tf.distribute.MirroredStrategy(["/CPU:0", "/CPU:1"])
            with strategy.scope():
                clone = compat_clone.clone_model(model, copy_weights=True)
            assert all(_is_distributed(v) for v in clone.weights)
            assert_same_weights(model, clone)

        def sync_on_read_sum_refused_first(K: Any = K) -> None:
            check_sync_on_read_sum_refused(["/CPU:0", "/CPU:1"])

        for check in (
            device_like_source,
            explicit_device,
            mirrored,
            one_device,
            copy_across_devices,
            enclosing_strategy_scope,
            sync_on_read_sum_refused_first,
        ):
            rec.run(f"{family}:{check.__name__}", check)
    rec.write(out)


def _worker_mwms(out: str) -> None:
    import tensorflow as tf

    import compat_clone

    rec = _Recorder()
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    import numpy as np

    for family in _tf_families():
        K = _keras_for(family)

        def multi_worker(K: Any = K) -> Dict[str, Any]:
            with strategy.scope():
                model = build(K, seed=12)
            assert all(_is_distributed(v) for v in model.weights)
            clone = compat_clone.clone_model(model, copy_weights=True)  # outside the scope
            for dst in clone.weights:
                assert _is_distributed(dst), type(_tf_var(dst))
                assert _tf_var(dst)._distribute_strategy is strategy
            assert_same_weights(model, clone)
            np.testing.assert_array_equal(_outputs(model), _outputs(clone))
            made_by = _tf_var(clone.weights[0])._distribute_strategy
            resolver = made_by.cluster_resolver
            return {
                "is_mwms": isinstance(made_by, tf.distribute.MultiWorkerMirroredStrategy),
                "workers": resolver.cluster_spec().num_tasks("worker"),
                "task_id": resolver.task_id,
            }

        rec.run(f"{family}:multi_worker", multi_worker)
    rec.write(out)


def _worker_jax(out: str) -> None:
    import jax
    import keras
    import numpy as np

    import compat_clone

    rec = _Recorder()
    # The four forced host devices are JAX's CPU devices; they are also its
    # default devices only where no accelerator is present. What a clone
    # gets by default is the default backend's first device (a GPU if any).
    devices = jax.devices("cpu")
    assert len(devices) == 4, devices
    default_device = jax.devices()[0]

    def shardings(model: Any) -> List[Any]:
        return [v.value.sharding for v in model.weights]

    def same_sharding(a: Any, b: Any, ndim: int) -> bool:
        return bool(a == b or a.is_equivalent_to(b, ndim))

    def device_put_source() -> None:
        model = build(keras, seed=13)
        for v in model.weights:
            v.assign(jax.device_put(v.value, devices[2]))
        native = keras.models.clone_model(model)
        fresh = compat_clone.clone_model(model)  # placement alone, no copy
        clone = compat_clone.clone_model(model, copy_weights=True)
        for v in fresh.weights + clone.weights:
            assert v.value.sharding.device_set == {devices[2]}, v.value.sharding
        assert native.weights
        assert all(v.value.sharding.device_set == {default_device} for v in native.weights), [
            v.value.sharding for v in native.weights
        ]
        np.testing.assert_array_equal(_outputs(model), _outputs(clone))

    def model_parallel_layout() -> Dict[str, Any]:
        mesh = keras.distribution.DeviceMesh((2, 2), ["batch", "model"], devices=devices)
        layout_map = keras.distribution.LayoutMap(mesh)
        layout_map["dense_a/kernel"] = (None, "model")
        layout_map["dense_a/bias"] = ("model",)
        distribution = keras.distribution.ModelParallel(layout_map=layout_map, batch_dim_name="batch")
        with distribution.scope():
            model = build(keras, seed=14)
        kernel = model.get_layer("dense_a").kernel
        assert len(kernel.value.sharding.device_set) == 4 and not kernel.value.sharding.is_fully_replicated
        native = keras.models.clone_model(model)  # outside the scope
        fresh = compat_clone.clone_model(model)  # placement alone, no copy
        clone = compat_clone.clone_model(model, copy_weights=True)
        pairs = list(zip_strict(model.weights, clone.weights))
        pairs += list(zip_strict(model.weights, fresh.weights))
        for src, dst in pairs:
            assert same_sharding(src.value.sharding, dst.value.sharding, len(src.shape)), (
                src.path,
                src.value.sharding,
                dst.value.sharding,
            )
        assert_same_weights(model, clone)
        np.testing.assert_allclose(_outputs(model), _outputs(clone), rtol=1e-6)
        native_kernel = native.get_layer("dense_a").kernel.value.sharding
        # device=<a keras.distribution>: the clone is built under it.
        elsewhere = compat_clone.clone_model(build(keras, seed=20), device=distribution)
        kernel = elsewhere.get_layer("dense_a").kernel.value.sharding
        assert same_sharding(kernel, model.get_layer("dense_a").kernel.value.sharding, 2)
        return {
            "native_sharded": len(native_kernel.device_set) > 1,
            "compat_sharded": len(clone.get_layer("dense_a").kernel.value.sharding.device_set) > 1,
        }

    def data_parallel_layout() -> None:
        distribution = keras.distribution.DataParallel(devices=devices)
        with distribution.scope():
            model = build(keras, seed=15)
        clone = compat_clone.clone_model(model)
        for src, dst in zip_strict(model.weights, clone.weights):
            assert len(dst.value.sharding.device_set) == 4
            assert same_sharding(src.value.sharding, dst.value.sharding, len(src.shape))

    def explicit_device() -> None:
        model = build(keras, seed=16)
        for spelling in ("cpu:3", "/CPU:3", devices[3]):
            clone = compat_clone.clone_model(model, device=spelling, copy_weights=True)
            for v in clone.weights:
                assert v.value.sharding.device_set == {devices[3]}, (spelling, v.value.sharding)
            assert_same_weights(model, clone)

    def explicit_sharding() -> None:
        mesh = jax.sharding.Mesh(np.array(devices), ("d",))
        replicated = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec())
        model = build(keras, seed=17)
        clone = compat_clone.clone_model(model, device=replicated, copy_weights=True)
        for v in clone.weights:
            assert len(v.value.sharding.device_set) == 4 and v.value.sharding.is_fully_replicated
        assert_same_weights(model, clone)

    def copy_keeps_target_sharding() -> None:
        mesh = keras.distribution.DeviceMesh((4,), ["model"], devices=devices)
        layout_map = keras.distribution.LayoutMap(mesh)
        layout_map["dense_a/kernel"] = (None, "model")
        with keras.distribution.ModelParallel(layout_map=layout_map).scope():
            source = build(keras, seed=18)
        target = compat_clone.clone_model(source, device="cpu:1")
        compat_clone.copy_weights(source, target)
        for src, dst in zip_strict(source.weights, target.weights):
            assert dst.value.sharding.device_set == {devices[1]}
            assert dst.value is not src.value
        assert_same_weights(source, target)

    def copy_survives_donation() -> None:
        # Keras's JAX trainer donates the state buffers (donate_argnums=0):
        # had copy_weights shared arrays, fit() would delete the source's.
        model = build(keras, seed=19)
        clone = compat_clone.clone_model(model, copy_weights=True)
        clone.compile(optimizer="sgd", loss="mse")
        x = np.ones((16, 4), "float32")
        clone.fit(x, np.ones((16, 3), "float32"), epochs=1, verbose=0)
        clone.predict(x, verbose=0)
        for v in model.weights:
            assert not v.value.is_deleted()
        _outputs(model)

    for check in (
        device_put_source,
        model_parallel_layout,
        data_parallel_layout,
        explicit_device,
        explicit_sharding,
        copy_keeps_target_sharding,
        copy_survives_donation,
    ):
        rec.run(f"keras3:{check.__name__}", check)
    rec.write(out)


if __name__ == "__main__":
    mode, out_path = sys.argv[1], sys.argv[2]
    {"tf": _worker_tf, "mwms": _worker_mwms, "jax": _worker_jax}[mode](out_path)
