"""The `compat-clone` command: `doctor`, `matrix`, `migrate`, `convert`.

Each subcommand lives in its own module, imported only when that subcommand
runs: `compat-clone --help` imports none of them (and no framework), and a
subcommand that cannot load takes nothing else down.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from typing import List, Optional

__all__ = ["main"]

# subcommand -> (module, one-line help). Each module has
# `add_arguments(parser)` and `run(args) -> int`.
_COMMANDS = {
    "doctor": ("compat_clone.tools.doctor", "report installed Keras families and self-check cloning"),
    "matrix": ("compat_clone.tools.matrix", "run a command in every environment of a version matrix"),
    "migrate": ("compat_clone.tools.migrate", "rewrite old clone_model code to use compat_clone"),
    "convert": ("compat_clone.tools.convert", "convert a saved Keras 2 model to a proven Keras 3 .keras file"),
}


# Commands that load a framework here or in processes they start: their C++ log
# lines are filtered out of stderr (`_quiet`).
_LOADS_FRAMEWORKS = ("doctor", "convert")


def _command_in(argv: List[str]) -> Optional[str]:
    """The subcommand `argv` names (its first word that is not an option), if any."""
    for word in argv:
        if word == "--":
            return None
        if not word.startswith("-"):
            return word if word in _COMMANDS else None
    return None


def _parser(command: Optional[str]) -> argparse.ArgumentParser:
    """The parser; only `command`'s module is imported (to add its options).

    The others are listed by name and help text alone, so a subcommand whose
    module cannot be imported never takes the rest of the command line down.
    """
    parser = argparse.ArgumentParser(
        prog="compat-clone",
        description="Clone any Keras model correctly, whatever Keras owns it.",
    )
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module_name, help_text) in _COMMANDS.items():
        sp = sub.add_parser(name, help=help_text, description=help_text)
        if name == command:
            module = importlib.import_module(module_name)
            module.add_arguments(sp)
            sp.set_defaults(_module=module)
    return parser


def _quiet_frameworks() -> None:
    """No TensorFlow / absl C++ log lines in what the command line prints.

    Set in the command line's own process only (it is ours), before any framework
    is imported, and so inherited by the environments' processes it starts; a
    value the user set is kept. `import compat_clone` in a user's process never
    does this.
    """
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    os.environ.setdefault("GRPC_VERBOSITY", "ERROR")
    os.environ.setdefault("GLOG_minloglevel", "2")


def main(argv: Optional[List[str]] = None) -> int:
    """Runs the command line; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    _quiet_frameworks()
    command = _command_in(argv)
    try:
        parser = _parser(command)
    except ImportError as e:
        print(
            f"compat-clone {command}: cannot load {_COMMANDS[str(command)][0]} ({e}). The other commands "
            "still work; reinstall compat-clone (`pip install --force-reinstall compat-clone`) if this "
            "module is missing from the installation.",
            file=sys.stderr,
        )
        return 2
    args = parser.parse_args(argv)
    if args.version:
        from compat_clone import __version__

        print(__version__)
        return 0
    if args.command is None:
        parser.print_help()
        return 2
    if command in _LOADS_FRAMEWORKS:
        from compat_clone.tools._quiet import framework_logs_filtered

        with framework_logs_filtered():
            return int(args._module.run(args))
    return int(args._module.run(args))
