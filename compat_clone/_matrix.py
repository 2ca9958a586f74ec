"""`compat-clone matrix`: run one command in every environment of a version matrix.

The matrix is data: a TOML table of environments (the built-in
``compat_clone/matrix.toml`` holds known-good pins for every Keras family, or
pass ``--table FILE.toml``). For each selected environment the runner

1. creates it with `uv` under ``.matrix/<name>/`` of the current folder, or
   reuses it when a stamp of its pins says nothing changed;
2. installs the `compat_clone` that is running the matrix into it (editable
   when it runs from a source checkout) and the environment's fix-up, if any;
3. runs ``COMMAND`` with the environment's ``bin`` first on ``PATH``,
   ``VIRTUAL_ENV`` set, the table's variables, and ``COMPAT_CLONE_ENV``,
   ``COMPAT_CLONE_EXPECT_{FAMILY,VERSION,BACKEND}``, ``COMPAT_CLONE_RESULTS``;
   its output goes to ``.matrix/<name>/last.log``; the result files it writes
   replace that environment's previous ones in ``.matrix/_results/``.

Environments run in parallel, ``--jobs`` at a time (default: one per core,
at most one per 4 GB of memory). One summary table closes the run; the exit
status is 1 when any environment failed to build, failed its command, ran no
test, or passed none.

Example:

    compat-clone matrix --list
    compat-clone matrix -- python -m pytest -q tests
    compat-clone matrix --env 'keras-3.15-*' --table my_matrix.toml -- pytest
"""

from __future__ import annotations

import argparse
import dataclasses
import fnmatch
import hashlib
import importlib.util
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import IO, Any, Dict, List, Mapping, Optional, Sequence, Set, Tuple

__all__ = [
    "Env",
    "TableError",
    "load_table",
    "parse_table",
    "select_envs",
    "env_stamp",
    "parse_pytest_summary",
    "default_jobs",
    "add_arguments",
    "run",
]

# Bump when the way an environment is built changes: every stamp goes stale.
_BUILD_SCHEMA = 1
_STAMP_FILE = ".compat-clone-stamp"
_LOG_FILE = "last.log"
_RESULTS_DIR = "_results"
_FAMILIES = ("keras3", "tf_keras", "keras2")
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")
# Variables that shape which Keras an environment loads: never inherited from
# the caller's shell, only set from the table.
_SCRUBBED = ("PYTHONPATH", "PYTHONHOME", "KERAS_BACKEND", "TF_USE_LEGACY_KERAS", "VIRTUAL_ENV")
_GB = 1024**3


class TableError(ValueError):
    """The matrix table (TOML) is malformed, or names an unknown environment."""


@dataclasses.dataclass(frozen=True)
class Env:
    """One environment of the matrix, as the table describes it.

    Attributes:
        name: folder name under ``.matrix/`` and the value of ``COMPAT_CLONE_ENV``.
        python: interpreter request passed to ``uv venv -p``.
        packages: requirements installed together (defaults included).
        no_deps: requirements installed afterwards with ``--no-deps``.
        pip_args: extra arguments for every ``uv pip install``.
        env: environment variables set when the command runs.
        fixup: name of a `compat_clone._envfix` fix-up, or None.
        expect: the claim (``family``, ``version``, ``backend``).
        enabled: False leaves it out unless selected by name.
        install_compat_clone: install the running `compat_clone` into it.
        note: free text.
    """

    name: str
    python: str
    packages: Tuple[str, ...]
    no_deps: Tuple[str, ...] = ()
    pip_args: Tuple[str, ...] = ()
    env: Tuple[Tuple[str, str], ...] = ()
    fixup: Optional[str] = None
    expect: Tuple[Tuple[str, str], ...] = ()
    enabled: bool = True
    install_compat_clone: bool = True
    note: str = ""

    def expect_vars(self) -> Dict[str, str]:
        """``COMPAT_CLONE_EXPECT_*`` variables for the claim."""
        return {f"COMPAT_CLONE_EXPECT_{k.upper()}": v for k, v in self.expect}


