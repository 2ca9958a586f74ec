"""One half of `compat-clone convert`, run inside an environment's own interpreter.

    python -m compat_clone.tools.convert._worker describe --family F --model PATH --out DESC.npz
        [--inputs X.npz] [--custom-objects module:name ...] [--weights W.h5] [--build module:function] [--compile]
    python -m compat_clone.tools.convert._worker rebuild --description DESC.npz --out MODEL.keras
        --rtol R --atol A [--custom-objects module:name ...] [--compile carry|drop]
    python -m compat_clone.tools.convert._worker place --weights W.h5 --build module:function --out MODEL.keras
        [--reference REF.npz --rtol R --atol A]

Each step is one call of the conversion library, which owns the model and
its files: `describe` is `compat_clone.convert.describe_file` (read
the saved Keras 2 model, write its description), `rebuild` is
`rebuild_file` (rebuild in Keras 3, prove, save, load back, prove again),
`place` is `map_weights` (a Keras 2 weights-only file placed by structure
into the model the user's Keras 3 code builds, then saved).
This module only turns the command line into that call in this interpreter
(``--custom-objects`` resolved here) and its result into the protocol: the
last line of stdout is ``COMPAT_CLONE_RESULT <json>`` (`RESULT_MARK`); a
refusal exits 1 with the message on stderr, 2 where the way out is an option
of the command line (probe inputs the source cannot compute: ``--inputs``; a
custom layer or function it was not given: ``--custom-objects``, said so;
an architecture, a ``--model`` function or a weights file that gives no model:
`SourceModelError`; a training state that cannot be carried: `CompileError`,
whose way out is ``--no-compile-state``), a failed proof exits 3.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, Dict, Optional, Sequence

from compat_clone.errors import (
    CompatCloneError,
    CompileError,
    InvalidArgumentError,
    MissingCustomObjectError,
    ProbeInputError,
    SourceModelError,
)
from compat_clone.tools.convert._custom import resolve_custom_objects, resolve_model_function

__all__ = ["EXIT_USAGE", "RESULT_MARK", "preload"]

RESULT_MARK = "COMPAT_CLONE_RESULT "
EXIT_REFUSED = 1
EXIT_USAGE = 2  # the user's to fix on the command line (--inputs, --custom-objects): said in its terms
EXIT_PROOF_FAILED = 3


def _cli_terms(e: MissingCustomObjectError, given: Sequence[str], with_: Sequence[str] = ()) -> str:
    """A refused custom layer or function, said in the command line's terms."""
    had = f" (--custom-objects gave {', '.join(given)}, which defines no {e.name!r} here)" if given else ""
    if with_ and e.kind != "activation":
        return (
            f"{e}{had}. --with installed {', '.join(with_)} here: pass the module of it that defines {e.name}, e.g. "
            f"--custom-objects {with_[0]}.layers (or {e.name}={with_[0]}.layers.{e.name}). The Keras 3 side imports "
            "the same name from its own packages or the current folder, where it must define the Keras 3 counterpart."
        )
    if e.kind == "activation":
        return (
            f"{e}{had}. On the command line: --custom-objects '{e.name}=my_package.acts.my_function' "
            "(imported in both environments: a function of one tensor computing what the lambda did)."
        )
    return (
        f"{e}{had}. On the command line, pass the file or module that defines it, imported in both "
        f"environments: --custom-objects path/to/layers.py, --custom-objects my_package.layers, or "
        f"--custom-objects {e.name}=my_package.layers.{e.name}. There it must define {e.name} for the "
        "Keras it finds (`keras.__version__`, or COMPAT_CLONE_CONVERT_SIDE=source|target)."
    )


def _describe_step(args: argparse.Namespace) -> Dict[str, Any]:
    os.environ["COMPAT_CLONE_CONVERT_SIDE"] = "source"  # for a --custom-objects module serving both sides
    from compat_clone.convert import describe_file

    build = None
    if args.build:
        try:
            build = resolve_model_function(args.build)
        except InvalidArgumentError as e:
            raise SourceModelError(str(e)) from e
    return describe_file(
        args.model,
        args.out,
        family=args.family,
        inputs=args.inputs,
        custom_objects=resolve_custom_objects(args.custom_objects, installed_first=bool(args.with_)),
        safe_mode=not args.no_safe_mode,
        weights=args.weights,
        build=build,
        build_label=f"--model {args.build}" if args.build else "",
        compile=args.compile,
    )


def _rebuild_step(args: argparse.Namespace) -> Dict[str, Any]:
    os.environ["COMPAT_CLONE_CONVERT_SIDE"] = "target"
    from compat_clone.convert import rebuild_file

    return rebuild_file(
        args.description,
        args.out,
        rtol=args.rtol,
        atol=args.atol,
        custom_objects=resolve_custom_objects(args.custom_objects),
        compile=args.compile,
    )


