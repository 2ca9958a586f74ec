"""compat_clone.convert: Keras 2 models to trainable Keras 3 models, proven.

In environments where a Keras 2 family and Keras 3 share a process
(`tf_keras` 2.16+ with `keras` 3 installed next to it, and the default
`.venv`), every zoo model is converted in process, its predictions compared
and one training step taken on the result. Everywhere a Keras 2 family is
tested, `describe` + `save` run on the same zoo and the description's probe
outputs must be the model's predictions.
"""

from __future__ import annotations

import importlib
import json
import os
from typing import Any, List

import numpy as np
import pytest

from compat_clone.convert import (
    FORMAT,
    Description,
    Proof,
    convert,
    describe,
    load,
    rebuild,
    save,
    verify,
)
from compat_clone.errors import (
    ConversionMismatchError,
    DescriptionFileError,
    InvalidArgumentError,
    ProbeInputError,
    UnconvertibleLayerError,
)
from tests.conftest import WIDE, families_under_test, keras_module
from tests import convert_zoo
from tests.convert_zoo import ZOO
from tests.test_convert_zoo_envs import HEAVY_SOURCES


def _keras2_family() -> str | None:
    for family in families_under_test():
        if family in ("tf_keras", "keras2"):
            return family
    return None


def _keras3_alongside() -> bool:
    """Whether Keras 3 imports in this process next to the Keras 2 family under test."""
    family = _keras2_family()
    if family != "tf_keras":
        return False
    try:
        importlib.import_module("tf_keras")
        keras = importlib.import_module("keras")
    except ImportError:
        return False
    return str(keras.__version__).startswith("3.")


KERAS2_FAMILY = _keras2_family()
# The in-process conversions (tf_keras next to Keras 3) run in one tf_keras environment of `make test`, the
# newest: tf_keras-2.16 would repeat them for about 3 minutes. `make test-wide` (COMPAT_CLONE_WIDE=1) runs
# them in every tf_keras environment, and outside the matrix they run wherever both import.
_IN_PROCESS_HOST = "tf_keras-2.21"
IN_PROCESS = _keras3_alongside() and (os.environ.get("COMPAT_CLONE_ENV") in (None, _IN_PROCESS_HOST) or WIDE)

needs_keras2 = pytest.mark.skipif(KERAS2_FAMILY is None, reason="no Keras 2 family tested here")
needs_both = pytest.mark.skipif(
    not IN_PROCESS, reason="Keras 3 cannot share this process with the Keras 2 family under test"
    if not _keras3_alongside() else f"converted in {_IN_PROCESS_HOST} in make test (every tf_keras in make test-wide)"
)


@pytest.fixture
def K2() -> Any:
    """The Keras 2 module under test; standalone Keras 2 gets a fresh TF1 graph per test.

    Standalone Keras 2 builds every model into one default graph, which the
    other tests of this worker have grown: a MobileNetV2 described there
    takes minutes instead of seconds.
    """
    assert KERAS2_FAMILY is not None
    K = keras_module(KERAS2_FAMILY)
    if KERAS2_FAMILY == "keras2":
        K.backend.clear_session()
    yield K
    if KERAS2_FAMILY == "keras2":
        K.backend.clear_session()


def _predict(model: Any, inputs: List[np.ndarray]) -> List[np.ndarray]:
    out = model.predict(inputs if len(inputs) > 1 else inputs[0], verbose=0)
    if isinstance(out, dict):  # dict_outputs: the flattened outputs' order, sorted keys
        return [np.asarray(out[k]) for k in sorted(out)]
    return [np.asarray(o) for o in (out if isinstance(out, list) else [out])]


def _snapshot(model: Any) -> List[np.ndarray]:
    return [np.array(w) for w in model.get_weights()]


# -- describe + save: every Keras 2 family -----------------------------------


