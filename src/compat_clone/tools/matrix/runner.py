"""Building an environment with uv (or reusing it) and running one command in it."""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
import re
import shutil
import shlex
import signal
import subprocess
import sys
import threading
import time
import zipfile
from pathlib import Path
from typing import IO, Any, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple

from compat_clone.tools.matrix.procs import _Procs
from compat_clone.tools.matrix.summary import _counts_text, _fmt_s, _Outcome, parse_pytest_summary
from compat_clone.tools.matrix.table import Env, _toml_loads

__all__ = ["env_stamp", "env_environ", "build_env", "machine_pip_args"]

# Bump when the way an environment is built changes: every stamp goes stale.
_BUILD_SCHEMA = 1
_STAMP_FILE = ".compat-clone-stamp"
_LOG_FILE = "last.log"
# In an environment folder: the sha256 of the compat_clone wheel installed there.
_WHEEL_MARKER = ".compat-clone-wheel"
# How often `build_env` (a conversion waiting on an environment) says how long the build has run.
_BUILD_TICK_S = 15.0
_CLAIM_FILE = "last-claim.json"  # the pytest plugin's claim check of the last run
_RESULTS_DIR = "_results"
# Variables that shape which Keras an environment loads, or how its TensorFlow
# runs: never inherited from the caller's shell, only set from the table.
# (Importing TensorFlow 2 sets TF2_BEHAVIOR=1 in its own process; a TF 1.15
# environment started from there would run eagerly, where Keras 2 cannot.)
_SCRUBBED = ("PYTHONPATH", "PYTHONHOME", "KERAS_BACKEND", "TF_USE_LEGACY_KERAS", "VIRTUAL_ENV", "TF2_BEHAVIOR")


# --------------------------------------------------------------------------- uv


def _self_source() -> Tuple[str, Path]:
    """How to install the running compat_clone into an environment.

    ``("wheel", file)`` when ``$COMPAT_CLONE_WHEEL`` names a built wheel (``make
    test`` builds one and tests what users install); ``("editable", repo)`` when
    it runs from a source checkout; else ``("copy", package dir)`` (a pip install:
    the package is copied in, with its metadata).
    """
    wheel = os.environ.get("COMPAT_CLONE_WHEEL")
    if wheel:
        path = Path(wheel).expanduser().resolve()
        if not path.is_file() or path.suffix != ".whl":
            raise ValueError(
                f"COMPAT_CLONE_WHEEL={wheel!r} is not a wheel file. Expected the path of a built "
                "compat_clone wheel (`uv build` writes one into dist/), or unset the variable."
            )
        return "wheel", path
    pkg = Path(__file__).resolve().parents[2]  # compat_clone/tools/matrix -> compat_clone
    # src/ layout (a checkout: <repo>/src/compat_clone); a flat tree as a fallback.
    for repo in (pkg.parent.parent, pkg.parent) if pkg.parent.name == "src" else (pkg.parent,):
        pyproject = repo / "pyproject.toml"
        if not pyproject.is_file():
            continue
        try:
            name = _toml_loads(pyproject.read_text(encoding="utf-8")).get("project", {}).get("name")
        except ValueError:
            name = None
        if name == "compat-clone":
            return "editable", repo
    return "copy", pkg


def machine_pip_args() -> List[str]:
    """This machine's own installer arguments: ``$COMPAT_CLONE_PIP_ARGS``, split as a shell would.

    A table holds no path of one machine; a local wheel folder, a mirror or a
    cache go here instead (``COMPAT_CLONE_PIP_ARGS="--find-links /opt/wheels"``).
    They are added to every ``uv pip install`` of every environment, after the
    table's own ``pip_args``, and are part of each environment's stamp.
    """
    return shlex.split(os.environ.get("COMPAT_CLONE_PIP_ARGS", ""))


def _wheel_requirements(wheel: Path) -> List[str]:
    """The ``Requires-Dist`` lines of a wheel's METADATA: what installing it pulls in."""
    with zipfile.ZipFile(wheel) as archive:
        names = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        if not names:
            raise ValueError(f"{str(wheel)!r} holds no .dist-info/METADATA: not a wheel built from compat_clone.")
        text = archive.read(names[0]).decode("utf-8", errors="replace")
    requires = [line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("Requires-Dist:")]
    # An extra's requirements (``; extra == "migrate"``) are not what installing the wheel pulls in.
    return sorted(r for r in requires if not re.search(r"""\bextra\s*==""", r))


