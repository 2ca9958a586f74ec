"""compat_clone.convert: what Keras 3 spells differently, and what a conversion refuses or names.

In environments where a Keras 2 family and Keras 3 share a process
(`tf_keras` 2.16+ with `keras` 3 installed next to it, and the default
`.venv`): names with '/', TensorFlow functions, every Keras 2 layer class
mapped from its default config, the refusals, a mismatch named by its
layer, the probes' lengths and the layer outputs' budget. `describe` +
`save` on the zoo are in tests/convert/test_convert_describe.py; the zoo and the
Keras applications converted and trained in tests/convert/test_convert_inprocess.py;
what both share in tests/convert/convert_support.py.
"""

from __future__ import annotations

import os
import re
from typing import Any

import numpy as np
import pytest

from compat_clone.convert import (
    Proof,
    convert,
    describe,
    rebuild,
    verify,
)
from compat_clone.errors import (
    ConversionMismatchError,
    InvalidArgumentError,
    ProbeInputError,
    UnconvertibleLayerError,
)
from tests.convert import convert_zoo
from tests.convert.convert_support import (
    fresh_keras2,
    needs_both,
    needs_keras2,
)
from tests.convert.convert_zoo import ZOO


@pytest.fixture
def K2() -> Any:
    """The Keras 2 module under test (`convert_support.fresh_keras2`)."""
    yield from fresh_keras2()


# -- what Keras 3 spells differently -------------------------------------------


@needs_both
def test_slash_names_renamed_reported_and_weights_follow(K2: Any) -> None:
    case = ZOO["slash_names"](K2)
    model, proof = convert(case.model, return_proof=True)
    names = [layer.name for layer in model.layers]
    # '/' became '_'; 'block1/dense' met the source's own 'block1_dense'
    assert names[:4] == ["in_put", "block1_dense_1", "block1_bn", "block1_dense"]
    assert "sub_model" in names and model.get_layer("sub_model").layers[-1].name == "inner_dense"
    for source, mine in (("block1/dense", "block1_dense_1"), ("block1_dense", "block1_dense")):
        for a, b in zip(case.model.get_layer(source).get_weights(), model.get_layer(mine).get_weights()):
            np.testing.assert_array_equal(a, b)
    top = [line for line in proof.changes if line.startswith("the model:")]
    assert len(top) == 1 and "'block1/dense' -> 'block1_dense_1'" in top[0] and "and 2 more" in top[0]
    assert any(line.startswith("model 'sub/model': 1 layer name(s)") for line in proof.changes)


@needs_both
def test_tensorflow_functions_run_as_keras_ops_and_reload_elsewhere(K2: Any, tmp_path: Any) -> None:
    import subprocess
    import sys

    import keras

    case = ZOO["tf_ops"](K2)
    model, proof = convert(case.model, return_proof=True)
    ops = [layer for layer in model.layers if type(layer).__name__ == "TensorFlowOp"]
    assert {layer.function for layer in ops} >= {"__operators__.getitem", "linalg.matmul", "concat", "cast"}
    (line,) = [c for c in proof.changes if c.startswith("TensorFlow functions")]
    assert "tf.__operators__.getitem x2" in line and "custom_objects()" in line
    # A fresh process reads the saved file with compat_clone's custom objects.
    path = tmp_path / "ops.keras"
    model.save(path)
    inputs = describe(case.model, samples=2, seed=3).probes[0]
    np.savez(tmp_path / "in.npz", *inputs.inputs)
    script = (
        "import sys, numpy as np, keras, compat_clone.convert as c\n"
        "m = keras.models.load_model(sys.argv[1], custom_objects=c.custom_objects())\n"
        "x = np.load(sys.argv[2]); out = m.predict([x['arr_0'], x['arr_1']], verbose=0)\n"
        "np.savez(sys.argv[3], *out)\n"
    )
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    subprocess.run(
        [sys.executable, "-c", script, str(path), str(tmp_path / "in.npz"), str(tmp_path / "out.npz")],
        check=True,
        env=env,
        timeout=300,
    )
    got = np.load(tmp_path / "out.npz")
    for k, expected in enumerate(inputs.outputs):
        np.testing.assert_allclose(got[f"arr_{k}"], expected, rtol=1e-5, atol=1e-6)
    assert keras.__version__.startswith("3.")


