"""`--with PKG[==VERSION]`: packages of yours installed where the model is read.

The environment that reads the model (a table's, or a virtualenv given with
``--from PATH``) is never changed. A derived one is built beside the table's
environments, ``<envs dir>/<name>+with-<hash>``, holding exactly the source
environment's distributions (its ``uv pip freeze``, installed ``--no-deps``
from uv's cache: hardlinks, about a second for TensorFlow) and the
requirements, whose dependencies are resolved with every distribution already
there pinned (``uv pip compile --constraint``). It is reused while its
marker, written last, matches; a half-built one is built again.

A requirement that cannot install there (no such package, a conflict with the
old release's pins, no distribution for that Python) is refused before any
work, with uv's reason (`plan_with`); nothing is built then. Importing this
module imports no framework.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any, List, Sequence, Tuple

from compat_clone.errors import InvalidArgumentError

__all__ = ["WithPlan", "parse_requirement", "display_name", "plan_with", "build_with"]

_ARCHIVES = (".whl", ".tar.gz", ".zip", ".tgz", ".tar.bz2")
_MARKER = ".compat-clone-with"
_EXPECTED = (
    "Expected a requirement as uv takes it: a name (my-package), a version (my-package==1.2, my-package>=1,<2) "
    "or the path of a wheel, an sdist or a project folder"
)


@dataclasses.dataclass(frozen=True)
class WithPlan:
    """What `plan_with` resolved: the derived environment to build or reuse.

    Attributes:
        base: the source environment's `Interpreter`.
        table_env: its table entry (None for a path).
        requirements: the ``--with`` values, checked (paths made absolute).
        env_dir: the derived environment's folder.
        pins: the base's distributions (``uv pip freeze``), compat_clone left out.
        resolved: the requirements and their dependencies, pinned as uv resolved them.
        marker: what the marker of a finished build holds.
    """

    base: Any
    table_env: Any
    requirements: Tuple[str, ...]
    env_dir: Path
    pins: Tuple[str, ...]
    resolved: Tuple[str, ...]
    marker: str


def _looks_like_path(text: str) -> bool:
    """A path as uv reads one; a file of that name here too (``notes.txt`` is a valid package name)."""
    separator = os.sep in text or bool(os.altsep and os.altsep in text)
    return separator or text.startswith(".") or text.endswith(_ARCHIVES) or os.path.isfile(text)


def parse_requirement(text: str) -> str:
    """A ``--with`` value, checked before any work: a requirement, or a local distribution's absolute path.

    Args:
        text: what was given (``name``, ``name==1.2``, ``name>=1,<2``,
            ``path/to/pkg-1.0-py3-none-any.whl``, an sdist or a project folder).

    Returns:
        The requirement as uv is given it; a relative path is made absolute
        from the current folder.

    Raises:
        InvalidArgumentError: neither a requirement nor an existing distribution.

    Example:

    >>> parse_requirement("my-package==1.2")
    'my-package==1.2'
    """
    from packaging.requirements import InvalidRequirement, Requirement

    text = text.strip()
    if _looks_like_path(text):
        path = Path(text).expanduser()
        if path.is_dir() and not ((path / "pyproject.toml").is_file() or (path / "setup.py").is_file()):
            raise InvalidArgumentError(f"--with {text!r} is a folder with no pyproject.toml or setup.py. {_EXPECTED}.")
        if not path.exists():
            raise InvalidArgumentError(f"--with {text!r}: no such file or folder. {_EXPECTED}.")
        if path.is_file() and not path.name.endswith(_ARCHIVES):
            raise InvalidArgumentError(f"--with {text!r} is not a wheel or an sdist ({', '.join(_ARCHIVES)}). {_EXPECTED}.")
        return str(path.resolve())
    try:
        Requirement(text)
    except InvalidRequirement as e:
        why = str(e).splitlines()[0].strip()
        raise InvalidArgumentError(f"--with {text!r} is not a requirement ({why}). {_EXPECTED}.") from None
    return text


def display_name(requirement: str) -> str:
    """The import-style name of a checked requirement (``my_package`` for ``my-package==1.2`` or its wheel).

    For messages that suggest ``--custom-objects my_package.layers``.
    """
    if os.path.isabs(requirement):
        name = Path(requirement).name
        name = re.split(r"-\d", name, maxsplit=1)[0] if not Path(requirement).is_dir() else name
    else:
        from packaging.requirements import Requirement

        name = Requirement(requirement).name
    return re.sub(r"[-.]+", "_", name).lower()


def _digest(requirement: str) -> str:
    """A local distribution's content (a wheel rebuilt at the same path is another one); '' for a name."""
    path = Path(requirement)
    if not (os.path.isabs(requirement) and path.is_file()):
        return ""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _uv(envs_dir: Path) -> List[str]:
    from compat_clone_matrix.build import find_uv

    return find_uv(envs_dir.parent, tool="compat-clone convert")


def _run(cmd: List[str], what: str) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    except (OSError, subprocess.SubprocessError) as e:
        raise InvalidArgumentError(f"--with: {what} could not run ({e}). Expected uv to run here (COMPAT_CLONE_UV).") from e


