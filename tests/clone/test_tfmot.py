"""A real client: TensorFlow Model Optimization (tfmot) through `compat_clone.patch()`.

tfmot calls `keras.models.clone_model` itself (pruning, quantization-aware
training, clustering and their combinations). Each flow of its public API
runs twice on identical models: natively, and inside `compat_clone.patched()`
so that every one of tfmot's clones goes through `compat_clone`. Both must
give the same layer classes and configs, the same weights and the same
predictions after a training step, and the same exception types.

tfmot is installed in the tf.keras 2.12 / 2.15 and tf_keras 2.16 / 2.21
environments of the matrix (the release that fits each); there these tests
cannot skip. Elsewhere they skip: tfmot serves the tf.keras family only.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any, Callable, Dict, List, Tuple

import numpy as np
import pytest

import compat_clone
from compat_clone import api as _api

pytestmark = pytest.mark.tf_keras

TFMOT_ENVS = {"tf.keras-2.12", "tf.keras-2.15", "tf_keras-2.16", "tf_keras-2.21"}

if os.environ.get("COMPAT_CLONE_ENV") in TFMOT_ENVS:  # installed by design: never skipped there
    import tensorflow_model_optimization as tfmot
else:
    tfmot = pytest.importorskip("tensorflow_model_optimization")

X = np.random.default_rng(0).uniform(-1, 1, (32, 8)).astype("float32")
Y = np.random.default_rng(1).uniform(-1, 1, (32, 4)).astype("float32")


@pytest.fixture
def K(K: Any) -> Any:  # noqa: F811 - the family's Keras, checked to be the one tfmot uses
    assert issubclass(tfmot.quantization.keras.QuantizeWrapperV2, K.layers.Layer), (
        f"tfmot wraps layers of another Keras than {K.__name__}"
    )
    return K


def _base(K: Any) -> Any:
    """The same small model every time: fixed names, fixed weights."""
    inputs = K.Input((8,), name="x")
    h = K.layers.Dense(16, activation="relu", name="d1")(inputs)
    h = K.layers.Dense(16, activation="relu", name="d2")(h)
    model = K.Model(inputs, K.layers.Dense(4, name="out")(h), name="base")
    rng = np.random.default_rng(7)
    model.set_weights([rng.uniform(-0.5, 0.5, np.shape(w)).astype("float32") for w in model.get_weights()])
    return model


def _train_step(K: Any, model: Any, callbacks: Tuple[Any, ...] = ()) -> Any:
    model.compile(optimizer=K.optimizers.SGD(0.05), loss="mse")
    model.fit(X, Y, batch_size=16, epochs=1, shuffle=False, verbose=0, callbacks=list(callbacks))
    return model


def _both(flow: Callable[[], Any]) -> Tuple[Any, Any, int]:
    """Runs `flow` natively, then with the clones routed; returns both results and our call count."""
    native = flow()
    calls: List[Any] = []
    ours = _api.clone_model

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(kwargs.get("model", args[0] if args else None))
        return ours(*args, **kwargs)

    _api.clone_model = counted  # the router looks it up at each call
    try:
        with compat_clone.patched():
            routed = flow()
    finally:
        _api.clone_model = ours
    return native, routed, len(calls)


_SUFFIX = re.compile(r"_\d+(?=\")")


def _config(layer: Any) -> str:
    """A layer's config as JSON, names' `_<n>` uniquifying suffixes dropped (the runs share a process)."""
    return _SUFFIX.sub("", json.dumps(layer.get_config(), sort_keys=True, default=repr))


def assert_same_models(native: Any, routed: Any) -> None:
    assert type(routed) is type(native)
    assert [type(x) for x in routed.layers] == [type(x) for x in native.layers]
    for a, b in zip(native.layers, routed.layers):
        assert _config(b) == _config(a), f"layer {a.name}: configs differ"
        wrapped_a, wrapped_b = getattr(a, "layer", None), getattr(b, "layer", None)
        assert type(wrapped_b) is type(wrapped_a)
        if wrapped_a is not None:
            assert _config(wrapped_b) == _config(wrapped_a)
    got, want = routed.get_weights(), native.get_weights()
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(routed.predict(X, verbose=0), native.predict(X, verbose=0), rtol=1e-5, atol=1e-6)


# -- pruning ---------------------------------------------------------------------


def test_prune_train_strip(K: Any) -> None:
    sparsity = tfmot.sparsity.keras

    def flow() -> Dict[str, Any]:
        schedule = sparsity.ConstantSparsity(0.5, begin_step=0, frequency=1)
        pruned = sparsity.prune_low_magnitude(_base(K), pruning_schedule=schedule)
        _train_step(K, pruned, (sparsity.UpdatePruningStep(),))
        return {"pruned": pruned, "stripped": sparsity.strip_pruning(pruned)}

    native, routed, calls = _both(flow)
    assert calls >= 2  # wrap and strip went through compat_clone
    assert type(routed["pruned"].layers[1]).__name__ == "PruneLowMagnitude"
    for key in native:
        assert_same_models(native[key], routed[key])
    kernel = routed["stripped"].get_layer("d2").kernel.numpy()
    assert 0.4 <= float(np.mean(kernel == 0)) <= 0.6  # pruned to the schedule's 50%


def test_prune_a_sequential_model(K: Any) -> None:
    sparsity = tfmot.sparsity.keras

    def flow() -> Any:
        model = K.Sequential([K.layers.Dense(8, input_shape=(8,), name="s1"), K.layers.Dense(4, name="s2")], name="seq")
        model.set_weights([np.full(np.shape(w), 0.1, "float32") for w in model.get_weights()])
        pruned = sparsity.prune_low_magnitude(model, pruning_schedule=sparsity.ConstantSparsity(0.5, 0))
        return sparsity.strip_pruning(_train_step(K, pruned, (sparsity.UpdatePruningStep(),)))

    native, routed, calls = _both(flow)
    assert calls >= 2
    assert_same_models(native, routed)


# -- quantization-aware training ----------------------------------------------------


def test_quantize_model_and_train(K: Any) -> None:
    def flow() -> Any:
        return _train_step(K, tfmot.quantization.keras.quantize_model(_base(K)))

    native, routed, calls = _both(flow)
    assert calls >= 1
    assert_same_models(native, routed)


def _custom_config_class() -> Any:
    quantizers = tfmot.quantization.keras.quantizers

    class KernelOnly(tfmot.quantization.keras.QuantizeConfig):
        """Quantizes a Dense kernel to 4 bits, nothing else (a custom scheme of the user)."""

        def get_weights_and_quantizers(self, layer: Any) -> List[Any]:
            return [(layer.kernel, quantizers.LastValueQuantizer(4, per_axis=False, symmetric=True, narrow_range=False))]

        def get_activations_and_quantizers(self, layer: Any) -> List[Any]:
            return []

        def set_quantize_weights(self, layer: Any, quantize_weights: List[Any]) -> None:
            layer.kernel = quantize_weights[0]

        def set_quantize_activations(self, layer: Any, quantize_activations: List[Any]) -> None:
            pass

        def get_output_quantizers(self, layer: Any) -> List[Any]:
            return []

        def get_config(self) -> Dict[str, Any]:
            return {}

    return KernelOnly


def test_quantize_annotate_layer_with_a_custom_config(K: Any) -> None:
    qk = tfmot.quantization.keras
    config_class = _custom_config_class()

    def flow() -> Any:
        inputs = K.Input((8,), name="x")
        h = qk.quantize_annotate_layer(K.layers.Dense(16, activation="relu", name="d1"), config_class())(inputs)
        model = K.Model(inputs, K.layers.Dense(4, name="out")(h), name="annotated")
        model.set_weights([np.full(np.shape(w), 0.05, "float32") for w in model.get_weights()])
        with qk.quantize_scope({"KernelOnly": config_class}):
            applied = qk.quantize_apply(qk.quantize_annotate_model(model))
        return _train_step(K, applied)

    native, routed, calls = _both(flow)
    assert calls >= 1
    assert isinstance(routed.get_layer("quant_d1").quantize_config, config_class)
    assert_same_models(native, routed)


def test_a_layer_without_quantize_config_fails_as_natively(K: Any) -> None:
    """tfmot raises RuntimeError inside its clone_function; it must reach the caller as that type."""
    qk = tfmot.quantization.keras

    class Doubler(K.layers.Layer):
        def call(self, x: Any) -> Any:
            return x * 2.0

    def flow() -> Any:
        inputs = K.Input((8,), name="x")
        h = qk.quantize_annotate_layer(Doubler(name="doubler"))(inputs)
        model = K.Model(inputs, K.layers.Dense(4, name="out")(h))
        try:
            with qk.quantize_scope({"Doubler": Doubler}):
                qk.quantize_apply(model)
        except Exception as exc:
            return exc
        raise AssertionError("quantize_apply accepted a layer without a QuantizeConfig")

    native, routed, calls = _both(flow)
    assert calls >= 1
    assert type(native) is RuntimeError and type(routed) is RuntimeError
    assert str(routed) == str(native)


# -- clustering ----------------------------------------------------------------------


def test_cluster_train_strip(K: Any) -> None:
    clustering = tfmot.clustering.keras

    def flow() -> Dict[str, Any]:
        clustered = clustering.cluster_weights(
            _base(K), number_of_clusters=4, cluster_centroids_init=clustering.CentroidInitialization.LINEAR
        )
        _train_step(K, clustered)
        return {"clustered": clustered, "stripped": clustering.strip_clustering(clustered)}

    native, routed, calls = _both(flow)
    assert calls >= 2
    for key in native:
        assert_same_models(native[key], routed[key])
    assert len(np.unique(routed["stripped"].get_layer("d2").kernel.numpy())) <= 4


# -- collaborative optimizations: PQAT and CQAT ------------------------------------------


def _preserving_scheme(kind: str) -> Any:
    """The scheme from its public home: `quantization.keras.collab_opts`, else `experimental.combine`."""
    for home in (getattr(tfmot.quantization.keras, "collab_opts", None), tfmot.experimental.combine):
        scheme = getattr(home, kind, None)
        if scheme is not None:
            return scheme()
    raise AssertionError(f"tfmot {tfmot.__version__} has no public {kind}")


def test_prune_preserving_quantization(K: Any) -> None:
    sparsity, qk = tfmot.sparsity.keras, tfmot.quantization.keras

    def flow() -> Any:
        pruned = sparsity.prune_low_magnitude(_base(K), pruning_schedule=sparsity.ConstantSparsity(0.5, 0))
        stripped = sparsity.strip_pruning(_train_step(K, pruned, (sparsity.UpdatePruningStep(),)))
        pqat = qk.quantize_apply(
            qk.quantize_annotate_model(stripped), _preserving_scheme("Default8BitPrunePreserveQuantizeScheme")
        )
        return _train_step(K, pqat)

    native, routed, calls = _both(flow)
    assert calls >= 3
    assert_same_models(native, routed)


def test_cluster_preserving_quantization(K: Any) -> None:
    clustering, qk = tfmot.clustering.keras, tfmot.quantization.keras

    def flow() -> Any:
        clustered = clustering.cluster_weights(
            _base(K), number_of_clusters=4, cluster_centroids_init=clustering.CentroidInitialization.LINEAR
        )
        stripped = clustering.strip_clustering(_train_step(K, clustered))
        cqat = qk.quantize_apply(
            qk.quantize_annotate_model(stripped), _preserving_scheme("Default8BitClusterPreserveQuantizeScheme")
        )
        return _train_step(K, cqat)

    native, routed, calls = _both(flow)
    assert calls >= 3
    assert_same_models(native, routed)
