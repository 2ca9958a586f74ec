"""`--custom-objects`: the user's own layers and functions, as users have them.

Four forms, each resolved in the interpreter of each environment (the source
environment needs the Keras 2 class, the target its Keras 3 counterpart):

* ``path/to/layers.py``: a file, loaded by path; every public class and
  function it defines is registered under its own name;
* ``my_package.layers``: a module, imported; the same;
* ``module:name`` (``module:Outer.Inner``): one attribute, under its last
  name; a dict there is a whole ``custom_objects`` mapping;
* ``NAME=module.attr`` (or ``NAME=module:attr``): one attribute under the
  name the file uses, e.g. ``'<lambda>=my_package.acts.swish'`` for an
  activation Keras 2 saved as ``'<lambda>'``.

Importing this module imports no framework.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import os
import re
import sys
from typing import Any, Dict, Sequence, Tuple

from compat_clone.errors import InvalidArgumentError

__all__ = ["FORMS", "parse_spec", "parse_model_spec", "resolve_custom_objects", "resolve_model_function"]

#: how the forms are spelled, for messages
FORMS = "path/to/layers.py, my_package.layers, module:Name or NAME=module.attr"
_DOTTED = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")


def parse_spec(spec: str) -> Tuple[str, str, str]:
    """``(kind, where, name)`` of a ``--custom-objects`` value, checked before any work.

    `kind` is ``"file"``, ``"module"`` (whole), ``"attribute"`` (``module:name``)
    or ``"named"`` (``NAME=module.attr``); `name` is the attribute path, or
    ``NAME=attr`` for the named form ("" for the whole-module forms).

    Raises:
        InvalidArgumentError: `spec` fits none of the forms, or names a file that is not there.
    """
    name, eq, target = spec.partition("=")
    if eq:
        module, sep, attr = target.partition(":")
        if not sep:
            module, _, attr = target.rpartition(".")
        if not name or not module or not attr or not _DOTTED.match(module) or not _DOTTED.match(attr):
            raise InvalidArgumentError(
                f"Expected --custom-objects NAME=module.attr (e.g. '<lambda>=my_package.acts.swish'). Received: {spec!r}."
            )
        return "named", module, f"{name}={attr}"
    if spec.endswith(".py") or os.sep in spec or (os.altsep and os.altsep in spec):
        if not os.path.isfile(spec):
            raise InvalidArgumentError(
                f"--custom-objects {spec!r}: no such file. Expected a Python file that "
                "defines the custom layers (or a module name, module:Name)."
            )
        return "file", spec, ""
    module, sep, attr = spec.partition(":")
    if sep:
        if not module or not attr or not _DOTTED.match(module) or not _DOTTED.match(attr):
            raise InvalidArgumentError(f"Expected --custom-objects as module:name (e.g. my_layers:Scale). Received: {spec!r}.")
        return "attribute", module, attr
    if not _DOTTED.match(spec):
        raise InvalidArgumentError(f"Expected --custom-objects as one of {FORMS}. Received: {spec!r}.")
    return "module", spec, ""


def parse_model_spec(spec: str) -> Tuple[str, str]:
    """``(where, function)`` of a ``--model`` value (``my_pkg.models:build`` or ``path/to/models.py:build``), checked before any work.

    Raises:
        InvalidArgumentError: `spec` is not of either form, or names a file that is not there.
    """
    where, sep, attr = spec.rpartition(":")
    if not sep or not where or not _DOTTED.match(attr):
        raise InvalidArgumentError(
            f"Expected --model as module:function or path/to/file.py:function (a function that builds the model and "
            f"returns it). Received: {spec!r}."
        )
    if where.endswith(".py") or os.sep in where:
        if not os.path.isfile(where):
            raise InvalidArgumentError(f"--model {spec!r}: no such file {where!r}. Expected a Python file that defines {attr}().")
    elif not _DOTTED.match(where):
        raise InvalidArgumentError(f"Expected --model as module:function (e.g. my_pkg.models:build). Received: {spec!r}.")
    return where, attr


def resolve_model_function(spec: str) -> Any:
    """The function a ``--model`` value names, imported in this environment.

    Raises:
        InvalidArgumentError: it does not import here, or is not a function.
    """
    where, attr = parse_model_spec(spec)
    module = _load_file(where, "--model") if where.endswith(".py") or os.sep in where else _import(spec, where, "--model")
    function = _attribute(spec, module, attr, "--model")
    if not callable(function):
        raise InvalidArgumentError(
            f"--model {spec!r}: {attr} is a {type(function).__name__}, not a function that builds the model."
        )
    return function


def _import(spec: str, module_name: str, option: str = "--custom-objects") -> Any:
    try:
        return importlib.import_module(module_name)
    except ImportError as e:
        raise InvalidArgumentError(
            f"{option} {spec!r}: module {module_name!r} does not import in {sys.prefix!r} "
            f"({e}). It must be importable in "
            + ("the environment that reads the weights" if option == "--model" else "both environments")
            + " (run from its folder, or install it)."
        ) from e


def _load_file(path: str, option: str = "--custom-objects") -> Any:
    stem = re.sub(r"\W", "_", os.path.splitext(os.path.basename(path))[0])
    name = stem if stem not in sys.modules else f"compat_clone_custom_{stem}"
    spec = importlib.util.spec_from_file_location(name, os.path.abspath(path))
    if spec is None or spec.loader is None:
        raise InvalidArgumentError(f"{option} {path!r}: not a Python file Python can load.")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # a class defined there is found by its module, as Keras looks it up
    spec.loader.exec_module(module)
    return module


def _defined_in(module: Any) -> Dict[str, Any]:
    """The public classes and functions `module` defines itself (not the ones it imports)."""
    return {
        name: value
        for name, value in vars(module).items()
        if not name.startswith("_")
        and (inspect.isclass(value) or inspect.isfunction(value))
        and getattr(value, "__module__", None) == module.__name__
    }


def _attribute(spec: str, module: Any, attr: str, option: str = "--custom-objects") -> Any:
    value = module
    for part in attr.split("."):
        if not hasattr(value, part):
            raise InvalidArgumentError(f"{option} {spec!r}: {module.__name__!r} has no attribute {attr!r} in {sys.prefix!r}.")
        value = getattr(value, part)
    return value


def resolve_custom_objects(specs: Sequence[str], *, installed_first: bool = False) -> Dict[str, Any]:
    """Resolves ``--custom-objects`` values in this interpreter: ``{name: object}``.

    Args:
        specs: the values, in any of the forms (`parse_spec`).
        installed_first: search this environment's packages before the
            current folder (the source side of ``--with``: what it installed
            is what the model is read with, even where the current folder
            holds a module of the same name, such as its Keras 3 port).

    Returns:
        The mapping to pass to Keras.

    Raises:
        InvalidArgumentError: a malformed value, a module or file that does
            not import, an attribute that is not there.
    """
    out: Dict[str, Any] = {}
    if specs and installed_first:
        here = os.getcwd()
        sys.path[:] = [p for p in sys.path if p not in ("", ".", here)] + [here]
    elif specs:
        sys.path.insert(0, os.getcwd())  # the user's modules next to their models
    for spec in specs:
        kind, where, name = parse_spec(spec)
        try:
            module = _load_file(where) if kind == "file" else _import(spec, where)
        except InvalidArgumentError:
            raise
        except Exception as e:  # the user's file raised while it loaded
            raise InvalidArgumentError(
                f"--custom-objects {spec!r}: loading it in {sys.prefix!r} raised {type(e).__name__}: {e}."
            ) from e
        if kind in ("file", "module"):
            found = _defined_in(module)
            if not found:
                raise InvalidArgumentError(
                    f"--custom-objects {spec!r}: {module.__name__!r} defines no public class or function in "
                    f"{sys.prefix!r}. Expected the module that defines the custom layers."
                )
            out.update(found)
            continue
        key, _, attr = name.rpartition("=")
        value = _attribute(spec, module, attr)
        if isinstance(value, dict) and not key:
            out.update(value)
        else:
            out[key or attr.split(".")[-1]] = value
    return out
