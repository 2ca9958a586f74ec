"""The matrix in CI: a GitHub Actions strategy matrix and a complete workflow file.

``compat-clone matrix --emit github`` prints the strategy matrix as one line
of JSON: one entry per selected environment with its ``name``, ``python`` and
the ``command`` that builds and runs that one environment
(``compat-clone matrix --env NAME -- ...``). ``--emit workflow`` prints a
commented workflow that computes that matrix in a first job, runs one job per
environment (uv cache, results uploaded as artifacts) and merges every
environment's results into one report in a last job
(``compat-clone matrix --merge``). With ``--schedule CRON`` the workflow runs
on that schedule instead of on every push; ``--workflow-env NAME=VALUE`` sets a
variable for every job.

Where CI installs compat_clone from is `ci_install`'s answer, written into
every job's ``pip install``.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from compat_clone_matrix.table import Env

__all__ = [
    "env_command",
    "github_matrix",
    "workflow",
    "with_results_option",
    "validate_table_path",
    "validate_schedule",
    "parse_variable",
    "ACTIONS",
    "DEFAULT_COMMAND",
    "emit",
]


def _shell_join(words: Sequence[str]) -> str:
    """One shell-quoted command line (shlex.join, Python >= 3.8)."""
    return " ".join(shlex.quote(w) for w in words)


DEFAULT_COMMAND = ("python", "-m", "pytest", "-q")

# The actions the workflow uses, at majors whose runtime is node24 (GitHub
# deprecated node20 for removal; actionlint flags checkout@v4, setup-python@v5,
# cache@v4, upload-artifact@v4-v5, download-artifact@v4-v6). A test runs
# actionlint on the emitted workflow.
ACTIONS = {
    "checkout": "actions/checkout@v6",
    "setup_python": "actions/setup-python@v6",
    "cache": "actions/cache@v5",
    "upload_artifact": "actions/upload-artifact@v7",
    "download_artifact": "actions/download-artifact@v8",
}


def _is_pytest(command: Sequence[str]) -> int:
    """Index of the ``pytest`` word of a pytest command (``pytest``, ``python -m pytest``), or -1."""
    if not command:
        return -1
    first = Path(command[0]).name
    if first in ("pytest", "py.test"):
        return 0
    if first.startswith("python") and len(command) >= 3 and command[1] == "-m" and command[2] == "pytest":
        return 2
    return -1


def with_results_option(command: Sequence[str]) -> List[str]:
    """A pytest command with ``--compat-results`` (one result line per test, for the report); others unchanged.

    Example:

    >>> with_results_option(["python", "-m", "pytest", "-q", "tests"])
    ['python', '-m', 'pytest', '--compat-results', '-q', 'tests']
    """
    at = _is_pytest(command)
    if at < 0 or "--compat-results" in command:
        return list(command)
    return list(command[: at + 1]) + ["--compat-results"] + list(command[at + 1 :])


def validate_table_path(table: str, project: Path, option: str = "--table") -> str:
    """A table's (or overlay's) path as the workflow names it: relative to the project, ``/``-separated.

    Args:
        table: the path given.
        project: the project root.
        option: the option that gave it (``--table``, ``--overlay``), for the message.

    Raises:
        ValueError: an absolute path, or one outside the project (CI checks
            the project out elsewhere; ``hashFiles()`` sees the workspace only).
    """
    if os.path.isabs(table):
        raise ValueError(
            f"Expected {option} to be a path relative to the project for --emit (the workflow runs in a checkout "
            f"elsewhere). Received: {option} {table!r}. Run from the project root with e.g. {option} matrix.toml."
        )
    normal = Path(os.path.normpath(table))
    if normal.parts and normal.parts[0] == "..":
        raise ValueError(
            f"Expected {option} to lie inside the project for --emit. Received: {option} {table!r}, outside "
            f"{project}. Run from the project root."
        )
    return normal.as_posix()


def env_command(name: str, command: Sequence[str], options: Sequence[str] = ()) -> str:
    """The shell command that builds environment `name` and runs `command` in it.

    Args:
        name: the environment.
        command: what runs in it, e.g. ``["python", "-m", "pytest", "-q"]``.
        options: more ``compat-clone matrix`` options (``--table FILE``, ...).

    Returns:
        One shell-quoted command line.

    Example:

    >>> env_command("keras-3.15-jax", ["pytest", "-q"])
    'compat-clone matrix --env keras-3.15-jax -- pytest -q'
    """
    return _shell_join(["compat-clone", "matrix", "--env", name, *options, "--", *command])


def github_matrix(
    envs: Sequence[Env], command: Sequence[str] = DEFAULT_COMMAND, options: Sequence[str] = ()
) -> Dict[str, List[Dict[str, str]]]:
    """A GitHub Actions ``strategy.matrix``: ``{"include": [{"name", "python", "command"}, ...]}``.

    Args:
        envs: the environments, one matrix entry each (from `select_envs`).
        command: what runs in each environment.
        options: ``compat-clone matrix`` options each entry's command repeats
            (``--table FILE``, ``--timeout S``).

    Returns:
        The matrix, ready for ``json.dumps``.

    Raises:
        ValueError: no environment (GitHub rejects an empty matrix).

    Example:

    >>> from compat_clone_matrix import load_table, select_envs
    >>> github_matrix(select_envs(load_table(), ["keras-3.15-jax"]))["include"][0]["command"]
    'compat-clone matrix --env keras-3.15-jax -- python -m pytest -q'
    """
    if not envs:
        raise ValueError("Expected at least one environment for the GitHub matrix. Received none: check --env / --tag.")
    return {"include": [{"name": e.name, "python": e.python, "command": env_command(e.name, command, options)} for e in envs]}


_WORKFLOW = """\
# GitHub Actions workflow generated by
#   {generator}
# Save it as .github/workflows/{file_name}. The environments come from
# the matrix table when the workflow runs (job `plan`): editing the table needs
# no new workflow; changing the options above does.
# compat_clone is installed from {install_quoted} ({install_why};
# --install-from changes it).
name: {name}

