"""The conversion zoo from saved Keras 2 files, rebuilt in Keras 3 on TensorFlow, JAX and torch.

Every model of tests/convert/convert_zoo.py (keras.applications' MobileNetV2, the
masked Embedding -> Bidirectional(LSTM) -> TimeDistributed(Dense) tagger, GRU
with both `reset_after`, Conv1D/2D/3D + BatchNormalization, multi-input
multi-output, nested and shared layers, a Sequential with regularizers and
constraints, a Lambda, a custom layer, mixed precision) is built in a Keras 2
environment of the matrix, saved (standalone Keras 2.0.8 / 2.1.6 / 2.2.4 /
2.3.1 on TensorFlow 1.15 and 2.2.4 / 2.3.1 on TF 2.15: ``.h5``, also with
optimizer state; tf.keras 2.12 / 2.15: ``.h5`` and ``.keras``; TF 2.4:
SavedModels), read back the way
`compat-clone convert` reads it and described there
(tests/convert/convert_zoo_sources.py). Here, in a Keras 3.15 environment, each
description is rebuilt, proven against the source's outputs, written as
``.keras``, loaded back and proven again (what the command line's target
worker does), then trained one step, which must move its weights.

Each Keras 3 environment takes its share of the sources (`_SOURCES`); the
three together cover every source and format on every backend. tf_keras
2.16 / 2.21 models are converted in memory by tests/convert/test_convert_inprocess.py.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Dict, List, Tuple

import numpy as np
import pytest

from tests.convert import convert_zoo
from tests.convert.convert_envs import KERAS3_HOSTS, hosted, keras3_target, runs_here, written
from tests.support.families import WIDE

SCRIPT = Path(__file__).resolve().parent / "convert_zoo_sources.py"
KIND = "convert-zoo"
_HOSTS = KERAS3_HOSTS

# (source environment, format) -> the Keras 3.15 environments that rebuild it.
# `h5+optimizer`: saved after compile and one training step (training config and
# optimizer state in the file). The `-tf1` sources are files written by the old
# releases where their users run them (TensorFlow 1.15 / Python 3.7): spread over
# the three hosts, each case on two backends (its h5 and its h5+optimizer file).
_SOURCES: Dict[Tuple[str, str], Tuple[str, ...]] = {
    ("keras-2.0.8-tf1", "h5"): _HOSTS,
    ("keras-2.0.8-tf1", "h5+optimizer"): _HOSTS,
    ("keras-2.1.6-tf1", "h5"): _HOSTS,
    ("keras-2.1.6-tf1", "h5+optimizer"): _HOSTS,
    ("keras-2.2.4-tf1", "h5"): _HOSTS,
    ("keras-2.2.4-tf1", "h5+optimizer"): _HOSTS,
    ("keras-2.3.1-tf1", "h5"): _HOSTS,
    ("keras-2.3.1-tf1", "h5+optimizer"): _HOSTS,
    ("keras-2.2.4", "h5"): ("keras-3.15-torch",),
    ("keras-2.3.1", "h5"): ("keras-3.15-jax",),
    ("tf.keras-2.12", "h5"): ("keras-3.15-tf",),
    ("tf.keras-2.12", "keras"): ("keras-3.15-jax",),
    ("tf.keras-2.15", "h5"): ("keras-3.15-tf",),
    ("tf.keras-2.15", "keras"): ("keras-3.15-torch",),
    # TensorFlow 2.4's own SavedModels (Keras metadata inside saved_model.pb): the
    # cases spread over the three hosts (`_share`), so every backend rebuilds some.
    ("tf.keras-2.4", "savedmodel"): ("keras-3.15-tf", "keras-3.15-jax", "keras-3.15-torch"),
}
_SPREAD = {("tf.keras-2.4", "savedmodel")} | {key for key in _SOURCES if key[0].endswith("-tf1")}
_STANDALONE = tuple(sorted({env for env, _ in _SOURCES if env.startswith("keras-2.")}))
# Standalone Keras 2.0-2.3 has no mixed precision (tf.keras 2.1 brought it), no
# TFOpLambda (tf.keras 2.4) and no dict outputs; MobileNetV2 came with 2.2.0,
# GRU(reset_after=) after 2.0.
# TensorFlow 2.4 reloads MultiHeadAttention (conv_variants) from its own SavedModel
# with other outputs (tests/convert/convert_zoo_sources.py checks that it still does).
_NOT_IN = {
    "mixed_precision": _STANDALONE,
    "tf_ops": _STANDALONE,
    "dict_outputs": _STANDALONE,
    "mobilenet_v2": ("keras-2.0.8-tf1", "keras-2.1.6-tf1"),
    "gru_both": ("keras-2.0.8-tf1",),
    "conv_variants": ("tf.keras-2.4",),
}
# The length-bound cases (probes the source computes: cropping, strided valid convolutions, Flatten -> Dense)
# are files of the old releases, written in the TF1 environments; tf_keras converts them in memory
# (tests/convert/test_convert_inprocess.py).
_NOT_IN.update(
    {
        name: tuple(sorted({env for env, _ in _SOURCES if not env.endswith("-tf1")}))
        for name in ("cropped_residual", "strided_conv2d", "flatten_dense")
    }
)


# The three cases that take most of every writer's time (MobileNetV2: 60-80% of a TF1 unit; the two recurrent
# models: most of a TF 2.x one, TF 2.4's SavedModel above all) are written, and rebuilt, from the sources named
# here in `make test`: each on a TF1 release and on a TF 2.x one, in the formats that are theirs alone (a TF1
# h5 file with its optimizer state, TF 2.4's SavedModel, the .keras zip). `make test-wide` (COMPAT_CLONE_WIDE=1)
# writes and rebuilds every case from every source.
HEAVY_SOURCES: Dict[str, Tuple[Tuple[str, str], ...]] = {
    "mobilenet_v2": (("keras-2.2.4-tf1", "h5"), ("tf.keras-2.15", "keras")),
    "tagger": (("keras-2.2.4-tf1", "h5"), ("tf.keras-2.12", "keras")),
    "gru_both": (("keras-2.1.6-tf1", "h5+optimizer"), ("tf.keras-2.4", "savedmodel")),
}


def _in_make_test(env: str, fmt: str, name: str) -> bool:
    return WIDE or name not in HEAVY_SOURCES or (env, fmt) in HEAVY_SOURCES[name]


def _unit(env: str, fmt: str) -> List[str]:
    """The writer's arguments for (env, fmt): every case, or in `make test` all but the heavy ones not its own."""
    left_out = [name for name in HEAVY_SOURCES if not _in_make_test(env, fmt, name)]
    return [f"{fmt}~{','.join(left_out)}" if left_out else fmt]


