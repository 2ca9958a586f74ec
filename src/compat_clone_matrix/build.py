"""Building an environment with uv, or reusing it when its stamp says nothing changed.

An environment's stamp (`env_stamp`) hashes everything that decides its
contents; a folder whose stamp file holds the current value is reused as it
is. One build (or run) at a time holds an environment's folder (`env_lock`).
`build_env` is the entry for a caller that only needs the environment built
(`compat-clone convert`); `compat-clone matrix` prepares every selected
environment (`prepare_env`) before it runs a command in any (`runner`).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any, Dict, Iterator, List, Optional, Tuple

from compat_clone_matrix.install import (
    InstallSource,
    editable_metadata,
    expand_requirements,
    machine_pip_args,
    post_install,
    source_identity,
    wheel_requirements,
)
from compat_clone_matrix.procs import Procs
from compat_clone_matrix.summary import Outcome, format_seconds
from compat_clone_matrix.table import Env

__all__ = [
    "env_stamp",
    "build_env",
    "is_built",
    "interpreter_for",
    "STAMP_FILE",
    "LOG_FILE",
    "find_uv",
    "prepare_env",
    "ensure_built",
    "env_lock",
    "python_version",
    "PYCACHE_DIR",
    "PYCACHE_PREFIX_PYTHON",
]

# Bump when the way an environment is built changes: every stamp goes stale.
_BUILD_SCHEMA = 2  # 2: Python 3.7 environments are built with their bytecode
STAMP_FILE = ".compat-clone-stamp"
LOG_FILE = "last.log"
# How often `build_env` (a conversion waiting on an environment) says how long the build has run.
_BUILD_TICK_S = 15.0


def env_stamp(env: Env, install: InstallSource) -> str:
    """Hash of everything that decides an environment's contents.

    An environment whose stamp file holds this value is reused as is.

    Args:
        env: the table's environment.
        install: the package the environment gets (when its entry installs one).

    Returns:
        20 hex digits.
    """
    payload = {
        "schema": _BUILD_SCHEMA,
        "python": env.python,
        "packages": expand_requirements(env.packages),
        "no_deps": expand_requirements(env.no_deps),
        "pip_args": list(env.pip_args) + machine_pip_args(),
        "self": source_identity(install) if env.install_compat_clone else None,
        "self_metadata": editable_metadata(install) if env.install_compat_clone else None,
    }
    blob = json.dumps(payload, sort_keys=True).encode("utf-8")
    return hashlib.sha256(blob).hexdigest()[:20]


def find_uv(project: Path, log: Optional[IO[str]] = None, tool: str = "compat-clone matrix") -> List[str]:
    """The command that runs uv: $COMPAT_CLONE_UV, `uv` on PATH, .tools/bin/uv,
    `python -m uv`, else bootstrapped into .tools with pip (`tool`, the command
    that runs, names itself in the message)."""
    explicit = os.environ.get("COMPAT_CLONE_UV")
    if explicit:
        return [explicit]
    on_path = shutil.which("uv")
    if on_path:
        return [on_path]
    local = project / ".tools" / "bin" / "uv"
    if local.is_file():
        return [str(local)]
    if importlib.util.find_spec("uv") is not None:
        return [sys.executable, "-m", "uv"]
    tools = project / ".tools"
    print(f"{tool}: uv not found; installing it into {tools} with pip", file=sys.stderr)
    subprocess.run([sys.executable, "-m", "venv", str(tools)], check=True)
    subprocess.run(
        [str(tools / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check", "uv>=0.4"],
        check=True,
    )
    return [str(local)]


_INTERPRETERS: Dict[str, str] = {}


def _runs_as(exe: str, version: str) -> Optional[str]:
    """The real interpreter behind `exe` when it starts and is Python `version` (X.Y), else None:
    a pyenv shim of a version that is not selected is on PATH but exits 127."""
    try:
        out = subprocess.run(
            [exe, "-c", "import sys; print('%d.%d' % sys.version_info[:2]); print(sys.executable)"],
            capture_output=True,
            text=True,
            timeout=60,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    lines = out.stdout.split("\n")
    return lines[1].strip() or exe if out.returncode == 0 and lines[0].strip() == version else None


def is_built(env_dir: Path) -> bool:
    """Whether `env_dir` holds a built environment: its interpreter and the stamp a finished build leaves.

    Args:
        env_dir: an environment's folder (``.matrix/<name>/``).

    Returns:
        True when ``bin/python`` exists and the build stamp was written; a
        build that stopped half-way leaves no stamp.

    Example:

        if not is_built(Path(".matrix") / env.name):
            build_env(env, Path(".matrix") / env.name)
    """
    return (env_dir / "bin" / "python").exists() and (env_dir / STAMP_FILE).is_file()


def interpreter_for(python: str) -> str:
    """What uv is given for a table's ``python``.

    A path is used as it is. A version ``X.Y`` becomes an interpreter that
    runs: ``pythonX.Y`` on ``PATH``, else pyenv's (``pyenv prefix X.Y``, or
    ``$PYENV_ROOT/versions/X.Y.*``); uv's own search of ``PATH`` gives up on the
    first pyenv shim that fails, and then tries a download. With none found,
    the version is passed on for uv to find (or fetch, where it can).
    """
    if os.sep in python or not re.fullmatch(r"\d+\.\d+", python):
        return python
    if python in _INTERPRETERS:
        return _INTERPRETERS[python]
    candidates: List[str] = []
    on_path = shutil.which(f"python{python}")
    if on_path:
        candidates.append(on_path)
    pyenv = shutil.which("pyenv")
    if pyenv:
        try:
            prefix = subprocess.run([pyenv, "prefix", python], capture_output=True, text=True, timeout=60)
            if prefix.returncode == 0 and prefix.stdout.strip():
                candidates.append(str(Path(prefix.stdout.strip().splitlines()[0]) / "bin" / f"python{python}"))
        except (OSError, subprocess.SubprocessError):
            pass
    root = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv") / "versions"
    candidates += [str(p / "bin" / f"python{python}") for p in sorted(root.glob(f"{python}.*"), reverse=True)]
    found = next((real for real in map(lambda c: _runs_as(c, python), candidates) if real), python)
    _INTERPRETERS[python] = found
    return found


PYCACHE_PREFIX_PYTHON = (3, 8)  # the first Python with PYTHONPYCACHEPREFIX
PYCACHE_DIR = ".pycache"  # an environment's own bytecode folder (Python >= 3.8), in its folder


def python_version(env_dir: Path) -> Optional[Tuple[int, int]]:
    """The ``(major, minor)`` of the environment's interpreter, from its ``pyvenv.cfg`` (None where it says none)."""
    try:
        text = (env_dir / "pyvenv.cfg").read_text(encoding="utf-8")
    except OSError:
        return None
    found = re.search(r"^(?:version_info|version)\s*=\s*(\d+)\.(\d+)", text, re.MULTILINE)
    return (int(found.group(1)), int(found.group(2))) if found else None