# --------------------------------------------------------------------------- table

_DEFAULT_KEYS = {"python", "packages", "pip_args", "env", "install_compat_clone"}
_ENV_KEYS = {
    "name",
    "python",
    "packages",
    "no_deps",
    "pip_args",
    "env",
    "fixup",
    "expect",
    "enabled",
    "install_compat_clone",
    "note",
}
_EXPECT_KEYS = {"family", "version", "backend"}


def _toml_loads(text: str) -> Dict[str, Any]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python < 3.11
        import tomli as tomllib  # dependency with marker python_version < "3.11"
    return tomllib.loads(text)


def _str_list(value: Any, where: str) -> Tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise TableError(f"Expected {where} to be a list of strings. Received: {value!r}.")
    return tuple(value)


def _str_map(value: Any, where: str) -> Dict[str, str]:
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise TableError(
            f"Expected {where} to be a table of strings, e.g. "
            f'{{ KERAS_BACKEND = "jax" }}. Received: {value!r}.'
        )
    return dict(value)


def _check_keys(table: Mapping[str, Any], allowed: Set[str], where: str) -> None:
    unknown = sorted(set(table) - allowed)
    if unknown:
        raise TableError(
            f"Unknown key(s) {', '.join(map(repr, unknown))} in {where}. "
            f"Allowed keys: {', '.join(sorted(allowed))}."
        )


def parse_table(data: Mapping[str, Any], source: str = "<table>") -> List[Env]:
    """Validates a parsed TOML table and returns its environments.

    Args:
        data: the parsed TOML document (``[defaults]`` and ``[[env]]``).
        source: where it came from, for error messages.

    Returns:
        The environments in table order, defaults merged in.

    Raises:
        TableError: unknown keys, wrong types, a missing or duplicate name,
            or a claim (``expect``) naming an unknown family.

    Example:

    >>> envs = parse_table({"env": [{"name": "k3", "packages": ["keras==3.15.1"]}]})
    >>> envs[0].packages
    ('keras==3.15.1',)
    """
    _check_keys(data, {"defaults", "env"}, f"the top level of {source}")
    defaults = data.get("defaults", {})
    if not isinstance(defaults, dict):
        raise TableError(f"Expected [defaults] in {source} to be a table. Received: {defaults!r}.")
    _check_keys(defaults, _DEFAULT_KEYS, f"[defaults] of {source}")
    d_python = defaults.get("python", f"{sys.version_info[0]}.{sys.version_info[1]}")
    d_packages = _str_list(defaults.get("packages", []), f"defaults.packages in {source}")
    d_pip_args = _str_list(defaults.get("pip_args", []), f"defaults.pip_args in {source}")
    d_env = _str_map(defaults.get("env", {}), f"defaults.env in {source}")
    d_self = defaults.get("install_compat_clone", True)
    if not isinstance(d_self, bool):
        raise TableError(f"Expected defaults.install_compat_clone in {source} to be true or false. Received: {d_self!r}.")
    raw_envs = data.get("env")
    if not isinstance(raw_envs, list) or not raw_envs:
        raise TableError(
            f"Expected {source} to define at least one environment as [[env]] "
            f"with a `name` and `packages`. Received: env={raw_envs!r}."
        )
    envs: List[Env] = []
    seen: Set[str] = set()
    for i, raw in enumerate(raw_envs):
        where = f"[[env]] #{i + 1} of {source}"
        if not isinstance(raw, dict):
            raise TableError(f"Expected {where} to be a table. Received: {raw!r}.")
        _check_keys(raw, _ENV_KEYS, where)
        name = raw.get("name")
        if not isinstance(name, str) or not _NAME_RE.match(name):
            raise TableError(
                f"Expected `name` of {where} to be a folder-safe name (letters, "
                f"digits, '.', '_', '+', '-'; not starting with a symbol). "
                f"Received: name={name!r}."
            )
        if name in seen:
            raise TableError(f"Duplicate environment name {name!r} in {source}.")
        seen.add(name)
        where = f"environment {name!r} of {source}"
        if "packages" not in raw:
            raise TableError(f"Missing `packages` in {where}: list its pinned requirements.")
        python = raw.get("python", d_python)
        if not isinstance(python, str):
            raise TableError(f'Expected `python` of {where} to be a string like "3.11". Received: {python!r}.')
        expect = _str_map(raw.get("expect", {}), f"`expect` of {where}")
        _check_keys(expect, _EXPECT_KEYS, f"`expect` of {where}")
        if "family" in expect and expect["family"] not in _FAMILIES:
            raise TableError(
                f"Expected `expect.family` of {where} to be one of {', '.join(_FAMILIES)}. "
                f"Received: {expect['family']!r}."
            )
        fixup = raw.get("fixup")
        if fixup is not None and not isinstance(fixup, str):
            raise TableError(f"Expected `fixup` of {where} to be a string. Received: {fixup!r}.")
        for flag in ("enabled", "install_compat_clone"):
            if flag in raw and not isinstance(raw[flag], bool):
                raise TableError(f"Expected `{flag}` of {where} to be true or false. Received: {raw[flag]!r}.")
        note = raw.get("note", "")
        if not isinstance(note, str):
            raise TableError(f"Expected `note` of {where} to be a string. Received: {note!r}.")
        env_vars = dict(d_env)
        env_vars.update(_str_map(raw.get("env", {}), f"`env` of {where}"))
        envs.append(
            Env(
                name=name,
                python=python,
                packages=_str_list(raw["packages"], f"`packages` of {where}") + d_packages,
                no_deps=_str_list(raw.get("no_deps", []), f"`no_deps` of {where}"),
                pip_args=d_pip_args + _str_list(raw.get("pip_args", []), f"`pip_args` of {where}"),
                env=tuple(sorted(env_vars.items())),
                fixup=fixup,
                expect=tuple(sorted(expect.items())),
                enabled=bool(raw.get("enabled", True)),
                install_compat_clone=bool(raw.get("install_compat_clone", d_self)),
                note=note,
            )
        )
    return envs


