"""One half of `compat-clone convert`, run inside an environment's own interpreter.

    python -m compat_clone.tools.convert._worker describe --family F --model PATH --out DESC.npz
        [--inputs X.npz] [--custom-objects module:name ...]
    python -m compat_clone.tools.convert._worker rebuild --description DESC.npz --out MODEL.keras
        --rtol R --atol A [--custom-objects module:name ...]

Each step is one call of the conversion library, which owns the model and
its files: `describe` is `compat_clone.convert._files.describe_file` (read
the saved Keras 2 model, write its description), `rebuild` is
`rebuild_file` (rebuild in Keras 3, prove, save, load back, prove again).
This module only turns the command line into that call in this interpreter
(``--custom-objects`` resolved here) and its result into the protocol: the
last line of stdout is ``COMPAT_CLONE_RESULT <json>`` (`RESULT_MARK`); a
refusal exits 1 with the message on stderr, a failed proof exits 3.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
from typing import Any, Dict, Optional, Sequence, Tuple

from compat_clone.errors import CompatCloneError, InvalidArgumentError

RESULT_MARK = "COMPAT_CLONE_RESULT "
EXIT_REFUSED = 1
EXIT_PROOF_FAILED = 3


def split_spec(spec: str) -> Tuple[str, str]:
    """``(module, name)`` of a ``--custom-objects module:name`` spec.

    Raises:
        InvalidArgumentError: `spec` is not ``module:name``.
    """
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise InvalidArgumentError(
            f"Expected --custom-objects as module:name (e.g. my_layers:Scale). Received: {spec!r}."
        )
    return module_name, attr


def resolve_custom_objects(specs: Sequence[str]) -> Dict[str, Any]:
    """Resolves ``module:name`` specs in this interpreter: ``{name: object}``.

    ``module:name`` imports `module` and takes its attribute `name` (dots walk
    nested attributes: ``module:Outer.Inner``); an attribute that is a dict is
    merged as a whole ``custom_objects`` mapping.

    Args:
        specs: the ``--custom-objects`` values.

    Returns:
        The mapping to pass to Keras.

    Raises:
        InvalidArgumentError: a malformed spec, a module that does not import,
            an attribute that is not there.
    """
    out: Dict[str, Any] = {}
    if specs:
        sys.path.insert(0, os.getcwd())  # the user's modules next to their models
    for spec in specs:
        module_name, attr = split_spec(spec)
        try:
            value: Any = importlib.import_module(module_name)
        except ImportError as e:
            raise InvalidArgumentError(
                f"--custom-objects {spec!r}: module {module_name!r} does not import in {sys.prefix!r} "
                f"({e}). It must be importable in both environments (run from its folder, or install it)."
            ) from e
        for part in attr.split("."):
            if not hasattr(value, part):
                raise InvalidArgumentError(
                    f"--custom-objects {spec!r}: {module_name!r} has no attribute {attr!r} in {sys.prefix!r}."
                )
            value = getattr(value, part)
        if isinstance(value, dict):
            out.update(value)
        else:
            out[attr.split(".")[-1]] = value
    return out


def _describe_step(args: argparse.Namespace) -> Dict[str, Any]:
    os.environ["COMPAT_CLONE_CONVERT_SIDE"] = "source"  # for a --custom-objects module serving both sides
    from compat_clone.convert._files import describe_file

    return describe_file(args.model, args.out, family=args.family, inputs=args.inputs,
                         custom_objects=resolve_custom_objects(args.custom_objects),
                         safe_mode=not args.no_safe_mode)


def _rebuild_step(args: argparse.Namespace) -> Dict[str, Any]:
    os.environ["COMPAT_CLONE_CONVERT_SIDE"] = "target"
    from compat_clone.convert._files import rebuild_file

    return rebuild_file(args.description, args.out, rtol=args.rtol, atol=args.atol,
                        custom_objects=resolve_custom_objects(args.custom_objects))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m compat_clone.tools.convert._worker")
    sub = parser.add_subparsers(dest="step", required=True)
    d = sub.add_parser("describe")
    d.add_argument("--family", required=True, choices=("keras2", "tf_keras"))
    d.add_argument("--model", required=True)
    d.add_argument("--out", required=True)
    d.add_argument("--inputs")
    d.add_argument("--no-safe-mode", action="store_true")
    d.add_argument("--custom-objects", nargs="*", default=[])
    r = sub.add_parser("rebuild")
    r.add_argument("--description", required=True)
    r.add_argument("--out", required=True)
    r.add_argument("--rtol", type=float, required=True)
    r.add_argument("--atol", type=float, required=True)
    r.add_argument("--custom-objects", nargs="*", default=[])
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Runs one step; prints ``COMPAT_CLONE_RESULT <json>`` last and returns the exit status."""
    args = _parser().parse_args(argv)
    try:
        result = _describe_step(args) if args.step == "describe" else _rebuild_step(args)
    except CompatCloneError as e:
        print(f"{type(e).__name__}: {e}", file=sys.stderr)
        return EXIT_REFUSED
    print(RESULT_MARK + json.dumps(result), flush=True)
    return EXIT_PROOF_FAILED if result.get("ok") is False else 0


if __name__ == "__main__":
    sys.exit(main())
