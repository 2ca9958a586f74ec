"""The `compat-clone convert` command line: a saved Keras 2 model to a proven Keras 3 `.keras` file."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from compat_clone.errors import CompatCloneError, InvalidArgumentError
from compat_clone.families.registry import entry
from compat_clone.tools.convert._custom import parse_spec
from compat_clone.tools.convert._warm import run_step
from compat_clone.tools.convert._worker import EXIT_USAGE as _WORKER_USAGE
from compat_clone.tools.convert._worker import RESULT_MARK

__all__ = ["EXIT_OK", "EXIT_FAILED", "EXIT_USAGE", "add_arguments", "run"]

EXIT_OK = 0
EXIT_FAILED = 1  # the conversion or its proof failed: nothing written
EXIT_USAGE = 2  # bad arguments, unreadable model, missing environment

_BACKENDS = ("tensorflow", "jax", "torch")

_DESCRIPTION = (
    "Convert a saved Keras 2 model (standalone Keras 2.x, tf.keras, tf_keras: .h5, .keras or a "
    "SavedModel folder; an architecture .json / .yaml with --weights; a weights-only .h5 with --model) to a "
    "Keras 3 .keras file. The model is read in an environment of its own "
    "family (detected from the file, or --from), described as neutral data, rebuilt in a Keras 3 "
    "environment (--to), and its outputs compared with the source's on probe inputs. NEW.keras is "
    "written only if every output is within --rtol/--atol. Exit status: 0 converted; 1 the "
    "conversion or its proof failed (nothing written); 2 usage error, or the way out is an option: inputs the "
    "model computes (--inputs), its custom layers or functions (--custom-objects)."
)

_EPILOG = """\
--from / --to take an environment of the matrix table (`compat-clone matrix --list`), built with uv
as `compat-clone matrix` builds it, in the per-user cache (~/.cache/compat-clone/envs on Linux;
$COMPAT_CLONE_ENVS_DIR or --envs-dir to choose) and reused by every later run and project; or a
path: a virtualenv folder or a python interpreter, used as it is.

