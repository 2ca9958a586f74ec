"""`compat-clone convert`: saved Keras 2 models converted across environments, and its refusals.

The cross-environment tests run in the Keras 3.15 environments of the matrix
(keras-3.15-tf / -jax / -torch; outside the matrix, in an environment with
Keras 3): the source files are built on the fly in sibling environments
(standalone Keras 2.2.4 and 2.3.1, tf.keras 2.12 and 2.15) by
tests/convert/convert_sources.py, converted through the real command line, and the
result is loaded here, compared with the source's predictions and trained
one step. `compat-clone matrix` builds every environment of a run before it
runs the tests in any and exports ``COMPAT_CLONE_MATRIX_DIR`` /
``COMPAT_CLONE_MATRIX_ENVS``: a sibling of the run that is not there FAILS the
test. Each Keras 3 environment converts its own share of the cases (together
they cover every source and format); outside the matrix every case runs.
"""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest

from tests.convert.convert_envs import hosted, keras3_target, only_in, run_convert, sibling, written

SOURCES = Path(__file__).resolve().parent / "convert_sources.py"
CUSTOM = Path(__file__).resolve().parent / "convert_custom.py"

# (source environment, format) -> the Keras 3.15 environments that convert it.
_CASES: Dict[Tuple[str, str], Tuple[str, ...]] = {
    ("keras-2.2.4", "h5"): ("keras-3.15-tf", "keras-3.15-torch"),
    ("keras-2.3.1", "h5"): ("keras-3.15-jax",),
    ("tf.keras-2.12", "h5"): ("keras-3.15-jax",),
    ("tf.keras-2.12", "keras"): ("keras-3.15-jax",),
    ("tf.keras-2.15", "h5"): ("keras-3.15-tf",),
    ("tf.keras-2.15", "keras"): ("keras-3.15-torch",),
    ("tf.keras-2.15", "savedmodel"): ("keras-3.15-tf",),
}


def _cases() -> List[Any]:
    return [hosted(env, fmt, id=f"{env}-{fmt}", hosts=hosts) for (env, fmt), hosts in _CASES.items()]


cross_env = keras3_target("cross-environment conversions run")


# The small models tf.keras 2.15 writes for the hosts that convert them (keras-3.15-jax, -torch).
_EXTRAS = ("custom-h5", "lambda-keras", "tfops-h5", "tflambda-h5", "tflambda-seq-h5", "tfcumsum-h5")
KIND = "convert-sources"


def writes(env: str) -> List[List[str]]:
    """The one unit of work `env` writes for every host: each format of `_CASES` (and tf.keras 2.15's extras)."""
    formats = [fmt for e, fmt in _CASES if e == env] + (list(_EXTRAS) if env == "tf.keras-2.15" else [])
    return [formats] if formats else []


WRITERS = tuple(dict.fromkeys(env for env, _ in _CASES))


@pytest.fixture(scope="module")
def sources() -> Any:
    """`sources(env)` -> folder with that env's files of every format (tests/convert/source_cache.py keeps them)."""

    def get(env: str) -> Path:
        (args,) = writes(env)
        return written(KIND, SOURCES, env, args)[0]

    return get


convert = run_convert


def _target_args() -> List[str]:
    import keras

    return ["--to", sys.prefix, "--backend", keras.backend.backend()]


_SOURCE_FILE = {"h5": "model.h5", "keras": "model.keras", "savedmodel": "model_savedmodel"}


def _assert_predicts_and_trains(path: Path, probes: Path, custom: Any = None, safe_mode: bool = True) -> None:
    import keras
    import numpy as np

    model = keras.models.load_model(path, custom_objects=custom, compile=False, safe_mode=safe_mode)
    data = np.load(probes)
    got = np.asarray(model.predict(data["x"], verbose=0))
    np.testing.assert_allclose(got, data["y"], rtol=1e-5, atol=1e-6)
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
    before = [np.array(w) for w in model.get_weights()]
    loss = float(np.asarray(model.train_on_batch(data["x"], np.zeros_like(data["y"]))).reshape(-1)[0])
    assert np.isfinite(loss)
    after = model.get_weights()
    assert any(not np.array_equal(b, a) for b, a in zip(before, after)), "one training step changed no weight"


