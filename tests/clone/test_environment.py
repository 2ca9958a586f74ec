"""Every environment asserts it loaded the Keras it claims.

In a matrix environment the runner exports the claim of its table entry as
``COMPAT_CLONE_EXPECT_FAMILY`` / ``_VERSION`` / ``_BACKEND``. A model built
with the family's Keras module must be classified by `compat_clone.family_of`
as exactly that family, version and backend, so an environment that silently
falls back (a tf_keras env that loads Keras 3, a JAX env on the TensorFlow
backend, a pin that resolved to another release) fails here instead of
passing the rest of the suite on the wrong Keras.

Without a claim (plain ``pytest`` in the default ``.venv``) every family the
environment can import must be classified as itself.
"""

from __future__ import annotations

import importlib.util
import json
import os
from typing import Any

import pytest

import compat_clone
from compat_clone_matrix.claim import version_matches  # the plugin's rule, not a copy
from tests.support.families import families_under_test, keras_module

FAMILY = os.environ.get("COMPAT_CLONE_EXPECT_FAMILY") or None
VERSION = os.environ.get("COMPAT_CLONE_EXPECT_VERSION") or None
BACKEND = os.environ.get("COMPAT_CLONE_EXPECT_BACKEND") or None
ENV = os.environ.get("COMPAT_CLONE_ENV") or None


def _tiny_model(K: Any) -> Any:
    inputs = K.Input((3,))
    return K.models.Model(inputs, K.layers.Dense(2)(inputs))


def test_some_family_is_importable() -> None:
    families = families_under_test()
    assert families, (
        "No Keras family is importable in this environment: install keras, tensorflow or tf_keras (see requirements/default.txt)."
    )


def test_claim_is_complete_in_a_matrix_env() -> None:
    if ENV is None:
        pytest.skip("not a matrix environment (COMPAT_CLONE_ENV unset)")
    if FAMILY is None:
        pytest.skip(f"the table entry of {ENV!r} makes no claim (no `expect`)")
    assert VERSION, f"environment {ENV!r} claims family {FAMILY!r} but no version"


@pytest.mark.parametrize("fam", families_under_test())
def test_loaded_family_is_the_claimed_one(fam: str) -> None:
    K = keras_module(fam)
    info = compat_clone.family_of(_tiny_model(K))
    where = f"environment {ENV or '(default)'}: {K.__name__} {getattr(K, '__version__', '?')}"
    assert info.family == fam, f"{where} built a model of family {info.family!r}, expected {fam!r} ({info})"
    if FAMILY is None:
        return
    assert info.family == FAMILY, f"{where}: loaded family {info.family!r}, the table claims {FAMILY!r} ({info})"
    if VERSION:
        assert version_matches(info.version, VERSION), (
            f"{where}: loaded {info.package} {info.version}, the table claims version {VERSION} ({info})"
        )
    if BACKEND:
        assert info.backend == BACKEND, f"{where}: runs on backend {info.backend!r}, the table claims {BACKEND!r} ({info})"


@pytest.mark.skipif(FAMILY not in ("tf_keras", "keras3"), reason="needs a tf_keras or keras3 claim")
def test_tf_keras_alias_serves_the_claimed_family() -> None:
    """``tf.keras`` must resolve to the claimed family too.

    tf_keras envs set ``TF_USE_LEGACY_KERAS=1`` so that ``tf.keras`` is
    tf_keras on TF >= 2.16; without it ``tf.keras`` is Keras 3 and user code
    written against ``tf.keras`` would silently run on the other family.
    """
    if importlib.util.find_spec("tensorflow") is None:
        pytest.skip("TensorFlow is not installed in this environment")
    import tensorflow as tf

    if FAMILY == "keras3" and BACKEND not in (None, "tensorflow"):
        pytest.skip("tf.keras follows the TensorFlow backend only")
    tf_major_minor = tuple(int(p) for p in tf.__version__.split(".")[:2])
    if FAMILY == "keras3" and tf_major_minor < (2, 16):
        pytest.skip(f"tf.keras is Keras 2 in TensorFlow {tf.__version__}")
    info = compat_clone.family_of(_tiny_model(tf.keras))
    assert info.family == FAMILY, (
        f"environment {ENV}: tf.keras (TensorFlow {tf.__version__}) built a {info.family} model "
        f"({info.package} {info.version}); the table claims {FAMILY}. For tf_keras on TF >= 2.16 "
        "set TF_USE_LEGACY_KERAS=1 in the table's `env`."
    )