def _is_compat_clone(line: str) -> bool:
    """A freeze line of compat_clone itself, which the derived environment gets as its own build does."""
    if line.startswith("-e "):
        project = line[3:].strip().replace("file://", "", 1)
        try:
            text = (Path(project) / "pyproject.toml").read_text(encoding="utf-8")
        except OSError:
            return False
        return bool(re.search(r"""^name\s*=\s*["']compat[-_]clone["']""", text, re.MULTILINE))
    return re.split(r"[=@ ]", line, maxsplit=1)[0].strip().lower().replace("_", "-") == "compat-clone"


def _freeze(uv: List[str], python: str, label: str) -> List[str]:
    out = _run(uv + ["pip", "freeze", "--python", python], f"`uv pip freeze` in {label}")
    if out.returncode != 0:
        raise InvalidArgumentError(f"--with: listing the packages of {label} failed: {out.stderr.strip()[-1500:]}")
    lines = [ln.strip() for ln in out.stdout.splitlines() if ln.strip() and not ln.startswith("#")]
    # uv installs an editable checkout from its path, not its file URL
    return sorted(
        ("-e " + ln[3:].strip().replace("file://", "", 1)) if ln.startswith("-e ") else ln
        for ln in lines
        if not _is_compat_clone(ln)
    )


def _reason(stderr: str) -> str:
    """uv's resolver reason: its ``cause:`` / ``hint:`` lines, else its last lines."""
    lines = [re.sub(r"^(error:|×|╰─▶|cause:)\s*", "", ln.strip()) for ln in stderr.splitlines() if ln.strip()]
    told = [ln for ln in lines if ln and not ln.startswith(("Using ", "Resolved ", "warning:"))][-8:]
    if not told:
        return "(uv said nothing)."
    text = told[0].rstrip(":") + (": " + " ".join(told[1:]) if told[1:] else "")
    return text if text.endswith(".") else text + "."