def _build(env: Env, env_dir: Path, uv: List[str], source: InstallSource, procs: Procs, log: IO[str], stamp: str) -> None:
    """Creates the environment from scratch; raises RuntimeError on failure."""
    python = env_dir / "bin" / "python"

    def step(cmd: List[str]) -> None:
        rc = procs.call(cmd, log=log)
        if rc != 0:
            raise RuntimeError(f"`{' '.join(cmd[:4])} ...` exited with {rc}")

    step(uv + ["venv", "--allow-existing", "-p", interpreter_for(env.python), str(env_dir)])
    packages = expand_requirements(env.packages)
    pip_args = list(env.pip_args) + machine_pip_args()
    if env.install_compat_clone:
        if source.kind == "editable":
            packages += ["-e", str(source.path)]
        elif source.kind == "wheel":
            packages += wheel_requirements(source.path)  # the wheel itself: `post_install`
        else:
            packages += ["packaging>=21", 'tomli; python_version < "3.11"', 'importlib_metadata>=3.6; python_version < "3.8"']
    # Bytecode, so that each interpreter a run starts (xdist workers, the claim check, the processes tests
    # start) does not compile TensorFlow's thousands of modules again, which it does at every start where
    # nothing writes bytecode (PYTHONDONTWRITEBYTECODE; uv installs none by default): `import keras,
    # tensorflow` on Keras 3.0 costs 8.9 CPU s without, 3.8 with. From Python 3.8 the runner gives the
    # environment's processes a bytecode folder of its own (`runner.env_environ`): the modules they import
    # are compiled once, when first imported. Python 3.7 has no such folder: there the last install
    # compiles the whole of site-packages (12.9 CPU s for Keras 3.0's, 2-3 min of a make test's wall for
    # all 14 environments, hence not everywhere).
    version = python_version(env_dir)
    compile_last = ["--compile-bytecode"] if version is not None and version < PYCACHE_PREFIX_PYTHON else []
    step(uv + ["pip", "install", "--python", str(python)] + ([] if env.no_deps else compile_last) + pip_args + packages)
    if env.no_deps:
        no_deps = expand_requirements(env.no_deps)
        step(uv + ["pip", "install", "--python", str(python), "--no-deps"] + compile_last + pip_args + no_deps)
    (env_dir / STAMP_FILE).write_text(stamp + "\n", encoding="utf-8")


