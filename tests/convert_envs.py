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

import fcntl
import json
import os
import subprocess
from pathlib import Path
from typing import Any, Callable, Dict, List, Sequence, Tuple

import pytest

REPO = Path(__file__).resolve().parents[1]
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
    root = Path(os.environ.get("COMPAT_CLONE_MATRIX_DIR") or REPO / ".matrix")
    python = root / name / "bin" / "python"
    of_this_run = name in os.environ.get("COMPAT_CLONE_MATRIX_ENVS", "").split(",")
    if python.exists():
        return root / name
    if HERE is not None and of_this_run:
        pytest.fail(f"matrix environment {name!r} is part of this run but not built: no {python}. "
                    "compat-clone matrix builds every environment before running tests; see its build log.")
    pytest.skip(f"matrix environment {name!r} is not built in {root} (build it with "
                f"`compat-clone matrix --env {name} -- python -V`)")


def run_in_sibling(env: str, script: Path, out: Path, args: List[str], timeout: int = 900) -> Dict[str, Any]:
    """Runs ``script OUT FAMILY ARGS...`` with sibling `env`'s interpreter and variables.

    Returns the JSON report the script prints on its last stdout line (its
    ``keras`` version must be `env`'s).
    """
    from compat_clone.tools.matrix.runner import env_environ
    from compat_clone.tools.matrix.table import load_table

    env_dir = sibling(env)
    (table_env,) = [e for e in load_table() if e.name == env]
    family = dict(table_env.expect)["family"]
    environ = env_environ(table_env, env_dir)
    # A development checkout on PYTHONPATH serves the sibling too, as it serves
    # `compat-clone convert`'s workers (`tools/convert/_envs.py`); the matrix clears it.
    if os.environ.get("PYTHONPATH"):
        environ["PYTHONPATH"] = os.environ["PYTHONPATH"]
    proc = subprocess.run([str(env_dir / "bin" / "python"), str(script), str(out), family, *args],
                          env=environ, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"{script.name} in {env} failed:\n" + proc.stdout[-3000:] + proc.stderr[-3000:]
    report: Dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    assert str(report["keras"]).startswith(dict(table_env.expect)["version"]), (env, report)
    return report


def shared_builds(tmp_path_factory: pytest.TempPathFactory, kind: str,
                  build: Callable[[str, Path], Dict[str, Any]]) -> Callable[[str], Path]:
    """`get(env)` -> the folder `build(env, folder)` filled, once per test run.

    pytest-xdist workers share one folder per run (``PYTEST_XDIST_TESTRUNUID``):
    the first worker to ask builds it under a file lock, the others wait and
    reuse it. The build's report is kept as ``report.json`` there.
    """
    run_id = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    base = tmp_path_factory.getbasetemp()
    shared = base.parent / f"{kind}-{run_id}" if run_id else base / kind
    shared.mkdir(parents=True, exist_ok=True)

    def get(env: str) -> Path:
        out = shared / env
        with open(shared / f".{env}.lock", "a+") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not (out / "report.json").is_file():
                report = build(env, out)
                (out / "report.json").write_text(json.dumps(report))
        return out

    return get