def _compile(
    uv: List[str], python: List[str], requirements: Sequence[str], constraints: Sequence[str], pip_args: Sequence[str]
) -> Tuple[int, List[str], str]:
    with tempfile.TemporaryDirectory(prefix="compat-clone-with-") as tmp:
        reqs, cons = Path(tmp) / "requirements.in", Path(tmp) / "constraints.txt"
        reqs.write_text("\n".join(requirements) + "\n", encoding="utf-8")
        cons.write_text("\n".join(c for c in constraints if not c.startswith("-e ")) + "\n", encoding="utf-8")
        cmd = uv + ["pip", "compile", str(reqs), "--constraint", str(cons), *python]
        cmd += ["--no-header", "--no-annotate", "--quiet", *_compile_args(pip_args)]
        out = _run(cmd, "`uv pip compile`")
    lines = [ln.strip() for ln in out.stdout.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    return out.returncode, lines, out.stderr


def _compile_args(pip_args: Sequence[str]) -> List[str]:
    """The installer arguments `uv pip compile` takes too (indexes, links), in their order."""
    keep = ("--index-url", "--extra-index-url", "--find-links", "--index", "--default-index", "-i", "-f")
    out: List[str] = []
    args = list(pip_args)
    for i, arg in enumerate(args):
        name = arg.split("=", 1)[0]
        if name in keep:
            out.append(arg)
            if "=" not in arg and i + 1 < len(args):
                out.append(args[i + 1])
        elif name in ("--no-index", "--offline", "--prerelease", "--index-strategy"):
            out.append(arg)
    return out


def _derived_dir(base: Any, table_env: Any, requirements: Sequence[str], envs_dir: Path) -> Path:
    stem = table_env.name if table_env is not None else Path(base.python).parent.parent.name  # venv/bin/python: venv
    identity = json.dumps({"base": table_env.name if table_env is not None else base.python, "with": sorted(requirements)})
    return envs_dir / f"{stem}+with-{hashlib.sha256(identity.encode('utf-8')).hexdigest()[:10]}"


def plan_with(base: Any, table_env: Any, requirements: Sequence[str], envs_dir: Path) -> WithPlan:
    """Resolves ``--with`` against the source environment; nothing is built.

    Where the source environment is built, its distributions are pinned as they
    are (``uv pip freeze``); where a table environment is not built yet, against
    what its table entry installs, so that a requirement that cannot install is
    refused before the environment is built.

    Args:
        base: the source environment's `Interpreter` (built or not).
        table_env: its table entry, or None for a path.
        requirements: checked ``--with`` values (`parse_requirement`).
        envs_dir: where the table's environments live (the derived one goes beside them).

    Returns:
        A `WithPlan`; its `pins` are empty where the source is not built.

    Raises:
        InvalidArgumentError: uv's resolver finds no solution (its reason quoted), or uv cannot run.
    """
    from compat_clone_matrix.build import interpreter_for
    from compat_clone_matrix.install import machine_pip_args

    uv = _uv(envs_dir)
    pip_args = list(table_env.pip_args if table_env is not None else ()) + machine_pip_args()
    built = os.path.exists(base.python)
    if built:
        pins = _freeze(uv, base.python, base.label)
        rc, resolved, stderr = _compile(uv, ["--python", base.python], requirements, pins, pip_args)
        against = f"the packages of {base.label}"
    else:  # a table environment that is not built: what its entry installs with dependencies
        # (its `no_deps` pins are left out: they are installed over that resolution, which they may contradict,
        # such as keras-2.3.1's keras==2.3.1 beside tensorflow-cpu 2.15's keras>=2.15; the freeze of the built
        # environment, resolved next, holds them)
        pins = []
        # a version (X.Y) needs no interpreter to resolve for: one that is not installed yet is no refusal
        version = re.fullmatch(r"\d+\.\d+", table_env.python)
        python = ["--python-version", table_env.python] if version else ["--python", interpreter_for(table_env.python)]
        rc, resolved, stderr = _compile(uv, python, [*table_env.packages, *requirements], [], pip_args)
        against = f"what {table_env.name} installs (its table entry: {', '.join(table_env.packages)})"
    if rc != 0:
        raise InvalidArgumentError(
            f"--with {' '.join(map(repr, requirements))} cannot be installed where the model is read ({base.label}): uv's resolver "
            f"says: {_reason(stderr)} Resolved against {against}. Nothing was built or written. Expected "
            "requirements that fit the old release's pins: choose a version of the package made for it "
            "(e.g. my-package==1.2), or read the model with another --from."
        )
    env_dir = _derived_dir(base, table_env, requirements, envs_dir)
    marker = json.dumps(
        {"with": sorted(requirements), "digests": sorted(_digest(r) for r in requirements), "pins": pins}, sort_keys=True
    )
    return WithPlan(base, table_env, tuple(requirements), env_dir, tuple(pins), tuple(resolved), marker)


def _is_ready(plan: WithPlan) -> bool:
    from compat_clone_matrix.build import is_built

    try:
        return is_built(plan.env_dir) and (plan.env_dir / _MARKER).read_text(encoding="utf-8") == plan.marker
    except OSError:
        return False


def build_with(plan: WithPlan, *, build: bool, say: Any, install: Any) -> Any:
    """The derived environment of `plan`, built (or reused) and ready to read the model in.

    Args:
        plan: what `plan_with` resolved against the built source environment.
        build: build it when missing (``--no-build`` refuses instead).
        say: ``say(name, text)`` for progress.
        install: the compat_clone it gets (`compat_clone.tools.matrix.running_compat_clone()`).

    Returns:
        An `Interpreter` of the derived environment, with the source's claim.

    Raises:
        InvalidArgumentError: missing under ``--no-build``, or the build failed
            (its folder is removed; the log's end is quoted).
    """
    from compat_clone.tools.convert._envs import Interpreter
    from compat_clone_matrix import Env, build_env, env_environ
    from compat_clone_matrix.build import LOG_FILE

    base, table_env, env_dir = plan.base, plan.table_env, plan.env_dir
    env = Env(
        name=env_dir.name,
        python=table_env.python if table_env is not None else str(Path(base.python).resolve()),
        packages=(),
        no_deps=plan.pins + plan.resolved,
        pip_args=table_env.pip_args if table_env is not None else (),
        env=table_env.env if table_env is not None else (),
        fixup=table_env.fixup if table_env is not None else None,
        expect=table_env.expect if table_env is not None else (),
    )
    if not _is_ready(plan):
        if not build:
            raise InvalidArgumentError(
                f"--with {' '.join(plan.requirements)}: the environment holding {base.label}'s packages and these is "
                f"not built. Expected {str(env_dir / 'bin' / 'python')!r}. Drop --no-build to build it (from uv's cache, "
                "a few seconds)."
            )
        if (env_dir / _MARKER).exists():  # stale: the build below is not trusted until it is written again
            (env_dir / _MARKER).unlink()
        out = build_env(env, env_dir, install=install, rebuild=True, say=say)
        if out.build == "FAILED":
            try:
                tail = (env_dir / LOG_FILE).read_text(encoding="utf-8", errors="replace").strip().splitlines()[-8:]
            except OSError:
                tail = []
            shutil.rmtree(env_dir, ignore_errors=True)
            raise InvalidArgumentError(
                f"--with {' '.join(plan.requirements)}: building the environment with them failed (removed; its log "
                f"ended: {' | '.join(tail)}). Fix the cause and run the command again."
            )
        (env_dir / _MARKER).write_text(plan.marker, encoding="utf-8")
    environ = env_environ(env, env_dir)
    if os.environ.get("PYTHONPATH"):  # a development checkout serves the workers (as in `_envs`)
        environ["PYTHONPATH"] = os.environ["PYTHONPATH"]
    return Interpreter(
        label=f"{base.label} with {', '.join(display_name(r) for r in plan.requirements)}",
        python=str(env_dir / "bin" / "python"),
        environ=environ,
        family=base.family,
        version=base.version,
        backend=base.backend,
    )
