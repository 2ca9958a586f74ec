"""`compat-clone convert --compile` and `convert(model, compile=True)`: the training state carried, with a training step as proof.

Cross-environment: files written by the old releases themselves
(tests/convert/convert_training_sources.py in standalone Keras 2.3.1 and tf.keras
2.15, compiled and trained a few steps), kept by content like the other sources
(tests/convert/source_cache.py), converted through the real command line in a
Keras 3 host: the optimizer's state read back from the written file, one
training step on the same batch giving the same weights as the source's; and
every refusal (an optimizer Keras 3 updates otherwise, a loss of the model's
own without its code, `--no-compile-state` alone), each exit 2 and nothing
written. In one process (tf_keras next to Keras 3): the optimizer APIs of
tf_keras (the new one and `optimizers.legacy`). The tables and the format
run anywhere.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, List

import numpy as np
import pytest

from compat_clone.convert._optimizers import API_KERAS2, API_NEW, API_V2, not_exact
from compat_clone.convert._training import random_in_training, step_targets
from tests.convert.convert_envs import hosted, keras3_target, run_convert, sibling, written
from tests.convert.convert_support import fresh_keras2, needs_both

SCRIPT = Path(__file__).resolve().parent / "convert_training_sources.py"
KIND = "convert-training"
_CASES = {"keras-2.3.1": ("keras-3.15-jax",), "tf.keras-2.15": ("keras-3.15-torch",)}
WRITERS = tuple(_CASES)


def writes(env: str) -> List[List[str]]:
    """The one unit of work `env` writes: every file of the script."""
    return [[]] if env in _CASES else []


def _where(env: str) -> List[str]:
    import keras

    where = ["--from", env, "--matrix-dir", str(sibling(env).parent), "--no-build"]
    return where + ["--to", sys.prefix, "--backend", keras.backend.backend()]


def _loaded(path: Path, custom: Any = None) -> Any:
    import keras

    return keras.models.load_model(path, custom_objects=custom)


@keras3_target("conversions with the training state run")
@pytest.mark.parametrize("env", [hosted(env, id=env, hosts=hosts) for env, hosts in _CASES.items()])
def test_training_state_converts_with_one_equal_training_step(
    env: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder, report = written(KIND, SCRIPT, env, [])
    for name, optimizer in (("adam_bilstm", "Adam"), ("sgd_dense", "SGD")):
        out = tmp_path / f"{name}.keras"
        rc, stdout, stderr = run_convert([str(folder / f"{name}.h5"), "-o", str(out), "--compile", *_where(env)], capsys)
        assert rc == 0, stdout + stderr
        assert f"training state: {optimizer} at iteration {report['iterations'][name + '.h5']}" in stdout, stdout
        assert f"training step: 1 step of {optimizer} from iteration " in stdout and "): OK" in stdout, stdout
        model = _loaded(out)  # the file holds the compiled model and its optimizer's state
        assert type(model.optimizer).__name__ == optimizer
        assert int(model.optimizer.iterations) == report["iterations"][name + ".h5"]
        assert any(np.any(np.asarray(v)) for v in model.optimizer.variables[1:]), "slots all zero"
    assert "decay=0.01" in stdout and "InverseTimeDecay" in stdout, stdout  # SGD's decay, as a schedule

    # training randomness: the state is carried, the step is not compared, and that is said
    out = tmp_path / "dropout.keras"
    rc, stdout, stderr = run_convert([str(folder / "dropout.h5"), "-o", str(out), "--compile", *_where(env)], capsys)
    assert rc == 0 and "training step: not compared: the model draws random numbers in training" in stdout, stdout + stderr

    # a loss of the model's own, saved by its name: refused without its code, carried with it
    out = tmp_path / "custom.keras"
    rc, stdout, stderr = run_convert([str(folder / "custom_loss.h5"), "-o", str(out), "--compile", *_where(env)], capsys)
    assert rc == 2 and "CompileError" in stderr and "my_loss" in stderr and "--no-compile-state" in stderr, stdout + stderr
    assert not out.exists()
    rc, stdout, stderr = run_convert(
        [str(folder / "custom_loss.h5"), "-o", str(out), "--compile", "--custom-objects", str(SCRIPT), *_where(env)], capsys
    )
    assert rc == 0 and "training step: 1 step of Adam" in stdout and "): OK" in stdout, stdout + stderr

    out = tmp_path / "rmsprop.keras"  # standalone Keras 2's RMSprop has no Keras 3 counterpart; tf.keras 2.15's has
    rc, stdout, stderr = run_convert([str(folder / "rmsprop_dense.h5"), "-o", str(out), "--compile", *_where(env)], capsys)
    if env == "keras-2.3.1":
        assert rc == 2 and "the optimizer RMSprop (standalone Keras 2)" in stderr and "sqrt(accumulator)" in stderr, stderr
        assert not out.exists()
        rc, stdout, stderr = run_convert(
            [str(folder / "rmsprop_dense.h5"), "-o", str(out), "--compile", "--no-compile-state", *_where(env)], capsys
        )
        assert rc == 0 and "holds no training state (--no-compile-state): the optimizer RMSprop" in stdout, stdout + stderr
        assert getattr(_loaded(out), "optimizer", None) is None  # written uncompiled
    else:
        assert rc == 0 and "training step: 1 step of RMSprop" in stdout and "): OK" in stdout, stdout + stderr


@keras3_target("conversions with the training state run")
@pytest.mark.parametrize("env", [hosted("tf.keras-2.15", id="tf.keras-2.15", hosts=("keras-3.15-tf",))])
def test_training_step_that_differs_in_keras3_is_refused(env: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Keras 3.15 on TensorFlow updates Adam's second moments of an Embedding from a sparse gradient with repeated ids
    otherwise than the dense update of Keras 2 (and of Keras 3 on jax / torch): the step's proof finds it, exit 1."""
    folder, _ = written(KIND, SCRIPT, env, [])
    out = tmp_path / "bilstm.keras"
    rc, stdout, stderr = run_convert([str(folder / "adam_bilstm.h5"), "-o", str(out), "--compile", *_where(env)], capsys)
    assert rc == 1 and "does not train as the source did" in stderr and "MISMATCH" in stderr, stdout + stderr
    assert "Known: Keras 3 on TensorFlow" in stderr and "--backend jax" in stderr, stderr
    assert not out.exists()


