"""The package as users get it: the sdist and the wheel, and the wheel alone in a clean venv.

Runs once per `make test`, from the developer environment (`make packaging`,
before the matrix): the matrix environments import the wheel this checks.
``$COMPAT_CLONE_DIST`` names the folder `make dist` wrote (the sdist, and the
wheel built from that sdist); without it the tests build both into a temporary
folder. The clean-venv check creates a venv with uv (``$COMPAT_CLONE_UV``, else
``uv`` on PATH or ``.tools/bin/uv``), installs only the wheel and its declared
dependencies, and runs what a new user runs first.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path
from typing import Dict, List, Sequence, Tuple

import pytest

REPO = Path(__file__).resolve().parents[2]
SRC = REPO / "src"

try:  # Python 3.11+
    import tomllib as _toml
except ImportError:  # pragma: no cover - older Pythons
    import tomli as _toml  # type: ignore[no-redef]


def _pyproject() -> Dict[str, object]:
    with open(REPO / "pyproject.toml", "rb") as f:
        return _toml.load(f)


def _uv() -> str:
    for candidate in (os.environ.get("COMPAT_CLONE_UV"), shutil.which("uv"), str(REPO / ".tools" / "bin" / "uv")):
        if candidate and Path(candidate).is_file():
            return candidate
    pytest.fail("no uv found: set COMPAT_CLONE_UV, or run `make tools` (it installs uv into .tools/)")


def _pip_args() -> List[str]:
    return shlex.split(os.environ.get("COMPAT_CLONE_PIP_ARGS", ""))


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory: pytest.TempPathFactory) -> Tuple[Path, Path]:
    """(sdist, wheel): `make dist`'s, or built here the same way (the wheel from the sdist)."""
    given = os.environ.get("COMPAT_CLONE_DIST")
    out = Path(given) if given else tmp_path_factory.mktemp("dist")
    if not given:
        subprocess.run([_uv(), "build", "-q", "--out-dir", str(out), str(REPO)], check=True, timeout=600)
    sdists = sorted(out.glob("compat_clone-*.tar.gz"))
    wheels = sorted(out.glob("compat_clone-*.whl"))
    assert len(sdists) == 1 and len(wheels) == 1, f"expected one sdist and one wheel in {out}: {sdists + wheels}"
    return sdists[0], wheels[0]