# The three zoo cases that take most of a describe (MobileNetV2, the tagger, the GRUs: 25-55 s each in an environment
# of a busy `make test`, most of this test's time) are described here in one environment per Keras 2 family in
# `make test`: standalone Keras 2 in keras-2.3.1, tf.keras / tf_keras in the in-process host. The zoo writers
# describe them too, with their own checks, in the TF1 releases and tf.keras 2.4 / 2.12 / 2.15
# (tests/test_convert_zoo_envs.py `HEAVY_SOURCES`). `make test-wide` (COMPAT_CLONE_WIDE=1) describes them everywhere.
_HEAVY_DESCRIBED_IN = ("keras-2.3.1", _IN_PROCESS_HOST)


def _described_here(name: str) -> bool:
    return (name not in HEAVY_SOURCES or WIDE
            or os.environ.get("COMPAT_CLONE_ENV") in (None, *_HEAVY_DESCRIBED_IN))


@needs_keras2
@pytest.mark.parametrize("name", sorted(ZOO))
def test_describe_records_model_and_outputs(K2: Any, name: str, tmp_path: Any) -> None:
    if not _described_here(name):
        pytest.skip(f"{name} is described in {' and '.join(_HEAVY_DESCRIBED_IN)} and by the zoo writers in make test, "
                    "in every environment in make test-wide (COMPAT_CLONE_WIDE=1)")
    if not convert_zoo.available(name, K2):
        pytest.skip(f"{name} needs layers {K2.__name__} {getattr(K2, '__version__', '')} lacks")
    case = ZOO[name](K2)
    before = _snapshot(case.model)
    description = describe(case.model, samples=3, seed=1)
    assert description.source["family"] == KERAS2_FAMILY
    assert description.format == FORMAT
    assert len(description.weights) == len(case.model.get_weights())
    # The recorded outputs are the model's predictions on the recorded inputs.
    probe = description.probes[0]
    for recorded, now in zip(probe.outputs, _predict(case.model, probe.inputs)):
        np.testing.assert_allclose(recorded, now, rtol=1e-6, atol=1e-7)
    # Describing changed nothing.
    for a, b in zip(before, _snapshot(case.model)):
        np.testing.assert_array_equal(a, b)
    path = save(description, tmp_path / name)
    loaded = load(path)
    assert loaded.architecture == description.architecture
    assert [w.name for w in loaded.weights] == [w.name for w in description.weights]
    for a, b in zip(loaded.weights, description.weights):
        np.testing.assert_array_equal(a.value, b.value)
    np.testing.assert_array_equal(loaded.probes[0].outputs[0], probe.outputs[0])
    assert len(loaded.probes[0].masks) == len(probe.masks)
    for a, b in zip(loaded.probes[0].masks, probe.masks):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_array_equal(a, b)
    # Every layer's outputs on the first sample, in graph order: the model's outputs among them.
    recorded = description.layer_outputs
    assert recorded.note == "" and recorded.records, recorded.note
    assert all(r.value.shape[0] == 1 for r in recorded.records)
    for out in probe.outputs:
        assert any(r.value.shape == out[:1].shape and np.allclose(r.value, out[:1], rtol=1e-6, atol=1e-7)
                   for r in recorded.records), "a model output is not among the recorded layer outputs"
    again = loaded.layer_outputs
    assert [(r.layer, r.value.shape) for r in again.records] == [(r.layer, r.value.shape) for r in recorded.records]
    for a, b in zip(again.records, recorded.records):
        np.testing.assert_array_equal(a.value, b.value)
        assert (a.mask is None) == (b.mask is None)


@needs_keras2
def test_describe_embedding_inputs_stay_in_range(K2: Any) -> None:
    description = describe(ZOO["tagger"](K2).model, samples=6)
    tokens = description.probes[0].inputs[0]
    assert tokens.dtype == np.int32
    assert tokens.min() >= 0 and tokens.max() < 30
    assert (tokens == 0).any(), "masked positions are probed"
    # The source's output mask is recorded: the padded steps.
    (mask,) = description.probes[0].masks
    np.testing.assert_array_equal(mask, tokens != 0)
    # An output without a mask records none.
    assert describe(ZOO["multi_io"](K2).model).probes[0].masks == []