@contextlib.contextmanager
def env_lock(root: Path, env: Env, say: Any) -> Iterator[None]:
    """Holds `env`'s lock: one matrix run (or build) at a time per environment folder."""
    root.mkdir(parents=True, exist_ok=True)
    with open(root / f".{env.name}.lock", "a+") as lock_file:
        try:
            import fcntl
        except ImportError:  # pragma: no cover - Windows: no locking
            fcntl = None  # type: ignore[assignment]
        if fcntl is not None:
            try:
                fcntl.flock(lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                say(env.name, "waiting for another run that uses this environment")
                fcntl.flock(lock_file, fcntl.LOCK_EX)
        yield


def prepare_env(env: Env, *, root: Path, uv: List[str], source: InstallSource, procs: Procs, rebuild: bool, say: Any) -> Outcome:
    """Builds (or reuses) one environment and runs nothing: the first phase of a matrix run.

    `compat-clone matrix` prepares every selected environment before it runs
    the command in any, so a command may use a sibling environment (the
    cross-environment conversion tests do). The outcome carries the build
    status into `run_one(..., prepared=...)`.
    """
    with env_lock(root, env, say):
        out = Outcome(env=env.name)
        env_dir = root / env.name
        ensure_built(env, env_dir, out, uv=uv, source=source, procs=procs, rebuild=rebuild, say=say)
        return out


def build_env(env: Env, env_dir: Path, *, install: InstallSource, rebuild: bool = False, say: Any = None) -> Outcome:
    """Builds `env` at `env_dir` as `compat-clone matrix` does, or reuses it when its stamp is fresh.

    Waits for a matrix run that holds the environment. Used by
    `compat-clone convert` for the environments it reads and writes models in.

    Args:
        env: the table's environment.
        env_dir: its folder (``.matrix/<name>``).
        install: the package the environment gets (when its entry installs one).
        rebuild: rebuild even if the stamp is fresh.
        say: ``say(env_name, text)`` for progress; None prints to stderr.

    Returns:
        The outcome: ``build`` is ``"built"``, ``"reused"`` or ``"FAILED"``;
        ``log`` names the build log.
    """

    def _stderr(name: str, text: str) -> None:
        print(f"{name}: {text}", file=sys.stderr, flush=True)

    tell = say if say is not None else _stderr
    with env_lock(env_dir.parent, env, tell):
        out = Outcome(env=env.name)
        # uv, when it must be bootstrapped, goes next to the environments' folder
        # (the per-user cache for `compat-clone convert`), never into the caller's folder.
        uv = find_uv(env_dir.parent.parent, tool="compat-clone convert")
        ensure_built(env, env_dir, out, uv=uv, source=install, procs=Procs(), rebuild=rebuild, say=tell, tick_s=_BUILD_TICK_S)
        return out


@contextlib.contextmanager
def _ticking(say: Any, name: str, log: Path, every: Optional[float]) -> Iterator[None]:
    """While the block runs, says every `every` seconds how long the build has taken, and its log."""
    if every is None:
        yield
        return
    start = time.monotonic()
    done = threading.Event()

    def tick() -> None:
        while not done.wait(every):
            say(name, f"still building ({format_seconds(time.monotonic() - start)} so far; log: {log})")

    ticker = threading.Thread(target=tick, name=f"compat-clone-build-{name}", daemon=True)
    ticker.start()
    try:
        yield
    finally:
        done.set()
        ticker.join()


def ensure_built(
    env: Env,
    env_dir: Path,
    out: Outcome,
    *,
    uv: List[str],
    source: InstallSource,
    procs: Procs,
    rebuild: bool,
    say: Any,
    tick_s: Optional[float] = None,
) -> bool:
    """Builds or reuses `env` (lock held), writing the log header; False on a build failure.

    With `tick_s`, a build says every `tick_s` seconds how long it has run, and
    ``built in N s`` when done (`compat-clone convert`, whose user waits on it).
    """
    stamp = env_stamp(env, source)
    stamp_path = env_dir / STAMP_FILE
    python = env_dir / "bin" / "python"
    fresh = not rebuild and python.exists() and stamp_path.is_file() and stamp_path.read_text(encoding="utf-8").strip() == stamp
    if not fresh and env_dir.exists():
        shutil.rmtree(env_dir)
    env_dir.mkdir(parents=True, exist_ok=True)
    out.log = env_dir / LOG_FILE
    with open(out.log, "w", encoding="utf-8", errors="replace") as log:
        log.write(f"# compat-clone matrix: environment {env.name} (stamp {stamp})\n")
        start = time.monotonic()
        try:
            if fresh:
                out.build = "reused"
            else:
                say(env.name, f"building in {env_dir} (log: {out.log})")
                with _ticking(say, env.name, out.log, tick_s):
                    _build(env, env_dir, uv, source, procs, log, stamp)
                out.build = "built"
                if tick_s is not None:
                    say(env.name, f"built in {time.monotonic() - start:.0f} s")
            post_install(env, python, source, uv, procs, log)
        except (RuntimeError, OSError, subprocess.CalledProcessError, ValueError) as e:
            out.build, out.status = "FAILED", "BUILD FAILED"
            out.build_s = time.monotonic() - start
            log.write(f"\ncompat-clone matrix: building {env.name} failed: {e}\n")
            say(env.name, f"build FAILED ({e}); log: {out.log}")
            return False
        out.build_s = time.monotonic() - start
    return True