def _source_files() -> List[str]:
    """Every file of the two packages (the library and tools, the matrix) in the tree (tracked by git where it
    can tell), as package paths."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "src/compat_clone", "src/compat_clone_matrix"],
            cwd=REPO,
            check=True,
            capture_output=True,
            text=True,
        ).stdout.split()
        paths = [Path(p).relative_to("src").as_posix() for p in listed]
    except (OSError, subprocess.CalledProcessError):  # not a git checkout (an unpacked sdist)
        paths = [
            p.relative_to(SRC).as_posix()
            for package in ("compat_clone", "compat_clone_matrix")
            for p in (SRC / package).rglob("*")
            if p.is_file() and "__pycache__" not in p.parts
        ]
    assert len(paths) > 50, paths
    return sorted(paths)


def test_every_module_and_data_file_is_in_both_artifacts(artifacts: Tuple[Path, Path]) -> None:
    sdist, wheel = artifacts
    source = _source_files()
    assert "compat_clone/py.typed" in source and "compat_clone_matrix/matrix.toml" in source
    assert "compat_clone_matrix/py.typed" in source
    with zipfile.ZipFile(wheel) as w:
        in_wheel = set(w.namelist())
    with tarfile.open(sdist) as s:
        top = s.getnames()[0].split("/")[0]
        in_sdist = {name[len(top) + 1 :] for name in s.getnames()}
    missing_wheel = [p for p in source if p not in in_wheel]
    missing_sdist = [p for p in source if f"src/{p}" not in in_sdist]
    assert not missing_wheel, f"{wheel.name} lacks {missing_wheel}"
    assert not missing_sdist, f"{sdist.name} lacks {missing_sdist}"
    # Nothing else ships in the wheel: the two packages and their metadata (license included).
    stray = sorted(n for n in in_wheel if not n.startswith(("compat_clone/", "compat_clone_matrix/", "compat_clone-")))
    assert not stray, stray
    assert any(n.endswith(".dist-info/licenses/LICENSE") or n.endswith(".dist-info/LICENSE") for n in in_wheel)
    for needed in ("pyproject.toml", "README.md", "LICENSE"):
        assert needed in in_sdist, f"{sdist.name} lacks {needed}"


def test_wheel_metadata_is_pypi_ready(artifacts: Tuple[Path, Path]) -> None:
    _, wheel = artifacts
    with zipfile.ZipFile(wheel) as w:
        (name,) = [n for n in w.namelist() if n.endswith(".dist-info/METADATA")]
        meta = w.read(name).decode("utf-8")
    project = _pyproject()["project"]
    assert isinstance(project, dict)
    fields = [line.split(": ", 1) for line in meta.splitlines() if ": " in line and not line.startswith(" ")]
    classifiers = [v for k, v in fields if k == "Classifier"]
    assert "License :: OSI Approved :: Apache Software License" in classifiers
    assert project["license"] == {"text": "Apache-2.0"}
    assert "Apache License" in (REPO / "LICENSE").read_text(encoding="utf-8")[:200]
    assert any(c.startswith("Development Status :: ") for c in classifiers)
    assert sum(k == "Project-URL" for k, _ in fields) >= 3
    assert [v for k, v in fields if k == "Requires-Python"] == [project["requires-python"]]
    assert any(k == "Keywords" for k, _ in fields)


def _minor(version: str) -> Tuple[int, int]:
    major, minor = version.split(".")[:2]
    return int(major), int(minor)


def test_requires_python_tells_the_truth() -> None:
    """Every Python from the declared floor up is a matrix environment's interpreter, and a classifier."""
    from compat_clone_matrix.table import load_table

    project = _pyproject()["project"]
    assert isinstance(project, dict)
    floor = re.fullmatch(r">=\s*(\d+\.\d+)", str(project["requires-python"]))
    assert floor, project["requires-python"]
    declared = sorted(
        _minor(c.rsplit(" :: ", 1)[1])
        for c in project["classifiers"]
        if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)
    )
    assert declared[0] == _minor(floor.group(1)), (declared, floor.group(1))
    assert declared == [(3, m) for m in range(declared[0][1], declared[-1][1] + 1)], declared
    used = {_minor(Path(e.python).name.replace("python", "") or e.python) for e in load_table()}
    assert set(declared) <= used, f"no matrix environment runs Python {sorted(set(declared) - used)}"