_PROBED_AT = {"cropped_residual": (4, 10005, 2), "strided_conv2d": (4, 23, 23, 3), "flatten_dense": (4, 16, 12, 2)}


def _share(env: str, fmt: str, name: str, hosts: Tuple[str, ...]) -> Tuple[str, ...]:
    """The hosts that rebuild case `name` of (env, fmt): all of them, or one each for a spread source
    (a case's `h5+optimizer` file on the host after its `h5` file's)."""
    if (env, fmt) not in _SPREAD:
        return hosts
    return (hosts[(list(convert_zoo.ZOO).index(name) + (fmt == "h5+optimizer")) % len(hosts)],)


def _params() -> List[Any]:
    out = []
    for (env, fmt), hosts in _SOURCES.items():
        for name in convert_zoo.ZOO:
            if env in _NOT_IN.get(name, ()):
                continue
            mine = _share(env, fmt, name, hosts)
            if not _in_make_test(env, fmt, name):
                whence = " and ".join(f"{e} {f}" for e, f in HEAVY_SOURCES[name])
                out.append(
                    pytest.param(
                        env,
                        fmt,
                        name,
                        id=f"{env}-{fmt}-{name}",
                        marks=pytest.mark.skip(
                            reason=f"{name} is written and rebuilt from {whence} in make test, from every source in "
                            "make test-wide (COMPAT_CLONE_WIDE=1)"
                        ),
                    )
                )
                continue
            out.append(hosted(env, fmt, name, id=f"{env}-{fmt}-{name}", hosts=mine, verb="rebuilt"))
    return out


