"""Building an environment with uv (or reusing it) and running one command in it."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import IO, Any, Dict, List, Optional, Sequence, Tuple

from compat_clone.tools.matrix.procs import _Procs
from compat_clone.tools.matrix.summary import _counts_text, _fmt_s, _Outcome, parse_pytest_summary
from compat_clone.tools.matrix.table import Env, _toml_loads

__all__ = ["env_stamp"]

# Bump when the way an environment is built changes: every stamp goes stale.
_BUILD_SCHEMA = 1
_STAMP_FILE = ".compat-clone-stamp"
_LOG_FILE = "last.log"
_RESULTS_DIR = "_results"
# Variables that shape which Keras an environment loads: never inherited from
# the caller's shell, only set from the table.
_SCRUBBED = ("PYTHONPATH", "PYTHONHOME", "KERAS_BACKEND", "TF_USE_LEGACY_KERAS", "VIRTUAL_ENV")


# --------------------------------------------------------------------------- uv


def _self_source() -> Tuple[str, Path]:
    """How to install the running compat_clone: ("editable", repo) or ("copy", package dir)."""
    pkg = Path(__file__).resolve().parents[2]  # compat_clone/tools/matrix -> compat_clone
    repo = pkg.parent
    pyproject = repo / "pyproject.toml"
    if pyproject.is_file():
        try:
            name = _toml_loads(pyproject.read_text(encoding="utf-8")).get("project", {}).get("name")
        except ValueError:
            name = None
        if name == "compat-clone":
            return "editable", repo
    return "copy", pkg


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
        "pip_args": list(env.pip_args),
        "self": [src[0], str(src[1])] if env.install_compat_clone else None,
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


def _post_install(env: Env, python: Path, source: Tuple[str, Path], log: IO[str]) -> None:
    """Steps re-applied on every run (cheap, idempotent): the copied compat_clone
    (when not editable) and the environment's fix-up `.pth`."""
    site = None
    if env.install_compat_clone and source[0] == "copy":
        site = _site_packages(python)
        target = Path(site) / "compat_clone"
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(source[1], target, ignore=shutil.ignore_patterns("__pycache__"))
        _write_dist_info(Path(site))
        log.write(f"compat-clone matrix: copied {source[1]} -> {target}\n")
    if env.fixup:
        if not env.install_compat_clone:
            raise RuntimeError(
                f"environment {env.name!r} needs fix-up {env.fixup!r}, which runs from "
                "compat_clone inside the environment: set install_compat_clone = true."
            )
        from compat_clone.tools import envfix

        path = envfix.install_into(site or _site_packages(python), env.fixup)
        log.write(f"compat-clone matrix: fix-up {env.fixup!r} installed: {path}\n")


def _write_dist_info(site: Path) -> None:
    """The copied compat_clone's metadata: its version and entry points (the pytest plugin)."""
    from importlib import metadata

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


def _build(env: Env, env_dir: Path, uv: List[str], source: Tuple[str, Path], procs: _Procs,
           log: IO[str], stamp: str) -> None:
    """Creates the environment from scratch; raises RuntimeError on failure."""
    python = env_dir / "bin" / "python"

    def step(cmd: List[str]) -> None:
        rc = procs.call(cmd, log=log)
        if rc != 0:
            raise RuntimeError(f"`{' '.join(cmd[:4])} ...` exited with {rc}")

    step(uv + ["venv", "--allow-existing", "-p", env.python, str(env_dir)])
    packages = _expand_requirements(env.packages)
    if env.install_compat_clone:
        if source[0] == "editable":
            packages += ["-e", str(source[1])]
        else:
            packages += ["packaging>=21", 'tomli; python_version < "3.11"']
    step(uv + ["pip", "install", "--python", str(python)] + list(env.pip_args) + packages)
    if env.no_deps:
        step(uv + ["pip", "install", "--python", str(python), "--no-deps"] + list(env.pip_args)
             + _expand_requirements(env.no_deps))
    (env_dir / _STAMP_FILE).write_text(stamp + "\n", encoding="utf-8")


def _child_environ(env: Env, env_dir: Path, results: Path, uv: List[str]) -> Dict[str, str]:
    environ = {k: v for k, v in os.environ.items()
               if k not in _SCRUBBED and not k.startswith("COMPAT_CLONE_EXPECT_")}
    environ["PATH"] = os.pathsep.join([str(env_dir / "bin"), os.environ.get("PATH", "")])
    environ["VIRTUAL_ENV"] = str(env_dir)
    environ.update(dict(env.env))
    environ["COMPAT_CLONE_ENV"] = env.name
    environ.update(env.expect_vars())
    environ["COMPAT_CLONE_RESULTS"] = str(results)
    if len(uv) == 1:
        environ["COMPAT_CLONE_UV"] = uv[0]
    environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    return environ