def load_table(path: "Optional[os.PathLike[str] | str]" = None) -> List[Env]:
    """Loads a matrix table: the built-in one, or a TOML file.

    Args:
        path: a TOML file with the schema of ``compat_clone/matrix.toml``;
            None for the built-in table.

    Returns:
        The environments in table order.

    Raises:
        TableError: the file is missing, is not TOML, or fails validation.
    """
    if path is None:
        from importlib import resources

        source = "compat_clone/matrix.toml"
        text = resources.files("compat_clone").joinpath("matrix.toml").read_text(encoding="utf-8")
    else:
        source = os.fspath(path)
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as e:
            raise TableError(f"Cannot read the matrix table {source!r}: {e.strerror}. Pass an existing TOML file to --table.") from None
    try:
        data = _toml_loads(text)
    except ValueError as e:  # tomllib.TOMLDecodeError is a ValueError
        raise TableError(f"The matrix table {source!r} is not valid TOML: {e}.") from None
    return parse_table(data, source)


def select_envs(envs: Sequence[Env], patterns: Optional[Sequence[str]]) -> List[Env]:
    """Picks environments by name or glob (``keras-3.15-*``), in table order.

    Without patterns every enabled environment is picked; a disabled one is
    picked only when a pattern names it exactly.

    Raises:
        TableError: a pattern that matches no environment.
    """
    if not patterns:
        return [e for e in envs if e.enabled]
    names: List[str] = []
    for item in patterns:
        names.extend(p.strip() for p in item.split(",") if p.strip())
    chosen: Set[str] = set()
    for pat in names:
        hits = [e for e in envs if e.name == pat or (fnmatch.fnmatchcase(e.name, pat) and e.enabled)]
        if not hits:
            raise TableError(
                f"No environment matches --env {pat!r}. Known environments: "
                f"{', '.join(e.name for e in envs)}."
            )
        chosen.update(e.name for e in hits)
    return [e for e in envs if e.name in chosen]