pytestmark = keras3_target("the zoo is rebuilt")


def writes(env: str) -> List[List[str]]:
    """The units of work `env` writes for every host: one per format, each with every case it can build."""
    return [_unit(e, fmt) for e, fmt in _SOURCES if e == env]


WRITERS = tuple(dict.fromkeys(env for env, _ in _SOURCES))


@pytest.fixture(scope="module")
def described() -> Any:
    """`described(env)` -> report: the zoo described in `env` in the formats this host rebuilds.

    Every format's files come from the matrix folder's cache (`written`): written
    once, with every case, for all hosts and runs.
    """

    def fetch(env: str) -> Dict[str, Any]:
        report: Dict[str, Any] = {"cases": {}, "unavailable": {}}
        for (e, fmt), hosts in _SOURCES.items():
            if e != env or not runs_here(hosts):
                continue
            _, part = written(KIND, SCRIPT, env, _unit(env, fmt))
            report["keras"] = part["keras"]
            report["unavailable"].update(part["unavailable"])
            for name, case in part["cases"].items():
                entry = report["cases"].setdefault(name, {**case, "files": {}})
                entry["files"].update(case["files"])
        return report

    return fetch


def _trains(keras: Any, model: Any, inputs: List[np.ndarray], outputs: List[np.ndarray]) -> None:
    before = [np.array(v) for v in model.trainable_weights]
    assert before, "the converted model has trainable weights"
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
    targets = [np.asarray(o, "float32") + 1.0 for o in outputs]
    loss = model.train_on_batch(inputs if len(inputs) > 1 else inputs[0], targets if len(targets) > 1 else targets[0])
    assert np.all(np.isfinite(np.asarray(loss, dtype="float64")))
    after = [np.array(v) for v in model.trainable_weights]
    assert any(not np.array_equal(a, b) for a, b in zip(before, after)), "one training step changed no weight"


@pytest.mark.parametrize("env, fmt, name", _params())
def test_zoo_file_rebuilt_proven_saved_and_trained(env: str, fmt: str, name: str, described: Any, tmp_path: Path) -> None:
    import keras

    from compat_clone.convert import load, rebuild, verify

    report = described(env)
    assert name in report["cases"], f"{env} did not describe {name}: {report['unavailable'].get(name)}"
    case = report["cases"][name]
    description = load(case["files"][fmt])
    assert description.source["family"] == ("keras2" if env.startswith("keras-2") else "tf_keras")
    custom = {"Scale": convert_zoo.keras3_scale_class(keras)} if case["custom"] else None
    tolerance = {"rtol": case["rtol"], "atol": case["atol"]}
    if name == "pure_lambda" and description.source["python"] != "{}.{}".format(*sys.version_info[:2]):
        # A source environment on another Python (tf.keras-2.4: 3.8, tf.keras-2.12: 3.9): a
        # Lambda's bytecode loads only in the Python that wrote it, so it is refused by name
        # with the way out, which is then taken.
        from compat_clone.errors import UnconvertibleLayerError

        with pytest.raises(UnconvertibleLayerError, match=f"Python {description.source['python']} bytecode"):
            rebuild(description)
        custom = {"affine": convert_zoo.affine}

    model = rebuild(description, custom_objects=custom)
    proof = verify(description, model, **tolerance)
    if name == "custom_layer":  # a wrong Keras 3 port: the layer named is it, from the source's recorded outputs
        _names_the_wrong_layer(keras, description)
    assert proof.ok and proof.samples == 4, str(proof)
    if name in _PROBED_AT:  # the open dimensions probed at the smallest length the source computes
        assert proof.shapes == (_PROBED_AT[name],), str(proof)
    print(f"{env} {fmt} {name}: {proof}")  # the proof line (pytest -rP shows it)
    # The file is what a user keeps: written, read back, proven again.
    path = tmp_path / f"{name}.keras"
    model.save(path)
    reloaded = keras.models.load_model(path, custom_objects=custom, compile=False, safe_mode=name != "pure_lambda")
    again = verify(description, reloaded, **tolerance)
    assert again.ok, str(again)
    if name == "tagger":
        # Padded steps are masked: not compared, and said so.
        (out,) = again.outputs
        assert out.masked > 0 and "masked positions not compared" in str(out), str(out)
    probe = description.probes[0]
    _trains(keras, reloaded, probe.inputs, probe.outputs)


