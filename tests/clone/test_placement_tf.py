"""TensorFlow placement across devices and strategies, each check in a fresh interpreter.

Logical devices must be configured before TensorFlow initializes, so these
checks run in workers (tests/clone/placement_worker_tf.py): TensorFlow
split into two logical CPUs, every check once per run, one JSON record per
check; each test below asserts its record. Same for a
MultiWorkerMirroredStrategy of two worker processes on 127.0.0.1. Each test
skips where no TensorFlow-based family is under test; the matrix runs every
env.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from typing import Any, Dict, List

import pytest

from tests.clone.placement_marks import TF_FAMILIES, needs_tf
from tests.support._py import zip_strict
from tests.support.fresh_process import ROOT, WORKER_TIMEOUT, expect, free_ports, once_per_run, records, worker_path

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "placement_worker_tf.py")


@pytest.fixture(scope="module")
def tf_records(tmp_path_factory: Any) -> Dict[str, Any]:
    return records(tmp_path_factory, WORKER, "tf")


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
    rec = expect(tf_records, f"{family}:{check}")
    assert rec["ok"] is True


@needs_tf
@pytest.mark.parametrize("family", TF_FAMILIES)
def test_tf_native_clone_ignores_the_source_device(tf_records: Dict[str, Any], family: str) -> None:
    """Side by side: natively a model built on /CPU:1 is cloned onto /CPU:0."""
    rec = expect(tf_records, f"{family}:device_like_source")
    assert rec["source"].endswith("CPU:1")
    assert rec["compat"].endswith("CPU:1")
    assert rec["native"].endswith("CPU:0")


@needs_tf
@pytest.mark.parametrize("family", TF_FAMILIES)
def test_tf_native_clone_drops_the_strategy(tf_records: Dict[str, Any], family: str) -> None:
    rec = expect(tf_records, f"{family}:mirrored")
    assert rec["native_distributed"] is False
    assert rec["compat_distributed"] is True


# -- MultiWorkerMirroredStrategy: two worker processes on loopback -----------------


@pytest.fixture(scope="module")
def mwms_records(tmp_path_factory: Any) -> List[Dict[str, Any]]:
    return list(once_per_run(tmp_path_factory, "placement_mwms", _run_two_workers))


def _worker_env(cluster: Dict[str, Any], index: int) -> Dict[str, str]:
    env = dict(os.environ)
    env["TF_CONFIG"] = json.dumps({"cluster": cluster, "task": {"type": "worker", "index": index}})
    env["TF_CPP_MIN_LOG_LEVEL"] = "3"
    env["PYTHONPATH"] = worker_path(env)
    # Loopback only: no proxy may intercept the workers' gRPC channels.
    for var in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "grpc_proxy"):
        env.pop(var, None)
    env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost"
    return env


def _run_two_workers() -> List[Dict[str, Any]]:
    cluster = {"worker": [f"127.0.0.1:{p}" for p in free_ports(2)]}
    with tempfile.TemporaryDirectory() as tmp:
        outs = [os.path.join(tmp, f"worker{index}.json") for index in range(2)]
        procs = [
            subprocess.Popen(
                [sys.executable, WORKER, "mwms", out],
                env=_worker_env(cluster, index),
                cwd=ROOT,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
            for index, out in enumerate(outs)
        ]
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
    for index, found in enumerate(mwms_records):
        rec = expect(found, f"{family}:multi_worker")
        assert rec["ok"] is True, f"worker {index}"
        assert rec["is_mwms"] is True
        assert rec["workers"] == 2
        task_ids.append(rec["task_id"])
    assert sorted(task_ids) == [0, 1]
