"""A Keras 2 `Lambda` layer rebuilt in Keras 3.

Its function is the user's replacement (``custom_objects``, by the layer's
name or the function's), or the source's own bytecode, loaded in the same
Python with the module globals and constants `describe` noted. A function
that calls TensorFlow through a module it imported, where every function it
reads has a `keras.ops` form (`_tf_ops.OPS`), is computed inline on those forms
(`InlineLambda`: no Lambda kept, nothing of Python's bytecode saved); one
whose TensorFlow functions are not all there is kept as written on the
TensorFlow backend (`_tf_lambda`: refused for jax and torch); one that reads
another framework function, or a global the description cannot carry, is
refused with the way out.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import sys
import types
from typing import Any, Dict, List, Optional

from compat_clone.convert._builder_protocol import LambdaBuilder
from compat_clone.convert._functions import PACKAGE
from compat_clone.convert._layer_map import map_config
from compat_clone.convert._tf_lambda import TF_LAMBDA_NAME, function_from_bytecode, lambda_backend_error, tf_lambda_class
from compat_clone.convert._tf_ops import OPS
from compat_clone.errors import UnconvertibleLayerError

__all__ = ["InlineLambda", "lambda_layer"]


def lambda_layer(builder: LambdaBuilder, config: Dict[str, Any], path: str, new_name: str) -> Any:
    """The Keras 3 layer for the `Lambda` at `path` (`builder`: the `_rebuild` builder, as `LambdaBuilder`)."""
    name = config.get("name", path)
    replacement = builder.custom.get(name)
    if replacement is not None:
        builder.changes.append(f"{path}: Lambda replaced by custom_objects[{name!r}]")
        if callable(replacement) and not isinstance(replacement, builder.keras.layers.Layer):
            return builder.keras.layers.Lambda(replacement, name=new_name)
        return replacement
    notes = builder.description.notes_for(path)
    framework = [n for n in notes if n["kind"] == "lambda_framework"]
    try:
        stand_ins = _tensorflow_stand_ins(builder, notes, framework, path, name)
    except _KeepOnTensorFlow as keep:
        return _on_tensorflow(builder, config, path, new_name, framework, keep.missing)
    if stand_ins is not None:
        return InlineLambda(builder, config, path, stand_ins)
    if framework:
        uses = ", ".join(f"`{n['name']}` ({n['module']})" for n in framework)
        raise UnconvertibleLayerError(
            f"Lambda layer {path!r} calls the source framework directly: its function uses "
            f"{uses}, which a Keras 3 model cannot run. Rewrite the function with "
            f"`keras.ops` and pass it as `custom_objects={{{name!r}: new_function}}`."
        )
    function = lambda_function(builder, config, "function", path)
    kwargs: Dict[str, Any] = {"function": function, "name": new_name}
    if config.get("arguments"):
        kwargs["arguments"] = config["arguments"]
    shape = config.get("output_shape")
    if shape is not None:
        if config.get("output_shape_type", "raw") == "raw":
            kwargs["output_shape"] = tuple(shape) if isinstance(shape, list) else shape
        else:
            builder.changes.append(
                f"{path}: the Lambda's `output_shape` function was not carried over "
                "(Keras 3 infers the shape by running the function)"
            )
    dtype = map_config("Lambda", {"dtype": config.get("dtype")}, path, object, builder.changes, builder.activation)
    if dtype.get("dtype") is not None:
        kwargs["dtype"] = dtype["dtype"]
    return builder.keras.layers.Lambda(**kwargs)


class InlineLambda:
    """A Keras 2 `Lambda` whose function calls TensorFlow, computed inline: its function called on the Keras 3 graph's
    tensors with each TensorFlow function it reads replaced by its `keras.ops` form (`_tf_ops.OPS`).

    No `Lambda` layer is kept: the model holds `keras.ops` calls, which run on every backend and are saved as
    operations, not as Python bytecode (the file loads without ``safe_mode=False``).
    """

    def __init__(self, builder: LambdaBuilder, config: Dict[str, Any], path: str, stand_ins: Dict[str, Any]) -> None:
        self.function = lambda_function(builder, config, "function", path, stand_ins)
        self.arguments = dict(config.get("arguments") or {})
        try:
            self.accepts = set(inspect.signature(self.function).parameters)
        except (TypeError, ValueError):
            self.accepts = set()

    def __call__(self, inputs: Any, **kwargs: Any) -> Any:
        # as Keras's Lambda: `mask` / `training` reach the function only where it takes them
        passed = {k: v for k, v in kwargs.items() if k in self.accepts}
        return self.function(inputs, **passed, **self.arguments)


class _KeepOnTensorFlow(Exception):
    """A `Lambda` body reads TensorFlow functions with no `keras.ops` form (`missing`): kept as a TensorFlow layer."""

    def __init__(self, missing: List[str]) -> None:
        super().__init__(", ".join(missing))
        self.missing = missing


def _on_tensorflow(
    builder: LambdaBuilder, config: Dict[str, Any], path: str, new_name: str, framework: List[Dict[str, Any]], missing: List[str]
) -> Any:
    """The `Lambda` at `path` as a `compat_clone>TensorFlowLambda` layer: its body as written, on TensorFlow only.

    Raises:
        UnconvertibleLayerError: the target's backend is not TensorFlow, or the bytecode is another Python's.
    """
    name = config.get("name", path)
    backend = builder.keras.backend.backend()
    if backend != "tensorflow":
        raise UnconvertibleLayerError(lambda_backend_error(path, missing, backend, name))
    lambda_function(builder, config, "function", path)  # the checks of a kept Lambda: same Python, carried globals
    value = config["function"]
    code, defaults, closure = (list(value) + [None, None])[:3]
    notes = builder.description.notes_for(path)
    modules = {f["name"]: f["module"] for f in framework}
    modules.update({n["name"]: n["module"] for n in notes if n["kind"] == "lambda_module" and n["name"] not in modules})
    constants = {n["name"]: n["value"] for n in notes if n["kind"] == "lambda_constant"}
    builder.changes.append(
        f"{path}: the Lambda calls TensorFlow functions `keras.ops` has no form for ({', '.join(missing)}): kept as "
        f"written in a `{PACKAGE}>{TF_LAMBDA_NAME}` layer, which runs on the TensorFlow backend only (load the file "
        "with safe_mode=False and custom_objects=compat_clone.convert.custom_objects())"
    )
    layer_class = tf_lambda_class()
    return layer_class(
        code=code,
        python=builder.description.source.get("python"),
        modules=modules,
        constants=constants,
        defaults=defaults,
        closure=closure,
        arguments=dict(config.get("arguments") or {}),
        name=new_name,
    )


def _tensorflow_stand_ins(
    builder: LambdaBuilder, notes: List[Dict[str, Any]], framework: List[Dict[str, Any]], path: str, name: str
) -> Optional[Dict[str, Any]]:
    """For a `Lambda` that reaches the framework through TensorFlow modules only: each such global name bound to a
    stand-in whose functions compute `keras.ops`' forms; None where another framework name is read (refused).

    Raises:
        _KeepOnTensorFlow: a TensorFlow function the body reads has no `keras.ops` form in `_tf_ops.OPS`.
    """
    calls = [n for n in notes if n["kind"] == "lambda_tf_call"]
    if not framework or any(f["name"] not in {c["name"] for c in calls} for f in framework):
        return None
    missing = sorted({f"{c['name']}.{c['chain']}" if c["chain"] else c["name"] for c in calls if not c["api"]})
    if missing:
        raise _KeepOnTensorFlow(missing)
    stand_ins: Dict[str, Any] = {}
    used: List[str] = []
    for call in calls:
        node = stand_ins.setdefault(call["name"], types.SimpleNamespace())
        parts = call["chain"].split(".")
        for part in parts[:-1]:
            if not hasattr(node, part):
                setattr(node, part, types.SimpleNamespace())
            node = getattr(node, part)
        setattr(node, parts[-1], functools.partial(OPS[call["api"][0]], builder.keras.ops))
        used.append(f"{call['name']}.{call['chain']}")
    builder.changes.append(
        f"{path}: the Lambda's TensorFlow calls ({', '.join(sorted(used))}) computed with `keras.ops`, inline: no Lambda "
        "layer is kept (the model runs on every backend and loads without safe_mode=False)"
    )
    return stand_ins


def lambda_function(
    builder: LambdaBuilder, config: Dict[str, Any], key: str, path: str, stand_ins: Optional[Dict[str, Any]] = None
) -> Any:
    """The Python function a `Lambda`'s config holds under `key`: the user's, or the source's bytecode."""
    kind = config.get(key + "_type", "lambda")
    value = config[key]
    if kind != "lambda":  # a module-level function, saved by name
        fn = builder.custom.get(value)
        if fn is None:
            raise UnconvertibleLayerError(
                f"Lambda layer {path!r} calls the function {value!r} by name; it is not "
                f"part of the description. Pass its Keras 3 version as "
                f"`custom_objects={{{value!r}: function}}`."
            )
        return fn
    python = builder.description.source.get("python")
    here = "{}.{}".format(*sys.version_info[:2])
    if python != here:
        raise UnconvertibleLayerError(
            f"Lambda layer {path!r} holds Python {python} bytecode; this is Python {here}, "
            "which cannot load it. Rebuild with the same Python, or pass the function "
            f"as `custom_objects={{{config.get('name', path)!r}: function}}`."
        )
    code_text, defaults, closure = (list(value) + [None, None])[:3]
    scope: Dict[str, Any] = dict(stand_ins or {})
    for note in builder.description.notes_for(path):
        if note["kind"] == "lambda_module" and note["name"] not in scope:
            scope[note["name"]] = importlib.import_module(note["module"])
        elif note["kind"] == "lambda_constant":
            scope[note["name"]] = note["value"]
        elif note["kind"] == "lambda_global":
            raise UnconvertibleLayerError(
                f"Lambda layer {path!r} reads the global `{note['name']}` "
                f"({note['detail']}), which the description cannot carry. Pass the "
                f"function as `custom_objects={{{config.get('name', path)!r}: function}}`."
            )
    return function_from_bytecode(code_text, defaults, closure, scope)