on:
{triggers}
{variables}jobs:
  # 1. The strategy matrix: one entry per environment with its name, its
  #    Python and the command that builds and runs it.
  plan:
    runs-on: ubuntu-latest
    outputs:
      matrix: ${{{{ steps.plan.outputs.matrix }}}}
    steps:
      - uses: {checkout}
      - uses: {setup_python}
        with:
          python-version: "{python}"
      - run: python -m pip install {install}
      - id: plan
        run: |
          echo "matrix=$({plan})" >> "$GITHUB_OUTPUT"

  # 2. One job per environment: uv builds it (its cache is kept per
  #    environment), the command runs in it, and its result files and log
  #    are uploaded as the artifact compat-results-<env>.
  test:
    needs: plan
    name: ${{{{ matrix.name }}}}
    runs-on: ubuntu-latest
    timeout-minutes: 90
    strategy:
      fail-fast: false  # every environment reports, whatever the others do
      matrix: ${{{{ fromJSON(needs.plan.outputs.matrix) }}}}
    steps:
      - uses: {checkout}
      - uses: {setup_python}
        with:
          python-version: ${{{{ matrix.python }}}}
      - name: uv cache
        uses: {cache}
        with:
          path: ~/.cache/uv
          key: uv-${{{{ runner.os }}}}-${{{{ matrix.name }}}}-${{{{ hashFiles({cache_key_files}) }}}}
          restore-keys: uv-${{{{ runner.os }}}}-${{{{ matrix.name }}}}-
      - run: python -m pip install uv {install}
      - name: build and run ${{{{ matrix.name }}}}
        run: ${{{{ matrix.command }}}}
      - name: upload results
        if: always()
        uses: {upload_artifact}
        with:
          name: compat-results-${{{{ matrix.name }}}}
          path: |
            .matrix/_results/
            .matrix/${{{{ matrix.name }}}}/last.log
          include-hidden-files: true  # .matrix is a hidden folder
          if-no-files-found: warn

  # 3. One report from every environment's results: an environment whose job
  #    uploaded nothing is listed as missing, two results for one are refused.
  report:
    needs: test
    if: always()
    runs-on: ubuntu-latest
    steps:
      - uses: {checkout}
      - uses: {setup_python}
        with:
          python-version: "{python}"
      - run: python -m pip install {install}
      - uses: {download_artifact}
        with:
          pattern: compat-results-*
          path: results
      - run: |
          {merge}
      - run: cat COMPATIBILITY.md >> "$GITHUB_STEP_SUMMARY"
      - uses: {upload_artifact}
        with:
          name: COMPATIBILITY
          path: COMPATIBILITY.md
"""


_CRON_FIELD = re.compile(r"^[0-9A-Za-z*,/-]+$")
_VARIABLE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def validate_schedule(schedule: str) -> str:
    """A cron expression for the workflow's ``schedule`` trigger, its fields separated by one space.

    Raises:
        ValueError: not five fields (minute, hour, day of month, month, day
            of week), or a field with a character cron does not use.

    Example:

    >>> validate_schedule("0  3 * * 6")
    '0 3 * * 6'
    """
    fields = schedule.split()
    if len(fields) != 5 or not all(_CRON_FIELD.match(f) for f in fields):
        raise ValueError(
            f"Expected --schedule to be a cron expression of five fields (minute hour day month weekday). "
            f"Received: --schedule {schedule!r}. Give e.g. --schedule '0 3 * * 6' (Saturdays at 03:00 UTC)."
        )
    return " ".join(fields)


def parse_variable(text: str) -> Tuple[str, str]:
    """One ``--workflow-env NAME=VALUE``: (name, value).

    Raises:
        ValueError: no ``=``, or a name that is not a shell variable's.

    Example:

    >>> parse_variable("COMPAT_CLONE_WIDE=1")
    ('COMPAT_CLONE_WIDE', '1')
    """
    name, sep, value = text.partition("=")
    if not sep or not _VARIABLE_NAME.match(name):
        raise ValueError(
            f"Expected --workflow-env to be NAME=VALUE with NAME a variable name (letters, digits, _). "
            f"Received: --workflow-env {text!r}. Give e.g. --workflow-env MY_FLAG=1."
        )
    return name, value


def _triggers(schedule: Optional[str]) -> str:
    """The workflow's ``on:`` entries: every push and pull request, or a schedule; by hand either way."""
    if schedule is None:
        return "  push:\n  pull_request:\n  workflow_dispatch:\n"
    return f"  schedule:\n    - cron: {json.dumps(schedule)}\n  workflow_dispatch:\n"


