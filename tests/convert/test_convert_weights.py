"""`compat-clone convert` on what old projects left beside their code: an architecture (JSON / YAML) with its
weights, and a weights-only ``.h5`` with the function that builds the model (``--model``).

The files are written by the old releases themselves (tests/convert/convert_weights_sources.py
in standalone Keras 2.3.1 on TensorFlow 2.15, whose h5py 3 it cannot read its own
files with, and tf.keras 2.15), kept by content like the other conversion
sources (tests/convert/source_cache.py), and converted here, in a Keras 3
host, through the real command line: the result must predict what the source
predicted when it wrote the files (so the weights did load), and train. The
refusals run in any environment: each is exit 2 before any environment is
used, and nothing is written.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, List

import pytest

from tests.convert.convert_envs import hosted, keras3_target, run_convert, sibling, written
from tests.convert.test_convert_cli import _assert_predicts_and_trains

SCRIPT = Path(__file__).resolve().parent / "convert_weights_sources.py"
BUILDERS = Path(__file__).resolve().parent / "convert_builders.py"
KIND = "convert-weights"
_CASES = {"keras-2.3.1": ("keras-3.15-jax",), "tf.keras-2.15": ("keras-3.15-torch",)}
WRITERS = tuple(_CASES)


def writes(env: str) -> List[List[str]]:
    """The one unit of work `env` writes: every file of the script."""
    return [[]] if env in _CASES else []


def _target_args() -> List[str]:
    import keras

    return ["--to", sys.prefix, "--backend", keras.backend.backend()]


@keras3_target("conversions of architectures and weights run")
@pytest.mark.parametrize("env", [hosted(env, id=env, hosts=hosts) for env, hosts in _CASES.items()])
def test_architecture_and_weights_files_convert_with_proof(env: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder, report = written(KIND, SCRIPT, env, [])
    where = ["--from", env, "--matrix-dir", str(sibling(env).parent), "--no-build", *_target_args()]
    probes = folder / "plain.npz"
    architectures = ["plain.json"] + (["plain.yaml"] if "yaml" in report["written"] else [])
    assert env != "keras-2.3.1" or architectures == ["plain.json", "plain.yaml"], report  # Keras 2 still writes YAML

    for name in architectures:  # the architecture, read by the Keras that wrote it, and its weights
        out = tmp_path / f"{name}.keras"
        rc, stdout, stderr = run_convert(
            [str(folder / name), "--weights", str(folder / "plain_weights.h5"), "-o", str(out), *where], capsys
        )
        assert rc == 0, stdout + stderr
        assert f"read {folder / name} in {env}: " in stdout and ": OK" in stdout, stdout
        _assert_predicts_and_trains(out, probes)

    for name in ("plain", "sequential", "nested"):  # the weights, loaded into the model the user's Keras 2 code builds
        out = tmp_path / f"built_{name}.keras"
        builder, weights = f"{BUILDERS}:build_{name}", folder / f"{name}_weights.h5"
        rc, stdout, stderr = run_convert([str(weights), "--model", builder, "-o", str(out), *where], capsys)
        assert rc == 0, stdout + stderr
        assert f"loaded the weights {weights} into it (built by {builder})" in stdout and ": OK" in stdout, stdout
        _assert_predicts_and_trains(out, folder / f"{name}.npz")

    # A subclassed model's Keras 2 code: no graph to describe; its outputs recorded where the weights load natively,
    # the same code run as Keras 3 code in the target, the weights placed by structure and proven on those outputs.
    out = tmp_path / "built_subclassed.keras"
    builder, weights = f"{BUILDERS}:build_subclassed_either", folder / "subclassed_weights.h5"
    rc, stdout, stderr = run_convert([str(weights), "--model", builder, "-o", str(out), *where], capsys)
    assert rc == 0, stdout + stderr
    assert "builds a subclassed model (no layer graph to describe): its outputs on 4 probe samples recorded" in stdout, stdout
    assert "proof: 1 output(s) on 4 probe samples recorded by the source" in stdout and ": OK" in stdout, stdout
    assert "not proven on outputs" not in stdout and len([ln for ln in stdout.splitlines() if "placed: " in ln]) == 8, stdout
    from tests.convert.convert_builders import build_subclassed_keras3

    _assert_predicts_and_trains(out, folder / "subclassed.npz", custom={"Net": type(build_subclassed_keras3())})
    out = tmp_path / "drifted.keras"  # code that builds another model under Keras 3: the proof fails, nothing written
    rc, stdout, stderr = run_convert(
        [str(weights), "--model", f"{BUILDERS}:build_subclassed_drifted", "-o", str(out), *where], capsys
    )
    assert rc == 1 and "DIFFERS" in stdout and "does not give the outputs the source gave: nothing written" in stderr, (
        stdout + stderr
    )
    assert not out.exists()

    out = tmp_path / "fresh.keras"  # the architecture alone: fresh weights, said so
    rc, stdout, stderr = run_convert([str(folder / "plain.json"), "-o", str(out), *where], capsys)
    assert rc == 0 and "holds no weights: the result has fresh weights" in stdout, stdout + stderr
    with pytest.raises(AssertionError, match="Not equal to tolerance"):
        _assert_predicts_and_trains(out, probes)

    # A --model that gives no model is refused in the environment that runs it: exit 2, nothing written.
    out = tmp_path / "never.keras"
    rc, stdout, stderr = run_convert(
        [str(folder / "plain_weights.h5"), "--model", f"{BUILDERS}:keras_version", "-o", str(out), *where], capsys
    )
    assert rc == 2 and "SourceModelError" in stderr and "returned 'str', which is not a Keras model" in stderr, stdout + stderr
    rc, stdout, stderr = run_convert(
        [str(folder / "plain_weights.h5"), "--model", "no_such_module:build", "-o", str(out), *where], capsys
    )
    assert rc == 2 and "module 'no_such_module' does not import" in stderr, stdout + stderr
    assert not out.exists()


@keras3_target("conversions of weights into Keras 3 code run")
@pytest.mark.parametrize("env", [hosted(env, id=env, hosts=hosts) for env, hosts in _CASES.items()])
def test_weights_only_files_are_placed_into_keras3_code_by_structure(
    env: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A Functional, a Sequential, a nested and a subclassed model's weights-only files, written by the old release, placed into the
    same models written for Keras 3 (`--model` code that builds no Keras 2 model): every variable placed once, said
    line by line; the result predicts what the source predicted. A model the weights do not fit is refused by name."""
    from tests.convert.convert_builders import build_subclassed_keras3

    folder, report = written(KIND, SCRIPT, env, [])
    where = ["--from", env, "--matrix-dir", str(sibling(env).parent), "--no-build", *_target_args()]
    for name, variables in (("plain", 8), ("sequential", 8), ("nested", 8), ("subclassed", 8)):
        weights = folder / f"{name}_weights.h5"
        out = tmp_path / f"{name}.keras"
        rc, stdout, stderr = run_convert(
            [str(weights), "--model", f"{BUILDERS}:build_{name}_keras3", "-o", str(out), *where], capsys
        )
        assert rc == 0, stdout + stderr
        assert "as Keras 3 code, the file's weights placed into its model by structure" in stdout, stdout
        placed = [line for line in stdout.splitlines() if line.startswith("  placed: ")]
        assert len(placed) == variables and any("moving_variance" in line for line in placed), stdout
        assert f"{variables} variables placed" in stdout and "not proven on outputs" in stdout, stdout
        # a subclass loads back with its class, as the user's own code gives it
        custom = {"Net": type(build_subclassed_keras3())} if name == "subclassed" else None
        _assert_predicts_and_trains(out, folder / f"{name}.npz", custom=custom)
    out = tmp_path / "wider.keras"
    rc, stdout, stderr = run_convert(
        [str(folder / "plain_weights.h5"), "--model", f"{BUILDERS}:build_wider_keras3", "-o", str(out), *where], capsys
    )
    assert rc == 2 and "SourceModelError" in stderr and "has shape (5, 3); the variable it goes to" in stderr, stdout + stderr
    assert not out.exists()


