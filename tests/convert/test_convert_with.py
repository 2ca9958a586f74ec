"""`compat-clone convert --with`: custom layers from a package installed where the old release reads the model.

The package is ``ccgain`` (its layers: tests/convert/convert_with_layers.py), built
into a wheel here with uv; tf.keras 2.15 itself saves a model holding its layer
(tests/convert/convert_with_sources.py, kept by tests/convert/source_cache.py). The
conversion installs the wheel with ``--with`` into an environment derived from
tf.keras-2.15 (the sibling itself is never changed), reads the model there with
``--custom-objects ccgain.layers``, and rebuilds it in this Keras 3 environment, where
the current folder holds the package's Keras 3 port under the same name. One
conversion, in keras-3.15-tf.

The refusals need no framework: a ``--with`` that is not a requirement, a
package that does not exist, one that conflicts with the old release's pins
(resolved against the sibling's packages, and against the table entry where
the environment is not built, before it would be built), and ``--no-build``.
Each exits 2 with nothing written and no derived environment left behind.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import List

import pytest

from tests.convert.convert_envs import keras3_target, only_in, run_convert, sibling, written

SCRIPT = Path(__file__).resolve().parent / "convert_with_sources.py"
LAYERS = Path(__file__).resolve().parent / "convert_with_layers.py"
WRITER = "tf.keras-2.15"
HOST = "keras-3.15-tf"
KIND = "convert-with"
WRITERS = (WRITER,)

_PYPROJECT = """\
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "ccgain"
version = "1.0"
dependencies = ["numpy"]

[tool.setuptools]
packages = ["ccgain"]
package-dir = {"" = "src"}
"""
# The project's own checkout after its migration: the same module, ported to Keras 3 (it refuses Keras 2).
_PORT_GUARD = '\n\nif int(keras.__version__.split(".")[0]) < 3:\n    raise ImportError("the Keras 3 port")\n'


def writes(env: str) -> List[List[str]]:
    """The one unit of work tf.keras 2.15 writes for the host."""
    return [["gain-h5"]] if env == WRITER else []


def _uv() -> List[str]:
    from compat_clone_matrix.build import find_uv

    return find_uv(Path(__file__).resolve().parents[2], tool="tests/convert/test_convert_with.py")


def _wheel(root: Path) -> Path:
    """``ccgain-1.0-py3-none-any.whl``, built from a source tree holding convert_with_layers.py as ccgain/layers.py."""
    src = root / "ccgain-src"
    (src / "src" / "ccgain").mkdir(parents=True)
    (src / "pyproject.toml").write_text(_PYPROJECT)
    (src / "src" / "ccgain" / "__init__.py").write_text("")
    (src / "src" / "ccgain" / "layers.py").write_text(LAYERS.read_text())
    proc = subprocess.run(_uv() + ["build", "--wheel", "--out-dir", str(root / "dist"), str(src)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    (wheel,) = (root / "dist").glob("ccgain-1.0-*.whl")
    return wheel


def _envs(root: Path, *names: str) -> Path:
    """An envs folder of this test's own holding the siblings `names` (linked): derived environments go there."""
    envs = root / "envs"
    envs.mkdir()
    for name in names:
        (envs / name).symlink_to(sibling(name), target_is_directory=True)
    return envs


def _derived(envs: Path) -> List[str]:
    return sorted(p.name for p in envs.iterdir() if "+with-" in p.name and p.is_dir())  # not its lock file


