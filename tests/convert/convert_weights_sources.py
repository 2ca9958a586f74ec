"""Writes what old projects left behind besides whole models, in a Keras 2 environment (test_convert_weights.py).

Run with that environment's interpreter (standalone Keras 2.x, or tf.keras /
tf_keras); imports no compat_clone:

    python tests/convert/convert_weights_sources.py OUT_DIR

Writes, for the model `convert_builders.build_plain` builds (the same as
convert_sources.py's plain model, its weights drawn from a fixed seed, its
BatchNormalization statistics included): ``plain.json`` (``model.to_json()``),
``plain.yaml`` (``model.to_yaml()``, where this Keras still writes YAML),
``plain_weights.h5`` (``model.save_weights()``) and ``plain.npz`` with probe
inputs ``x`` and the source's predictions ``y``; and ``sequential_weights.h5`` / ``sequential.npz``,
``nested_weights.h5`` / ``nested.npz``,
``subclassed_weights.h5`` / ``subclassed.npz`` for `build_nested` and `build_subclassed`.
"""

from __future__ import annotations

import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from convert_builders import build_nested, build_plain, build_sequential, build_subclassed, keras_version  # noqa: E402


def main(out: str) -> None:
    os.makedirs(out, exist_ok=True)
    model = build_plain()
    written = {"json": os.path.join(out, "plain.json"), "weights": os.path.join(out, "plain_weights.h5")}
    with open(written["json"], "w", encoding="utf-8") as f:
        f.write(model.to_json())
    try:
        yaml_text = model.to_yaml()
    except Exception:  # tf.keras 2.6+ removed YAML (a RuntimeError that says so)
        yaml_text = None
    if yaml_text is not None:
        written["yaml"] = os.path.join(out, "plain.yaml")
        with open(written["yaml"], "w", encoding="utf-8") as f:
            f.write(yaml_text)
    model.save_weights(written["weights"])
    x = np.random.default_rng(0).normal(size=(5, 6, 4)).astype("float32")
    np.savez(os.path.join(out, "plain.npz"), x=x, y=model.predict(x))
    for name, build in (("sequential", build_sequential), ("nested", build_nested), ("subclassed", build_subclassed)):
        other = build()
        written[name] = os.path.join(out, f"{name}_weights.h5")
        other.save_weights(written[name])
        np.savez(os.path.join(out, f"{name}.npz"), x=x, y=other.predict(x))
    print(json.dumps({"keras": keras_version(), "written": written}))


if __name__ == "__main__":
    main(sys.argv[1])
