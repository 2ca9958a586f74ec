"""A Keras 2 `Lambda` whose body calls TensorFlow functions `keras.ops` has no form for, kept on TensorFlow.

Where every TensorFlow function a `Lambda` body reads has a `keras.ops` form
(`_tf_ops.OPS`), the body is computed inline on those forms and runs on every
backend (`_lambdas.InlineLambda`). Where one has none (``tf.math.cumsum``,
``tf.signal.*``, ...), the body is kept as it was written, with its module
globals bound to the TensorFlow modules it read, in a layer registered as
``compat_clone>TensorFlowLambda``. That layer runs on Keras 3's TensorFlow
backend only, and a conversion to jax or torch refuses it (`lambda_backend_error`).

Its file holds Python bytecode, as a Keras `Lambda`'s does: Keras 3 loads it
with ``safe_mode=False`` and ``custom_objects=compat_clone.convert.custom_objects()``,
in the Python version that wrote it. Importing this module imports no framework.
"""

from __future__ import annotations

import base64
import builtins
import importlib
import inspect
import marshal
import sys
import types
from typing import Any, Dict, List, Optional, Sequence

from compat_clone.convert._functions import PACKAGE

__all__ = ["TF_LAMBDA_NAME", "tf_lambda_class", "lambda_backend_error", "function_from_bytecode"]

#: the registered name of the layer (``compat_clone>TensorFlowLambda``)
TF_LAMBDA_NAME = "TensorFlowLambda"
_layer_class: List[Any] = []


def _python() -> str:
    return "{}.{}".format(*sys.version_info[:2])


def lambda_backend_error(path: str, missing: Sequence[str], backend: str, name: str) -> str:
    """The refusal of a `Lambda` whose TensorFlow calls have no `keras.ops` form, on a backend other than TensorFlow."""
    return (
        f"Lambda layer {path!r} calls TensorFlow functions the conversion has no `keras.ops` form for: "
        f"{', '.join('`' + m + '`' for m in missing)}. Such a body is kept as a TensorFlow layer "
        f"(`{PACKAGE}>{TF_LAMBDA_NAME}`), which runs on Keras 3's TensorFlow backend only; this is {backend}. "
        f"Convert with --backend tensorflow, or rewrite the function with `keras.ops` and pass it as "
        f"`custom_objects={{{name!r}: new_function}}`."
    )


def _function(config: Dict[str, Any]) -> Any:
    """The body's Python function, from the bytecode and the module globals `config` holds."""
    if config["python"] != _python():
        raise ValueError(
            f"This {TF_LAMBDA_NAME} layer holds Python {config['python']} bytecode; this is Python {_python()}, "
            "which cannot load it. Load the file with the Python that wrote it."
        )
    scope = {name: importlib.import_module(module) for name, module in config.get("modules", {}).items()}
    scope.update(config.get("constants", {}))
    return function_from_bytecode(config["code"], config.get("defaults"), config.get("closure"), scope)


def function_from_bytecode(code_text: str, defaults: Any, closure: Any, scope: Dict[str, Any]) -> Any:
    """A Python function from Keras 2's saved form of it (base64 of `marshal`, defaults, closure values), its
    globals `scope` and the builtins."""
    code = marshal.loads(base64.b64decode(code_text.encode("ascii")))
    cells = tuple(types.CellType(v) for v in closure) if closure else None
    glob = {"__builtins__": builtins, **scope}
    return types.FunctionType(code, glob, code.co_name, tuple(defaults) if defaults else None, cells)


def tf_lambda_class() -> Any:
    """The Keras 3 layer that runs a Keras 2 `Lambda` body on TensorFlow, registered with Keras 3 (once).

    Returns:
        The class ``compat_clone>TensorFlowLambda``. Its config holds the
        body's bytecode (``code``, base64 of `marshal`, as Keras 2 saved it),
        ``defaults``, ``closure``, the Python version that wrote it
        (``python``), the module globals it reads by name (``modules``:
        ``{"tf": "tensorflow"}``), constants (``constants``) and the
        `Lambda`'s ``arguments``. `from_config` refuses in safe mode, and on a
        backend other than TensorFlow.
    """
    if _layer_class:
        return _layer_class[0]
    import keras

    @keras.saving.register_keras_serializable(package=PACKAGE, name=TF_LAMBDA_NAME)
    class TensorFlowLambda(keras.layers.Layer):  # type: ignore[misc]
        """A Keras 2 `Lambda` body calling TensorFlow, run as written on Keras 3's TensorFlow backend."""

        def __init__(
            self,
            code: str,
            python: str,
            modules: Optional[Dict[str, str]] = None,
            constants: Optional[Dict[str, Any]] = None,
            defaults: Optional[List[Any]] = None,
            closure: Optional[List[Any]] = None,
            arguments: Optional[Dict[str, Any]] = None,
            **kwargs: Any,
        ) -> None:
            super().__init__(**kwargs)
            if keras.backend.backend() != "tensorflow":
                raise ValueError(
                    f"A {TF_LAMBDA_NAME} layer calls TensorFlow functions: it runs on Keras 3's TensorFlow backend "
                    f"only, and this is {keras.backend.backend()}. Set KERAS_BACKEND=tensorflow."
                )
            self.body: Dict[str, Any] = dict(
                code=code,
                python=python,
                modules=dict(modules or {}),
                constants=dict(constants or {}),
                defaults=defaults,
                closure=closure,
                arguments=dict(arguments or {}),
            )
            self.function = _function(self.body)
            try:
                self.accepts = set(inspect.signature(self.function).parameters)
            except (TypeError, ValueError):
                self.accepts = set()
            if hasattr(self, "_convert_input_args"):  # inputs keep their dtypes, as in the Keras 2 Lambda
                self._convert_input_args = False

        def call(self, inputs: Any, mask: Any = None, training: Any = None) -> Any:
            # as Keras's Lambda: `mask` / `training` reach the function only where it takes them
            passed = {k: v for k, v in (("mask", mask), ("training", training)) if k in self.accepts}
            arguments: Dict[str, Any] = self.body["arguments"]
            return self.function(inputs, **passed, **arguments)

        def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
            return None  # a Keras 2 Lambda without a `mask` argument drops the mask too

        def get_config(self) -> Dict[str, Any]:
            config: Dict[str, Any] = super().get_config()
            config.update(self.body)
            return config

        @classmethod
        def from_config(cls, config: Dict[str, Any]) -> Any:
            from keras.src.saving import serialization_lib

            if serialization_lib.in_safe_mode() is not False:
                raise ValueError(
                    f"A {TF_LAMBDA_NAME} layer ({config.get('name')!r}) holds Python bytecode, which Keras loads only "
                    "outside safe mode: pass safe_mode=False to keras.models.load_model for a file you trust."
                )
            return cls(**config)

    _layer_class.append(TensorFlowLambda)
    return TensorFlowLambda