def _names_the_wrong_layer(keras: Any, description: Any) -> None:
    from compat_clone.convert import rebuild, verify
    from compat_clone.errors import ConversionMismatchError

    wrong = rebuild(description, custom_objects={"Scale": convert_zoo.keras3_scale_class(keras, factor=1.01)})
    with pytest.raises(ConversionMismatchError, match="first differ at layer 'scale' \\(Scale\\)") as caught:
        verify(description, wrong)
    assert caught.value.proof.first_differing_layer == "scale", caught.value.proof.layer_comparison


_FRESH_LOAD = """
import sys, numpy as np, keras
path, probes, mode = sys.argv[1:]
kwargs = {}
if mode == "with":
    import compat_clone.convert
    kwargs["custom_objects"] = compat_clone.convert.custom_objects()
try:
    model = keras.models.load_model(path, compile=False, **kwargs)
except Exception as e:
    print("REFUSED", type(e).__name__, e)
    raise SystemExit(0)
data = np.load(probes)
keep = data["mask"]  # the unmasked steps: Keras versions fill masked ones differently
np.testing.assert_allclose(model.predict(data["x"], verbose=0)[keep], data["y"][keep], rtol=1e-5, atol=1e-6)
print("LOADED")
"""


@pytest.mark.parametrize("env", ["keras-2.2.4-tf1", "keras-2.2.4"])
def test_standalone_lstm_file_loads_in_a_fresh_process(env: str, described: Any, tmp_path: Path) -> None:
    """Standalone Keras 2.0-2.2's LSTM computes `hard_sigmoid` as 0.2x + 0.5: the file names compat_clone's function.

    (Keras 2.3 made `sigmoid` the LSTM's default recurrent activation: its
    tagger needs no such function.)

    The command line's target worker writes the file and says so; a fresh
    Keras 3 process loads it with `compat_clone.convert.custom_objects()`,
    and plain `load_model` refuses it with Keras' own message naming the
    function (never loads it with Keras 3's other formula).
    """
    import json
    import subprocess
    import sys

    hosts = _share(env, "h5", "tagger", _SOURCES[(env, "h5")])
    if not _in_make_test(env, "h5", "tagger"):
        pytest.skip(f"{env}'s tagger file is written in make test-wide (COMPAT_CLONE_WIDE=1)")
    if not runs_here(hosts):
        pytest.skip(f"rebuilt in {', '.join(hosts)}")
    report = described(env)
    description = report["cases"]["tagger"]["files"]["h5"]
    out = tmp_path / "tagger.keras"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "compat_clone.tools.convert._worker",
            "rebuild",
            "--description",
            description,
            "--out",
            str(out),
            "--rtol",
            "1e-5",
            "--atol",
            "1e-6",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1].partition(" ")[2])
    assert result["formulas"] == ["compat_clone>keras2_hard_sigmoid"], result
    from compat_clone.convert import load

    probe = load(description).probes[0]
    probes = tmp_path / "probes.npz"
    import numpy as np

    np.savez(probes, x=probe.inputs[0], y=probe.outputs[0], mask=probe.masks[0])
    seen = {}
    for mode in ("plain", "with"):
        run = subprocess.run(
            [sys.executable, "-c", _FRESH_LOAD, str(out), str(probes), mode], capture_output=True, text=True, timeout=600
        )
        assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
        seen[mode] = run.stdout
    assert seen["plain"].startswith("REFUSED") and "keras2_hard_sigmoid" in seen["plain"], seen
    assert seen["with"].strip() == "LOADED", seen