def _editable_metadata(src: Tuple[str, Path]) -> Any:
    """What an editable install writes besides the link to the code (dependencies, scripts,
    entry points such as the pytest plugin): a change there needs a reinstall."""
    if src[0] != "editable":
        return None
    try:
        project = _toml_loads((src[1] / "pyproject.toml").read_text(encoding="utf-8")).get("project", {})
    except (OSError, ValueError):
        return None
    return {key: project.get(key) for key in ("dependencies", "scripts", "entry-points")}


def _source_identity(src: Tuple[str, Path]) -> Any:
    """What of the install source decides an environment's contents (its stamp).

    A wheel: its declared requirements (the wheel itself is reinstalled when its
    bytes change, see `_post_install`). A copy: the version, not the path, so that
    every project on a machine shares one cached environment.
    """
    if src[0] == "wheel":
        return ["wheel", _wheel_requirements(src[1])]
    if src[0] == "copy":
        from compat_clone import __version__

        return ["copy", __version__]
    return [src[0], str(src[1])]


def env_stamp(env: Env, self_source: Optional[Tuple[str, Path]] = None) -> str:
    """Hash of everything that decides an environment's contents.

    An environment whose stamp file holds this value is reused as is.
    """
    src = self_source if self_source is not None else _self_source()
    payload = {
        "schema": _BUILD_SCHEMA,
        "python": env.python,
        "packages": _expand_requirements(env.packages),
        "no_deps": _expand_requirements(env.no_deps),
        "pip_args": list(env.pip_args) + machine_pip_args(),
        "self": _source_identity(src) if env.install_compat_clone else None,
        "self_metadata": _editable_metadata(src) if env.install_compat_clone else None,
    }
    blob = json.dumps(payload, sort_keys=True).encode("utf-8")
    return hashlib.sha256(blob).hexdigest()[:20]