@needs_keras2
def test_describe_user_probe_inputs(K2: Any) -> None:
    case = ZOO["multi_io"](K2)
    mine = [np.ones((2, 5), "float32"), np.zeros((2, 3), "float32")]
    description = describe(case.model, probe_inputs=mine)
    # the user's inputs replace the random probes (inputs whose valid values only the user knows)
    assert [p.origin for p in description.probes] == ["user"]
    np.testing.assert_allclose(description.probes[0].outputs[1], _predict(case.model, mine)[1], rtol=1e-6)
    with pytest.raises(InvalidArgumentError, match="one array per model input"):
        describe(case.model, probe_inputs=mine[:1])


@needs_keras2
def test_random_probes_follow_each_inputs_role(K2: Any) -> None:
    """Ids for an Embedding whatever the input's dtype, padding for mask_zero, Masking's value, categories."""
    L = K2.layers
    ids = L.Input((40,), name="ids")  # float32 feeding an Embedding: a common Keras 2 pattern
    padded = L.Input((7,), dtype="int32", name="padded")
    seq = L.Input((6, 2), name="seq")
    inputs, heads = [ids, padded, seq], []
    heads.append(L.GlobalAveragePooling1D()(L.Embedding(50, 4)(ids)))
    # a masked mean where pooling takes masks (standalone Keras 2.0-2.1's does not: an LSTM reads it there)
    masked_head = L.GlobalAveragePooling1D() if L.GlobalAveragePooling1D().supports_masking else L.LSTM(4)
    heads.append(masked_head(L.Embedding(9, 4, mask_zero=True)(padded)))
    heads.append(L.LSTM(3)(L.Masking(mask_value=-1.0)(seq)))
    if hasattr(L, "CategoryEncoding"):  # tf.keras 2.6+
        cats = L.Input((3,), name="cats")
        inputs.append(cats)
        heads.append(L.CategoryEncoding(num_tokens=5, output_mode="count")(cats))
    model = K2.models.Model(inputs, L.Concatenate()(heads))
    probe = describe(model).probes[0]
    got = dict(zip([t.name.split(":")[0] for t in model.inputs], probe.inputs))
    assert got["ids"].dtype == np.float32 and np.all(got["ids"] == np.round(got["ids"]))
    assert got["ids"].min() >= 0 and got["ids"].max() < 50
    assert np.all(got["padded"][::2, -2:] == 0) and np.all(got["padded"][:, :-2] >= 1)
    assert got["padded"].max() < 9
    assert np.all(got["seq"][::2, -2:, :] == -1.0) and np.any(got["seq"][1::2] != -1.0)
    if "cats" in got:
        assert got["cats"].min() >= 0 and got["cats"].max() < 5
    assert np.all(np.isfinite(probe.outputs[0]))


@needs_keras2
def test_describe_notes_framework_lambda(K2: Any) -> None:
    L = K2.layers
    # A module global, as in user code (a closure over a module is refused
    # by standalone Keras 2's own `get_config`).
    globals()["_K2_BACKEND"] = K2.backend
    x = L.Input((3,))
    model = K2.models.Model(x, L.Lambda(lambda t: _K2_BACKEND.abs(t), name="absolute")(x))  # type: ignore[name-defined]  # noqa: F821
    notes = describe(model).notes_for("absolute")
    assert [n["kind"] for n in notes] == ["lambda_framework"]
    assert notes[0]["name"] == "_K2_BACKEND"