def _weights_only(path: Path) -> Path:
    import h5py

    with h5py.File(path, "w") as f:  # what save_weights() writes at its root, without a model_config
        f.attrs["keras_version"] = "2.15.0"
        f.attrs["backend"] = "tensorflow"
        f.attrs["layer_names"] = []
    return path


@pytest.mark.parametrize(
    "case",
    [
        "weights-not-hdf5",
        "json-not-architecture",
        "weights-only-without-model",
        "model-with-a-model-file",
        "model-and-weights",
        "bad-model-spec",
    ],
)
def test_refusals_exit_2_before_any_environment(case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("h5py")
    arch = tmp_path / "arch.json"
    arch.write_text('{"class_name": "Functional", "config": {}, "keras_version": "2.15.0", "backend": "tensorflow"}')
    weights = _weights_only(tmp_path / "w.h5")
    argv: List[Any] = {
        "weights-not-hdf5": [arch, "--weights", arch],
        "json-not-architecture": [tmp_path / "other.json"],
        "weights-only-without-model": [weights],
        "model-with-a-model-file": [arch, "--model", "pkg.models:build"],
        "model-and-weights": [weights, "--model", "pkg.models:build", "--weights", weights],
        "bad-model-spec": [weights, "--model", "pkg.models"],
    }[case]
    (tmp_path / "other.json").write_text('{"optimizer": "adam"}')
    out = tmp_path / "new.keras"
    # --no-build and an empty environments folder: a refusal here cannot have used an environment
    rc, stdout, stderr = run_convert(
        [*map(str, argv), "-o", str(out), "--no-build", "--matrix-dir", str(tmp_path / "envs")], capsys
    )
    said = {
        "weights-not-hdf5": f"--weights '{arch}' is not HDF5 (its first bytes are b'{{\"class_'). Expected the .h5 file save_weights() wrote",
        "json-not-architecture": "JSON that is not a Keras architecture (no `class_name` and `config`)",
        "weights-only-without-model": "weights only (saved by save_weights(): no architecture); convert it with the code that builds the model (--model my_pkg.models:build)",
        "model-with-a-model-file": "--model builds the model whose weights OLD holds: expected a weights-only .h5 (save_weights())",
        "model-and-weights": "--model loads its weights from OLD",
        "bad-model-spec": "Expected --model as module:function or path/to/file.py:function",
    }[case]
    assert rc == 2 and said in stderr, stdout + stderr
    assert not out.exists() and not (tmp_path / "envs").exists()
