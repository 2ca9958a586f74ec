"""`compat-clone convert` on files as users have them: written by TensorFlow 2.4 itself.

The sources are written in the sibling environment tf.keras-2.4 (TensorFlow
2.4.4 on Python 3.8) by tests/convert/convert_field_sources.py: SavedModels whose Keras
metadata sits inside ``saved_model.pb`` (no ``keras_metadata.pb``), a model
with dict outputs (.h5 and SavedModel), a float ``Input((40,))`` feeding an
Embedding, a model that answers NaN / inf. Each is converted through the real
command line here, in a Keras 3.15 environment (each host its share), and the
result loaded, compared with the source's predictions and trained one step.

The refusals that need no framework (a damaged .keras, a destination that
cannot take the file) run everywhere.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest

from compat_clone.tools.cli import main as cli_main
from tests.convert.convert_envs import hosted, keras3_target, run_convert, runs_here, sibling, written

SCRIPT = Path(__file__).resolve().parent / "convert_field_sources.py"
WRITER = "tf.keras-2.4"

# case -> the Keras 3.15 environments that convert it (together: every backend)
_CASES: Dict[str, Tuple[str, ...]] = {
    "plain-savedmodel": ("keras-3.15-tf", "keras-3.15-torch"),
    "dict-savedmodel": ("keras-3.15-jax", "keras-3.15-torch"),
    "dict-h5": ("keras-3.15-tf",),
    "embed-h5": ("keras-3.15-jax",),
    "nan-h5": ("keras-3.15-torch",),
    "custom-savedmodel": ("keras-3.15-tf",),
    "custom-h5": ("keras-3.15-jax",),
    "lambda-h5": ("keras-3.15-torch",),
    "unfed-h5": ("keras-3.15-tf",),
}
_FILES = {
    "plain-savedmodel": "plain_savedmodel",
    "dict-savedmodel": "dict_savedmodel",
    "dict-h5": "dict.h5",
    "embed-h5": "embed.h5",
    "nan-h5": "nan.h5",
    "custom-savedmodel": "custom_savedmodel",
    "custom-h5": "custom.h5",
    "lambda-h5": "lambda.h5",
    "unfed-h5": "unfed.h5",
}
LAYERS = Path(__file__).resolve().parent / "convert_field_layers.py"


cross_env = keras3_target("TF 2.4's files are converted")


def _case(name: str) -> Any:
    return hosted(name, id=name, hosts=_CASES[name])


KIND = "convert-field"
WRITERS = (WRITER,)


def writes(env: str) -> List[List[str]]:
    """The one unit of work TF 2.4 writes for every host: every case of `_CASES`."""
    return [list(_CASES)] if env == WRITER else []


@pytest.fixture(scope="module")
def field() -> Any:
    """`field()` -> the folder with every case's files by TF 2.4 (tests/convert/source_cache.py keeps them)."""
    return lambda: written(KIND, SCRIPT, WRITER, writes(WRITER)[0])[0]


convert = run_convert


def _common(source: Path, out: Path) -> List[str]:
    import keras

    return [
        str(source),
        "-o",
        str(out),
        "--no-build",
        "--matrix-dir",
        str(sibling(WRITER).parent),
        "--to",
        sys.prefix,
        "--backend",
        keras.backend.backend(),
    ]


def _outputs(model: Any, x: Any) -> List[Any]:
    import numpy as np

    out = model.predict(x, verbose=0)
    if isinstance(out, dict):
        return [np.asarray(out[k]) for k in sorted(out)]
    return [np.asarray(o) for o in (out if isinstance(out, (list, tuple)) else [out])]


def _loads_predicts_trains(path: Path, probes: Path) -> None:
    """The converted file answers as TF 2.4 did on its own inputs, and one training step moves it."""
    import keras
    import numpy as np

    model = keras.models.load_model(path, compile=False)
    data = np.load(probes)
    expected = [data[f"y{k}"] for k in range(len([n for n in data.files if n.startswith("y")]))]
    got = _outputs(model, data["x"])
    assert len(got) == len(expected)
    for mine, theirs in zip(got, expected):
        np.testing.assert_allclose(mine, theirs, rtol=1e-5, atol=1e-6, equal_nan=True)
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
    before = [np.array(w) for w in model.get_weights()]
    targets: Any = [np.zeros_like(y) for y in got]
    if isinstance(model.output, dict):
        targets = {k: np.zeros_like(v) for k, v in model.predict(data["x"], verbose=0).items()}
    model.train_on_batch(data["x"], targets if len(got) > 1 else targets[0])
    after = model.get_weights()
    assert any(not np.array_equal(b, a, equal_nan=True) for b, a in zip(before, after)), "no weight moved"


