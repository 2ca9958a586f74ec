"""compat_clone.convert in one process: tf_keras next to Keras 3 (`tf_keras` 2.16+ and the default `.venv`).

Every zoo model and some Keras applications are converted in process, their
predictions compared and one training step taken on the result; the
description goes through a file and back; dtype policies, masks and shared
layers are kept.
"""

from __future__ import annotations

import importlib
import json
from typing import Any

import numpy as np
import pytest

from compat_clone.convert import (
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
    InvalidArgumentError,
)
from tests.convert import convert_zoo
from tests.convert.convert_support import (
    fresh_keras2,
    needs_both,
)
from tests.convert.convert_support import (
    predict_outputs as _predict,
)
from tests.convert.convert_support import (
    weights_snapshot as _snapshot,
)
from tests.convert.convert_zoo import ZOO
from tests.support.families import WIDE


@pytest.fixture
def K2() -> Any:
    """The Keras 2 module under test (`convert_support.fresh_keras2`)."""
    yield from fresh_keras2()


@needs_both
@pytest.mark.parametrize("name", sorted(ZOO))
def test_convert_zoo_and_train(K2: Any, name: str) -> None:
    import keras

    case = ZOO[name](K2)
    custom = case.custom_objects(keras) if case.custom_objects else None
    source_weights = _snapshot(case.model)
    model, proof = convert(case.model, custom_objects=custom, rtol=case.rtol, atol=case.atol, return_proof=True)
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
    model.fit(
        fresh.inputs if len(fresh.inputs) > 1 else fresh.inputs[0],
        targets if len(targets) > 1 else targets[0],
        epochs=1,
        batch_size=2,
        verbose=0,
    )
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


# -- Keras applications -------------------------------------------------------


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