def test_a_description_without_layer_outputs_loads(tmp_path: Any) -> None:
    """``layer_outputs`` came within format 1: a file written before it loads, with none recorded, said so."""
    from compat_clone.convert import LayerOutput, LayerOutputs, ProbeSet

    value, mask = np.arange(6, dtype="float32").reshape(1, 3, 2), np.array([[True, True, False]])
    description = Description(source={"family": "tf_keras"}, architecture={"class_name": "Functional", "config": {}},
                              weights=[], probes=[ProbeSet("random", [np.zeros((2, 3))], [np.zeros((2, 3, 2))])],
                              notes=[], layer_outputs=LayerOutputs([LayerOutput("rnn", value, mask)], ""))
    again = load(save(description, tmp_path / "new.npz")).layer_outputs
    (rec,) = again.records
    assert rec.layer == "rnn" and again.note == ""
    np.testing.assert_array_equal(rec.value, value)
    np.testing.assert_array_equal(rec.mask, mask)
    with np.load(tmp_path / "new.npz") as archive:
        arrays = {k: archive[k] for k in archive.files}
    document = json.loads(str(arrays["description.json"][()]))
    del document["layer_outputs"]
    arrays = {k: v for k, v in arrays.items() if not k.startswith("o/")}
    arrays["description.json"] = np.array(json.dumps(document))
    np.savez(tmp_path / "old.npz", **arrays)  # type: ignore[arg-type]
    old = load(tmp_path / "old.npz").layer_outputs
    assert old.records == [] and old.note.startswith("not recorded (the description was written by a compat_clone")


def test_load_refuses_other_files(tmp_path: Any) -> None:
    plain = tmp_path / "plain.npz"
    np.savez(plain, x=np.zeros(2))
    with pytest.raises(DescriptionFileError, match="not a model description"):
        load(plain)
    other = tmp_path / "other.npz"
    np.savez(other, **{"description.json": np.array('{"format": "compat_clone.convert/0"}')})
    with pytest.raises(DescriptionFileError, match="compat_clone.convert/0"):
        load(other)
    with pytest.raises(FileNotFoundError):
        load(tmp_path / "missing.npz")


# -- convert in one process: tf_keras next to Keras 3 -------------------------


@needs_both
@pytest.mark.parametrize("name", sorted(ZOO))
def test_convert_zoo_and_train(K2: Any, name: str) -> None:
    import keras

    case = ZOO[name](K2)
    custom = case.custom_objects(keras) if case.custom_objects else None
    source_weights = _snapshot(case.model)
    model, proof = convert(
        case.model, custom_objects=custom, rtol=case.rtol, atol=case.atol, return_proof=True
    )
    assert type(model).__module__.startswith("keras.")
    assert proof.ok and proof.samples == 4
    assert len(proof.outputs) == len(case.model.outputs)
    assert str(proof).startswith(f"proof: {len(case.model.outputs)} output")
    # Independent of the proof: fresh inputs give the same predictions.
    fresh = describe(case.model, samples=2, seed=7).probes[0]
    for mine, theirs in zip(_predict(model, fresh.inputs), fresh.outputs):
        np.testing.assert_allclose(mine, theirs, rtol=case.rtol, atol=case.atol)
    # The source is untouched.
    for a, b in zip(source_weights, _snapshot(case.model)):
        np.testing.assert_array_equal(a, b)
    # One training step moves the converted model's weights.
    before = [np.array(v) for v in model.trainable_weights]
    assert before, "the converted model has trainable weights"
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
    targets = [np.asarray(o, "float32") + 1.0 for o in fresh.outputs]
    model.fit(fresh.inputs if len(fresh.inputs) > 1 else fresh.inputs[0],
              targets if len(targets) > 1 else targets[0], epochs=1, batch_size=2, verbose=0)
    after = [np.array(v) for v in model.trainable_weights]
    assert any(not np.array_equal(a, b) for a, b in zip(before, after))


@needs_both
def test_roundtrip_through_file(K2: Any, tmp_path: Any) -> None:
    case = ZOO["tagger"](K2)
    path = save(describe(case.model), tmp_path / "tagger.npz")
    description = load(path)
    assert isinstance(description, Description)
    model = rebuild(description)
    proof = verify(description, model)
    assert proof.ok and proof.max_abs <= 1e-5
    # What the command line's worker prints, and reads back: the same proof.
    data = json.loads(json.dumps(proof.to_json()))
    assert Proof.from_json(data) == proof and data["line"] == str(proof)
    with pytest.raises(InvalidArgumentError, match="proof's JSON"):
        Proof.from_json({"outputs": []})