def _find_uv(project: Path, log: Optional[IO[str]] = None) -> List[str]:
    """The command that runs uv: $COMPAT_CLONE_UV, `uv` on PATH, .tools/bin/uv,
    `python -m uv`, else bootstrapped into .tools with pip."""
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
    print(f"compat-clone matrix: uv not found; installing it into {tools} with pip", file=sys.stderr)
    subprocess.run([sys.executable, "-m", "venv", str(tools)], check=True)
    subprocess.run(
        [str(tools / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check", "uv>=0.4"],
        check=True,
    )
    return [str(local)]



def _site_packages(python: Path) -> str:
    out = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True,
    )
    return out.stdout.strip()


def _post_install(env: Env, python: Path, source: Tuple[str, Path], uv: List[str], procs: _Procs,
                  log: IO[str]) -> None:
    """Steps re-applied on every run (cheap, idempotent): the copied compat_clone
    (when not editable), the wheel when its bytes changed, and the environment's fix-up `.pth`.

    Nothing is rewritten when it is already there: another process may be
    running in the environment (a conversion worker, a sibling's test)."""
    site = None
    if env.install_compat_clone and source[0] == "copy":
        site = _site_packages(python)
        _copy_package(source[1], Path(site), log)
    if env.install_compat_clone and source[0] == "wheel":
        marker = python.parent.parent / _WHEEL_MARKER
        digest = _file_digest(source[1])
        if not marker.is_file() or marker.read_text(encoding="utf-8").strip() != digest:
            cmd = uv + ["pip", "install", "--python", str(python), "--no-deps", "--reinstall-package", "compat-clone",
                        str(source[1])]
            if procs.call(cmd, log=log) != 0:
                raise RuntimeError(f"installing {source[1].name} into {env.name!r} failed")
            marker.write_text(digest + "\n", encoding="utf-8")
            log.write(f"compat-clone matrix: installed {source[1]} (sha256 {digest[:12]})\n")
    if env.fixup:
        if not env.install_compat_clone:
            raise RuntimeError(
                f"environment {env.name!r} needs fix-up {env.fixup!r}, which runs from "
                "compat_clone inside the environment: set install_compat_clone = true."
            )
        from compat_clone.tools import envfix

        path = envfix.install_into(site or _site_packages(python), env.fixup)
        log.write(f"compat-clone matrix: fix-up {env.fixup!r} installed: {path}\n")


def _file_digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _tree_digest(pkg: Path) -> str:
    """A digest of a package folder's files (``__pycache__`` left out)."""
    h = hashlib.sha256()
    for path in sorted(p for p in pkg.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        h.update(str(path.relative_to(pkg)).encode("utf-8") + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def _copy_package(pkg: Path, site: Path, log: IO[str]) -> None:
    """Copies the running compat_clone into `site`, unless the same files are there already."""
    target = site / "compat_clone"
    marker = site / "compat_clone.source-digest"
    digest = _tree_digest(pkg)
    if target.is_dir() and marker.is_file() and marker.read_text(encoding="utf-8").strip() == digest:
        return
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(pkg, target, ignore=shutil.ignore_patterns("__pycache__"))
    _write_dist_info(site)
    marker.write_text(digest + "\n", encoding="utf-8")
    log.write(f"compat-clone matrix: copied {pkg} -> {target}\n")


def _write_dist_info(site: Path) -> None:
    """The copied compat_clone's metadata: its version and entry points (the pytest plugin)."""
    from compat_clone._compat import metadata

    for old in site.glob("compat_clone-*.dist-info"):
        shutil.rmtree(old, ignore_errors=True)
    try:
        dist = metadata.distribution("compat-clone")
    except metadata.PackageNotFoundError:  # a vendored copy: nothing to declare
        return
    info = site / f"compat_clone-{dist.version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: compat-clone\nVersion: {dist.version}\n",
                                   encoding="utf-8")
    (info / "entry_points.txt").write_text(dist.read_text("entry_points.txt") or "", encoding="utf-8")
    (info / "INSTALLER").write_text("compat-clone matrix\n", encoding="utf-8")


def _expand_requirements(items: Sequence[str]) -> List[str]:
    """``"-e ."`` (one table string) becomes ``-e <absolute path>`` for uv; paths
    are relative to the folder the matrix runs in (the project root)."""
    out: List[str] = []
    for item in items:
        flag, _, rest = item.partition(" ")
        if flag in ("-e", "--editable") and rest.strip():
            out += ["-e", str(Path(rest.strip()).expanduser().resolve())]
        else:
            out.append(item)
    return out


_INTERPRETERS: Dict[str, str] = {}


def _runs_as(exe: str, version: str) -> Optional[str]:
    """The real interpreter behind `exe` when it starts and is Python `version` (X.Y), else None:
    a pyenv shim of a version that is not selected is on PATH but exits 127."""
    try:
        out = subprocess.run([exe, "-c", "import sys; print('%d.%d' % sys.version_info[:2]); print(sys.executable)"],
                             capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    lines = out.stdout.split("\n")
    return lines[1].strip() or exe if out.returncode == 0 and lines[0].strip() == version else None


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


def _build(env: Env, env_dir: Path, uv: List[str], source: Tuple[str, Path], procs: _Procs,
           log: IO[str], stamp: str) -> None:
    """Creates the environment from scratch; raises RuntimeError on failure."""
    python = env_dir / "bin" / "python"

    def step(cmd: List[str]) -> None:
        rc = procs.call(cmd, log=log)
        if rc != 0:
            raise RuntimeError(f"`{' '.join(cmd[:4])} ...` exited with {rc}")

    step(uv + ["venv", "--allow-existing", "-p", interpreter_for(env.python), str(env_dir)])
    packages = _expand_requirements(env.packages)
    pip_args = list(env.pip_args) + machine_pip_args()
    if env.install_compat_clone:
        if source[0] == "editable":
            packages += ["-e", str(source[1])]
        elif source[0] == "wheel":
            packages += _wheel_requirements(source[1])  # the wheel itself: `_post_install`
        else:
            packages += ["packaging>=21", 'tomli; python_version < "3.11"', 'importlib_metadata>=3.6; python_version < "3.8"']
    step(uv + ["pip", "install", "--python", str(python)] + pip_args + packages)
    if env.no_deps:
        step(uv + ["pip", "install", "--python", str(python), "--no-deps"] + pip_args
             + _expand_requirements(env.no_deps))
    (env_dir / _STAMP_FILE).write_text(stamp + "\n", encoding="utf-8")


def env_environ(env: Env, env_dir: Path) -> Dict[str, str]:
    """The process environment a command runs with in `env` (built at `env_dir`).

    The caller's variables, less those that decide which Keras loads
    (``PYTHONPATH``, ``KERAS_BACKEND``, ...; only the table sets them), with the
    environment's ``bin`` first on ``PATH``, ``VIRTUAL_ENV`` and the table's variables.
    """
    environ = {k: v for k, v in os.environ.items()
               if k not in _SCRUBBED and not k.startswith("COMPAT_CLONE_EXPECT_")}
    environ["PATH"] = os.pathsep.join([str(env_dir / "bin"), os.environ.get("PATH", "")])
    environ["VIRTUAL_ENV"] = str(env_dir)
    environ.update(dict(env.env))
    return environ


def _child_environ(env: Env, env_dir: Path, results: Path, uv: List[str],
                   siblings: Sequence[str] = (), table: str = "") -> Dict[str, str]:
    environ = env_environ(env, env_dir)
    environ["COMPAT_CLONE_ENV"] = env.name
    environ["COMPAT_CLONE_CLAIM_FILE"] = str(env_dir / _CLAIM_FILE)
    if table:
        environ["COMPAT_CLONE_TABLE"] = table
    # Where the other environments of this run live, and which they are: every
    # one was built before any command ran, so a test may use a sibling's
    # interpreter (compat-clone convert reads Keras 2 files there).
    environ["COMPAT_CLONE_MATRIX_DIR"] = str(env_dir.parent)
    environ["COMPAT_CLONE_MATRIX_ENVS"] = ",".join(siblings or (env.name,))
    environ.update(env.expect_vars())
    environ["COMPAT_CLONE_RESULTS"] = str(results)
    if len(uv) == 1:
        environ["COMPAT_CLONE_UV"] = uv[0]
    environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    return environ


@contextlib.contextmanager
def _env_lock(root: Path, env: Env, say: Any) -> Iterator[None]:
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


def _prepare_one(env: Env, *, root: Path, uv: List[str], source: Tuple[str, Path], procs: _Procs,
                 rebuild: bool, say: Any) -> _Outcome:
    """Builds (or reuses) one environment and runs nothing: the first phase of a matrix run.

    `compat-clone matrix` prepares every selected environment before it runs
    the command in any, so a command may use a sibling environment (the
    cross-environment conversion tests do). The outcome carries the build
    status into `_run_one(..., prepared=...)`.
    """
    with _env_lock(root, env, say):
        out = _Outcome(env=env.name)
        env_dir = root / env.name
        _ensure_built(env, env_dir, out, uv=uv, source=source, procs=procs, rebuild=rebuild, say=say)
        return out


def build_env(env: Env, env_dir: Path, *, rebuild: bool = False, say: Any = None) -> _Outcome:
    """Builds `env` at `env_dir` as `compat-clone matrix` does, or reuses it when its stamp is fresh.

    Waits for a matrix run that holds the environment. Used by
    `compat-clone convert` for the environments it reads and writes models in.

    Args:
        env: the table's environment.
        env_dir: its folder (``.matrix/<name>``).
        rebuild: rebuild even if the stamp is fresh.
        say: ``say(env_name, text)`` for progress; None prints to stderr.

    Returns:
        The outcome: ``build`` is ``"built"``, ``"reused"`` or ``"FAILED"``;
        ``log`` names the build log.
    """
    def _stderr(name: str, text: str) -> None:
        print(f"{name}: {text}", file=sys.stderr, flush=True)

    tell = say if say is not None else _stderr
    with _env_lock(env_dir.parent, env, tell):
        out = _Outcome(env=env.name)
        # uv, when it must be bootstrapped, goes next to the environments' folder
        # (the per-user cache for `compat-clone convert`), never into the caller's folder.
        uv = _find_uv(env_dir.parent.parent)
        _ensure_built(env, env_dir, out, uv=uv, source=_self_source(), procs=_Procs(), rebuild=rebuild, say=tell,
                      tick_s=_BUILD_TICK_S)
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
            say(name, f"still building ({_fmt_s(time.monotonic() - start)} so far; log: {log})")

    ticker = threading.Thread(target=tick, name=f"compat-clone-build-{name}", daemon=True)
    ticker.start()
    try:
        yield
    finally:
        done.set()
        ticker.join()


def _ensure_built(env: Env, env_dir: Path, out: _Outcome, *, uv: List[str], source: Tuple[str, Path],
                  procs: _Procs, rebuild: bool, say: Any, tick_s: Optional[float] = None) -> bool:
    """Builds or reuses `env` (lock held), writing the log header; False on a build failure.

    With `tick_s`, a build says every `tick_s` seconds how long it has run, and
    ``built in N s`` when done (`compat-clone convert`, whose user waits on it).
    """
    stamp = env_stamp(env, source)
    stamp_path = env_dir / _STAMP_FILE
    python = env_dir / "bin" / "python"
    fresh = (not rebuild and python.exists() and stamp_path.is_file()
             and stamp_path.read_text(encoding="utf-8").strip() == stamp)
    if not fresh and env_dir.exists():
        shutil.rmtree(env_dir)
    env_dir.mkdir(parents=True, exist_ok=True)
    out.log = env_dir / _LOG_FILE
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
            _post_install(env, python, source, uv, procs, log)
        except (RuntimeError, OSError, subprocess.CalledProcessError, ValueError) as e:
            out.build, out.status = "FAILED", "BUILD FAILED"
            out.build_s = time.monotonic() - start
            log.write(f"\ncompat-clone matrix: building {env.name} failed: {e}\n")
            say(env.name, f"build FAILED ({e}); log: {out.log}")
            return False
        out.build_s = time.monotonic() - start
    return True


def _run_one(env: Env, *, root: Path, results: Path, command: Sequence[str], uv: List[str],
             source: Tuple[str, Path], procs: _Procs, timeout: Optional[float], rebuild: bool,
             say: Any, prepared: Optional[_Outcome] = None, siblings: Sequence[str] = (),
             table: str = "", progress: Any = None) -> _Outcome:
    """Builds (or reuses) one environment and runs the command in it.

    Another `compat-clone matrix` run using the same environment folder (a
    second terminal, a benchmark) is waited for: one run at a time per
    environment, so a rebuild never pulls the floor from under a running one.
    With `prepared` (the outcome of `_prepare_one`), the environment built in
    the first phase is used as it is; a failed build is reported, not retried.
    `siblings` names the environments of the run, exported to the command as
    ``COMPAT_CLONE_MATRIX_ENVS``. `table` (`table_id`) tags the results and
    the outcome the run writes. `progress`, when given, is told when the
    command starts and ends (``progress.begin(name, log)`` / ``end(name)``).
    """
    with _env_lock(root, env, say):
        if prepared is not None and prepared.build == "FAILED":
            out = prepared
        else:
            out = _run_one_locked(env, root=root, results=results, command=command, uv=uv, source=source,
                                  procs=procs, timeout=timeout, rebuild=rebuild, say=say, prepared=prepared,
                                  siblings=siblings, table=table, progress=progress)
        _write_outcome(results, out, table)
        return out


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _tag_records(path: Path, tags: Mapping[str, str]) -> None:
    """Adds `tags` (``table``, ``produced``) to every JSON record of a ``.jsonl`` file that lacks them."""
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            record = None
        if isinstance(record, dict):
            line = json.dumps({**tags, **record})
        lines.append(line)
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")


def _publish_results(staging: Path, results: Path, table: str = "", keep: bool = True) -> None:
    """Moves the run's result files into `results`, replacing older ones.

    Every record is tagged with the table and the time it was produced, so a
    report never mixes them with another table's results for the same
    environment name. A run that records nothing (a benchmark, a subset of
    tests that records no feature) leaves the previous results of the
    environment in place; so does a run whose results are void (`keep`
    False: the environment is not what it claims).
    """
    if staging.is_dir():
        if keep:
            tags = {"table": table, "produced": _now()} if table else {"produced": _now()}
            for item in staging.iterdir():
                if item.is_file():
                    if item.suffix == ".jsonl":
                        _tag_records(item, tags)
                    os.replace(item, results / item.name)
        shutil.rmtree(staging, ignore_errors=True)


def _read_claim(path: Path) -> Optional[Dict[str, Any]]:
    """The pytest plugin's claim check of this run, if it ran."""
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def _run_one_locked(env: Env, *, root: Path, results: Path, command: Sequence[str], uv: List[str],
                    source: Tuple[str, Path], procs: _Procs, timeout: Optional[float], rebuild: bool,
                    say: Any, prepared: Optional[_Outcome], siblings: Sequence[str], table: str = "",
                    progress: Any = None) -> _Outcome:
    env_dir = root / env.name
    stamp_path = env_dir / _STAMP_FILE
    still_fresh = (prepared is not None and (env_dir / "bin" / "python").exists() and stamp_path.is_file()
                   and stamp_path.read_text(encoding="utf-8").strip() == env_stamp(env, source))
    if prepared is not None and still_fresh:
        out = prepared  # built (or reused) in the first phase; its log goes on
    else:  # no first phase, or another run changed the environment since
        out = _Outcome(env=env.name)
        if not _ensure_built(env, env_dir, out, uv=uv, source=source, procs=procs,
                             rebuild=rebuild and prepared is None, say=say):
            return out
    assert out.log is not None
    with open(out.log, "a", encoding="utf-8", errors="replace") as log:
        # The command writes its result files into a staging folder of its own.
        staging = results / f".run-{os.getpid()}-{env.name}"
        shutil.rmtree(staging, ignore_errors=True)
        environ = _child_environ(env, env_dir, staging, uv, siblings, table)
        claim_file = env_dir / _CLAIM_FILE
        try:
            claim_file.unlink()  # a check that does not run this time must not look like it did
        except FileNotFoundError:
            pass
        exe = shutil.which(command[0], path=environ["PATH"])
        if exe is None:
            out.status = "FAILED"
            log.write(f"compat-clone matrix: command {command[0]!r} not found on PATH={environ['PATH']}\n")
            say(env.name, f"FAILED: {command[0]!r} not found in the environment or on PATH")
            return out
        staging.mkdir(parents=True)
        say(env.name, f"running ({out.build} in {_fmt_s(out.build_s)})")
        log.write(f"# environment: {json.dumps({**dict(env.env), **env.expect_vars()}, sort_keys=True)}\n")
        start = time.monotonic()
        cpu: List[float] = []
        if progress is not None:
            progress.begin(env.name, out.log)
        try:
            rc = procs.call([exe] + list(command[1:]), log=log, env=environ, cwd=Path.cwd(), timeout=timeout, cpu=cpu)
        finally:
            if progress is not None:
                progress.end(env.name)
        out.run_s = time.monotonic() - start
        out.cpu_s = cpu[0] if cpu else None
        claim = _read_claim(claim_file)
        mislabeled = claim is not None and not claim.get("ok")
        if claim is not None:
            out.loaded = str(claim.get("loaded") or "nothing")
            # The proof, whatever the command's own output options (pytest -q hides its header).
            log.write(f"\ncompat-clone matrix: {env.name} loaded {out.loaded}\n")
            if mislabeled:
                log.write(f"compat-clone matrix: {env.name} is MISLABELED: "
                          f"{'; '.join(str(p) for p in claim.get('problems', ()))}\n")
        _publish_results(staging, results, table, keep=not mislabeled)
    out.returncode = rc
    out.counts = parse_pytest_summary(out.log.read_text(encoding="utf-8", errors="replace"))
    out.status = "MISLABELED" if mislabeled else _status(
        rc, out.counts, timed_out=timeout is not None and rc == -signal.SIGKILL and out.run_s >= timeout)
    loaded = f"; loaded {out.loaded}" if out.loaded else ""
    say(env.name, f"{out.status} in {_fmt_s(out.run_s)}{_counts_text(out.counts)}{loaded}")
    return out




def _status(rc: int, counts: Optional[Dict[str, int]], *, timed_out: bool) -> str:
    """The summary's status of a command that ran: exit code first, then pytest's counts."""
    if timed_out:
        return "TIMEOUT"
    if rc == 5 and counts is not None:  # pytest: no tests were collected
        return "NO TESTS"
    if rc != 0:
        return "FAILED"
    if counts is not None and counts["passed"] == 0:
        return "NONE PASSED"  # an environment where every test skipped proves nothing
    return "ok"


def _write_outcome(results: Path, out: _Outcome, table: str = "") -> None:
    """``<results>/<env>.outcome.json``: how the environment's last run ended, for reports merged elsewhere.

    It names the table that defined the environment (`table_id`) and the time
    the run ended: a report of another table ignores it.
    """
    results.mkdir(parents=True, exist_ok=True)
    record = {"env": out.env, "status": out.status, "build": out.build, "counts": out.counts,
              "seconds": round(out.build_s + out.run_s, 1), "loaded": out.loaded, "finished": _now()}
    if table:
        record["table"] = table
    tmp = results / f".{out.env}.outcome.json.tmp"
    tmp.write_text(json.dumps(record, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, results / f"{out.env}.outcome.json")
