"""`compat_clone.tools.saved_models` and `compat-clone migrate --models`, on files this environment's Keras writes.

Every matrix environment saves real models with its own Keras (``.h5``,
``.keras`` where that Keras writes it, a SavedModel where tf.keras / tf_keras
writes one) and checks that detection, which imports no framework, names
the family and version that wrote them and the environment that reads them
(this one, for a Keras 2 environment of the matrix).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any, Dict, List

import pytest

from compat_clone.tools.cli import main as cli_main
from compat_clone.tools.saved_models import UnreadableModelFileError, detect, env_for


def _save_models(K: Any, family: str, folder: Path) -> Dict[str, Path]:
    """Saves one small model in every format `K` writes; name -> path."""
    folder.mkdir(parents=True, exist_ok=True)
    inputs = K.layers.Input((3,))
    model = K.models.Model(inputs, K.layers.Dense(2)(inputs))
    out = {"h5": folder / "model.h5"}
    model.save(str(out["h5"]))
    if family == "keras3":
        out["keras"] = folder / "model.keras"
        model.save(str(out["keras"]))
    elif family == "tf_keras":
        out["keras"] = folder / "model.keras"
        if K.__version__.startswith("2.12"):  # 2.12 writes HDF5 to a .keras name unless told
            model.save(str(out["keras"]), save_format="keras_v3")
        else:
            model.save(str(out["keras"]))
        out["savedmodel"] = folder / "saved"
        model.save(str(out["savedmodel"]), save_format="tf")
    return out


@pytest.fixture(scope="module")
def saved_once(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """`saved_once(K, family)`: `_save_models` once per family for the module (saving costs seconds)."""
    cache: Dict[str, Dict[str, Path]] = {}

    def get(K: Any, family: str) -> Dict[str, Path]:
        if family not in cache:
            cache[family] = _save_models(K, family, tmp_path_factory.mktemp(f"saved-{family}"))
        return cache[family]

    return get


def _claim(env_name: str) -> Dict[str, str]:
    from compat_clone_matrix.table import load_table

    (env,) = [e for e in load_table() if e.name == env_name]
    return dict(env.expect)


def test_detects_who_wrote_each_format(K: Any, family: str, saved_once: Any) -> None:
    saved = saved_once(K, family)
    formats = {"h5": "h5", "keras": "keras", "savedmodel": "savedmodel"}
    here = os.environ.get("COMPAT_CLONE_ENV")
    for name, path in saved.items():
        info = detect(path)
        assert (info.format, info.family, info.problem) == (formats[name], family, None), info
        if name == "savedmodel":  # records the TensorFlow version; tf.keras 2.x shares its major.minor
            import tensorflow as tf

            assert info.version == tf.__version__, info
        else:
            assert info.version == K.__version__, info
        assert info.env is not None and _claim(info.env)["family"] == family, info
        if family == "keras3":
            assert not info.convertible
        else:
            assert info.convertible
            if here is not None:  # an environment of this very release reads its files (keras-2.3.1
                # on TF 2.15 or keras-2.3.1-tf1: the one the default run has)
                assert _claim(info.env)["version"] == _claim(here)["version"], info
    assert detect(saved["h5"]).backend == (K.backend.backend() if family == "keras3" else "tensorflow")


def test_detection_imports_no_framework(K: Any, family: str, saved_once: Any) -> None:
    saved = saved_once(K, family)
    folder = saved["h5"].parent
    script = (
        "import json, sys\n"
        "from compat_clone.tools.saved_models import find_models\n"
        f"found = [[i.path, i.family, i.version, i.env] for i in find_models({str(folder)!r})]\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in "
        "('tensorflow', 'keras', 'tf_keras', 'jax', 'torch'))\n"
        "print(json.dumps({'found': found, 'loaded': loaded}))\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["loaded"] == []
    assert sorted(report["found"]) == sorted([str(p), family, detect(p).version, detect(p).env] for p in saved.values())


def test_weights_files_and_strangers_say_why(K: Any, family: str, tmp_path: Path) -> None:
    import h5py

    inputs = K.layers.Input((3,))
    model = K.models.Model(inputs, K.layers.Dense(2)(inputs))
    weights = tmp_path / ("w.weights.h5" if family == "keras3" else "w.h5")
    model.save_weights(str(weights))
    assert "weights only" in str(detect(weights).problem)
    (tmp_path / "notes.h5").write_text("not a model")
    assert "neither HDF5 nor a .keras zip" in str(detect(tmp_path / "notes.h5").problem)
    with h5py.File(tmp_path / "empty.h5", "w"):
        pass
    assert "no Keras model in it" in str(detect(tmp_path / "empty.h5").problem)
    with zipfile.ZipFile(tmp_path / "other.keras", "w") as z:
        z.writestr("readme.txt", "hello")
    assert "without config.json" in str(detect(tmp_path / "other.keras").problem)
    (tmp_path / "folder").mkdir()
    assert "not a SavedModel" in str(detect(tmp_path / "folder").problem)
    with pytest.raises(UnreadableModelFileError, match="nothing exists there"):
        detect(tmp_path / "missing.h5")


@pytest.mark.keras3
def test_a_keras3_export_is_not_a_keras_model(tmp_path: Path) -> None:
    import keras

    if keras.backend.backend() != "tensorflow":
        pytest.skip("model.export() writes a SavedModel with TensorFlow only")
    inputs = keras.Input((3,))
    keras.Model(inputs, keras.layers.Dense(2)(inputs)).export(str(tmp_path / "exported"))
    info = detect(tmp_path / "exported")
    assert info.format == "savedmodel" and info.family is None
    assert "without keras_metadata.pb" in str(info.problem) and "TFSMLayer" in str(info.problem)


@pytest.mark.parametrize(
    "family, version, env",
    [
        ("keras2", "2.2.4", "keras-2.2.4-tf1"),  # its own release, on TF 1.15 / Python 3.7
        ("keras2", "2.2.5", "keras-2.2.5"),
        ("keras2", "2.1.6", "keras-2.1.6-tf1"),
        ("keras2", "2.1.0", "keras-2.1.6-tf1"),  # older: the oldest newer reader
        ("keras2", "2.3.0", "keras-2.3.1"),
        ("tf_keras", "2.12.0", "tf.keras-2.12"),
        ("tf_keras", "2.13.1", "tf.keras-2.13"),  # its own minor, though only in the wide matrix
        ("tf_keras", "2.9.0", "tf.keras-2.12"),
        ("tf_keras", "2.2.4-tf", "tf.keras-2.4"),  # tf.keras of TensorFlow 1.x: the oldest tf.keras reader
        ("tf_keras", "2.4.4", "tf.keras-2.4"),  # a TF 2.4 SavedModel records TensorFlow's version
        ("tf_keras", "2.16.0", "tf_keras-2.16"),
        ("tf_keras", "2.30.0", "tf_keras-2.21"),  # newer than any: the newest
        ("keras3", "3.15.1", "keras-3.15-tf"),
        ("keras3", None, "keras-3.15-tf"),
    ],
)
def test_env_for_picks_the_nearest_environment(family: str, version: Any, env: str) -> None:
    assert env_for(family, version) == env


def test_env_for_refuses_a_family_without_environment() -> None:
    from compat_clone_matrix.table import parse_table

    table = parse_table(
        {
            "env": [
                {
                    "name": "only3",
                    "packages": ["keras==3.15.1"],
                    "expect": {"family": "keras3", "version": "3.15", "backend": "tensorflow"},
                }
            ]
        }
    )
    with pytest.raises(UnreadableModelFileError, match="no environment of family 'keras2'"):
        env_for("keras2", "2.2.4", table)


def test_migrate_models_lists_commands(
    K: Any, family: str, tmp_path: Path, saved_once: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    import shutil

    originals = saved_once(K, family)
    (tmp_path / "models").mkdir()
    saved = {}
    for name, path in originals.items():
        saved[name] = tmp_path / "models" / path.name
        (shutil.copytree if path.is_dir() else shutil.copyfile)(path, saved[name])
    (tmp_path / "models" / "junk.h5").write_text("junk")
    (tmp_path / "models" / ".hidden").mkdir()
    (tmp_path / "models" / ".hidden" / "skip.h5").write_text("never read")
    rc = cli_main(["migrate", "--models", str(tmp_path / "models")])
    out, err = capsys.readouterr()
    assert rc == 2  # junk.h5 could not be read
    assert f"{tmp_path / 'models' / 'junk.h5'}: cannot be converted: neither HDF5" in err
    assert "skip.h5" not in out + err
    lines: List[str] = out.splitlines()
    for path in saved.values():
        (line,) = [i for i, text in enumerate(lines) if text.startswith(f"{path}: ")]
        if family == "keras3":
            assert lines[line].endswith("already Keras 3, nothing to convert"), lines[line]
        else:
            command = lines[line + 1].strip()
            assert command.startswith(f"compat-clone convert {path} -o ") and " --from " in command, command
    outputs = [text.split(" -o ")[1].split()[0] for text in lines if " -o " in text]
    assert len(outputs) == len(set(outputs))  # no two models are sent to one file
    n = 0 if family == "keras3" else len(saved)
    assert lines[-1] == (f"{n} Keras 2 model(s) to convert, {len(saved) - n} already Keras 3, 1 not convertible.")
    assert cli_main(["migrate", "--models", str(tmp_path / "nowhere")]) == 2
    assert "no such file or folder" in capsys.readouterr().err
