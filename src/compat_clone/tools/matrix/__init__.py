"""`compat-clone matrix`: run one command in every environment of a version matrix.

The matrix is data: a TOML table of environments (the built-in
``compat_clone/tools/matrix/matrix.toml`` holds known-good pins for every Keras family, or
pass ``--table FILE.toml``). For each selected environment the runner

1. creates it with `uv` under ``.matrix/<name>/`` of the current folder, or
   reuses it when a stamp of its pins says nothing changed;
2. installs the `compat_clone` that is running the matrix into it (editable
   when it runs from a source checkout) and the environment's fix-up, if any;
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
"""

from __future__ import annotations

from compat_clone.tools.matrix.cli import add_arguments, main, run
from compat_clone.tools.matrix.procs import default_jobs
from compat_clone.tools.matrix.runner import env_stamp
from compat_clone.tools.matrix.sessions import nox_sessions
from compat_clone.tools.matrix.summary import format_summary, parse_pytest_summary
from compat_clone.tools.matrix.table import Env, TableError, load_table, parse_table, select_envs

__all__ = [
    "Env",
    "TableError",
    "load_table",
    "parse_table",
    "select_envs",
    "env_stamp",
    "parse_pytest_summary",
    "format_summary",
    "default_jobs",
    "add_arguments",
    "run",
    "main",
    "nox_sessions",
]
