"""`custom_objects()`: the compat_clone objects a converted model's `.keras` file names.

A converted model may compute a Keras 2 formula Keras 3 changed
(`_functions`) or a TensorFlow function of the source's graph
(`_tf_ops`' layer); its file names them as ``compat_clone>...``, and Keras 3
loads it with these objects. Importing this module imports no framework.
"""

from __future__ import annotations

from typing import Any, Dict

from compat_clone.convert._functions import FORMULAS, PACKAGE, keras2_function
from compat_clone.convert._tf_lambda import TF_LAMBDA_NAME, tf_lambda_class
from compat_clone.convert._tf_ops import LAYER_NAME, op_layer_class

__all__ = ["custom_objects"]


def custom_objects() -> Dict[str, Any]:
    """What Keras 3 needs to load a converted model's `.keras` file, and registers it.

    Returns:
        ``{"compat_clone>keras2_hard_sigmoid": fn, "keras2_hard_sigmoid": fn,
        "compat_clone>TensorFlowOp": cls, ...}`` (the Keras 2 formulas, the
        layer computing TensorFlow functions a Keras 2 graph called, and the
        one keeping a `Lambda` body that calls TensorFlow on that backend)
        for ``keras.models.load_model(path, custom_objects=...)``; after the
        call, a plain ``load_model(path)`` in this process works too.

    Example:

    >>> import keras
    >>> import compat_clone.convert
    >>> model = keras.models.load_model(               # doctest: +SKIP
    ...     "new.keras", custom_objects=compat_clone.convert.custom_objects())
    """
    found: Dict[str, Any] = {}
    for name in FORMULAS:
        fn = keras2_function(name)
        found[f"{PACKAGE}>keras2_{name}"] = fn
        found[f"keras2_{name}"] = fn
    found[f"{PACKAGE}>{LAYER_NAME}"] = found[LAYER_NAME] = op_layer_class()
    found[f"{PACKAGE}>{TF_LAMBDA_NAME}"] = found[TF_LAMBDA_NAME] = tf_lambda_class()
    return found