def test_no_compile_state_needs_compile(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "m.h5"
    source.write_bytes(b"\x89HDF\r\n\x1a\n")
    rc, stdout, stderr = run_convert([str(source), "-o", str(tmp_path / "n.keras"), "--no-compile-state"], capsys)
    assert rc == 2 and "--no-compile-state goes with --compile" in stderr, stdout + stderr


@pytest.fixture
def K2() -> Any:
    yield from fresh_keras2()


def _trained(K2: Any, optimizer: Any, loss: Any = "mse") -> Any:
    inputs = K2.Input((5,))
    model = K2.Model(inputs, K2.layers.Dense(2)(K2.layers.Dense(4, activation="tanh")(inputs)))
    model.compile(optimizer, loss)
    rng = np.random.default_rng(0)
    model.fit(rng.normal(size=(16, 5)), rng.normal(size=(16, 2)), batch_size=8, epochs=2, verbose=0)
    return model


@needs_both
@pytest.mark.parametrize(
    "make",
    [
        lambda K2: K2.optimizers.Adam(0.01, amsgrad=True),
        lambda K2: K2.optimizers.legacy.Adam(0.01, decay=0.01),
        lambda K2: K2.optimizers.SGD(0.1, momentum=0.9, nesterov=True),
        lambda K2: K2.optimizers.legacy.RMSprop(0.01, momentum=0.5, centered=True),
        lambda K2: K2.optimizers.Nadam(0.01),
        lambda K2: K2.optimizers.Adadelta(1.0),
        lambda K2: K2.optimizers.legacy.Adamax(0.01),
    ],
    ids=["adam-amsgrad", "legacy-adam-decay", "sgd-nesterov", "legacy-rmsprop-centered", "nadam", "adadelta", "legacy-adamax"],
)
def test_convert_in_process_carries_the_optimizer_state(K2: Any, make: Any) -> None:
    from compat_clone.convert import convert

    source = _trained(K2, make(K2))
    before = [np.array(w) for w in source.get_weights()]
    model, proof = convert(source, compile=True, return_proof=True)
    assert proof.training.startswith("training step: 1 step of ") and proof.training.endswith(": OK"), proof.training
    assert int(model.optimizer.iterations) == int(source.optimizer.iterations) == 4
    assert all(np.array_equal(a, b) for a, b in zip(before, source.get_weights()))  # the source left as it was


@needs_both
def test_convert_in_process_refuses_what_it_cannot_carry(K2: Any) -> None:
    from compat_clone.convert import convert
    from compat_clone.errors import CompileError

    with pytest.raises(CompileError, match=r"RMSprop .*sqrt\(accumulator\) \+ epsilon"):
        convert(_trained(K2, K2.optimizers.legacy.RMSprop(0.01)), compile=True)
    inputs = K2.Input((3,))
    with pytest.raises(CompileError, match="holds no compile configuration"):
        convert(K2.Model(inputs, K2.layers.Dense(2)(inputs)), compile=True)


def test_optimizer_table_names_what_keras3_computes_otherwise() -> None:
    assert not_exact(API_KERAS2, "RMSprop", {}) and not_exact(API_KERAS2, "Nadam", {})
    assert not_exact(API_V2, "RMSprop", {"momentum": 0.0}) and not_exact(API_V2, "RMSprop", {"momentum": 0.9}) is None
    assert not_exact(API_NEW, "RMSprop", {}) is None and not_exact(API_KERAS2, "Adam", {"amsgrad": True}) is None


def test_random_layers_and_step_targets() -> None:
    arch = {
        "class_name": "Functional",
        "config": {
            "layers": [
                {
                    "class_name": "Dense",
                    "config": {"name": "d", "kernel_initializer": {"class_name": "RandomUniform", "config": {}}},
                },
                {"class_name": "Dropout", "config": {"name": "drop", "rate": 0.5}},
                {"class_name": "LSTM", "config": {"name": "lstm", "dropout": 0.0, "recurrent_dropout": 0.2}},
            ]
        },
    }
    assert random_in_training(arch) == ["layer 'drop' (Dropout rate=0.5)", "layer 'lstm' (LSTM recurrent_dropout=0.2)"]
    sparse, onehot, other = step_targets(
        ["sparse_categorical_crossentropy", "categorical_crossentropy", "mse"], [(3,), (3,), (2,)], 4, 0
    )
    assert sparse.shape == (4,) and sparse.max() < 3 and onehot.sum(axis=-1).tolist() == [1.0] * 4 and other.shape == (4, 2)
