"""Keras 3 on JAX: keras.distribution layouts and explicit devices over four host devices.

The checks run in a fresh interpreter (tests/clone/placement_worker_jax.py)
with ``XLA_FLAGS=--xla_force_host_platform_device_count=4``, taken from
``jax.devices("cpu")``: on a GPU machine JAX's default devices are the GPUs.
Each test asserts the worker's record for its check, and skips where Keras 3
on JAX is not under test.
"""

from __future__ import annotations

import os
from typing import Any, Dict

import pytest

from tests.clone.placement_marks import needs_jax
from tests.support.families import xla_flags
from tests.support.fresh_process import expect, records

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "placement_worker_jax.py")


@pytest.fixture(scope="module")
def jax_records(tmp_path_factory: Any) -> Dict[str, Any]:
    env = {"XLA_FLAGS": xla_flags("--xla_force_host_platform_device_count=4"), "KERAS_BACKEND": "jax"}
    return records(tmp_path_factory, WORKER, "jax", env)


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
    rec = expect(jax_records, f"keras3:{check}")
    assert rec["ok"] is True


@needs_jax
def test_jax_native_clone_drops_the_layout(jax_records: Dict[str, Any]) -> None:
    rec = expect(jax_records, "keras3:model_parallel_layout")
    assert rec["native_sharded"] is False
    assert rec["compat_sharded"] is True
