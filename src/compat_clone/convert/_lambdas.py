"""A Keras 2 `Lambda` layer rebuilt in Keras 3.

Its function is the user's replacement (``custom_objects``, by the layer's
name or the function's), or the source's own bytecode, loaded in the same
Python with the module globals and constants `describe` noted; a function
that calls the source framework, or reads a global the description cannot
carry, is refused with the way out.
"""

from __future__ import annotations

import base64
import builtins
import importlib
import marshal
import sys
import types
from typing import Any, Dict

from compat_clone.convert._builder_protocol import LambdaBuilder
from compat_clone.convert._layer_map import map_config
from compat_clone.errors import UnconvertibleLayerError

__all__ = ["lambda_layer"]


def lambda_layer(builder: LambdaBuilder, config: Dict[str, Any], path: str, new_name: str) -> Any:
    """The Keras 3 layer for the `Lambda` at `path` (`builder`: the `_rebuild` builder, as `LambdaBuilder`)."""
    name = config.get("name", path)
    replacement = builder.custom.get(name)
    if replacement is not None:
        builder.changes.append(f"{path}: Lambda replaced by custom_objects[{name!r}]")
        if callable(replacement) and not isinstance(replacement, builder.keras.layers.Layer):
            return builder.keras.layers.Lambda(replacement, name=new_name)
        return replacement
    framework = [n for n in builder.description.notes_for(path) if n["kind"] == "lambda_framework"]
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


def lambda_function(builder: LambdaBuilder, config: Dict[str, Any], key: str, path: str) -> Any:
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
    code = marshal.loads(base64.b64decode(code_text.encode("ascii")))
    scope: Dict[str, Any] = {"__builtins__": builtins}
    for note in builder.description.notes_for(path):
        if note["kind"] == "lambda_module":
            scope[note["name"]] = importlib.import_module(note["module"])
        elif note["kind"] == "lambda_constant":
            scope[note["name"]] = note["value"]
        elif note["kind"] == "lambda_global":
            raise UnconvertibleLayerError(
                f"Lambda layer {path!r} reads the global `{note['name']}` "
                f"({note['detail']}), which the description cannot carry. Pass the "
                f"function as `custom_objects={{{config.get('name', path)!r}: function}}`."
            )
    cells = tuple(types.CellType(v) for v in closure) if closure else None
    return types.FunctionType(code, scope, code.co_name, tuple(defaults) if defaults else None, cells)
