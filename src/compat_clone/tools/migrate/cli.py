"""The `compat-clone migrate` command line: options, file walk, output, exit status."""

from __future__ import annotations

import argparse
import fnmatch
import os
import sys
from typing import Iterator, List, Optional, Sequence

from compat_clone.tools.migrate.report import MigrateResult
from compat_clone.tools.migrate.rules import REVIEW_RULES
from compat_clone.tools.migrate.source import load_codemod, migrate_path

__all__ = ["EXIT_OK", "EXIT_CHANGES", "EXIT_ERROR", "EXIT_REVIEW", "add_arguments", "run", "iter_python_files", "is_excluded"]

EXIT_OK = 0
EXIT_CHANGES = 1  # --check: a file would change, or a use needs a fix by hand
EXIT_ERROR = 2
EXIT_REVIEW = 3  # --check: only sites to review remain (the tool cannot tell whether they hold a Keras model)

_DESCRIPTION = (
    "Rewrite old Keras `clone_model` code to use compat_clone: calls and imports of "
    "clone_model from keras.models, tf.keras.models, tensorflow.keras.models and "
    "tf_keras.models, and a following `c.set_weights(m.get_weights())` folded into "
    "`copy_weights=True`; and the idioms old code uses instead (docs/migrate.md): "
    "`T.set_weights(S.get_weights())`, soft target updates on host lists or NumPy arrays, and loops "
    "of `K.set_value` / `t.assign` over `zip(T.weights, S.weights)` become "
    "`compat_clone.copy_weights`, hand-rolled clones (`model_from_config`, `from_config`, "
    "`model_from_json`) `compat_clone.clone_model`. Prints a unified diff unless --write or "
    "--check. Uses that cannot be rewritten safely are reported as PATH:LINE:COL on stderr "
    "(a rewrite that may behave differently, as PATH:LINE:COL: note:, not counted by --check), each "
    "ending with its rule in brackets; a `# compat-clone: ok RULE` comment on the line (or alone on the "
    "line above) marks that site reviewed: not reported, not counted. "
    "Exit status: 0 done; 1 with --check when a file would change or a use needs a fix "
    "by hand; 3 with --check when only sites to review remain (a `copy.deepcopy` of what may be a model: "
    "rule deepcopy); 2 usage error or a file that could not be read or parsed."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Adds the `migrate` options to `parser`.

    Args:
        parser: the subcommand's parser; its description is set too.
    """
    parser.description = _DESCRIPTION
    parser.add_argument("paths", nargs="*", metavar="PATH", help="files, or folders to walk for *.py files")
    parser.add_argument(
        "--models",
        metavar="DIR",
        help="instead of code: list the saved Keras 2 models under DIR (.h5, .keras, SavedModel) "
        "with the `compat-clone convert` command for each",
    )
    parser.add_argument(
        "--exclude",
        action="append",
        default=[],
        metavar="GLOB",
        help="skip the files and folders matching GLOB (repeatable): a pattern matches a file's or folder's "
        "name, or its path as walked (`--exclude legacy/py2`, `--exclude '*_py2.py'`), as in flake8 and ruff",
    )
    parser.add_argument(
        "--to",
        choices=["keras3"],
        default=None,
        help="also move the code to Keras 3 (the rules are listed in docs/migrate.md, 'Moving to Keras 3'): "
        "tf.keras / tf_keras / Keras 2 imports and internal paths to Keras 3's public names, `lr=`, `fit_generator` "
        "and co., `save_format=`, `keras.backend` ops to `keras.ops`; what Keras 3 removed is reported by rule "
        "(`k3-...`)",
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true", help="edit the files in place")
    mode.add_argument(
        "--check",
        action="store_true",
        help="change nothing; list the files that would change and report the uses to fix "
        "by hand (for CI): exit 1 if there is any, else 3 if sites to review remain, else 0",
    )


def is_excluded(path: str, patterns: Sequence[str]) -> bool:
    """Whether `path` matches one of the `--exclude` globs, in flake8's and ruff's sense.

    A pattern matches the last part of the path (`py2`, `*_old.py`) or the
    whole path, normalized with `/` (`legacy/py2`, `*/py2/*`); a trailing `/`
    is ignored.

    Example:

    >>> is_excluded("src/legacy/py2", ["legacy/py2"]), is_excluded("src/py2/a.py", ["py2"])
    (True, False)
    """
    norm = os.path.normpath(path).replace(os.sep, "/")
    name = norm.rpartition("/")[2]
    for pattern in patterns:
        pattern = pattern.rstrip("/").replace(os.sep, "/")
        if fnmatch.fnmatchcase(name, pattern) or fnmatch.fnmatchcase(norm, pattern):
            return True
        if "/" in pattern and not pattern.startswith(("/", "*")) and fnmatch.fnmatchcase(norm, "*/" + pattern):
            return True
    return False


def iter_python_files(paths: Sequence[str], exclude: Sequence[str] = ()) -> Iterator[str]:
    """Yields the files to migrate: each file named, and every `*.py` under each folder.

    Folders are walked in sorted order, skipping hidden folders (`.git`,
    `.venv`), `__pycache__`, virtual environments (a folder with a
    `pyvenv.cfg`), and what `exclude` matches (`is_excluded`).

    Args:
        paths: files and folders, as given on the command line.
        exclude: the `--exclude` globs.

    Returns:
        An iterator of file paths: a folder's files (sorted) before its
        subfolders' (sorted).
    """
    for path in paths:
        if is_excluded(path, exclude):
            continue
        if os.path.isdir(path):
            for root, dirs, files in os.walk(path):
                dirs[:] = sorted(
                    d
                    for d in dirs
                    if not d.startswith(".")
                    and d != "__pycache__"
                    and not os.path.exists(os.path.join(root, d, "pyvenv.cfg"))
                    and not is_excluded(os.path.join(root, d), exclude)
                )
                for name in sorted(files):
                    if name.endswith(".py") and not is_excluded(os.path.join(root, name), exclude):
                        yield os.path.join(root, name)
        else:
            yield path


def run(args: argparse.Namespace) -> int:
    """Runs `compat-clone migrate`.

    Args:
        args: the parsed options of `add_arguments`.

    Returns:
        The exit status: `EXIT_OK`, `EXIT_CHANGES` (with `--check`) or
        `EXIT_ERROR`.
    """
    if args.models is not None:
        from compat_clone.tools.migrate.models import list_models

        if args.paths:
            print("compat-clone migrate: --models DIR takes no PATH; give one or the other.", file=sys.stderr)
            return EXIT_ERROR
        return list_models(args.models)
    if not args.paths:
        print("compat-clone migrate: expected PATH... (code to migrate) or --models DIR.", file=sys.stderr)
        return EXIT_ERROR
    try:
        load_codemod()
    except ImportError as exc:
        print(f"compat-clone migrate: {exc}", file=sys.stderr)
        return EXIT_ERROR
    errors = 0
    unparsed: List[str] = []
    would_change: List[str] = []
    reports = review = reviewed = 0
    missing = [p for p in args.paths if not os.path.exists(p)]
    for path in missing:
        print(f"{path}: no such file or folder, skipped", file=sys.stderr)
        errors += 1
    for path in iter_python_files([p for p in args.paths if p not in missing], args.exclude):
        result = _migrate_file(path, args.to)
        if result is None or result.error is not None:
            errors += 1
            if result is not None:
                unparsed.append(path)
            continue
        for report in result.reports:
            if not report.reviewed:
                print(report, file=sys.stderr)
        found = [r for r in result.reports if not r.note]
        reviewed += sum(r.reviewed for r in found)
        review += sum(not r.reviewed and r.rule in REVIEW_RULES for r in found)
        reports += sum(not r.reviewed and r.rule not in REVIEW_RULES for r in found)
        if result.changed:
            would_change.append(path)
            _emit(result, args)
    if args.check and (would_change or reports or review or reviewed):
        print(
            f"{len(would_change)} file(s) would be migrated, {reports} use(s) need a fix by hand, {review} site(s) "
            f"to review (mark one reviewed with `# compat-clone: ok RULE`), {reviewed} marked reviewed.",
            file=sys.stderr,
        )
    if unparsed:
        print(
            f"{len(unparsed)} file(s) do not parse (listed above, with the reason; Python 2 code, say): "
            + ", ".join(unparsed)
            + ". Fix them, or leave them out with --exclude GLOB (repeatable).",
            file=sys.stderr,
        )
    if errors:
        return EXIT_ERROR
    if not args.check:
        return EXIT_OK
    return EXIT_CHANGES if would_change or reports else EXIT_REVIEW if review else EXIT_OK


def _migrate_file(path: str, to: Optional[str] = None) -> Optional[MigrateResult]:
    """The migration of `path`; None, said on stderr, when it could not be done (a result with
    `error` set, said on stderr too, when it does not parse)."""
    try:
        result = migrate_path(path, to=to)
    except (OSError, UnicodeDecodeError) as exc:
        print(f"{path}: could not be read, skipped ({exc})", file=sys.stderr)
        return None
    except Exception as exc:  # a bug of this tool: skip the file, go on with the others
        print(
            f"{path}: could not be migrated ({type(exc).__name__}: {exc}), skipped; "
            "please report this at compat_clone's issue tracker",
            file=sys.stderr,
        )
        return None
    if result.error is not None:
        print(result.error, file=sys.stderr)
    return result


def _emit(result: MigrateResult, args: argparse.Namespace) -> None:
    """Says, writes or prints the change, as `--check`, `--write` or neither asks."""
    if args.check:
        print(f"would migrate {result.path}")
    elif args.write:
        with open(result.path, "wb") as f:
            f.write(result.migrated)
        print(f"migrated {result.path}", file=sys.stderr)
    else:
        sys.stdout.write(result.diff())