@needs_both
def test_refuses_unknown_tensorflow_function(K2: Any) -> None:
    import tensorflow as tf

    x = K2.layers.Input((3,))
    model = K2.models.Model(x, tf.math.cumsum(x, axis=1))
    with pytest.raises(UnconvertibleLayerError, match=r"'tf.math.cumsum'.*`tf.math.cumsum`.*keras.ops"):
        convert(model)


# Keras 2 layer classes the sweep below does not map, and why. A class it skips
# for a reason not written here fails it until the reason is added; a class
# Keras 3 dropped is justified by its row of `_layer_map.REMOVED_LAYERS`.
_VOCABULARY = "refused on purpose: its vocabulary lives outside the config (`vocabulary_size`)"
_SWEEP_SKIPS = {
    "IntegerLookup": _VOCABULARY,
    "StringLookup": _VOCABULARY,
    "TextVectorization": _VOCABULARY,
    "Lambda": "rebuilt from its function, not mapped from its config (test_lambda_*, the zoo's pure_lambda)",
    "AbstractRNNCell": "no Keras 3 class of that name: an abstract base, never in a saved model",
    "RandomHeight": "no Keras 3 class of that name: a preprocessing layer Keras 3 dropped (refused as unknown)",
    "RandomWidth": "no Keras 3 class of that name: a preprocessing layer Keras 3 dropped (refused as unknown)",
}
# Arguments a class needs beyond the shared defaults below.
_SWEEP_ARGUMENTS = {"Bidirectional": lambda K2: {"layer": K2.layers.LSTM(2)}, "CategoryEncoding": lambda K2: {"num_tokens": 3}}


@needs_both
def test_every_keras2_layer_default_config_maps(K2: Any) -> None:
    """Each layer class of both versions, built with its defaults, maps onto its Keras 3 class.

    What it skips is listed with the reason (`_SWEEP_SKIPS`, `REMOVED_LAYERS`),
    never dropped silently: a class with no Keras 3 counterpart, one that does
    not build with the sweep's arguments, one refused on purpose.
    """
    import inspect

    import keras

    from compat_clone.convert._layer_map import REMOVED_LAYERS, map_config

    needed = {
        "units": 2,
        "filters": 2,
        "kernel_size": 1,
        "rate": 0.5,
        "pool_size": 2,
        "size": 2,
        "padding": 1,
        "cropping": 1,
        "target_shape": (2,),
        "dims": (1,),
        "n": 2,
        "num_heads": 2,
        "key_dim": 2,
        "equation": "ab,bc->ac",
        "output_shape": (2,),
        "height": 2,
        "width": 2,
        "factor": 0.1,
        "num_tokens": 3,
        "bin_boundaries": [0.0],
        "stddev": 0.1,
        "scale": 1.0,
        "offset": 0.0,
        "axis": -1,
        "height_factor": 0.1,
        "width_factor": 0.1,
        "axes": 1,
        "layer": K2.layers.Dense(2),
        "cell": K2.layers.LSTMCell(2),
        "cells": [K2.layers.LSTMCell(2)],
        "activation": "relu",
        "mean": 0.0,
        "variance": 1.0,
        "input_dim": 3,
        "output_dim": 2,
        "num_bins": 2,
        "function": abs,
    }
    checked, problems, skipped = 0, [], {}
    for name in sorted(dir(K2.layers)):
        cls = getattr(K2.layers, name)
        if not (isinstance(cls, type) and issubclass(cls, K2.layers.Layer)):
            continue  # not a layer class (a module, a function)
        target = getattr(keras.layers, name, None)
        if target is None:
            skipped[name] = "no Keras 3 class of that name"
            continue
        params = inspect.signature(cls.__init__).parameters
        arguments = {p: needed[p] for p, v in params.items() if p in needed and v.default is inspect.Parameter.empty}
        arguments.update(_SWEEP_ARGUMENTS.get(name, lambda K2: {})(K2))
        try:
            layer = cls(**arguments)
            config = layer.get_config()
        except Exception as exc:
            skipped[name] = f"does not build with the sweep's arguments: {type(exc).__name__}: {exc}"
            continue
        if type(layer).__name__ in _SWEEP_SKIPS:
            skipped[name] = "listed"
            continue
        checked += 1
        try:
            map_config(type(layer).__name__, config, name, target, [], lambda n: n)
        except UnconvertibleLayerError as exc:
            problems.append(str(exc))
    unexplained = {name: why for name, why in skipped.items() if name not in _SWEEP_SKIPS and name not in REMOVED_LAYERS}
    assert not unexplained, f"the sweep skipped these without a reason in _SWEEP_SKIPS: {unexplained}"
    assert checked >= 60 and not problems, problems


