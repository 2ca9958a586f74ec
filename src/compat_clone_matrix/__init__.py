"""`compat-clone matrix`: run one command in every environment of a version matrix.

The matrix is data: a TOML table of environments (the built-in
``compat_clone_matrix/matrix.toml`` holds known-good pins for every Keras family, or
pass ``--table FILE.toml``). For each selected environment the runner

1. creates it with `uv` under ``.matrix/<name>/`` of the current folder, or
   reuses it when a stamp of its pins says nothing changed;
2. installs the package its caller names (an `InstallSource`: for
   `compat-clone matrix`, the running compat_clone, editable when it runs
   from a source checkout) and the environment's fix-up, if any;
3. runs ``COMMAND`` with the environment's ``bin`` first on ``PATH``,
   ``VIRTUAL_ENV`` set, the table's variables, and ``COMPAT_CLONE_ENV``,
   ``COMPAT_CLONE_EXPECT_{FAMILY,VERSION,BACKEND,MODULE}`` (the claim),
   ``COMPAT_CLONE_RESULTS``, ``COMPAT_CLONE_TABLE`` (the table's name,
   `table_id`), ``COMPAT_CLONE_CLAIM_FILE`` (where the pytest plugin leaves
   its claim check), ``COMPAT_CLONE_MATRIX_DIR`` (the ``.matrix`` folder) and
   ``COMPAT_CLONE_MATRIX_ENVS`` (the names of every environment of the run);
   its output goes to ``.matrix/<name>/last.log``, closed by the Keras the
   plugin found loaded; the result files it writes replace that environment's
   previous ones in ``.matrix/_results/``, each record tagged with the table
   and the time it was produced.

Every selected environment is built (or reused) before the command runs in
any, so a command may use a sibling environment's interpreter. Environments
build and run in parallel, ``--jobs`` at a time (default: one per core,
at most one per 4 GB of memory); while they run, a live line on a terminal (a
plain line every 60 s elsewhere) names the running ones and their elapsed
time. One summary table closes the run, with the Keras each environment's
tests got; the exit status is 1 when any environment failed to build, failed
its command, ran no test, or passed none, and 3 when one is not what its table
entry claims (status ``MISLABELED``).

Example:

    compat-clone matrix --list
    compat-clone matrix -- python -m pytest -q tests
    compat-clone matrix --env 'keras-3.15-*' --table my_matrix.toml -- pytest

This package is the matrix as a product of its own, shipped in the
compat-clone distribution; `compat_clone.tools.matrix` is the command's door
and hands it the running compat_clone. Importing the package imports none of
its modules: each name below is loaded on first use (PEP 562), so that the
pytest plugin, which pytest loads in every process, pays nothing for it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Dict, List

if TYPE_CHECKING:
    from compat_clone_matrix.build import build_env, env_stamp, is_built
    from compat_clone_matrix.cli import add_arguments, main, run
    from compat_clone_matrix.install import InstallSource
    from compat_clone_matrix.procs import default_jobs
    from compat_clone_matrix.runner import env_environ
    from compat_clone_matrix.sessions import nox_sessions
    from compat_clone_matrix.summary import format_summary, parse_pytest_summary
    from compat_clone_matrix.table import (
        BUILTIN_TABLE,
        Env,
        TableError,
        load_table,
        parse_table,
        select_envs,
        toml_loads,
    )

# public name -> the module that defines it
_LAZY: Dict[str, str] = {
    "Env": "table",
    "TableError": "table",
    "load_table": "table",
    "parse_table": "table",
    "select_envs": "table",
    "BUILTIN_TABLE": "table",
    "toml_loads": "table",
    "InstallSource": "install",
    "is_built": "build",
    "build_env": "build",
    "env_stamp": "build",
    "env_environ": "runner",
    "run": "cli",
    "add_arguments": "cli",
    "main": "cli",
    "nox_sessions": "sessions",
    "parse_pytest_summary": "summary",
    "format_summary": "summary",
    "default_jobs": "procs",
}

__all__ = [
    "Env",
    "TableError",
    "load_table",
    "parse_table",
    "select_envs",
    "BUILTIN_TABLE",
    "toml_loads",
    "InstallSource",
    "is_built",
    "build_env",
    "env_stamp",
    "env_environ",
    "run",
    "add_arguments",
    "main",
    "nox_sessions",
    "parse_pytest_summary",
    "format_summary",
    "default_jobs",
]


def __getattr__(name: str) -> Any:
    """Loads a public name's module on first use (PEP 562)."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> List[str]:
    return sorted(set(globals()) | set(_LAZY))