def test_compat_clone_is_the_installed_wheel_where_make_test_installed_one() -> None:
    """`make test` installs the wheel it built (``$COMPAT_CLONE_WHEEL``) in every
    environment: the suite must import that, never the checkout's tree."""
    wheel = os.environ.get("COMPAT_CLONE_WHEEL")
    if not wheel or not os.environ.get("COMPAT_CLONE_ENV"):
        pytest.skip("not a matrix run with a wheel (make test sets COMPAT_CLONE_WHEEL)")
    import compat_clone

    try:
        from importlib import metadata
    except ImportError:  # Python 3.7
        import importlib_metadata as metadata  # type: ignore[no-redef]

    where = os.path.realpath(compat_clone.__file__)
    checkout = os.path.realpath(os.path.join(os.path.dirname(__file__), os.pardir))
    assert not where.startswith(checkout + os.sep + "src" + os.sep), where
    assert "site-packages" in where, where
    direct_url = json.loads(metadata.distribution("compat-clone").read_text("direct_url.json") or "{}")
    assert direct_url.get("url", "").endswith("/" + os.path.basename(wheel)), direct_url


@pytest.mark.tooling
def test_per_claim_tests_run_once_per_claim_in_make_test(monkeypatch: Any) -> None:
    """`make test` runs the `per_claim` tests in the newest environment serving each family, backend, module, TF major."""
    import conftest

    from compat_clone_matrix.table import load_table

    monkeypatch.delenv("COMPAT_CLONE_TABLE", raising=False)
    enabled = [env.name for env in load_table(None) if env.enabled]
    hosts = {name: conftest._claim_host(name, run=enabled, wide=False) for name in enabled}
    assert set(hosts.values()) == {
        "keras-2.3.1",
        "keras-2.2.4-tf1",  # standalone Keras 2 on TF 2 (its fix-up) and on TF 1 (graph mode)
        "tf.keras-2.15",
        "tf_keras-2.21",  # the Keras inside TensorFlow, and tf_keras under TF_USE_LEGACY_KERAS
        "keras-3.15-tf",
        "keras-3.15-jax",
        "keras-3.15-torch",
    }, hosts
    assert hosts["keras-2.1.6-tf1"] == "keras-2.2.4-tf1" and hosts["tf.keras-2.12"] == "tf.keras-2.15"
    assert hosts["tf_keras-2.16"] == "tf_keras-2.21" and hosts["keras-3.0-tf"] == "keras-3.15-tf"
    # The run the matrix names: the newest of those; a run of one: that one; make test-wide: each.
    monkeypatch.setenv("COMPAT_CLONE_MATRIX_ENVS", "keras-3.0-tf,keras-3.2-tf")
    assert conftest._claim_host("keras-3.0-tf", wide=False) == "keras-3.2-tf"
    monkeypatch.delenv("COMPAT_CLONE_MATRIX_ENVS")
    assert conftest._claim_host("keras-3.0-tf", wide=False) == "keras-3.0-tf"
    assert conftest._claim_host("tf_keras-2.16", run=enabled, wide=True) == "tf_keras-2.16"
    assert conftest._claim_host(None, wide=False) is None  # outside the matrix: every test runs


@pytest.mark.tooling
def test_tooling_tests_run_at_the_two_ends_of_a_runs_pythons(monkeypatch: Any) -> None:
    """`make test` runs the framework-free `tooling` tests in two environments: the oldest Python's and the newest's."""
    import conftest

    from compat_clone_matrix.table import load_table

    monkeypatch.delenv("COMPAT_CLONE_TABLE", raising=False)
    table = load_table(None)
    enabled = [env.name for env in table if env.enabled]
    hosts = {name: conftest._tooling_host(name, run=enabled, wide=False) for name in enabled}
    pythons = {env.name: env.python for env in table}
    version = lambda name: tuple(int(p) for p in pythons[name].split("."))  # noqa: E731
    oldest = min(enabled, key=lambda n: (version(n), enabled.index(n)))
    newest = min(enabled, key=lambda n: (tuple(-v for v in version(n)), enabled.index(n)))
    assert set(hosts.values()) == {oldest, newest}, hosts
    assert pythons[oldest] == "3.7" and hosts[oldest] == oldest and hosts[newest] == newest
    # A run of one environment runs them there; make test-wide once per Python of the run.
    assert conftest._tooling_host("keras-3.15-jax", run=["keras-3.15-jax"], wide=False) == "keras-3.15-jax"
    wide = {conftest._tooling_host(name, run=enabled, wide=True) for name in enabled}
    assert {pythons[name] for name in wide} == {pythons[name] for name in enabled} and len(wide) == len(
        {pythons[name] for name in enabled}
    )
    assert conftest._tooling_host(None, wide=False) is None  # outside the matrix: every test runs
