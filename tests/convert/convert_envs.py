"""Helpers of the cross-environment conversion tests (test_convert_cli, test_convert_field, test_convert_zoo_envs).

A test in a Keras 3 environment of the matrix builds its Keras 2 sources by
running a script in a sibling environment (standalone Keras 2.2.4 / 2.3.1,
tf.keras 2.12 / 2.15). `compat-clone matrix` builds every environment of a run
before any test runs and exports ``COMPAT_CLONE_MATRIX_DIR`` /
``COMPAT_CLONE_MATRIX_ENVS``: a sibling of the run that is not there FAILS the
test; outside the matrix, a sibling that is not built is skipped with the way
to build it.

Which environment runs which case is one rule here too: a case lists the
Keras 3 hosts that convert it (`hosted`), a module runs only where Keras 3 is
the target (`keras3_target`), and `runs_here` answers both.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
from pathlib import Path
from typing import Any, Dict, List, Sequence, Tuple

import pytest

from tests.support.families import matrix_dir

REPO = Path(__file__).resolve().parents[2]
HERE = os.environ.get("COMPAT_CLONE_ENV")
#: the matrix environments where Keras 3 is the conversion's target, one per backend
KERAS3_HOSTS = ("keras-3.15-tf", "keras-3.15-jax", "keras-3.15-torch")


def runs_here(hosts: Sequence[str]) -> bool:
    """Whether this environment is one of `hosts` (outside the matrix: every host's share runs here)."""
    return HERE is None or HERE in hosts


def hosted(*values: Any, id: str, hosts: Sequence[str], verb: str = "converted") -> Any:
    """`pytest.param(*values)` that runs in `hosts` only, skipped elsewhere with where it runs."""
    marks = [] if runs_here(hosts) else [pytest.mark.skip(reason=f"{verb} in {', '.join(hosts)}")]
    return pytest.param(*values, id=id, marks=marks)


def only_in(*hosts: str) -> Any:
    """A test that runs in `hosts` only (skipped elsewhere, saying where it runs)."""
    return pytest.mark.skipif(not runs_here(hosts), reason=f"converted in {', '.join(hosts)}")


def keras3_target(what: str) -> Any:
    """Skips a test outside the Keras 3 hosts (outside the matrix: without Keras 3); `what` says what runs there."""
    return pytest.mark.skipif(
        HERE not in KERAS3_HOSTS if HERE is not None else not keras3_here(),
        reason=f"{what} where Keras 3 is the target: keras-3.15-tf/-jax/-torch "
        "(or outside the matrix, in an environment with Keras 3)",
    )


def run_convert(argv: List[str], capsys: pytest.CaptureFixture[str]) -> Tuple[int, str, str]:
    """Runs `compat-clone convert` in this process (it imports no framework; its workers do)."""
    from compat_clone.tools.cli import main

    rc = main(["convert", *argv])
    captured = capsys.readouterr()
    return rc, captured.out, captured.err


def keras3_here() -> bool:
    """Whether this interpreter imports Keras 3 as `keras`."""
    try:
        import keras
    except ImportError:
        return False
    return int(keras.__version__.split(".")[0]) >= 3


def sibling(name: str) -> Path:
    """The folder of matrix environment `name`, as this run sees it (fails or skips when absent)."""
    root = matrix_dir()
    python = root / name / "bin" / "python"
    of_this_run = name in os.environ.get("COMPAT_CLONE_MATRIX_ENVS", "").split(",")
    if python.exists():
        return root / name
    if HERE is not None and of_this_run:
        pytest.fail(
            f"matrix environment {name!r} is part of this run but not built: no {python}. "
            "compat-clone matrix builds every environment before running tests; see its build log."
        )
    pytest.skip(
        f"matrix environment {name!r} is not built in {root} (build it with `compat-clone matrix --env {name} -- python -V`)"
    )


def _sibling_environ(env: str, env_dir: Path) -> Dict[str, str]:
    """The variables a script runs with in sibling `env`: the matrix runner's, and this run's ``PYTHONPATH``."""
    from compat_clone_matrix.runner import env_environ
    from compat_clone_matrix.table import load_table

    (table_env,) = [e for e in load_table() if e.name == env]
    environ = env_environ(table_env, env_dir)
    # A development checkout on PYTHONPATH serves the sibling too, as it serves
    # `compat-clone convert`'s workers (`tools/convert/_envs.py`); the matrix clears it.
    if os.environ.get("PYTHONPATH"):
        environ["PYTHONPATH"] = os.environ["PYTHONPATH"]
    return environ


def run_in_sibling(env: str, script: Path, out: Path, args: List[str], timeout: int = 3000) -> Dict[str, Any]:
    """Runs ``script OUT FAMILY ARGS...`` with sibling `env`'s interpreter and variables.

    Returns the JSON report the script prints on its last stdout line (its
    ``keras`` version must be `env`'s). `timeout` is above `make test`'s limit
    per environment (Makefile: MATRIX_ARGS): on a machine so loaded that a
    writer takes that long, the environment's limit ends the session and its
    report names the test that was writing, and for how long. (It was 900 s:
    at load 10-12 on 2 cores a writer gets a quarter of a core or less, and
    keras-3.15-jax's share of keras-2.2.4-tf1's zoo ran out of it, failing
    the test that asked for it; the whole keras-2.3.1 zoo took 632 s there for
    145 CPU seconds, which a quiet core does in about 150 s.)
    """
    from compat_clone_matrix.table import load_table

    env_dir = sibling(env)
    (table_env,) = [e for e in load_table() if e.name == env]
    family = dict(table_env.expect)["family"]
    environ = _sibling_environ(env, env_dir)
    proc = subprocess.run(
        [str(env_dir / "bin" / "python"), str(script), str(out), family, *args],
        env=environ,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert proc.returncode == 0, f"{script.name} in {env} failed:\n" + proc.stdout[-3000:] + proc.stderr[-3000:]
    report: Dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    assert str(report["keras"]).startswith(dict(table_env.expect)["version"]), (env, report)
    return report


def written(kind: str, script: Path, env: str, args: Sequence[str]) -> Tuple[Path, Dict[str, Any]]:
    """``(folder, report)``: the files ``script ARGS`` writes in sibling `env`, from the matrix folder's cache.

    One entry per writer and unit of work under ``<root>/<kind>/<env>/<args>/``
    (tests/convert/source_cache.py: the root is outside the checkout, so fresh clones share it): written
    by the first process of any run that asks (a Keras 3 host, or the writer
    environment itself: tests/convert/test_convert_writers.py), read by every other,
    and written again when the script, the modules it imports, its arguments
    or the environment change.
    """
    memo = (kind, env, tuple(args))
    if memo in _FAILED:  # every test that reads this entry fails with the writer's error, not a rewrite each
        raise AssertionError(f"{script.name} {' '.join(args)} in {env} failed earlier in this process:\n{_FAILED[memo]}")
    if memo not in _WRITTEN:
        from compat_clone_matrix.table import load_table
        from tests.convert import source_cache

        env_dir = sibling(env)
        (table_env,) = [e for e in load_table() if e.name == env]
        folder = source_cache.root(env_dir.parent / ".sources") / kind / env / ",".join(args)
        key = source_cache.writer_key(
            script, args, env_dir, dataclasses.asdict(table_env), _sibling_environ(env, env_dir), folder
        )
        try:
            report = source_cache.cached(folder, key, lambda out: run_in_sibling(env, script, out, list(args)))
        except (AssertionError, subprocess.TimeoutExpired) as exc:
            _FAILED[memo] = str(exc)[-6000:]
            raise
        _WRITTEN[memo] = (folder, report)
    return _WRITTEN[memo]


_WRITTEN: Dict[Tuple[str, str, Tuple[str, ...]], Tuple[Path, Dict[str, Any]]] = {}
# the writers that failed in this process, with their error: a failed write is not repeated for each reader
_FAILED: Dict[Tuple[str, str, Tuple[str, ...]], str] = {}