def _variables(variables: Sequence[Tuple[str, str]]) -> str:
    """The workflow's ``env:`` block (every job's steps see it), or nothing."""
    if not variables:
        return ""
    return "env:\n" + "".join(f"  {name}: {json.dumps(value)}\n" for name, value in variables) + "\n"


def workflow(
    envs: Sequence[Env],
    command: Sequence[str] = DEFAULT_COMMAND,
    selection: Sequence[str] = (),
    options: Sequence[str] = (),
    *,
    table: Optional[str] = None,
    overlay: Optional[str] = None,
    install: str = "compat-clone",
    install_why: str = "",
    schedule: Optional[str] = None,
    variables: Sequence[Tuple[str, str]] = (),
) -> str:
    """A complete, commented GitHub Actions workflow running the matrix.

    Args:
        envs: the selected environments (their Python sets the plan and
            report jobs' Python).
        command: what runs in each environment.
        selection: the ``--env`` / ``--tag`` options that selected `envs`
            (the plan job repeats them).
        options: options every ``compat-clone matrix`` call repeats
            (``--table FILE``, ``--overlay FILE``, ``--timeout S``).
        table: the table file, if not the built-in one (the uv cache key),
            relative to the project (`validate_table_path`).
        overlay: the overlay file, if any (the uv cache key too), relative
            to the project.
        install: what every job's ``pip install`` gets for compat_clone
            (`install_requirement`, `default_install_source`).
        install_why: where that choice came from, for the file's comment.
        schedule: a cron expression (`validate_schedule`): the workflow runs
            on that schedule (and by hand) instead of on every push and pull
            request, named ``compat-clone matrix (scheduled)``, to be saved
            beside the other as ``compat-matrix-scheduled.yml``.
        variables: (name, value) pairs set for every job (the workflow's
            ``env:``); the matrix passes them on to each environment's command.

    Returns:
        The YAML text.

    Raises:
        ValueError: no environment selected, or a `schedule` that is not a
            cron expression.

    Example:

    >>> from compat_clone_matrix import load_table
    >>> text = workflow(load_table()[:1])
    >>> "compat-clone matrix --emit github" in text
    True
    >>> nightly = workflow(load_table()[:1], schedule="0 3 * * *", variables=[("MY_FLAG", "1")])
    >>> 'cron: "0 3 * * *"' in nightly and 'MY_FLAG: "1"' in nightly
    True
    """
    if not envs:
        raise ValueError("Expected at least one environment for the workflow. Received none: check --env / --tag.")
    if schedule is not None:
        schedule = validate_schedule(schedule)
    plan = _shell_join(["compat-clone", "matrix", "--emit", "github", *options, *selection, "--", *command])
    merge = _shell_join(["compat-clone", "matrix", "--merge", "results", "--report", "COMPATIBILITY.md", *options, *selection])
    own = (["--schedule", schedule] if schedule is not None else []) + [
        word for name, value in variables for word in ("--workflow-env", f"{name}={value}")
    ]
    generator = _shell_join(["compat-clone", "matrix", "--emit", "workflow", *options, *selection, *own, "--", *command])
    key_files = [Path(table).as_posix() if table else "pyproject.toml"] + ([Path(overlay).as_posix()] if overlay else [])
    return _WORKFLOW.format(
        generator=generator,
        file_name="compat-matrix.yml" if schedule is None else "compat-matrix-scheduled.yml",
        name="compat-clone matrix" if schedule is None else "compat-clone matrix (scheduled)",
        triggers=_triggers(schedule).rstrip("\n"),
        variables="\n" + _variables(variables),
        python=envs[0].python,
        plan=plan,
        merge=merge,
        install=shlex.quote(install),
        install_quoted=install,
        install_why=install_why or "--install-from",
        cache_key_files=", ".join(f"'{f}'" for f in key_files),
        **ACTIONS,
    )


def emit(
    kind: str, envs: Sequence[Env], command: Sequence[str], selection: Sequence[str], options: Sequence[str], **workflow_args: Any
) -> str:
    """The text ``--emit KIND`` prints: ``github`` (one JSON line) or ``workflow`` (YAML)."""
    if kind == "github":
        return json.dumps(github_matrix(envs, command, options), separators=(",", ":"))
    return workflow(envs, command, selection, options, **workflow_args)
