"""compat_clone.convert: `describe`, `save` and `load`, in every environment where a Keras 2 family is tested.

Each zoo model is described, its description's probe outputs must be the
model's predictions, and the file written reads back the same. Converting
(Keras 3 in the same process) is in tests/convert/test_convert_inprocess.py and
tests/convert/test_convert.py.
"""

from __future__ import annotations

import json
import os
from typing import Any

import numpy as np
import pytest

from compat_clone.convert import (
    FORMAT,
    Description,
    describe,
    load,
    save,
)
from compat_clone.errors import (
    DescriptionFileError,
    InvalidArgumentError,
)
from tests.convert import convert_zoo
from tests.convert.convert_support import (
    IN_PROCESS_HOST as _IN_PROCESS_HOST,
)
from tests.convert.convert_support import (
    KERAS2_FAMILY,
    fresh_keras2,
    needs_keras2,
)
from tests.convert.convert_support import (
    predict_outputs as _predict,
)
from tests.convert.convert_support import (
    weights_snapshot as _snapshot,
)
from tests.convert.convert_zoo import ZOO
from tests.convert.test_convert_zoo_envs import HEAVY_SOURCES
from tests.support.families import WIDE


@pytest.fixture
def K2() -> Any:
    """The Keras 2 module under test (`convert_support.fresh_keras2`)."""
    yield from fresh_keras2()


# -- describe + save: every Keras 2 family -----------------------------------


# The three zoo cases that take most of a describe (MobileNetV2, the tagger, the GRUs: 25-55 s each in an environment
# of a busy `make test`, most of this test's time) are described here in one environment per Keras 2 family in
# `make test`: standalone Keras 2 in keras-2.3.1, tf.keras / tf_keras in the in-process host. The zoo writers
# describe them too, with their own checks, in the TF1 releases and tf.keras 2.4 / 2.12 / 2.15
# (tests/convert/test_convert_zoo_envs.py `HEAVY_SOURCES`). `make test-wide` (COMPAT_CLONE_WIDE=1) describes them everywhere.
_HEAVY_DESCRIBED_IN = ("keras-2.3.1", _IN_PROCESS_HOST)


def _described_here(name: str) -> bool:
    return name not in HEAVY_SOURCES or WIDE or os.environ.get("COMPAT_CLONE_ENV") in (None, *_HEAVY_DESCRIBED_IN)


@needs_keras2
@pytest.mark.parametrize("name", sorted(ZOO))
def test_describe_records_model_and_outputs(K2: Any, name: str, tmp_path: Any) -> None:
    if not _described_here(name):
        pytest.skip(
            f"{name} is described in {' and '.join(_HEAVY_DESCRIBED_IN)} and by the zoo writers in make test, "
            "in every environment in make test-wide (COMPAT_CLONE_WIDE=1)"
        )
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
    # Every layer's outputs on the first sample, in graph order: the model's outputs among them. One sample
    # and the whole batch are two computations (oneDNN picks its kernels by batch size: mobilenet_v2 differs by
    # more than 1e-6 on some CPUs): within the case's own tolerance.
    recorded = description.layer_outputs
    assert recorded.note == "" and recorded.records, recorded.note
    assert all(r.value.shape[0] == 1 for r in recorded.records)
    for out in probe.outputs:
        assert any(
            r.value.shape == out[:1].shape and np.allclose(r.value, out[:1], rtol=case.rtol, atol=case.atol)
            for r in recorded.records
        ), "a model output is not among the recorded layer outputs"
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
    description = Description(
        source={"family": "tf_keras"},
        architecture={"class_name": "Functional", "config": {}},
        weights=[],
        probes=[ProbeSet("random", [np.zeros((2, 3))], [np.zeros((2, 3, 2))])],
        notes=[],
        layer_outputs=LayerOutputs([LayerOutput("rnn", value, mask)], ""),
    )
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