# --------------------------------------------------------------------------- uv


def _self_source() -> Tuple[str, Path]:
    """How to install the running compat_clone: ("editable", repo) or ("copy", package dir)."""
    pkg = Path(__file__).resolve().parent
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


# --------------------------------------------------------------------------- jobs


def default_jobs() -> int:
    """Parallel environments: one per core, at most one per 4 GB of memory.

    A TensorFlow test process with xdist workers peaks around 2-3 GB; 4 GB per
    environment leaves room for the build step's unpacking as well.
    """
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - macOS / Windows
        cores = os.cpu_count() or 1
    try:
        mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # pragma: no cover
        mem = 8 * _GB
    return max(1, min(cores, mem // (4 * _GB)))


# --------------------------------------------------------------------------- summary

_SUMMARY_LINE_RE = re.compile(r"\b(\d+) (passed|failed|skipped|errors?|xfailed|xpassed|deselected)\b")
_IN_TIME_RE = re.compile(r"\bin [0-9.]+s\b")


def parse_pytest_summary(text: str) -> Optional[Dict[str, int]]:
    """Counts from pytest's closing line (``3 passed, 1 skipped in 2.1s``).

    Returns:
        ``{"passed", "failed", "skipped", "errors", "xfailed", "xpassed",
        "deselected"}`` counts, or None when the text has no pytest closing
        line (the command was not pytest, or it crashed). ``no tests ran``
        gives all zeros.

    Example:

    >>> parse_pytest_summary("== 3 passed, 1 skipped, 2 warnings in 2.10s ==")["passed"]
    3
    """
    for line in reversed(text.splitlines()):
        line = line.strip().strip("=").strip()
        if not _IN_TIME_RE.search(line):
            continue
        counts = {k: 0 for k in ("passed", "failed", "skipped", "errors", "xfailed", "xpassed", "deselected")}
        found = False
        for num, word in _SUMMARY_LINE_RE.findall(line):
            counts["errors" if word.startswith("error") else word] += int(num)
            found = True
        if found or line.startswith("no tests ran"):
            return counts
    return None


# --------------------------------------------------------------------------- running


class _Procs:
    """Process groups of running children, so Ctrl-C or a timeout ends them all."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._procs: Set["subprocess.Popen[bytes]"] = set()

    def call(self, cmd: Sequence[str], *, log: IO[str], env: Optional[Mapping[str, str]] = None,
             cwd: Optional[Path] = None, timeout: Optional[float] = None,
             cpu: Optional[List[float]] = None) -> int:
        """Runs `cmd` in its own process group, output to `log`; returns its exit code.

        The CPU seconds it and its reaped descendants used (xdist workers
        included) are appended to `cpu` where the platform reports them.
        """
        log.write(f"$ {' '.join(cmd)}\n")
        log.flush()
        proc = subprocess.Popen(
            list(cmd), stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            env=dict(env) if env is not None else None, cwd=cwd, start_new_session=True,
        )
        with self._lock:
            self._procs.add(proc)
        try:
            return self._wait(proc, timeout, cpu)
        except subprocess.TimeoutExpired:
            self._kill(proc)
            log.write(f"\ncompat-clone matrix: timed out after {timeout:.0f}s; process group killed\n")
            return -signal.SIGKILL
        finally:
            with self._lock:
                self._procs.discard(proc)

    @staticmethod
    def _wait(proc: "subprocess.Popen[bytes]", timeout: Optional[float], cpu: Optional[List[float]]) -> int:
        wait4 = getattr(os, "wait4", None)
        if wait4 is None or cpu is None:  # pragma: no cover - Windows
            return proc.wait(timeout=timeout)
        deadline = None if timeout is None else time.monotonic() + timeout
        delay = 0.01
        while True:
            pid, status, usage = wait4(proc.pid, os.WNOHANG)
            if pid:
                proc.returncode = os.waitstatus_to_exitcode(status)
                cpu.append(usage.ru_utime + usage.ru_stime)
                return proc.returncode
            if deadline is not None and time.monotonic() >= deadline:
                raise subprocess.TimeoutExpired(proc.args, timeout or 0)
            time.sleep(delay)
            delay = min(delay * 2, 0.25)

    @staticmethod
    def _kill(proc: "subprocess.Popen[bytes]") -> None:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(proc.pid, sig)
            except (ProcessLookupError, PermissionError):
                return
            try:
                proc.wait(timeout=10)
                return
            except subprocess.TimeoutExpired:
                continue

    def kill_all(self) -> None:
        with self._lock:
            procs = list(self._procs)
        for proc in procs:
            self._kill(proc)


@dataclasses.dataclass
class _Outcome:
    env: str
    build: str = ""           # "reused" | "built" | "FAILED"
    status: str = "not run"   # "ok" | "FAILED" | "NO TESTS" | "NONE PASSED" | "BUILD FAILED" | "TIMEOUT"
    returncode: Optional[int] = None
    counts: Optional[Dict[str, int]] = None
    build_s: float = 0.0
    run_s: float = 0.0
    cpu_s: Optional[float] = None  # CPU seconds of the command (all its processes)
    log: Optional[Path] = None

    @property
    def ok(self) -> bool:
        return self.status == "ok"


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
        log.write(f"compat-clone matrix: copied {source[1]} -> {target}\n")
    if env.fixup:
        try:
            from compat_clone import _envfix
        except ImportError as e:
            raise RuntimeError(
                f"environment {env.name!r} needs fix-up {env.fixup!r}, but this compat_clone "
                f"has no compat_clone._envfix ({e}). Update compat_clone or drop `fixup`."
            ) from None
        if not env.install_compat_clone:
            raise RuntimeError(
                f"environment {env.name!r} needs fix-up {env.fixup!r}, which runs from "
                "compat_clone inside the environment: set install_compat_clone = true."
            )
        path = _envfix.install_into(site or _site_packages(python), env.fixup)
        log.write(f"compat-clone matrix: fix-up {env.fixup!r} installed: {path}\n")


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
        return _run_one_locked(env, root=root, results=results, command=command, uv=uv, source=source,
                               procs=procs, timeout=timeout, rebuild=rebuild, say=say)


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
    if timeout is not None and rc == -signal.SIGKILL and out.run_s >= timeout:
        out.status = "TIMEOUT"
    elif rc == 5 and out.counts is not None:  # pytest: no tests were collected
        out.status = "NO TESTS"
    elif rc != 0:
        out.status = "FAILED"
    elif out.counts is not None and out.counts["passed"] == 0:
        # An environment where every test skipped proves nothing.
        out.status = "NONE PASSED"
    else:
        out.status = "ok"
    say(env.name, f"{out.status} in {_fmt_s(out.run_s)}{_counts_text(out.counts)}")
    return out


def _fmt_s(seconds: float) -> str:
    seconds = int(round(seconds))
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"


def _counts_text(counts: Optional[Dict[str, int]]) -> str:
    if counts is None:
        return ""
    return f": {counts['passed']} passed, {counts['failed'] + counts['errors']} failed, {counts['skipped']} skipped"


def format_summary(outcomes: Sequence[_Outcome], wall_s: float) -> str:
    """The closing table: env, build, passed / failed / skipped, status, time."""
    headers = ["env", "build", "passed", "failed", "skipped", "status", "time", "cpu"]
    rows = []
    for o in outcomes:
        c = o.counts
        rows.append([
            o.env,
            o.build or "-",
            str(c["passed"]) if c else "-",
            str(c["failed"] + c["errors"]) if c else "-",
            str(c["skipped"] + c["xfailed"]) if c else "-",
            o.status,
            _fmt_s(o.build_s + o.run_s),
            _fmt_s(o.cpu_s) if o.cpu_s is not None else "-",
        ])
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    numeric = {2, 3, 4, 6, 7}

    def fmt(cells: Sequence[str]) -> str:
        return "  ".join(c.rjust(w) if i in numeric else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    lines = [fmt(headers), fmt(["-" * w for w in widths])] + [fmt(r) for r in rows]
    bad = [o.env for o in outcomes if not o.ok]
    totals = [sum((o.counts or {}).get(k, 0) for o in outcomes) for k in ("passed", "failed", "errors", "skipped")]
    verdict = f"{len(bad)} of {len(outcomes)} environments FAILED: {', '.join(bad)}" if bad else f"all {len(outcomes)} environments passed"
    lines.append(
        f"matrix: {verdict} ({totals[0]} passed, {totals[1] + totals[2]} failed, "
        f"{totals[3]} skipped in {_fmt_s(wall_s)})"
    )
    return "\n".join(lines)


def _tail(path: Optional[Path], n: int) -> str:
    if path is None or not path.exists():
        return ""
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    return "\n".join(lines[-n:])


# --------------------------------------------------------------------------- CLI


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Run COMMAND in every environment of a version matrix (built with uv under "
        ".matrix/<env>/, reused while its pins are unchanged), in parallel, and print "
        "one summary table. Exits 1 if any environment fails."
    )
    parser.epilog = "Example: compat-clone matrix --env 'keras-3.15-*' -- python -m pytest -q tests"
    parser.add_argument("--env", action="append", metavar="NAME",
                        help="environment name or glob; repeat or comma-separate (default: every enabled one)")
    parser.add_argument("--table", metavar="FILE.toml", help="a matrix table of your own (default: the built-in one)")
    parser.add_argument("--jobs", "-j", type=int, metavar="N",
                        help=f"environments run at once (default: min(cores, memory GB // 4); here {default_jobs()})")
    parser.add_argument("--list", action="store_true", help="list the environments and exit")
    parser.add_argument("--root", default=".matrix", metavar="DIR", help="where environments live (default: .matrix)")
    parser.add_argument("--rebuild", action="store_true", help="rebuild the selected environments even if their stamp is fresh")
    parser.add_argument("--timeout", type=float, metavar="SECONDS", help="kill COMMAND in an environment after this long")
    parser.add_argument("--report", metavar="FILE.md",
                        help="afterwards write the feature table (COMPATIBILITY.md) from the environments' "
                             "results; with no COMMAND, only write it")
    parser.add_argument("--readme", metavar="FILE.md",
                        help="with --report: also rewrite the table between <!-- compat-table:start/end --> in this file")
    parser.add_argument("--tail", type=int, default=40, metavar="N",
                        help="print the last N log lines of each failed environment (default: 40)")
    parser.add_argument("command", nargs=argparse.REMAINDER, metavar="-- COMMAND",
                        help="the command to run in each environment, after `--`")
    parser.set_defaults(jobs=None)


def _list(envs: Sequence[Env], root: Path, source: Tuple[str, Path]) -> None:
    width = max(len(e.name) for e in envs)
    for e in envs:
        stamp_path = root / e.name / _STAMP_FILE
        state = "built" if stamp_path.is_file() and stamp_path.read_text().strip() == env_stamp(e, source) else "-"
        claim = " ".join(f"{k}={v}" for k, v in e.expect) or "(no claim)"
        flag = "" if e.enabled else "  [disabled]"
        print(f"{e.name.ljust(width)}  {state:5}  {claim}{flag}")
        print(f"{' ' * width}         {' '.join(e.packages + tuple(f'--no-deps {p}' for p in e.no_deps))}")
        extra = [f"{k}={v}" for k, v in e.env] + ([f"fixup={e.fixup}"] if e.fixup else [])
        if extra:
            print(f"{' ' * width}         {' '.join(extra)}")
        if e.note:
            print(f"{' ' * width}         # {e.note}")


def run(args: argparse.Namespace) -> int:
    command = list(args.command or [])
    if command and command[0] == "--":
        command = command[1:]
    try:
        table = load_table(args.table)
        selected = select_envs(table, args.env)
    except TableError as e:
        print(f"compat-clone matrix: {e}", file=sys.stderr)
        return 2
    root = Path(args.root).resolve()
    source = _self_source()
    results = root / _RESULTS_DIR
    if args.list:
        _list(selected if args.env else table, root, source)
        return 0
    if not command:
        if args.report:
            return _write_report(args, table, results, {})
        print("compat-clone matrix: no COMMAND given. Usage: compat-clone matrix [options] -- COMMAND...\n"
              "  e.g. compat-clone matrix -- python -m pytest -q", file=sys.stderr)
        return 2
    jobs = args.jobs if args.jobs is not None else default_jobs()
    if jobs < 1:
        print(f"compat-clone matrix: expected --jobs >= 1. Received: {jobs}.", file=sys.stderr)
        return 2
    root.mkdir(parents=True, exist_ok=True)
    if not (root / ".gitignore").exists():
        (root / ".gitignore").write_text("*\n", encoding="utf-8")
    uv = _find_uv(Path.cwd())
    print(f"compat-clone matrix: {len(selected)} environment(s), {jobs} at a time, in {root}; "
          f"logs: {root}/<env>/{_LOG_FILE}", flush=True)
    lock = threading.Lock()
    t0 = time.monotonic()

    def say(name: str, text: str) -> None:
        with lock:
            print(f"[{_fmt_s(time.monotonic() - t0):>6}] {name}: {text}", flush=True)

    procs = _Procs()
    outcomes: Dict[str, _Outcome] = {}
    pool = ThreadPoolExecutor(max_workers=jobs)
    futures = {
        e.name: pool.submit(_run_one, e, root=root, results=results, command=command, uv=uv, source=source,
                            procs=procs, timeout=args.timeout, rebuild=args.rebuild, say=say)
        for e in selected
    }
    try:
        for name, fut in futures.items():
            outcomes[name] = fut.result()
    except KeyboardInterrupt:
        procs.kill_all()
        pool.shutdown(wait=False, cancel_futures=True)
        print("\ncompat-clone matrix: interrupted", file=sys.stderr)
        return 130
    pool.shutdown()
    ordered = [outcomes[e.name] for e in selected]
    for o in ordered:
        if not o.ok and args.tail > 0:
            print(f"\n----- {o.env}: {o.status}; last {args.tail} lines of {o.log} -----")
            print(_tail(o.log, args.tail))
    print()
    print(format_summary(ordered, time.monotonic() - t0), flush=True)
    rc = 0 if all(o.ok for o in ordered) else 1
    if args.report:
        rc = max(rc, _write_report(args, table, results, {o.env: o.status for o in ordered}))
    return rc


def _write_report(args: argparse.Namespace, table: Sequence[Env], results: Path, statuses: Dict[str, str]) -> int:
    from compat_clone import _report

    try:
        written = _report.write(results, table, Path(args.report), Path(args.readme) if args.readme else None,
                                statuses=statuses)
    except _report.ReportError as e:
        print(f"compat-clone matrix: {e}", file=sys.stderr)
        return 1
    for path in written:
        print(f"compat-clone matrix: wrote {path}")
    return 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    """``python -m compat_clone._matrix ...``: the subcommand on its own."""
    parser = argparse.ArgumentParser(prog="compat-clone matrix")
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