def _run_one(env: Env, *, root: Path, results: Path, command: Sequence[str], uv: List[str],
             source: Tuple[str, Path], procs: _Procs, timeout: Optional[float], rebuild: bool,
             say: Any) -> _Outcome:
    """Builds (or reuses) one environment and runs the command in it.

    Another `compat-clone matrix` run using the same environment folder (a
    second terminal, a benchmark) is waited for: one run at a time per
    environment, so a rebuild never pulls the floor from under a running one.
    """
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
        out = _run_one_locked(env, root=root, results=results, command=command, uv=uv, source=source,
                              procs=procs, timeout=timeout, rebuild=rebuild, say=say)
        _write_outcome(results, out)
        return out


def _publish_results(staging: Path, results: Path) -> None:
    """Moves the run's result files into `results`, replacing older ones.

    A run that records nothing (a benchmark, a subset of tests that records
    no feature) leaves the previous results of the environment in place.
    """
    if staging.is_dir():
        for item in staging.iterdir():
            if item.is_file():
                os.replace(item, results / item.name)
        shutil.rmtree(staging, ignore_errors=True)


def _run_one_locked(env: Env, *, root: Path, results: Path, command: Sequence[str], uv: List[str],
                    source: Tuple[str, Path], procs: _Procs, timeout: Optional[float], rebuild: bool,
                    say: Any) -> _Outcome:
    out = _Outcome(env=env.name)
    env_dir = root / env.name
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
                say(env.name, "building")
                _build(env, env_dir, uv, source, procs, log, stamp)
                out.build = "built"
            _post_install(env, python, source, log)
        except (RuntimeError, OSError, subprocess.CalledProcessError, ValueError) as e:
            out.build, out.status = "FAILED", "BUILD FAILED"
            out.build_s = time.monotonic() - start
            log.write(f"\ncompat-clone matrix: building {env.name} failed: {e}\n")
            say(env.name, f"build FAILED ({e}); log: {out.log}")
            return out
        out.build_s = time.monotonic() - start
        # The command writes its result files into a staging folder of its own.
        staging = results / f".run-{os.getpid()}-{env.name}"
        shutil.rmtree(staging, ignore_errors=True)
        environ = _child_environ(env, env_dir, staging, uv)
        exe = shutil.which(command[0], path=environ["PATH"])
        if exe is None:
            out.status = "FAILED"
            log.write(f"compat-clone matrix: command {command[0]!r} not found on PATH={environ['PATH']}\n")
            say(env.name, f"FAILED: {command[0]!r} not found in the environment or on PATH")
            return out
        staging.mkdir(parents=True)
        say(env.name, f"running ({out.build} in {_fmt_s(out.build_s)})")
        log.write(f"# environment: {json.dumps(dict(env.env) | env.expect_vars(), sort_keys=True)}\n")
        start = time.monotonic()
        cpu: List[float] = []
        rc = procs.call([exe] + list(command[1:]), log=log, env=environ, cwd=Path.cwd(), timeout=timeout, cpu=cpu)
        out.run_s = time.monotonic() - start
        out.cpu_s = cpu[0] if cpu else None
        _publish_results(staging, results)
    out.returncode = rc
    out.counts = parse_pytest_summary(out.log.read_text(encoding="utf-8", errors="replace"))
    out.status = _status(rc, out.counts, timed_out=timeout is not None and rc == -signal.SIGKILL and out.run_s >= timeout)
    say(env.name, f"{out.status} in {_fmt_s(out.run_s)}{_counts_text(out.counts)}")
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


def _write_outcome(results: Path, out: _Outcome) -> None:
    """``<results>/<env>.outcome.json``: how the environment's last run ended, for reports merged elsewhere."""
    results.mkdir(parents=True, exist_ok=True)
    record = {"env": out.env, "status": out.status, "build": out.build, "counts": out.counts,
              "seconds": round(out.build_s + out.run_s, 1)}
    tmp = results / f".{out.env}.outcome.json.tmp"
    tmp.write_text(json.dumps(record, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, results / f"{out.env}.outcome.json")