def _place_step(args: argparse.Namespace) -> Dict[str, Any]:
    os.environ["COMPAT_CLONE_CONVERT_SIDE"] = "target"
    import keras

    from compat_clone.convert import map_weights

    try:
        model = resolve_model_function(args.build)()
    except InvalidArgumentError as e:
        raise SourceModelError(str(e)) from e
    except Exception as e:  # the user's code raised: said with its words
        raise SourceModelError(f"--model {args.build} raised {type(e).__name__}: {e}") from e
    if not isinstance(model, keras.Model):
        raise SourceModelError(
            f"--model {args.build} returned {type(model).__name__!r}, which is not a Keras {keras.__version__} model."
        )
    placed = map_weights(model, args.weights)
    proof = None
    if args.reference:  # the same code's model in the source's Keras answered these: proven on them
        from compat_clone.convert import check_reference

        proof = check_reference(model, args.reference, rtol=args.rtol, atol=args.atol)
        if not proof["ok"]:
            return {"ok": False, "proof": proof, "placed": [str(p) for p in placed], "error": "the outputs differ"}
    model.save(args.out)
    return {
        "ok": True,
        "proof": proof,
        "placed": [str(p) for p in placed],
        "keras": keras.__version__,
        "backend": keras.backend.backend(),
        "layers": len(model.layers),
    }


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m compat_clone.tools.convert._worker")
    sub = parser.add_subparsers(dest="step", required=True)
    d = sub.add_parser("describe")
    d.add_argument("--family", required=True, choices=("keras2", "tf_keras"))
    d.add_argument("--model", required=True)
    d.add_argument("--out", required=True)
    d.add_argument("--inputs")
    d.add_argument("--no-safe-mode", action="store_true")
    d.add_argument("--weights")
    d.add_argument("--build")
    d.add_argument("--custom-objects", nargs="*", default=[])
    d.add_argument("--with", dest="with_", nargs="*", default=[])
    d.add_argument("--compile", action="store_true")
    r = sub.add_parser("rebuild")
    r.add_argument("--description", required=True)
    r.add_argument("--out", required=True)
    r.add_argument("--rtol", type=float, required=True)
    r.add_argument("--atol", type=float, required=True)
    r.add_argument("--custom-objects", nargs="*", default=[])
    r.add_argument("--compile", choices=("carry", "drop"), default="")
    p = sub.add_parser("place")
    p.add_argument("--weights", required=True)
    p.add_argument("--build", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--reference")
    p.add_argument("--rtol", type=float, default=1e-5)
    p.add_argument("--atol", type=float, default=1e-6)
    return parser


def preload(argv: Sequence[str]) -> None:
    """Imports what the step of `argv` imports, for a warm worker to fork it from (`_forkserver`).

    The family's Keras for ``describe`` (the module `describe_file` reads with), ``keras`` for ``rebuild`` and
    ``place``, and the conversion library; a command line the parser refuses preloads nothing (its step says why).

    Args:
        argv: a step's command line, as `main` takes it.
    """
    try:
        args = _parser().parse_args(argv)
    except SystemExit:
        return
    import compat_clone.convert  # noqa: F401  (its modules, framework-free until a function runs)

    if args.step == "describe":
        from compat_clone.families.installed import keras_module

        keras_module(args.family)
    else:
        import keras  # noqa: F401


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Runs one step; prints ``COMPAT_CLONE_RESULT <json>`` last and returns the exit status."""
    args = _parser().parse_args(argv)
    try:
        result = {"describe": _describe_step, "rebuild": _rebuild_step, "place": _place_step}[args.step](args)
    except MissingCustomObjectError as e:
        print(
            f"{type(e).__name__}: {_cli_terms(e, getattr(args, 'custom_objects', []), getattr(args, 'with_', []))}",
            file=sys.stderr,
        )
        return EXIT_USAGE
    except CompileError as e:
        print(
            f"{type(e).__name__}: {str(e).replace(' Convert without it (compile=False), or pass what it names.', '')} "
            "On the command line: --no-compile-state writes the file without its training state (said), or pass a "
            "loss or metric of your own with --custom-objects.",
            file=sys.stderr,
        )
        return EXIT_USAGE
    except (ProbeInputError, SourceModelError) as e:
        print(f"{type(e).__name__}: {e}", file=sys.stderr)
        return EXIT_USAGE
    except CompatCloneError as e:
        print(f"{type(e).__name__}: {e}", file=sys.stderr)
        return EXIT_REFUSED
    print(RESULT_MARK + json.dumps(result), flush=True)
    return EXIT_PROOF_FAILED if result.get("ok") is False else 0


if __name__ == "__main__":
    sys.exit(main())
