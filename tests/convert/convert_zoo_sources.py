"""Describes the conversion zoo (tests/convert/convert_zoo.py) in a Keras 2 environment, through saved files.

Run with a matrix environment's interpreter (standalone Keras 2.x, or tf.keras
2.x / tf_keras); tests/convert/test_convert_zoo_envs.py does, from a Keras 3 environment:

    python tests/convert/convert_zoo_sources.py OUT_DIR FAMILY FORMAT...
        FAMILY: keras2 | tf_keras     FORMAT: h5 | h5+optimizer | keras | savedmodel, each optionally
        =CASE,CASE... (those cases only) or ~CASE,CASE... (every case but those)

Each zoo case the environment can build is saved in every FORMAT, loaded back
the way `compat-clone convert` reads a file (`compat_clone.convert._source.read_model`), and
the loaded model is described (`compat_clone.convert.describe`) into
``OUT_DIR/<case>.<format>.npz``: the description holds the source's outputs
(and masks) on the probes, which the Keras 3 side proves its rebuild against.
The loaded model must answer as the built one did: a file that lost something
fails here, not on the other side. The last stdout line is a JSON report.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any, Dict, List

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from compat_clone.convert import describe, save  # noqa: E402
from compat_clone.convert._probes import output_list  # noqa: E402
from compat_clone.convert._source import keras_for, read_model  # noqa: E402
from tests.convert import convert_zoo  # noqa: E402

# FORMAT -> the file's suffix. `h5+optimizer`: the model compiled (Adam) and trained one step
# before it is saved, so the file holds a training config and the optimizer's state, as the
# files users kept from `model.fit` do; the other formats are saved uncompiled.
_SUFFIX = {"h5": ".h5", "keras": ".keras", "savedmodel": ".savedmodel", "h5+optimizer": ".optimizer.h5"}


def _train_one_step(K: Any, model: Any, inputs: List[np.ndarray]) -> None:
    model.compile(optimizer=K.optimizers.Adam(), loss="mse")
    targets = [np.zeros_like(o) for o in _predict(model, inputs)]
    model.train_on_batch(inputs if len(inputs) > 1 else inputs[0], targets if len(targets) > 1 else targets[0])


def _has_optimizer_state(path: str) -> bool:
    import h5py

    with h5py.File(path, "r") as f:
        return "optimizer_weights" in f and "training_config" in f.attrs


def _save(K: Any, model: Any, path: str, fmt: str) -> None:
    if fmt == "savedmodel":  # TF 2.0-2.4: the Keras metadata inside saved_model.pb
        model.save(path, save_format="tf")
    elif fmt == "keras" and K.__version__.startswith("2.12"):
        model.save(path, save_format="keras_v3")  # 2.12 writes HDF5 to a .keras name unless told
    else:
        model.save(path)


def _predict(model: Any, inputs: List[np.ndarray]) -> List[np.ndarray]:
    out = model.predict(inputs if len(inputs) > 1 else inputs[0], batch_size=len(inputs[0]), verbose=0)
    return [np.asarray(o) for o in output_list(model, out)]  # a dict in the outputs' order


# (case, format, Keras version prefix) whose file the writing Keras does not read
# back as it saved it: checked to still differ (so a fix is noticed), then left out.
_UNFAITHFUL = {
    # its MultiHeadAttention: max |Δ| ~1 between the saved model and the one tf.keras 2.4 loads
    ("conv_variants", "savedmodel", "2.4."): "TensorFlow 2.4 reloads MultiHeadAttention from its own "
    "SavedModel with other outputs",
}


def _unfaithful(name: str, fmt: str, version: str) -> str:
    return next((why for (case, f, v), why in _UNFAITHFUL.items() if case == name and f == fmt and version.startswith(v)), "")


def main(out: str, family: str, formats: List[str]) -> None:
    K = keras_for(family)
    os.makedirs(out, exist_ok=True)
    report: Dict[str, Any] = {"keras": K.__version__, "cases": {}, "unavailable": {}}
    # FORMAT=case,case...: that format for those cases only; FORMAT~case,case...: for all cases but those
    only = {fmt: set(cases.split(",")) for fmt, _, cases in (f.partition("=") for f in formats) if cases}
    but = {fmt: set(cases.split(",")) for fmt, _, cases in (f.partition("~") for f in formats) if cases}
    formats = [f.partition("=")[0].partition("~")[0] for f in formats]
    for name, builder in convert_zoo.ZOO.items():
        wanted = [fmt for fmt in formats if (fmt not in only or name in only[fmt]) and name not in but.get(fmt, ())]
        if not wanted:
            continue
        if not convert_zoo.available(name, K):
            report["unavailable"][name] = f"Keras {K.__version__} cannot build it"
            continue
        K.backend.clear_session()  # a fresh graph per case: TF1 sessions slow down as one graph grows
        case = builder(K)
        objects = {type(layer).__name__: type(layer) for layer in case.model.layers if type(layer).__name__ == "Scale"}
        entry: Dict[str, Any] = {"rtol": case.rtol, "atol": case.atol, "custom": sorted(objects), "files": {}}
        # uncompiled formats first: training changes the model
        for fmt in sorted(wanted, key=lambda f: f == "h5+optimizer"):
            path = os.path.join(out, name + _SUFFIX[fmt])
            if fmt == "h5+optimizer":
                _train_one_step(K, case.model, describe(case.model, seed=5).probes[0].inputs)
            _save(K, case.model, path, fmt)
            if fmt == "h5+optimizer":
                assert _has_optimizer_state(path), f"{name}: no optimizer state in {path}"
            loaded = read_model(K, family, path, objects, safe_mode=False)  # our own files
            description = describe(loaded, seed=3)
            probe = description.probes[0]
            same = [
                np.allclose(read, built, rtol=1e-6, atol=1e-7)
                for built, read in zip(_predict(case.model, probe.inputs), probe.outputs)
            ]
            why = _unfaithful(name, fmt, K.__version__)
            if why:
                assert not all(same), f"{name}: the {fmt} file answers as saved now; drop it from _UNFAITHFUL"
                report["unavailable"][f"{name}.{fmt}"] = why
                continue
            assert all(same), f"{name}: the {fmt} file does not answer as the model saved"
            entry["files"][fmt] = save(description, os.path.join(out, f"{name}.{fmt}.npz"))
        if entry["files"]:
            report["cases"][name] = entry
    print(json.dumps(report))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3:])