@needs_both
def test_dtype_policy_kept(K2: Any) -> None:
    model = convert(ZOO["mixed_precision"](K2).model, rtol=1e-2, atol=1e-2)
    policies = {layer.name: layer.dtype_policy.name for layer in model.layers if layer.weights}
    assert set(policies.values()) == {"mixed_float16"}
    assert model.layers[-1].dtype_policy.name == "float32"


@needs_both
def test_masks_and_sharing_kept(K2: Any) -> None:
    model = convert(ZOO["nested_shared"](K2).model)
    shared = model.get_layer("shared")
    inner = model.get_layer("inner")
    assert len(shared._inbound_nodes) == 2 and len(inner._inbound_nodes) == 2
    tagger, proof = convert(ZOO["tagger"](K2).model, return_proof=True)
    tokens = np.array([[3, 4, 0, 0, 0, 0, 0]], "int32")
    mask = tagger.get_layer("embed").compute_mask(tokens)
    assert np.asarray(mask).tolist() == [[True, True] + [False] * 5]
    # The proof compares the unmasked steps and says how many it left out.
    (out,) = proof.outputs
    assert out.masked == 2 * 2 * 4  # 2 padded steps in 2 of 4 samples, x 4 tags
    assert "16 masked positions not compared" in str(out)


@needs_both
def test_proof_ignores_masked_positions_only(K2: Any) -> None:
    """Values under the source's mask may differ (Keras versions fill them differently); others may not."""
    import copy

    case = ZOO["tagger"](K2)
    description = describe(case.model)
    model = rebuild(description)
    (mask,) = description.probes[0].masks
    assert not mask.all()
    hidden = copy.deepcopy(description)
    hidden.probes[0].outputs[0][~mask] += 1.0
    out = verify(hidden, model).outputs[0]
    assert out.ok and out.masked == int((~mask).sum()) * 4 and abs(out.masked_max_abs - 1.0) < 1e-3
    seen = copy.deepcopy(description)
    seen.probes[0].outputs[0][mask] += 1e-3
    with pytest.raises(ConversionMismatchError, match="MISMATCH in 'tags'"):
        verify(seen, model)


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
    subprocess.run([sys.executable, "-c", script, str(path), str(tmp_path / "in.npz"),
                    str(tmp_path / "out.npz")], check=True, env=env, timeout=300)
    got = np.load(tmp_path / "out.npz")
    for k, expected in enumerate(inputs.outputs):
        np.testing.assert_allclose(got[f"arr_{k}"], expected, rtol=1e-5, atol=1e-6)
    assert keras.__version__.startswith("3.")


_APPLICATIONS = [
    # (name, input size, why it is here); the first ones run in `make test`
    ("MobileNetV3Small", 32, "names with '/', TensorFlow functions on Keras tensors"),
    ("ConvNeXtTiny", 32, "ConvNeXt's own LayerScale"),
    ("Xception", 71, "SeparableConv2D (Keras 2 wrote `groups`)"),
    ("DenseNet121", 32, "names with '/'"),
    # its own initial weights: random ones grow past float32 over its 780 layers
    ("InceptionResNetV2", 75, "InceptionResNetV2's own CustomScaleLayer"),
    ("RegNetX002", 32, "TensorFlow functions on Keras tensors"),
    ("EfficientNetB0", 32, "Rescaling and Normalization"),
    ("NASNetMobile", 32, "separable convolutions, cropping"),
]
_IN_MAKE_TEST = 3