# -- refusals -----------------------------------------------------------------


@needs_both
def test_refuses_lambda_calling_tensorflow(K2: Any) -> None:
    import tensorflow as tf

    L = K2.layers
    x = L.Input((3,))
    model = K2.models.Model(x, L.Lambda(lambda t: tf.abs(t), name="tf_abs")(x))
    with pytest.raises(UnconvertibleLayerError, match=r"'tf_abs'.*`tf` \(tensorflow\).*keras\.ops"):
        convert(model)


@needs_both
def test_lambda_replacement_by_name(K2: Any) -> None:
    import keras
    import tensorflow as tf

    L = K2.layers
    x = L.Input((3,))
    model = K2.models.Model(x, L.Lambda(lambda t: tf.abs(t), name="tf_abs")(x))
    converted, proof = convert(model, custom_objects={"tf_abs": keras.ops.abs}, return_proof=True)
    assert proof.ok
    assert any("tf_abs" in line for line in proof.changes)


@needs_both
def test_refuses_layer_keras3_dropped(K2: Any) -> None:
    L = K2.layers
    x = L.Input((6, 2))
    model = K2.models.Model(x, L.LocallyConnected1D(3, 2, name="local")(x))
    with pytest.raises(UnconvertibleLayerError, match=r"'local' is a LocallyConnected1D.*Keras 3\.0"):
        convert(model)


@needs_both
def test_refuses_custom_layer_without_custom_object(K2: Any) -> None:
    case = ZOO["custom_layer"](K2)
    with pytest.raises(UnconvertibleLayerError, match=r"'scale' is of class 'Scale'.*custom_objects=\{'Scale'"):
        convert(case.model)


@needs_both
def test_mismatch_returns_nothing(K2: Any) -> None:
    import keras

    case = ZOO["custom_layer"](K2)
    wrong = {"Scale": convert_zoo.keras3_scale_class(keras, factor=1.01)}
    with pytest.raises(ConversionMismatchError, match="MISMATCH in 'head'") as caught:
        convert(case.model, custom_objects=wrong)
    proof = caught.value.proof
    assert not proof.ok and proof.max_abs > 1e-3
    # The wrong layer is named: not the Dense before it, not the output after it.
    assert proof.first_differing_layer == "scale", proof.layer_comparison
    assert "first differ at layer 'scale' (Scale): max |Δ|" in proof.layer_comparison, proof.layer_comparison
    assert "the layer before it agrees" in proof.layer_comparison, proof.layer_comparison
    assert "check the Keras 3 implementation of layer 'scale'" in str(caught.value), str(caught.value)
    assert Proof.from_json(proof.to_json()) == proof


@needs_keras2
def test_probes_are_as_long_as_the_source_computes(K2: Any) -> None:
    """Open dimensions are probed at the smallest length the source itself computes with."""
    for name, shape in (("strided_conv2d", (3, 23, 23, 3)), ("cropped_residual", (3, 10005, 2))):
        description = describe(ZOO[name](K2).model, samples=3, seed=1)
        assert description.probes[0].inputs[0].shape == shape, name
    L = K2.layers
    x = L.Input((None, 4), name="wave")  # no length within the budget (2M values: 524,288 steps of 4) feeds it
    model = K2.models.Model(x, L.Cropping1D((300_000, 300_000))(x))
    with pytest.raises(
        ProbeInputError,
        match=r"input 'wave' \(None, None, 4\): 27 lengths .* 5-16, 32, 64, .*"
        r"262144, 524288 \(up to 2,097,152 values per sample\), all fail "
        r"\(at 5: .*--inputs FILE\.npz",
    ):
        describe(model)