@cross_env
@pytest.mark.parametrize("env, fmt", _cases())
def test_convert_a_keras2_file_across_environments(
    env: str, fmt: str, sources: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import numpy as np

    folder = sources(env)
    out = tmp_path / "new.keras"
    extra: List[str] = []
    samples, origin = 4, "random"  # the random probes
    if env == "keras-2.3.1":  # inputs of your own replace them
        np.savez(tmp_path / "inputs.npz", np.load(folder / f"{fmt}.npz")["x"])
        extra, samples, origin = ["--inputs", str(tmp_path / "inputs.npz")], 5, "your inputs"
    if env == "keras-2.2.4":
        # Written on TF 2.15 (the keras2_on_tf2 fix-up, h5py 3: variable-length string
        # attributes, which Keras 2.2.4 under h5py 2 cannot read): read where it was
        # written. From the file alone a 2.2.4 file goes to keras-2.2.4-tf1 (the default
        # run's), the reader of the files users have (h5py 2); the zoo converts those.
        extra += ["--from", env]
    rc, stdout, stderr = convert(
        [
            str(folder / _SOURCE_FILE[fmt]),
            "-o",
            str(out),
            "--no-build",
            *extra,
            "--matrix-dir",
            str(sibling(env).parent),
            *_target_args(),
        ],
        capsys,
    )
    assert rc == 0, stdout + stderr
    # The source's environment was found from the file alone (no --from), but for keras-2.2.4.
    assert f"in {env}: " in stdout, stdout
    assert f"proof: 1 output on {samples} probe samples ({origin})" in stdout and ": OK" in stdout, stdout
    assert "output 'dense" in stdout and " ok\n" in stdout, stdout
    _assert_predicts_and_trains(out, folder / f"{fmt}.npz")


def _convert_from_tf215(
    sources: Any, name: str, out: Path, capsys: pytest.CaptureFixture[str], *extra: str
) -> Tuple[int, str, str]:
    """Converts the tf.keras 2.15 source file `name` to `out` here."""
    folder = sources("tf.keras-2.15")
    return convert(
        [
            str(folder / name),
            "-o",
            str(out),
            "--no-build",
            *extra,
            "--matrix-dir",
            str(sibling("tf.keras-2.15").parent),
            *_target_args(),
        ],
        capsys,
    )


def _keras3_custom(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.syspath_prepend(str(CUSTOM.parent))
    monkeypatch.setenv("COMPAT_CLONE_CONVERT_SIDE", "target")
    sys.modules.pop("convert_custom", None)
    module = importlib.import_module("convert_custom")
    sys.modules.pop("convert_custom", None)
    return module


@cross_env
@only_in("keras-3.15-jax")
def test_custom_objects_are_resolved_in_both_environments(
    sources: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(CUSTOM.parent)  # the module is importable from the current folder in both envs
    out = tmp_path / "custom.keras"
    rc, stdout, stderr = _convert_from_tf215(sources, "custom.h5", out, capsys, "--custom-objects", "convert_custom:Scale")
    assert rc == 0, stdout + stderr
    module = _keras3_custom(monkeypatch)
    _assert_predicts_and_trains(out, sources("tf.keras-2.15") / "custom.npz", custom={"Scale": module.Scale})


@cross_env
@only_in("keras-3.15-torch")
def test_a_failed_proof_writes_nothing_and_prints_the_differences(
    sources: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(CUSTOM.parent)
    monkeypatch.setenv("COMPAT_CLONE_TEST_WRONG_PORT", "1")  # the Keras 3 Scale computes another thing
    out = tmp_path / "custom.keras"
    rc, stdout, stderr = _convert_from_tf215(sources, "custom.h5", out, capsys, "--custom-objects", "convert_custom:Scale")
    assert rc == 1, stdout + stderr
    assert "ABOVE TOLERANCE" in stdout and "MISMATCH in 'dense" in stdout, stdout
    # The wrong custom layer is named, not the Dense output after it.
    assert "The outputs first differ at layer 'scale' (Scale): max |Δ|" in stderr, stderr
    assert "check the Keras 3 implementation of layer 'scale'" in stderr, stderr
    assert "Nothing written" in stderr, stderr
    assert not out.exists() and list(tmp_path.iterdir()) == []


@cross_env
@only_in("keras-3.15-jax")
def test_a_keras_file_with_a_lambda_needs_no_safe_mode(sources: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """tf.keras 2.13+ refuses a .keras file's Lambda code in safe mode: said, with the flag that allows it."""
    import keras
    import numpy as np

    folder = sources("tf.keras-2.15")
    out = tmp_path / "lambda.keras"
    common = [
        str(folder / "lambda.keras"),
        "-o",
        str(out),
        "--no-build",
        "--matrix-dir",
        str(sibling("tf.keras-2.15").parent),
        *_target_args(),
    ]
    rc, stdout, stderr = convert(common, capsys)
    assert rc == 1 and "pass --no-safe-mode" in stderr and "Lambda" in stderr, stdout + stderr
    assert not out.exists()
    rc, stdout, stderr = convert(common + ["--no-safe-mode"], capsys)
    assert rc == 0, stdout + stderr
    assert "note: " in stdout and "holds Lambda layers (affine)" in stdout and "safe_mode=False" in stdout, stdout
    data = np.load(folder / "lambda.npz")
    model = keras.models.load_model(out, safe_mode=False, compile=False)
    np.testing.assert_allclose(model.predict(data["x"], verbose=0), data["y"], rtol=1e-5, atol=1e-6)


@cross_env
@only_in("keras-3.15-torch")
def test_tensorflow_functions_on_keras_tensors_convert_and_are_said(
    sources: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`h * tf.nn.relu6(h + 3.0) / 6.0` in tf.keras 2.15 runs on torch; the file names what loads it."""
    import compat_clone.convert

    out = tmp_path / "tfops.keras"
    rc, stdout, stderr = _convert_from_tf215(sources, "tfops.h5", out, capsys)
    assert rc == 0, stdout + stderr
    assert "changed: TensorFlow functions called on Keras tensors (tf.__operators__.add x1, " in stdout, stdout
    assert "tf.nn.relu6 x1" in stdout and "compat_clone>TensorFlowOp" in stdout, stdout
    assert "note: " in stdout and "load it with keras.models.load_model(path, custom_objects=" in stdout, stdout
    _assert_predicts_and_trains(out, sources("tf.keras-2.15") / "tfops.npz", custom=compat_clone.convert.custom_objects())


@cross_env
@only_in("keras-3.15-torch")
def test_lambda_bodies_calling_tensorflow_run_on_keras_ops(
    sources: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`Lambda(lambda t: tf.reduce_sum(tf.nn.relu(t), ...))` of tf.keras 2.15 runs on torch, inline: no Lambda, no
    bytecode in the file, no custom objects; a Sequential holding one becomes Functional, said; `tf.math.cumsum`,
    which has no `keras.ops` form in the table, is refused by name."""
    import keras

    for name, lambdas in (("tflambda.h5", ("relu_sum", "joined")), ("tflambda_seq.h5", ("centred",))):
        out = tmp_path / name.replace(".h5", ".keras")
        rc, stdout, stderr = _convert_from_tf215(sources, name, out, capsys)
        assert rc == 0, stdout + stderr
        for layer in lambdas:
            assert f"{layer}: the Lambda's TensorFlow calls (tf." in stdout, stdout
        assert "holds Lambda layers" not in stdout, stdout  # nothing asks for safe_mode=False
        assert ("rebuilt as a Functional one" in stdout) == name.endswith("_seq.h5"), stdout
        # loads in safe mode, with no custom objects: what it holds are keras.ops calls
        model = keras.models.load_model(out, compile=False)
        assert not [layer for layer in model.layers if type(layer).__name__ == "Lambda"], model.layers
        _assert_predicts_and_trains(out, sources("tf.keras-2.15") / name.replace(".h5", ".npz"))
    out = tmp_path / "tfcumsum.keras"
    rc, stdout, stderr = _convert_from_tf215(sources, "tfcumsum.h5", out, capsys)
    assert rc != 0 and "calls TensorFlow functions the conversion has no `keras.ops` form for: `tf.math.cumsum`" in stderr, (
        stdout + stderr
    )
    assert "runs on Keras 3's TensorFlow backend only; this is torch. Convert with --backend tensorflow" in stderr, stderr
    assert not out.exists()


@cross_env
@only_in("keras-3.15-tf")
def test_lambda_body_without_keras_ops_forms_is_kept_on_tensorflow(
    sources: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`Lambda(lambda t: tf.math.cumsum(t, axis=1))` of tf.keras 2.15, whose function has no `keras.ops` form in the
    table, is kept as written in a `compat_clone>TensorFlowLambda` layer on the TensorFlow backend: said, proven in
    memory and read back from its file, which loads only outside safe mode, with compat_clone's custom objects, in the
    Python that wrote the bytecode (tf.keras 2.15's 3.11: keras-3.0-tf rebuilds it; on jax / torch it is refused)."""
    import keras

    import compat_clone.convert

    out = tmp_path / "tfcumsum.keras"
    folder = sources("tf.keras-2.15")
    where = ["--matrix-dir", str(sibling("keras-3.0-tf").parent), "--no-build"]
    rc, stdout, stderr = convert([str(folder / "tfcumsum.h5"), "-o", str(out), "--to", "keras-3.0-tf", *where], capsys)
    assert rc == 0, stdout + stderr
    assert "running: the Lambda calls TensorFlow functions `keras.ops` has no form for (tf.math.cumsum)" in stdout, stdout
    assert "compat_clone>TensorFlowLambda" in stdout and ": OK" in stdout, stdout
    assert "holds Lambda layers (running)" in stdout and "safe_mode=False" in stdout, stdout
    custom = compat_clone.convert.custom_objects()
    with pytest.raises(ValueError, match="outside safe mode"):
        keras.models.load_model(out, custom_objects=custom, compile=False)
    here = "{}.{}".format(*sys.version_info[:2])
    if here != "3.11":  # this host's Python cannot run 3.11 bytecode: said so
        with pytest.raises(ValueError, match=r"holds Python 3\.11 bytecode; this is Python"):
            keras.models.load_model(out, custom_objects=custom, compile=False, safe_mode=False)
    else:
        _assert_predicts_and_trains(out, folder / "tfcumsum.npz", custom=custom, safe_mode=False)


# --------------------------------------------------------------------------- refusals (no framework needed)


def test_refusals_write_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    not_a_model = tmp_path / "notes.h5"
    not_a_model.write_text("hello")
    cases = [
        (["missing.h5", "-o", str(tmp_path / "a.keras")], "nothing exists there"),
        ([str(not_a_model), "-o", str(tmp_path / "a.h5")], "Expected -o to name a .keras file"),
        ([str(not_a_model), "-o", str(tmp_path / "a.keras")], "neither HDF5 nor a .keras zip"),
        (
            [str(not_a_model), "-o", str(tmp_path / "a.keras"), "--custom-objects", "not a module"],
            "Expected --custom-objects as one of path/to/layers.py, my_package.layers, module:Name or NAME=module.attr",
        ),
        (
            [str(not_a_model), "-o", str(tmp_path / "a.keras"), "--custom-objects", "mypkg:"],
            "Expected --custom-objects as module:name",
        ),
        (
            [str(not_a_model), "-o", str(tmp_path / "a.keras"), "--custom-objects", "missing/layers.py"],
            "--custom-objects 'missing/layers.py': no such file",
        ),
        (
            [str(not_a_model), "-o", str(tmp_path / "a.keras"), "--custom-objects", "<lambda>=swish"],
            "Expected --custom-objects NAME=module.attr",
        ),
        (
            [str(not_a_model), "-o", str(tmp_path / "a.keras"), "--from", "keras-9.9"],
            "is neither an environment of the matrix table nor a path",
        ),
        (
            [
                str(not_a_model),
                "-o",
                str(tmp_path / "a.keras"),
                "--from",
                "keras-2.2.4",
                "--no-build",
                "--matrix-dir",
                str(tmp_path / "empty"),
            ],
            "the environment is not built",
        ),
        ([str(not_a_model), "-o", str(tmp_path / "a.keras"), "--rtol", "-1"], "Expected --rtol to be a number >= 0"),
    ]
    for argv, message in cases:
        rc, out, err = convert(argv, capsys)
        assert rc == 2 and message in err, (argv, out, err)
    existing = tmp_path / "there.keras"
    existing.write_bytes(b"keep")
    rc, out, err = convert([str(not_a_model), "-o", str(existing)], capsys)
    assert rc == 2 and "exists. Expected a new file; pass --force" in err
    assert existing.read_bytes() == b"keep"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.h5", "there.keras"]


@pytest.mark.keras3
def test_a_keras3_file_is_refused_as_already_keras3(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import keras

    inputs = keras.Input((3,))
    model = keras.Model(inputs, keras.layers.Dense(2)(inputs))
    model.save(tmp_path / "k3.keras")
    rc, out, err = convert([str(tmp_path / "k3.keras"), "-o", str(tmp_path / "new.keras")], capsys)
    assert rc == 2 and "it is a Keras 3 model already" in err, out + err
    assert not (tmp_path / "new.keras").exists()


# --------------------------------------------------------------------------- the matrix builds every env first


def test_matrix_builds_every_env_before_running_any_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`b` comes first and its command looks at `a`: `a`'s (failed) build already happened."""
    from compat_clone.tools import matrix as _matrix

    table = tmp_path / "t.toml"
    table.write_text(
        '[defaults]\npackages = ["pytest"]\ninstall_compat_clone = false\n'
        '[[env]]\nname = "b"\npackages = ["x"]\n[[env]]\nname = "a"\npackages = ["y"]\n'
    )
    root = tmp_path / "m"
    envs = _matrix.load_table(table)
    for env in envs:
        (root / env.name / "bin").mkdir(parents=True)
        (root / env.name / "bin" / "python").symlink_to(sys.executable)
        (root / env.name / ".compat-clone-stamp").write_text((_matrix.env_stamp(env) if env.name == "b" else "stale") + "\n")
    monkeypatch.setenv("COMPAT_CLONE_UV", "false")  # `a` is stale: its rebuild fails at once
    script = (
        "import os, pathlib; d = pathlib.Path(os.environ['COMPAT_CLONE_MATRIX_DIR']); "
        "print('siblings', os.environ['COMPAT_CLONE_MATRIX_ENVS'], 'a-built', (d / 'a' / 'bin').exists()); "
        "print('1 passed in 0.1s')"
    )
    rc = _matrix.main(
        ["--table", str(table), "--root", str(root), "--jobs", "1", "--tail", "0", "--", sys.executable, "-c", script]
    )
    assert rc == 1  # a failed to build
    log = (root / "b" / "last.log").read_text()
    assert "siblings b,a a-built False" in log, log  # a's stale folder was removed before b ran
    outcome = json.loads((root / "_results" / "a.outcome.json").read_text())
    assert outcome["status"] == "BUILD FAILED"
    assert json.loads((root / "_results" / "b.outcome.json").read_text())["status"] == "ok"
