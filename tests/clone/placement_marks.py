"""The placement tests' skip markers: they probe this environment when imported.

Test modules only: a worker script must not import this (probing Keras 3
imports TensorFlow before the worker has configured its devices).
"""

from __future__ import annotations

from typing import List

import pytest

from tests.clone.placement import keras3_backend, platform, tf_families
from tests.support.families import families_under_test

__all__ = ["BACKEND", "KERAS3_UNDER_TEST", "TF_FAMILIES", "needs_gpu", "needs_jax", "needs_tf", "needs_torch"]

TF_FAMILIES: List[str] = tf_families()
BACKEND = keras3_backend()
KERAS3_UNDER_TEST = "keras3" in families_under_test()


def _gpu_default() -> bool:
    """Whether Keras 3 on torch / JAX puts new tensors on a GPU here."""
    if not KERAS3_UNDER_TEST or BACKEND not in ("torch", "jax"):
        return False
    import keras

    return platform(keras.ops.zeros((1,))) == "gpu"


needs_tf = pytest.mark.skipif(not TF_FAMILIES, reason="no TensorFlow-based Keras family under test here")
needs_jax = pytest.mark.skipif(not (KERAS3_UNDER_TEST and BACKEND == "jax"), reason="Keras 3 on JAX is not under test here")
needs_torch = pytest.mark.skipif(not (KERAS3_UNDER_TEST and BACKEND == "torch"), reason="Keras 3 on torch is not under test here")
needs_gpu = pytest.mark.skipif(not _gpu_default(), reason="Keras 3 on torch / JAX with a GPU is not under test here")