--with installs packages where OLD is read (only there: the Keras 3 side needs the Keras 3 counterpart of
their layers, from --to's packages or the current folder), in an environment derived from the source's
that keeps every one of its versions; a package that cannot install there is refused before any work.
Where --with is given, the source side imports what it installed before the current folder.

--custom-objects is resolved in each environment (from the current folder or the environment's
packages): a file such as ./layers.py or a module such as my_package.layers registers every public class
and function it defines under its own name; module:name registers that attribute (a dict: a whole
custom_objects mapping); NAME=module.attr registers the attribute under NAME, e.g.
'<lambda>=my_package.acts.swish' for an activation Keras 2 saved as '<lambda>'. The source environment needs
the Keras 2 class, the target its Keras 3 counterpart: one module can serve both by checking which
Keras it finds (`keras.__version__`), or the variable COMPAT_CLONE_CONVERT_SIDE (source | target) that
the worker sets before importing it (for an environment that has both Kerases).

Example:
  compat-clone convert old.h5 -o new.keras
  compat-clone convert saved_model/ -o new.keras --from tf.keras-2.15 --backend jax
  compat-clone convert model.json --weights weights.h5 -o new.keras
  compat-clone convert weights.h5 --model my_pkg.models:build -o new.keras
  compat-clone convert old.h5 -o new.keras --with my-layers==1.4 --custom-objects my_layers.layers
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Adds the `convert` options to `parser`.

    Args:
        parser: the subcommand's parser; its description and epilog are set too.
    """
    parser.description = textwrap.fill(_DESCRIPTION, 100)
    parser.epilog = _EPILOG
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    add = parser.add_argument
    add(
        "source",
        metavar="OLD",
        help="the saved Keras 2 model: .h5 / .keras file or SavedModel folder; an architecture (model.to_json() / "
        "to_yaml(): .json / .yaml), with --weights; or a weights-only .h5 (save_weights()), with --model",
    )
    add(
        "--weights",
        metavar="WEIGHTS.h5",
        help="with an architecture file: its weights (save_weights()), loaded where the architecture is read; "
        "without it the result has fresh weights, and says so",
    )
    add(
        "--model",
        metavar="MODULE:FUNCTION",
        help="with a weights-only .h5: the function of yours that builds the model (my_pkg.models:build, or "
        "models.py:build for a file), run in the environment of the Keras that wrote the weights, which load there",
    )
    add("-o", "--output", required=True, metavar="NEW.keras", help="the Keras 3 file to write")
    add(
        "--from",
        dest="source_env",
        metavar="ENV",
        help="environment that reads OLD (default: the matrix environment of the family and version recorded in the file)",
    )
    add(
        "--to",
        dest="target_env",
        metavar="ENV",
        help="Keras 3 environment that rebuilds it (default: the newest Keras 3 of the table on --backend: "
        "keras-3.15-tf, keras-3.15-jax, keras-3.15-torch)",
    )
    add("--backend", choices=_BACKENDS, help="Keras 3 backend of the default --to (default: $KERAS_BACKEND, else tensorflow)")
    add(
        "--custom-objects",
        action="append",
        nargs="+",
        default=[],
        metavar="FILE.py|MODULE[:NAME]|NAME=MODULE.ATTR",
        help="custom layers / functions, resolved in each environment (see below)",
    )
    add(
        "--with",
        dest="with_",
        action="append",
        default=[],
        metavar="PKG[==VERSION]",
        help="install a package of yours (a requirement, or the path of a wheel / sdist) where OLD is read, its "
        "dependencies resolved against the old release's; repeatable. The source environment is not changed: a "
        "derived one is built beside it and reused. Its modules are then named with --custom-objects",
    )
    add(
        "--inputs",
        metavar="FILE.npz",
        help="inputs of your own to prove the conversion on, INSTEAD of the random probes (np.savez: one "
        "array per model input, in order, or named after the inputs); the proof line says which it used",
    )
    add(
        "--no-safe-mode",
        action="store_true",
        help="read OLD with safe_mode=False: a .keras file of tf.keras 2.13+ holding Lambda layers runs their "
        "stored Python code only so (Keras refuses it by default); only for files you trust",
    )
    add(
        "--compile",
        action="store_true",
        help="carry the training state: loss, metrics, optimizer and its slots and iteration count; proven by one "
        "training step on the same batch (refused, exit 2, where part of it cannot be carried)",
    )
    add("--no-compile-state", action="store_true", help="with --compile: write the file without the state it cannot carry")
    add("--rtol", type=float, default=1e-5, help="relative tolerance of the proof (default: 1e-5)")
    add("--atol", type=float, default=1e-6, help="absolute tolerance of the proof (default: 1e-6)")
    add(
        "--envs-dir",
        "--matrix-dir",
        dest="matrix_dir",
        metavar="DIR",
        help="where the table's environments are built and reused (default: $COMPAT_CLONE_ENVS_DIR, else "
        "$COMPAT_CLONE_MATRIX_DIR inside `compat-clone matrix`, else the per-user cache, "
        "~/.cache/compat-clone/envs on Linux)",
    )
    add("--table", metavar="FILE.toml", help="a matrix table of your own (default: the built-in one)")
    add("--no-build", action="store_true", help="refuse instead of building a missing environment")
    add("--force", action="store_true", help="replace NEW.keras if it exists")


def _say(name: str, text: str) -> None:
    print(f"compat-clone convert: {name}: {text}", file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    """Runs `compat-clone convert`.

    Args:
        args: the parsed options of `add_arguments`.

    Returns:
        `EXIT_OK`, `EXIT_FAILED` (conversion or proof failed, nothing
        written) or `EXIT_USAGE`.

    Example:

    >>> from compat_clone.tools.cli import main
    >>> main(["convert", "old.h5", "-o", "new.keras"])  # doctest: +SKIP
    proof: 1 output on 4 probe samples, max |Δ| 6.0e-08, max rel 1.9e-07 (rtol 1e-05, atol 1e-06): OK
    wrote new.keras
    0
    """
    try:
        plan = _plan(args)
    except CompatCloneError as e:
        print(f"compat-clone convert: {e}", file=sys.stderr)
        return EXIT_USAGE
    source, target, family, output, co, with_names = plan
    with tempfile.TemporaryDirectory(prefix="compat-clone-convert-") as tmp:
        desc_path = os.path.join(tmp, "description.npz")
        model_path = os.path.join(tmp, "model.keras")
        # The workers run in this folder: paths are passed as given, and said so in their messages.
        cmd = ["describe", "--family", family, "--model", args.source, "--out", desc_path]
        cmd += ["--weights", args.weights] if args.weights else []
        cmd += ["--build", args.model] if args.model else []
        if args.inputs:
            cmd += ["--inputs", args.inputs]
        if args.no_safe_mode:
            cmd += ["--no-safe-mode"]
        cmd += ["--with", *with_names] if with_names else []
        cmd += ["--compile"] if args.compile else []
        rc, described = _worker(source, cmd + _co_args(co))
        if rc == _WORKER_USAGE and args.model:  # no Keras 2 model of that code: it may be Keras 3 code
            return _place(args, source, target, output, os.path.join(tmp, "placed.keras"))
        if described is not None and described.get("reference"):  # a subclassed model: no graph to describe
            return _place(args, source, target, output, os.path.join(tmp, "placed.keras"), described, desc_path)
        if rc == _WORKER_USAGE:  # the way out is an option (--inputs, --custom-objects): said above
            print(f"compat-clone convert: nothing written ({args.source!r} in {source.label}).", file=sys.stderr)
            return EXIT_USAGE
        if described is None:
            print(f"compat-clone convert: reading {args.source!r} in {source.label} failed (exit {rc}).", file=sys.stderr)
            return EXIT_FAILED
        print(f"read {args.source} in {source.label}: {described['family']} {described['version']}, {described['layers']} layers")
        if described.get("weights") == "fresh":
            print(
                f"note: {args.source} holds no weights: the result has fresh weights (the initializers' values, the "
                "same on both sides of the proof); pass --weights FILE.h5 for the trained ones"
            )
        elif described.get("weights") == "loaded":
            print(f"loaded the weights {args.weights or args.source} into it (built by {args.model or args.source})")
        state = described.get("training")
        if state and state["optimizer"]:
            print(
                f"training state: {state['optimizer']} at iteration {state['iterations']}, {state['slots']} slots, loss {state['loss']!r}"
            )
        rc, rebuilt = _worker(
            target,
            ["rebuild", "--description", desc_path, "--out", model_path, "--rtol", repr(args.rtol), "--atol", repr(args.atol)]
            + _co_args(co)
            + (["--compile", "drop" if args.no_compile_state else "carry"] if args.compile else []),
        )
        if rebuilt is None and with_names and co:
            print(
                f"note: --with installs {', '.join(with_names)} where the model is read only. In {target.label} (Keras 3), "
                "--custom-objects imports from that environment's packages or the current folder: the Keras 3 "
                "counterpart of each layer must be found there (install it into --to, or run from its folder).",
                file=sys.stderr,
            )
        if rc == _WORKER_USAGE:
            print(f"compat-clone convert: nothing written; the rebuild in {target.label} needs the above.", file=sys.stderr)
            return EXIT_USAGE
        if rebuilt is None:
            print(f"compat-clone convert: rebuilding in {target.label} failed (exit {rc}); nothing written.", file=sys.stderr)
            return EXIT_FAILED
        _print_proof(rebuilt.get("proof"))
        if not rebuilt.get("ok"):
            print(
                f"compat-clone convert: {rebuilt.get('error')}\nNothing written: {args.output} is unchanged. "
                "Check the changes above, or loosen --rtol/--atol if the differences are rounding.",
                file=sys.stderr,
            )
            return EXIT_FAILED
        try:
            _publish(model_path, output)
        except OSError as e:  # the destination changed since it was checked (filled, made read-only)
            print(
                f"compat-clone convert: the model converted and passed its proof, but writing {args.output!r} "
                f"failed ({e.strerror or e}); nothing written. Free space or choose another -o.",
                file=sys.stderr,
            )
            return EXIT_USAGE
    print(f"wrote {args.output} (Keras {rebuilt['keras']}, rebuilt on {rebuilt['backend']} in {target.label})")
    if rebuilt.get("dropped"):
        print(f"note: {args.output} holds no training state (--no-compile-state): {'; '.join(rebuilt['dropped'])}")
    registered = rebuilt.get("formulas") or []
    formulas = [name for name in registered if ">keras2_" in name]
    layers = [name for name in registered if name not in formulas]
    if formulas:
        print(
            f"note: {args.output} computes Keras 2 formulas Keras 3 changed with compat_clone's functions "
            f"({', '.join(formulas)}): load it with keras.models.load_model(path, "
            "custom_objects=compat_clone.convert.custom_objects())"
        )
    if layers:
        print(
            f"note: {args.output} computes TensorFlow functions of the source's graph with compat_clone's "
            f"layers ({', '.join(layers)}): load it with keras.models.load_model(path, "
            "custom_objects=compat_clone.convert.custom_objects())"
        )
    if rebuilt.get("lambdas"):
        print(
            f"note: {args.output} holds Lambda layers ({', '.join(rebuilt['lambdas'])}): Keras 3 loads it only "
            "with keras.models.load_model(path, safe_mode=False)"
        )
    return EXIT_OK


def _place(
    args: argparse.Namespace,
    source: Any,
    target: Any,
    output: Path,
    model_path: str,
    described: Optional[Dict[str, Any]] = None,
    reference: Optional[str] = None,
) -> int:
    """A weights-only file and a ``--model`` function run as Keras 3 code in the target environment, the weights
    placed into its model by structure (`map_weights`). Either the function builds no model of the file's Keras, or
    it builds a subclassed one (`described`), whose outputs on probe inputs were recorded in `reference`: the
    Keras 3 model must give them."""
    cmd = ["place", "--weights", args.source, "--build", args.model, "--out", model_path]
    if reference is None:
        print(
            f"--model {args.model} gives no model in {source.label} (said above): running it in {target.label} as "
            "Keras 3 code, the file's weights placed into its model by structure"
        )
    else:
        recorded = (described or {}).get("reference") or {}
        print(
            f"read {args.source} in {source.label}: {(described or {}).get('family')} {(described or {}).get('version')}, "
            f"--model {args.model} builds a subclassed model (no layer graph to describe): its outputs on "
            f"{recorded.get('samples')} probe samples recorded there; running the same code in {target.label} as "
            "Keras 3 code, the file's weights placed into its model by structure and proven on those outputs"
        )
        cmd += ["--reference", reference, "--rtol", repr(args.rtol), "--atol", repr(args.atol)]
    rc, placed = _worker(target, cmd)
    if placed is not None and placed.get("proof"):
        _print_proof(
            {"changes": [], "outputs": [{"text": t} for t in placed["proof"]["outputs"]], "line": placed["proof"]["line"]}
        )
    if placed is not None and not placed.get("ok"):
        print(
            f"compat-clone convert: the Keras 3 model --model {args.model} builds in {target.label}, its weights placed, "
            f"does not give the outputs the source gave: nothing written. Check that the code builds the same model under "
            "both Kerases, or loosen --rtol/--atol if the differences are rounding.",
            file=sys.stderr,
        )
        return EXIT_FAILED
    if placed is None:
        print(
            f"compat-clone convert: nothing written: --model {args.model} builds no model the weights of {args.source!r} "
            f"fit in {source.label} nor in {target.label} (both said above).",
            file=sys.stderr,
        )
        return EXIT_USAGE if rc == _WORKER_USAGE else EXIT_FAILED
    for line in placed["placed"]:
        print(f"  placed: {line}")
    try:
        _publish(model_path, output)
    except OSError as e:
        print(f"compat-clone convert: writing {args.output!r} failed ({e.strerror or e}); nothing written.", file=sys.stderr)
        return EXIT_USAGE
    print(
        f"wrote {args.output} (Keras {placed['keras']}, {len(placed['placed'])} variables placed, on {placed['backend']} "
        f"in {target.label})"
    )
    if reference is None:
        print(
            "note: not proven on outputs: no Keras 2 model was built to compare with. Every variable of the file and "
            "of the model was placed exactly once, by its layer's place and its role, shapes checked; to prove it, "
            "give --model a function that builds the model with the Keras that wrote the file, or convert the "
            "architecture (ARCH.json --weights FILE.h5)"
        )
    return EXIT_OK


def _plan(args: argparse.Namespace) -> Tuple[Any, Any, str, Path, List[str], List[str]]:
    """Validates the arguments and resolves both environments (building them if needed); ``--with`` is
    resolved before any environment is built, and its environment built last."""
    from compat_clone.tools.convert._with import build_with, display_name, parse_requirement
    from compat_clone.tools.matrix import running_compat_clone
    from compat_clone.tools.saved_models import detect
    from compat_clone_matrix import TableError, load_table

    output = _checked_output(args)
    co = [spec for group in args.custom_objects for item in group for spec in item.split(",") if spec]
    for spec in co:
        parse_spec(spec)
    with_ = [parse_requirement(text) for text in args.with_]
    try:
        table = load_table(args.table)
    except TableError as e:
        raise InvalidArgumentError(str(e)) from e
    info = _source_info(args, detect(args.source, table), table)
    print(f"{args.source}: {info.describe()}")
    _validate_destination(args.output, output, _size_of(args.source) + (_size_of(args.weights) if args.weights else 0))
    if info.family is not None and entry(info.family).conversion_target:
        raise InvalidArgumentError(
            f"{args.source!r} was written by Keras {info.version}: it is a Keras 3 model already. "
            "Load it with keras.models.load_model (save it as .keras there if it is an .h5)."
        )
    if args.source_env is None and (info.problem is not None or info.env is None):
        raise InvalidArgumentError(f"Cannot convert {args.source!r}: {info.problem or 'its Keras family is unknown'}.")
    source, family, with_plan = _source_env(args, info, table, with_)
    target = _target_env(args, table)
    if with_plan is not None:
        source = build_with(with_plan, build=not args.no_build, say=_say, install=running_compat_clone())
    return source, target, family, output, co, [display_name(r) for r in with_]


def _source_info(args: argparse.Namespace, info: Any, table: Sequence[Any]) -> Any:
    """The source as `detect` read it, with what --weights / --model change: checked before any work."""
    import dataclasses

    from compat_clone.tools.convert._custom import parse_model_spec
    from compat_clone.tools.saved_models import WEIGHTS_ONLY, env_for

    if args.model and args.weights:
        raise InvalidArgumentError(f"--model loads its weights from OLD ({args.source!r}): drop --weights {args.weights!r}.")
    if args.weights:
        if info.format not in ("json", "yaml"):
            raise InvalidArgumentError(
                f"--weights goes with an architecture file (model.to_json(): .json / .yaml). Received: {args.source!r}, "
                f"{info.describe()}. A saved model carries its own weights."
            )
        _check_hdf5(args.weights, "--weights")
    weights_only = info.format == "h5" and (info.problem or "").startswith(WEIGHTS_ONLY)
    if info.problem and (
        weights_only
        and not args.model
        or info.format in ("json", "yaml")
        and info.version is None
        and info.family is None
        and "keras_version" not in info.problem
    ):
        # what no --from can change: the file is no model
        raise InvalidArgumentError(f"Cannot convert {args.source!r}: {info.problem}.")
    if not args.model:
        return info
    parse_model_spec(args.model)
    if not weights_only:
        raise InvalidArgumentError(
            f"--model builds the model whose weights OLD holds: expected a weights-only .h5 (save_weights()). "
            f"Received: {args.source!r}, {info.describe()}" + (f" ({info.problem})" if info.problem else "") + "."
        )
    if info.family is None:
        return info
    return dataclasses.replace(info, problem=None, env=env_for(info.family, info.version, table))


def _check_hdf5(path: str, option: str) -> None:
    from compat_clone.tools.saved_models import HDF5_MAGIC, file_head

    try:
        head = file_head(path)
    except OSError as e:
        raise InvalidArgumentError(f"{option} {path!r}: cannot be read ({e.strerror or e}). Expected an .h5 weights file.") from e
    if head != HDF5_MAGIC:
        raise InvalidArgumentError(
            f"{option} {path!r} is not HDF5 (its first bytes are {head!r}). Expected the .h5 file save_weights() wrote."
        )


def _checked_output(args: argparse.Namespace) -> Path:
    """`-o` as a path, refused unless a new .keras file can go there; the tolerances and --inputs checked."""
    output = Path(args.output)
    if output.suffix != ".keras":
        raise InvalidArgumentError(f"Expected -o to name a .keras file (Keras 3's format). Received: {args.output!r}.")
    if output.exists() and not args.force:
        raise InvalidArgumentError(f"{args.output!r} exists. Expected a new file; pass --force to replace it.")
    if not output.resolve().parent.is_dir():
        raise InvalidArgumentError(f"The folder of -o {args.output!r} does not exist. Create it first.")
    if output.is_dir():
        raise InvalidArgumentError(f"-o {args.output!r} is a folder. Expected the path of a .keras file.")
    for label, value in (("--rtol", args.rtol), ("--atol", args.atol)):
        if not value >= 0:
            raise InvalidArgumentError(f"Expected {label} to be a number >= 0. Received: {value!r}.")
    if args.no_compile_state and not args.compile:
        raise InvalidArgumentError("--no-compile-state goes with --compile (without --compile no training state is carried).")
    if args.inputs and not os.path.isfile(args.inputs):
        raise InvalidArgumentError(f"--inputs {args.inputs!r}: no such file. Expected an .npz written by np.savez.")
    return output


def _matrix_dir(args: argparse.Namespace) -> Path:
    from compat_clone.tools.convert._envs import default_matrix_dir

    return Path(args.matrix_dir).resolve() if args.matrix_dir else default_matrix_dir()


def _source_env(args: argparse.Namespace, info: Any, table: Sequence[Any], with_: Sequence[str]) -> Tuple[Any, str, Any]:
    """The environment that reads the model (``--from`` or the file's own), the family it reads, and the
    `WithPlan` of ``--with`` (None without it), resolved before the environment is built."""
    from compat_clone.tools.convert._envs import Interpreter, resolve
    from compat_clone.tools.convert._with import plan_with

    spec = args.source_env or str(info.env)
    table_env = next((env for env in table if env.name == spec), None)
    matrix_dir = _matrix_dir(args)
    if with_ and table_env is not None and not (matrix_dir / spec / "bin" / "python").exists():
        # not built yet: refused now, against what its table entry installs, rather than after the build
        plan_with(Interpreter(spec, str(matrix_dir / spec / "bin" / "python"), {}), table_env, with_, matrix_dir)
    source = resolve(
        spec,
        table=table,
        matrix_dir=_matrix_dir(args),
        build=not args.no_build,
        role="--from",
        say=_say,
    )
    family = source.family or info.family
    if family is None or not entry(family).conversion_source:
        raise InvalidArgumentError(
            f"--from {source.label!r} serves {family or 'an unknown family'}; expected a Keras 2 environment "
            "(keras2 or tf_keras) to read the model in. Name one with --from."
        )
    if info.family is not None and source.family is not None and info.family != source.family:
        raise InvalidArgumentError(
            f"{args.source!r} was written by {info.family} {info.version}, but --from {source.label!r} is a "
            f"{source.family} environment. Expected an environment of the model's family, e.g. {info.env}."
        )
    return source, str(family), plan_with(source, table_env, with_, matrix_dir) if with_ else None


def _target_env(args: argparse.Namespace, table: Sequence[Any]) -> Any:
    """The Keras 3 environment that rebuilds the model (``--to``, or the newest on the backend)."""
    from compat_clone.tools.convert._envs import resolve
    from compat_clone.tools.saved_models import keras3_env_for

    backend = args.backend or os.environ.get("KERAS_BACKEND") or "tensorflow"
    if backend not in _BACKENDS:
        raise InvalidArgumentError(
            f"Expected KERAS_BACKEND to be one of {', '.join(_BACKENDS)}. Received: {backend!r}; pass --backend."
        )
    target = resolve(
        args.target_env or keras3_env_for(backend, table),
        table=table,
        matrix_dir=_matrix_dir(args),
        build=not args.no_build,
        role="--to",
        say=_say,
    )
    if target.family is not None and not entry(target.family).conversion_target:
        raise InvalidArgumentError(
            f"--to {target.label!r} is a {target.family} environment; expected a Keras 3 one "
            f"(e.g. {keras3_env_for(backend, table)})."
        )
    if target.backend is not None and args.backend and target.backend != args.backend:
        raise InvalidArgumentError(
            f"--to {target.label!r} runs Keras 3 on {target.backend}, not --backend {args.backend}. Drop one of the two options."
        )
    if target.family is None and args.backend:
        target.environ["KERAS_BACKEND"] = args.backend
    return target


def _size_of(path: str) -> int:
    """Bytes of a file, or of every file under a folder (a SavedModel)."""
    if not os.path.isdir(path):
        return os.path.getsize(path) if os.path.isfile(path) else 0
    return sum(os.path.getsize(os.path.join(here, name)) for here, _, names in os.walk(path) for name in names)


def _validate_destination(label: str, output: Path, needed: int) -> None:
    """Refuses a destination that cannot take the file, before any conversion.

    A file is created and removed next to `output` (a read-only folder or
    file system refuses it, whoever runs the command, root included); the
    free space there must hold `needed` bytes (the source's size: the
    converted file holds the same weights, without optimizer state).
    """
    folder = output.resolve().parent
    try:
        handle, probe = tempfile.mkstemp(prefix=f".{output.name}.", suffix=".check", dir=folder)
    except OSError as e:
        raise InvalidArgumentError(
            f"Cannot write -o {label!r}: creating a file in {str(folder)!r} fails ({e.strerror or e}). "
            "Expected a folder you can write to; choose another -o, or fix the folder's permissions."
        ) from e
    os.close(handle)
    os.unlink(probe)
    free = shutil.disk_usage(folder).free
    if free < needed:
        raise InvalidArgumentError(
            f"Cannot write -o {label!r}: the file system of {str(folder)!r} has {free:,} bytes free, and the "
            f"converted model needs about {needed:,} (the size of the source). Free some space or choose "
            "another -o."
        )


def _co_args(co: Sequence[str]) -> List[str]:
    return ["--custom-objects", *co] if co else []


def _worker(interp: Any, argv: List[str]) -> Tuple[int, Optional[Dict[str, Any]]]:
    """Runs one worker step in `interp`; (exit status, its result or None when it refused or crashed)."""
    environ = dict(interp.environ)
    environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    returncode, stdout, stderr = run_step(interp.python, environ, argv)
    result = None
    for line in reversed(stdout.splitlines()):
        if line.startswith(RESULT_MARK):
            result = json.loads(line[len(RESULT_MARK) :])
            break
    if result is None:
        lines = [ln for ln in stderr.splitlines() if ln.strip()]
        # A refusal is one message on the last line; a crash shows its traceback's end.
        tail = lines[-1:] if returncode in (1, 2) and lines and "Error: " in lines[-1] else lines[-25:]
        for ln in tail:
            print(f"  {interp.label}: {ln}", file=sys.stderr)
    return returncode, result


def _print_proof(proof: Optional[Dict[str, Any]]) -> None:
    if proof is None:
        return
    for change in proof["changes"]:
        print(f"  changed: {change}")
    for o in proof["outputs"]:
        print(f"  {o['text']}")
    print(proof["line"])
    if proof.get("training"):
        print(proof["training"])


def _publish(built: str, output: Path) -> None:
    """Moves the proven file into place in one rename (a partial NEW.keras never exists)."""
    staging = output.with_name(f".{output.name}.{os.getpid()}.tmp")
    try:
        shutil.copyfile(built, staging)
        os.replace(staging, output)
    finally:
        if staging.exists():
            staging.unlink()