@keras3_target("a package's custom layer is converted")
@only_in(HOST)
def test_a_custom_layer_from_a_package_installed_with_with(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import keras
    import numpy as np

    folder, _ = written(KIND, SCRIPT, WRITER, writes(WRITER)[0])
    wheel = _wheel(tmp_path / "build")
    project = tmp_path / "project"  # the user's checkout: ccgain/layers.py is its Keras 3 port now
    (project / "ccgain").mkdir(parents=True)
    (project / "ccgain" / "__init__.py").write_text("")
    (project / "ccgain" / "layers.py").write_text(LAYERS.read_text() + _PORT_GUARD)
    monkeypatch.chdir(project)
    envs = _envs(tmp_path, WRITER)
    given = os.path.relpath(wheel, project)  # a relative path works from the current folder
    common = [str(folder / "gain.h5"), "--envs-dir", str(envs), "--to", sys.prefix, "--backend", keras.backend.backend()]

    rc, out, err = run_convert([*common, "-o", "refused.keras", "--with", given], capsys)
    assert rc == 2, out + err
    assert "MissingCustomObjectError" in err and "'Gain'" in err, err
    assert "--with installed ccgain here" in err and "--custom-objects ccgain.layers" in err, err
    assert not (project / "refused.keras").exists()
    (derived,) = _derived(envs)
    assert derived.startswith(f"{WRITER}+with-"), derived

    rc, out, err = run_convert([*common, "-o", "new.keras", "--with", given, "--custom-objects", "ccgain.layers"], capsys)
    assert rc == 0, out + err
    assert "building in" not in err, err  # the derived environment is reused
    assert f"read {folder / 'gain.h5'} in {WRITER} with ccgain: tf_keras 2.15" in out, out
    assert "proof: 1 output on 4 probe samples (random)" in out and ": OK" in out, out
    print(out)

    # the source environment itself did not get the package
    site = list(sibling(WRITER).glob("lib/python*/site-packages"))
    assert site and not list(site[0].glob("ccgain*")), site
    # the source read the wheel's module: the current folder's port refuses Keras 2 (_PORT_GUARD)
    monkeypatch.syspath_prepend(str(project))
    from ccgain.layers import Gain  # the Keras 3 port, as the converted file's users load it

    model = keras.models.load_model(project / "new.keras", custom_objects={"Gain": Gain}, compile=False)
    assert type(model.get_layer("gain")) is Gain
    data = np.load(folder / "gain-h5.npz")
    np.testing.assert_allclose(model.predict(data["x"], verbose=0), data["y0"], rtol=1e-5, atol=1e-6)


# --------------------------------------------------------------------------- refusals (no framework needed)


def _keras_zip(path: Path) -> Path:
    """A .keras zip as tf.keras 2.15 lays it out: read as that release's file (never loaded here)."""
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("metadata.json", json.dumps({"keras_version": "2.15.0", "date_saved": "2024-01-01"}))
        z.writestr("config.json", json.dumps({"class_name": "Functional", "config": {"layers": []}}))
        z.writestr("model.weights.h5", b"\0" * 64)
    return path


@pytest.mark.parametrize(
    "given, said",
    [
        pytest.param("foo bar", "--with 'foo bar' is not a requirement", id="not-a-requirement"),
        pytest.param("./no/such.whl", "--with './no/such.whl': no such file or folder", id="no-such-file"),
        pytest.param("notes.txt", "--with 'notes.txt' is not a wheel or an sdist", id="not-a-distribution"),
    ],
)
def test_a_with_that_is_no_requirement_is_refused_first(
    given: str, said: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "notes.txt").write_text("not a package\n")
    source = _keras_zip(tmp_path / "old.keras")
    rc, out, err = run_convert([str(source), "-o", "new.keras", "--no-build", "--envs-dir", "envs", "--with", given], capsys)
    assert rc == 2, out + err
    assert said in err and "Expected a requirement as uv takes it" in err, err
    assert "Traceback" not in err and not (tmp_path / "new.keras").exists() and not (tmp_path / "envs").exists()


@only_in(HOST)
@pytest.mark.parametrize("built", [pytest.param(True, id="built"), pytest.param(False, id="not-built")])
@pytest.mark.parametrize(
    "given, said",
    [
        pytest.param("numpy>=2", "numpy>=2", id="conflict"),
        pytest.param("ccgain-no-such-package", "ccgain-no-such-package was not found", id="no-such-package"),
    ],
)
def test_a_package_that_cannot_install_there_is_refused_before_any_work(
    given: str, said: str, built: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """uv's reason, exit 2, nothing built or written: against the sibling's packages where it is built (numpy
    1.x pinned), against the table entry where it is not (tensorflow-cpu 2.15 depends on numpy<2)."""
    envs = _envs(tmp_path, WRITER) if built else tmp_path / "envs"
    source = _keras_zip(tmp_path / "old.keras")
    out_file = tmp_path / "new.keras"
    rc, out, err = run_convert([str(source), "-o", str(out_file), "--envs-dir", str(envs), "--with", given], capsys)
    assert rc == 2, out + err
    assert f"--with {given!r} cannot be installed where the model is read ({WRITER}): uv's resolver says:" in err, err
    assert said in err and "unsatisfiable" in err, err
    if given == "numpy>=2":
        assert ("numpy==1." if built else "tensorflow-cpu==2.15.1 depends on numpy") in err, err
    assert "Nothing was built or written" in err and "Traceback" not in err, err
    assert not out_file.exists() and "read " not in out
    assert _derived(envs) == [] if built else not envs.exists()  # not built: nothing, not even the envs folder


@only_in(HOST)
def test_no_build_refuses_to_build_the_derived_environment(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    envs = _envs(tmp_path, WRITER)
    source = _keras_zip(tmp_path / "old.keras")
    argv = [str(source), "-o", str(tmp_path / "new.keras"), "--envs-dir", str(envs), "--to", sys.prefix, "--no-build"]
    rc, out, err = run_convert([*argv, "--with", "six"], capsys)
    assert rc == 2, out + err
    assert "--with six: the environment holding tf.keras-2.15's packages and these is not built" in err, err
    assert "Drop --no-build" in err and _derived(envs) == [] and not (tmp_path / "new.keras").exists()


def test_with_names_what_a_requirement_imports_as() -> None:
    from compat_clone.tools.convert._with import display_name, parse_requirement

    assert parse_requirement(" my-package==1.2 ") == "my-package==1.2"
    assert display_name("My.Package>=1,<2") == "my_package"
    assert display_name("/dist/ccgain-1.0-py3-none-any.whl") == "ccgain"
    assert display_name("/dist/my_pkg-2.0.1.tar.gz") == "my_pkg"