def _run(cmd: Sequence[str], cwd: Path, env: Dict[str, str]) -> subprocess.CompletedProcess:  # type: ignore[type-arg]
    return subprocess.run(list(cmd), cwd=str(cwd), env=env, capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def clean_venv(artifacts: Tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv with the wheel and its declared dependencies only."""
    _, wheel = artifacts
    venv = tmp_path_factory.mktemp("clean") / "venv"
    uv = _uv()
    subprocess.run([uv, "venv", "-q", "-p", sys.executable, str(venv)], check=True, timeout=300)
    subprocess.run(
        [uv, "pip", "install", "-q", "--python", str(venv / "bin" / "python"), *_pip_args(), str(wheel)], check=True, timeout=600
    )
    return venv


def _clean_environ(venv: Path) -> Dict[str, str]:
    drop = ("PYTHONPATH", "VIRTUAL_ENV", "KERAS_BACKEND", "TF_USE_LEGACY_KERAS")
    env = {k: v for k, v in os.environ.items() if k not in drop and not k.startswith("COMPAT_CLONE_")}
    env["PATH"] = os.pathsep.join([str(venv / "bin"), env.get("PATH", "")])
    env["XDG_CACHE_HOME"] = str(venv.parent / "cache")
    return env


def test_clean_venv_holds_only_the_wheel_and_its_dependencies(clean_venv: Path) -> None:
    listed = subprocess.run(
        [_uv(), "pip", "list", "--format", "json", "--python", str(clean_venv / "bin" / "python")],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    names = {p["name"].lower().replace("_", "-") for p in json.loads(listed)}
    assert "compat-clone" in names
    assert not names & {"tensorflow", "tensorflow-cpu", "keras", "tf-keras", "jax", "torch", "numpy", "libcst", "pytest"}, names


def test_clean_venv_command_line(clean_venv: Path, tmp_path: Path) -> None:
    """What a new user runs first, from a folder that is not the checkout."""
    env = _clean_environ(clean_venv)
    cli = str(clean_venv / "bin" / "compat-clone")
    python = str(clean_venv / "bin" / "python")

    helped = _run([cli, "--help"], tmp_path, env)
    assert helped.returncode == 0, helped.stderr
    for command in ("doctor", "matrix", "migrate", "convert"):
        assert command in helped.stdout

    doctor = _run([cli, "doctor"], tmp_path, env)
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    lines = [line for line in doctor.stdout.splitlines() if line.startswith("No Keras is installed")]
    assert len(lines) == 1 and "pip install keras" in lines[0], doctor.stdout
    assert doctor.stderr == "", doctor.stderr

    convert = _run([cli, "convert", "--help"], tmp_path, env)
    assert convert.returncode == 0 and "--envs-dir" in convert.stdout, convert.stderr

    (tmp_path / "old.py").write_text("import keras\nc = keras.models.clone_model(m)\n", encoding="utf-8")
    migrate = _run([cli, "migrate", "old.py"], tmp_path, env)
    assert migrate.returncode == 2, migrate.stdout + migrate.stderr
    assert "compat-clone[migrate]" in migrate.stderr, migrate.stderr

    listed = _run([cli, "matrix", "--list"], tmp_path, env)
    assert listed.returncode == 0 and "keras-3.15-tf" in listed.stdout, listed.stderr

    imported = _run(
        [
            python,
            "-c",
            (
                "import sys, compat_clone, compat_clone.convert, compat_clone.tools.cli\n"
                "loaded = sorted(m for m in ('tensorflow', 'keras', 'tf_keras', 'jax', 'torch', 'numpy') if m in sys.modules)\n"
                "assert not loaded, loaded\n"
                "assert callable(compat_clone.convert.convert) and compat_clone.__version__\n"
                "print(compat_clone.__file__)\n"
            ),
        ],
        tmp_path,
        env,
    )
    assert imported.returncode == 0, imported.stderr
    assert "site-packages" in imported.stdout
    # Nothing was created in the folder the commands ran in (no .matrix/, no .tools/).
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.py"]


def test_clean_venv_loads_the_pytest_plugin(clean_venv: Path, tmp_path: Path) -> None:
    """Once pytest is installed next to the wheel, its plugin (an entry point) loads."""
    subprocess.run(
        [_uv(), "pip", "install", "-q", "--python", str(clean_venv / "bin" / "python"), *_pip_args(), "pytest"],
        check=True,
        timeout=600,
    )
    env = _clean_environ(clean_venv)
    (tmp_path / "test_one.py").write_text("def test_one():\n    assert True\n", encoding="utf-8")
    helped = _run([str(clean_venv / "bin" / "pytest"), "--help"], tmp_path, env)
    assert helped.returncode == 0 and "--compat-results" in helped.stdout, helped.stderr
    ran = _run([str(clean_venv / "bin" / "pytest"), "-q", "-p", "no:cacheprovider", "--trace-config"], tmp_path, env)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "compat_clone_matrix.pytest_plugin" in ran.stdout and "1 passed" in ran.stdout, ran.stdout


def _has_tf_keras_and_keras3() -> bool:
    import importlib.util

    return all(importlib.util.find_spec(name) is not None for name in ("tf_keras", "keras", "h5py"))


@pytest.mark.skipif(
    not _has_tf_keras_and_keras3(),
    reason="writes a tf_keras .h5 and rebuilds it with Keras 3: needs both here (the developer environment, .venv)",
)
def test_convert_after_the_documented_install(artifacts: Tuple[Path, Path], clean_venv: Path, tmp_path: Path) -> None:
    """README's "Install": the wheel, then with its `convert` extra; `compat-clone convert old.h5 -o new.keras` from a
    folder that is not the checkout (both halves in this interpreter's environment: --from / --to, as `make demo`)."""
    _, wheel = artifacts
    env = _clean_environ(clean_venv)
    cli = str(clean_venv / "bin" / "compat-clone")
    made = _run([sys.executable, str(REPO / "docs" / "demo_old_model.py")], tmp_path, env)  # writes .demo/old.h5
    assert made.returncode == 0, made.stdout + made.stderr
    convert = [cli, "convert", ".demo/old.h5", "-o", "new.keras"]
    refused = _run(convert, tmp_path, env)  # the wheel alone: no h5py, and the error says what to install
    assert refused.returncode == 2 and "compat-clone[convert]" in refused.stderr and "pip install h5py" in refused.stderr, (
        refused.stdout + refused.stderr
    )
    subprocess.run(
        [_uv(), "pip", "install", "-q", "--python", str(clean_venv / "bin" / "python"), *_pip_args(), f"{wheel}[convert]"],
        check=True,
        timeout=600,
    )
    done = _run(convert + ["--from", sys.prefix, "--to", sys.prefix], tmp_path, env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "new.keras").is_file() and "OK" in done.stdout, done.stdout


def test_the_emitted_workflows_install_step_runs_as_written(
    artifacts: Tuple[Path, Path], clean_venv: Path, tmp_path: Path
) -> None:
    """A project that keeps the wheel (no index serves compat-clone yet): the emitted workflow installs from it by
    default, and its install step, run as written in a fresh venv, installs a working compat-clone."""
    yaml = pytest.importorskip("yaml")
    _, wheel = artifacts
    project = tmp_path / "lib"
    (project / "vendor").mkdir(parents=True)
    shutil.copy(wheel, project / "vendor" / wheel.name)
    env = _clean_environ(clean_venv)
    emitted = _run(
        [str(clean_venv / "bin" / "compat-clone"), "matrix", "--emit", "workflow", "--env", "keras-3.15-jax"], project, env
    )
    assert emitted.returncode == 0, emitted.stderr
    runs = [step.get("run", "") for step in yaml.safe_load(emitted.stdout)["jobs"]["plan"]["steps"]]
    (install,) = [run for run in runs if "pip install" in run]
    assert install == f"python -m pip install ./vendor/{wheel.name}", runs
    runner = tmp_path / "runner"  # stands in for the CI runner's Python
    subprocess.run([sys.executable, "-m", "venv", str(runner)], check=True, timeout=300)
    runner_env = _clean_environ(runner)
    done = subprocess.run(["bash", "-e", "-c", install], cwd=project, env=runner_env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    listed = _run([str(runner / "bin" / "compat-clone"), "matrix", "--list", "--env", "keras-3.15-jax"], project, runner_env)
    assert listed.returncode == 0 and "keras-3.15-jax" in listed.stdout, listed.stdout + listed.stderr
    # with nothing in the project, the default refuses (exit 2) instead of naming a package no index serves
    (project / "vendor" / wheel.name).unlink()
    refused = _run([str(clean_venv / "bin" / "compat-clone"), "matrix", "--emit", "workflow"], project, env)
    assert refused.returncode == 2 and "--install-from" in refused.stderr, refused.stdout + refused.stderr