@needs_both
@pytest.mark.parametrize("name,size,why", _APPLICATIONS, ids=[a[0] for a in _APPLICATIONS])
def test_keras_applications_convert(K2: Any, name: str, size: int, why: str) -> None:
    if _APPLICATIONS.index((name, size, why)) >= _IN_MAKE_TEST and not WIDE:
        pytest.skip(f"{name} converts in make test-wide (COMPAT_CLONE_WIDE=1)")
    applications = importlib.import_module(K2.__name__ + ".applications")
    source = getattr(applications, name)(weights=None, input_shape=(size, size, 3), classes=5)
    if name != "InceptionResNetV2":
        source = convert_zoo.randomize(source)
    model, proof = convert(source, rtol=1e-4, atol=1e-5, return_proof=True)
    assert proof.ok, why
    assert len(model.weights) == len(source.weights)


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
_SWEEP_ARGUMENTS = {"Bidirectional": lambda K2: {"layer": K2.layers.LSTM(2)},
                    "CategoryEncoding": lambda K2: {"num_tokens": 3}}


@needs_both
def test_every_keras2_layer_default_config_maps(K2: Any) -> None:
    """Each layer class of both versions, built with its defaults, maps onto its Keras 3 class.

    What it skips is listed with the reason (`_SWEEP_SKIPS`, `REMOVED_LAYERS`),
    never dropped silently: a class with no Keras 3 counterpart, one that does
    not build with the sweep's arguments, one refused on purpose.
    """
    import inspect

    import keras

    from tests.support.internals import REMOVED_LAYERS, map_config

    needed = {"units": 2, "filters": 2, "kernel_size": 1, "rate": 0.5, "pool_size": 2, "size": 2,
              "padding": 1, "cropping": 1, "target_shape": (2,), "dims": (1,), "n": 2, "num_heads": 2,
              "key_dim": 2, "equation": "ab,bc->ac", "output_shape": (2,), "height": 2, "width": 2,
              "factor": 0.1, "num_tokens": 3, "bin_boundaries": [0.0], "stddev": 0.1, "scale": 1.0,
              "offset": 0.0, "axis": -1, "height_factor": 0.1, "width_factor": 0.1, "axes": 1,
              "layer": K2.layers.Dense(2), "cell": K2.layers.LSTMCell(2), "cells": [K2.layers.LSTMCell(2)],
              "activation": "relu", "mean": 0.0, "variance": 1.0, "input_dim": 3, "output_dim": 2,
              "num_bins": 2, "function": abs}
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
    import tensorflow as tf
    import keras

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
    with pytest.raises(ProbeInputError, match=r"input 'wave' \(None, None, 4\): 27 lengths .* 5-16, 32, 64, .*"
                                              r"262144, 524288 \(up to 2,097,152 values per sample\), all fail "
                                              r"\(at 5: .*--inputs FILE\.npz"):
        describe(model)


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
    with pytest.raises(ConversionMismatchError, match=r"at layer 'seven', on probe inputs of shape \(4, 6, 8\) "
                                                      "that the source computed"):
        verify(description, broken)


@needs_both
def test_layer_outputs_over_the_budget_are_left_out_and_said(K2: Any) -> None:
    """Layer outputs past the byte budget are not kept; a failed proof compares the ones kept and says so."""
    import keras

    from tests.support.internals import record_layer_outputs

    case = ZOO["custom_layer"](K2)
    description = describe(case.model)
    # body (1, 3) and scale (1, 3) as float32: 24 bytes; head does not fit in 30.
    description.layer_outputs = record_layer_outputs(case.model, description.probes[0].inputs, False, budget=30)
    assert [r.layer for r in description.layer_outputs.records] == ["body", "scale"]
    assert description.layer_outputs.note == ("recorded up to layer 'scale': the outputs from layer 'head' on "
                                               "are over the budget of 30 bytes")
    model = rebuild(description, custom_objects={"Scale": convert_zoo.keras3_scale_class(keras)})
    model.get_layer("head").kernel.assign(np.zeros((3, 2), "float32"))  # wrong after the layers recorded
    with pytest.raises(ConversionMismatchError) as caught:
        verify(description, model)
    proof = caught.value.proof
    assert proof.first_differing_layer == ""
    assert proof.layer_comparison == (
        "No layer is named: the 2 layers compared agree within tolerance on the first probe sample (recorded up "
        "to layer 'scale': the outputs from layer 'head' on are over the budget of 30 bytes); the difference "
        "shows in a layer after them, or only on other samples."), proof.layer_comparison


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
