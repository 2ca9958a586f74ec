"""The `compat-clone` command: `doctor`, `matrix`, `migrate`, `convert`.

Each subcommand lives in its own module, imported only when it runs, so
`compat-clone --help` imports no framework.
"""

from __future__ import annotations

import argparse
import importlib
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


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="compat-clone",
        description="Clone any Keras model correctly, whatever Keras owns it.",
    )
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module_name, help_text) in _COMMANDS.items():
        sp = sub.add_parser(name, help=help_text, description=help_text)
        module = importlib.import_module(module_name)
        module.add_arguments(sp)
        sp.set_defaults(_module=module)
    return parser


def main(argv: Optional[List[str]] = None) -> int:
    """Runs the command line; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = _parser()
    args = parser.parse_args(argv)
    if args.version:
        from compat_clone import __version__

        print(__version__)
        return 0
    if args.command is None:
        parser.print_help()
        return 2
    return int(args._module.run(args))
