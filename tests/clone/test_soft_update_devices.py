"""Soft updates across devices, in a fresh interpreter (tests/clone/soft_update_worker.py).

TensorFlow split into two logical CPUs (a source on /CPU:1 into a target on
/CPU:0, a MirroredStrategy over both), JAX with two host devices. The
arithmetic is in tests/clone/test_soft_update.py.
"""

from __future__ import annotations

import json
import os
import tempfile
from typing import Any, Dict

import pytest

from tests.clone.soft_update import tf_backed
from tests.support.families import xla_flags
from tests.support.fresh_process import run_script

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "soft_update_worker.py")


# -- across devices: fresh interpreters ---------------------------------------------------


def _run_worker(mode: str, env: Dict[str, str]) -> Dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "out.json")
        proc = run_script(WORKER, [mode, out], env)
        if not os.path.exists(out):
            pytest.fail(f"worker {mode!r} wrote no results (rc={proc.returncode}):\n{proc.stderr[-6000:]}")
        with open(out, encoding="utf-8") as fh:
            return dict(json.load(fh))


def _check(records: Dict[str, Any], key: str) -> None:
    assert key in records, f"no record {key!r}; the worker recorded {sorted(records)}"
    assert records[key] == "ok", f"{key} failed in the worker:\n{records[key]}"


TF_CHECKS = ["across_devices", "mirrored_to_mirrored", "plain_to_mirrored"]


@pytest.mark.per_claim  # worker interpreters with virtual devices: 35-81 s per environment under load
@pytest.mark.parametrize("check", TF_CHECKS)
def test_tf_across_devices_and_strategies(K: Any, family: str, check: str) -> None:
    if family == "keras2" or not tf_backed(K):
        pytest.skip("TensorFlow 2 (eager) families only")
    _check(_tf_records(K.__name__, family), f"{family}:{check}")


_TF_RECORDS: Dict[str, Dict[str, Any]] = {}


def _tf_records(module: str, family: str) -> Dict[str, Any]:
    if family not in _TF_RECORDS:
        _TF_RECORDS[family] = _run_worker(f"tf:{module}", {})
    return _TF_RECORDS[family]


def test_jax_across_devices(K: Any, family: str) -> None:
    from tests.clone.features import backend_name

    if family != "keras3" or backend_name(K) != "jax":
        pytest.skip("Keras 3 on JAX only")
    records = _run_worker("jax:keras", {"XLA_FLAGS": xla_flags("--xla_force_host_platform_device_count=2")})
    _check(records, "keras3:across_devices")