@needs_keras2
def test_a_length_that_empties_a_layer_is_ruled_out_from_its_output_shape(K2: Any) -> None:
    """A probe length that would empty a layer's output is named from the layers' output shapes, not run
    (TensorFlow's oneDNN pooling kills the process on such an input on some CPUs); the ruling stops at the
    first empty layer, and a length every layer computes is left to the source."""
    from compat_clone.convert._layer_outputs import empty_output

    model = ZOO["strided_conv2d"](K2).model

    def side(n: int) -> str:
        return str(empty_output(model, [np.zeros((1, n, n, 3), "float32")]))

    # 5 -> conv_s3 1x1 -> pool 0x0 (the layer the crash is in); 17 -> 5x5 -> 2x2 -> conv_valid 0x0
    assert side(5).startswith("layer 'pool' would output shape (1, 0, 0, 4)"), side(5)
    assert side(17).startswith("layer 'conv_valid' "), side(17)
    assert side(23) == "" and side(64) == ""
    # 11 -> 3x3 -> 1x1 -> conv_valid -1x-1: Keras 2 says a negative shape, tf.keras's conv refuses the shape itself
    assert re.match(r"layer 'conv_valid' (would output shape \(1, -1, -1, 4\)|refuses input shape)", side(11)), side(11)


@needs_both
def test_exact_length_found_and_a_keras3_failure_names_its_layer(K2: Any) -> None:
    """Reshape((6, 8)) -> Flatten -> Dense fixes the length at 6; a Keras 3 model failing on inputs the
    source computed is named by the layer that fails."""
    import keras

    L = K2.layers
    x = L.Input((None, 8))
    source = K2.models.Model(x, L.Dense(2)(L.Flatten()(L.Reshape((6, 8))(x))))
    model, proof = convert(source, return_proof=True)
    assert proof.shapes == ((4, 6, 8),) and "probe samples (random) of shape (4, 6, 8)," in str(proof), str(proof)
    description = describe(source)
    i = keras.Input((None, 8))
    broken = keras.Model(i, keras.layers.Dense(2)(keras.layers.Flatten()(keras.layers.Reshape((7, 8), name="seven")(i))))
    with pytest.raises(
        ConversionMismatchError,
        match=r"at layer 'seven', on probe inputs of shape \(4, 6, 8\) "
        "that the source computed",
    ):
        verify(description, broken)


@needs_both
def test_layer_outputs_over_the_budget_are_left_out_and_said(K2: Any) -> None:
    """Layer outputs past the byte budget are not kept; a failed proof compares the ones kept and says so."""
    import keras

    from compat_clone.convert._layer_outputs import record as record_layer_outputs

    case = ZOO["custom_layer"](K2)
    description = describe(case.model)
    # body (1, 3) and scale (1, 3) as float32: 24 bytes; head does not fit in 30.
    description.layer_outputs = record_layer_outputs(case.model, description.probes[0].inputs, False, budget=30)
    assert [r.layer for r in description.layer_outputs.records] == ["body", "scale"]
    assert description.layer_outputs.note == (
        "recorded up to layer 'scale': the outputs from layer 'head' on are over the budget of 30 bytes"
    )
    model = rebuild(description, custom_objects={"Scale": convert_zoo.keras3_scale_class(keras)})
    model.get_layer("head").kernel.assign(np.zeros((3, 2), "float32"))  # wrong after the layers recorded
    with pytest.raises(ConversionMismatchError) as caught:
        verify(description, model)
    proof = caught.value.proof
    assert proof.first_differing_layer == ""
    assert proof.layer_comparison == (
        "No layer is named: the 2 layers compared agree within tolerance on the first probe sample (recorded up "
        "to layer 'scale': the outputs from layer 'head' on are over the budget of 30 bytes); the difference "
        "shows in a layer after them, or only on other samples."
    ), proof.layer_comparison


@needs_both
def test_refuses_unknown_target(K2: Any) -> None:
    with pytest.raises(InvalidArgumentError, match="to='keras4'"):
        convert(ZOO["multi_io"](K2).model, to="keras4")


@needs_both
def test_convert_is_a_function_of_the_package(K2: Any) -> None:
    """The documented spelling: the package's `convert` function (the package itself is not callable)."""
    import compat_clone

    model = compat_clone.convert.convert(ZOO["sequential"](K2).model)
    assert type(model).__name__ == "Sequential"
    assert compat_clone.convert.convert is convert and not callable(compat_clone.convert)


def test_import_loads_no_framework() -> None:
    import subprocess
    import sys

    code = (
        "import sys, compat_clone, compat_clone.convert\n"
        "bad = [m for m in ('tensorflow', 'keras', 'tf_keras', 'jax', 'torch') if m in sys.modules]\n"
        "assert not bad, bad\n"
        "assert callable(compat_clone.convert.convert)\n"
    )
    env = dict(os.environ)
    subprocess.run([sys.executable, "-c", code], check=True, env=env)