@cross_env
@pytest.mark.parametrize("name", [_case("plain-savedmodel"), _case("dict-savedmodel"), _case("dict-h5")])
def test_tf24_files_convert(name: str, field: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """TF 2.4's SavedModel (no keras_metadata.pb) and dict outputs: found, read in TF 2.4, proven."""
    folder = field()
    source = folder / _FILES[name]
    if name.endswith("savedmodel"):
        assert (source / "saved_model.pb").is_file() and not (source / "keras_metadata.pb").exists()
    out = tmp_path / "new.keras"
    rc, stdout, stderr = convert(_common(source, out), capsys)
    assert rc == 0, stdout + stderr
    assert f"read {source} in {WRITER}: tf_keras 2.4.4" in stdout, stdout
    outputs = 2 if name.startswith("dict") else 1
    assert f"proof: {outputs} output{'s' if outputs > 1 else ''} on 4 probe samples (random)" in stdout, stdout
    assert ": OK" in stdout, stdout
    if name.startswith("dict"):
        assert "output 'probs_head'" in stdout and "output 'score_head'" in stdout, stdout
    _loads_predicts_trains(out, folder / f"{name}.npz")


@cross_env
@pytest.mark.parametrize("name", [_case("embed-h5")])
def test_probes_are_valid_ids_and_inputs_replace_them(
    name: str, field: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A float Input((40,)) feeding Embedding(50): random probes are ids in [0, 50); --inputs replaces them."""
    import numpy as np

    folder = field()
    source = folder / _FILES[name]
    rc, stdout, stderr = convert(_common(source, tmp_path / "random.keras"), capsys)
    assert rc == 0, stdout + stderr
    assert "proof: 1 output on 4 probe samples (random)" in stdout and ": OK" in stdout, stdout
    _loads_predicts_trains(tmp_path / "random.keras", folder / f"{name}.npz")

    ids = np.load(folder / f"{name}.npz")["x"][:3]  # 3 samples of the user's own ids
    np.savez(tmp_path / "mine.npz", ids)
    rc, stdout, stderr = convert(_common(source, tmp_path / "mine.keras") + ["--inputs", str(tmp_path / "mine.npz")], capsys)
    assert rc == 0, stdout + stderr
    # only the user's 3 samples: the random ones are replaced, not added to
    assert "proof: 1 output on 3 probe samples (your inputs)" in stdout and ": OK" in stdout, stdout


@cross_env
@pytest.mark.parametrize("name", [_case("nan-h5")])
def test_a_source_answering_nan_is_said_and_compared(
    name: str, field: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = field()
    out = tmp_path / "new.keras"
    rc, stdout, stderr = convert(_common(folder / _FILES[name], out), capsys)
    assert rc == 0, stdout + stderr
    # NaN in every sample's first output, inf in its second: 4 samples x 2
    assert "the source produces NaN/inf at 8 positions" in stdout and ": OK" in stdout, stdout
    assert "MISMATCH" not in stdout, stdout
    _loads_predicts_trains(out, folder / f"{name}.npz")


@cross_env
@pytest.mark.skipif(not runs_here(("keras-3.15-tf",)), reason="run in keras-3.15-tf")
def test_migrate_models_lists_a_tf24_savedmodel(field: Any, capsys: pytest.CaptureFixture[str]) -> None:
    folder = field()
    rc = cli_main(["migrate", "--models", str(folder / "plain_savedmodel")])
    out, err = capsys.readouterr()
    assert rc == 0, out + err
    assert "graphs, not a Keras model" not in out + err
    assert f"compat-clone convert {folder / 'plain_savedmodel'} -o " in out and f"--from {WRITER}" in out, out


def _package(root: Path) -> Path:
    """A project folder holding ``mypkg/layers.py`` (tests/convert/convert_field_layers.py), as users have their layers."""
    (root / "mypkg").mkdir(parents=True)
    (root / "mypkg" / "__init__.py").write_text("")
    (root / "mypkg" / "layers.py").write_text(LAYERS.read_text())
    return root


@cross_env
@pytest.mark.parametrize("name", [_case("custom-savedmodel"), _case("custom-h5")])
def test_custom_layers_by_module_or_file(
    name: str, field: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without --custom-objects: exit 2 with the command-line form; with the module (SavedModel) or the
    file (.h5) that defines the layer, imported by TF 2.4 and by Keras 3 alike: proven."""
    folder = field()
    source = folder / _FILES[name]
    monkeypatch.chdir(_package(tmp_path / "project"))  # the workers import from the folder the command runs in
    rc, stdout, stderr = convert(_common(source, tmp_path / "refused.keras"), capsys)
    assert rc == 2, stdout + stderr
    assert "MissingCustomObjectError" in stderr and "'Gain'" in stderr, stderr
    assert "--custom-objects path/to/layers.py" in stderr and "--custom-objects Gain=my_package.layers.Gain" in stderr
    assert not (tmp_path / "refused.keras").exists()
    # the SavedModel is read by TF 2.4 without the class (revived): the Keras 3 side refuses; the .h5 is not read
    assert ("keras-3.15" in stderr) == name.endswith("savedmodel"), stderr
    given = "mypkg.layers" if name.endswith("savedmodel") else "mypkg/layers.py"
    out = tmp_path / "new.keras"
    rc, stdout, stderr = convert(_common(source, out) + ["--custom-objects", given], capsys)
    assert rc == 0, stdout + stderr
    assert "proof: 1 output on 4 probe samples (random) of shape (4, 5)," in stdout and ": OK" in stdout, stdout
    print(stdout)


@cross_env
@pytest.mark.parametrize("name", [_case("lambda-h5")])
def test_an_activation_saved_as_lambda_is_named(
    name: str, field: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = field()
    source = folder / _FILES[name]
    monkeypatch.chdir(_package(tmp_path / "project"))
    rc, stdout, stderr = convert(_common(source, tmp_path / "refused.keras"), capsys)
    assert rc == 2, stdout + stderr
    assert "layer 'halved' (activation='<lambda>')" in stderr, stderr
    assert "--custom-objects '<lambda>=my_package.acts.my_function'" in stderr, stderr
    out = tmp_path / "new.keras"
    rc, stdout, stderr = convert(_common(source, out) + ["--custom-objects", "<lambda>=mypkg.layers.halve"], capsys)
    assert rc == 0, stdout + stderr
    assert "halved: activation='halve' computed by the function given for it" in stdout, stdout
    assert "proof: 1 output on 4 probe samples (random) of shape (4, 4)," in stdout and ": OK" in stdout, stdout
    print(stdout)


@cross_env
@pytest.mark.parametrize("name", [_case("unfed-h5")])
def test_a_model_no_probe_feeds_exits_2_with_the_reason(
    name: str, field: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Input((None, 3)) -> Reshape((7, 2)): no length computes; stopped in the source, before the rebuild."""
    folder = field()
    out = tmp_path / "new.keras"
    rc, stdout, stderr = convert(_common(folder / _FILES[name], out), capsys)
    assert rc == 2, stdout + stderr
    assert (
        "ProbeInputError: The source model (tensorflow 2.4.4) computes none of the probe inputs tried "
        "for input 'frames' (None, None, 3)" in stderr
    ), stderr
    assert "5-16, 32, 64," in stderr and "--inputs FILE.npz" in stderr, stderr
    assert "keras-3.15" not in stderr and "proof:" not in stdout, stdout + stderr  # no rebuild was tried
    assert not out.exists()


# --------------------------------------------------------------------------- refusals (no framework needed)


def _keras_zip(path: Path, config: bytes) -> Path:
    """A .keras zip as tf.keras 2.15 lays it out (metadata.json, config.json, weights)."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
        z.writestr("metadata.json", json.dumps({"keras_version": "2.15.0", "date_saved": "2024-01-01"}))
        z.writestr("config.json", config)
        z.writestr("model.weights.h5", b"\0" * 64)
    return path


def test_a_damaged_keras_file_is_called_damaged(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = json.dumps({"class_name": "Functional", "config": {"layers": []}}).encode()
    bad_json = _keras_zip(tmp_path / "bad_json.keras", config[:-7])
    bad_crc = _keras_zip(tmp_path / "bad_crc.keras", config)
    data = bytearray(bad_crc.read_bytes())
    at = data.index(config) + 5  # one byte of config.json's stored data changes; its CRC does not
    data[at] ^= 0x01
    bad_crc.write_bytes(bytes(data))
    cut = tmp_path / "cut.keras"
    cut.write_bytes(bytes(data[: len(data) // 2]))
    for path, why in (
        (bad_json, "its config.json is not JSON"),
        (bad_crc, "the CRC of its member 'config.json'"),
        (cut, "not a readable zip"),
    ):
        rc, out, err = convert([str(path), "-o", str(tmp_path / "new.keras")], capsys)
        assert rc == 2, (path, out, err)
        assert "damaged: " in err and why in err, err
        assert "--custom-objects" not in err
        assert not (tmp_path / "new.keras").exists()


def _mount_tmpfs(where: Path, options: str) -> bool:
    where.mkdir()
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(where)], capture_output=True)
    return proc.returncode == 0


def _umount(where: Path) -> None:
    subprocess.run(["umount", str(where)], capture_output=True)


def test_a_destination_that_cannot_take_the_file_is_refused_first(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Read-only or full: exit 2 before any environment is used (none is built here: --no-build)."""
    source = _keras_zip(tmp_path / "old.keras", json.dumps({"class_name": "Functional", "config": {}}).encode())
    with open(source, "ab") as f:
        f.write(b"")  # a valid zip of ~400 bytes
    big = tmp_path / "big.h5"
    big.write_bytes(b"\x89HDF\r\n\x1a\n" + b"\0" * (256 * 1024))
    argv = ["--no-build", "--matrix-dir", str(tmp_path / "no-envs")]
    if os.geteuid() != 0:
        readonly = tmp_path / "ro"
        readonly.mkdir()
        readonly.chmod(0o555)
        rc, out, err = convert([str(source), "-o", str(readonly / "new.keras"), *argv], capsys)
        assert rc == 2 and "Cannot write -o" in err and "Traceback" not in err, out + err
        assert "read " not in out
        readonly.chmod(0o755)
        pytest.skip("the full-disk case needs a small file system: mounting one needs root")
    ro, full = tmp_path / "ro", tmp_path / "full"
    if not (_mount_tmpfs(ro, "ro,size=64k") and _mount_tmpfs(full, "size=64k")):
        _umount(ro)
        pytest.fail("root could not mount a tmpfs here (`mount -t tmpfs`); the test needs it")
    try:
        rc, out, err = convert([str(source), "-o", str(ro / "new.keras"), *argv], capsys)
        assert rc == 2 and "Cannot write -o" in err and "Read-only file system" in err, out + err
        assert "Traceback" not in err and "read " not in out
        rc, out, err = convert([str(big), "-o", str(full / "new.keras"), *argv], capsys)
        assert rc == 2 and "bytes free, and the converted model needs about" in err, out + err
        assert "Traceback" not in err and "read " not in out
        assert list(full.iterdir()) == [] and list(ro.iterdir()) == []
    finally:
        _umount(ro)
        _umount(full)


def test_nan_positions_compare_equal_and_finite_values_still_decide() -> None:
    """The proof's element rule (the test seam's `compare_outputs`), on NumPy arrays alone."""
    import numpy as np

    from compat_clone.convert import OutputDiff
    from compat_clone.convert._proof import _compare as compare_outputs

    source = np.array([[1.0, np.nan, np.inf], [2.0, 3.0, -np.inf]], "float32")
    same = compare_outputs(source.copy(), source, 1e-5, 1e-6, 0, "out")
    assert same.ok and same.nonfinite == 3 and same.nonfinite_differ == 0 and same.max_abs == 0.0
    finite_differs = source.copy()
    finite_differs[1, 0] = 2.5
    off = compare_outputs(finite_differs, source, 1e-5, 1e-6, 0, "out")
    assert not off.ok and off.max_abs == 0.5 and off.nonfinite == 3
    nan_moved = source.copy()
    nan_moved[0, 0] = np.nan  # NaN where the source is finite
    moved = compare_outputs(nan_moved, source, 1e-5, 1e-6, 0, "out")
    assert not moved.ok and moved.nonfinite_differ == 1
    flipped = source.copy()
    flipped[0, 2] = -np.inf  # another infinity
    assert compare_outputs(flipped, source, 1e-5, 1e-6, 0, "out").nonfinite_differ == 1
    text = str(
        OutputDiff(
            0, "out", moved.max_abs, moved.max_rel, moved.ok, nonfinite=moved.nonfinite, nonfinite_differ=moved.nonfinite_differ
        )
    )
    assert "MISMATCH: NaN/inf at 1 positions" in text and "the source produces NaN/inf at 3 positions" in text
