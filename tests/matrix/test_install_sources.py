"""Where environments come from and where they live: framework-free, in every environment.

- how the matrix installs compat_clone (the wheel `make test` built, an
  editable checkout, a copy of an installed package) and what goes into an
  environment's stamp;
- machine-local installer arguments (``$COMPAT_CLONE_PIP_ARGS``), never the table;
- a table's ``python = "X.Y"`` found where uv cannot find it;
- `compat-clone convert`'s environments in the per-user cache, never in the
  folder the command runs in, and the progress a build prints;
- where CI installs compat_clone from: ``--install-from``, else the project's
  own pin, checkout or wheel (`ci_install`).
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import threading
import time
import zipfile
from pathlib import Path
from typing import Any, List, Tuple

import pytest

from compat_clone.tools import matrix as _matrix

# Framework-free: one matrix environment per Python version runs them (tests/conftest.py).
from compat_clone.tools.convert._envs import default_matrix_dir
from compat_clone.tools.matrix import running_compat_clone
from compat_clone_matrix import InstallSource, build, ci_install, install

# Framework-free: one matrix environment per Python version runs them (tests/conftest.py).
from compat_clone_matrix.build import _ticking as ticking
from compat_clone_matrix.install import _copy_package as copy_package
from compat_clone_matrix.table import parse_table

# Framework-free: one matrix environment per Python version runs them (tests/conftest.py).
pytestmark = pytest.mark.tooling

REPO = Path(__file__).resolve().parents[2]


def _env(**fields: Any) -> Any:
    entry = {"name": "a", "packages": ["keras==3.15.1"]}
    entry.update(fields)
    (env,) = parse_table({"env": [entry]}, "test")
    return env


def _source(kind: str, path: Path) -> InstallSource:
    return InstallSource(kind=kind, path=path, dist="compat-clone", package="compat_clone", version="0.1.0")


def _fake_wheel(path: Path, requires: List[str]) -> Path:
    with zipfile.ZipFile(path, "w") as w:
        w.writestr("compat_clone/__init__.py", "")
        meta = "Metadata-Version: 2.1\nName: compat-clone\nVersion: 0.1.0\n"
        meta += "".join(f"Requires-Dist: {r}\n" for r in requires)
        w.writestr("compat_clone-0.1.0.dist-info/METADATA", meta)
    return path


def test_wheel_source_from_the_environment_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    wheel = _fake_wheel(tmp_path / "compat_clone-0.1.0-py3-none-any.whl", ["packaging>=21"])
    monkeypatch.setenv("COMPAT_CLONE_WHEEL", str(wheel))
    found = running_compat_clone()
    assert (found.kind, found.path, found.dist, found.package) == ("wheel", wheel.resolve(), "compat-clone", "compat_clone")
    monkeypatch.setenv("COMPAT_CLONE_WHEEL", str(tmp_path / "nothing.whl"))
    with pytest.raises(ValueError, match="is not a wheel file"):
        running_compat_clone()


def test_stamp_follows_the_wheels_requirements_not_its_bytes(tmp_path: Path) -> None:
    env = _env()
    first = _fake_wheel(tmp_path / "a.whl", ["packaging>=21"])
    same_needs = _fake_wheel(tmp_path / "b.whl", ["packaging>=21"])
    more_needs = _fake_wheel(tmp_path / "c.whl", ["packaging>=21", "numpy", 'libcst>=1.0; extra == "migrate"'])
    stamp = build.env_stamp(env, _source("wheel", first))
    # A rebuilt wheel with the same requirements reuses the environment (the
    # wheel itself is reinstalled when its bytes change); new requirements rebuild it.
    assert build.env_stamp(env, _source("wheel", same_needs)) == stamp
    assert build.env_stamp(env, _source("wheel", more_needs)) != stamp
    assert install.wheel_requirements(more_needs) == ["numpy", "packaging>=21"]


def test_copy_source_stamp_does_not_depend_on_the_install_path(tmp_path: Path) -> None:
    """Two projects' installs of one version share one cached environment."""
    env = _env()
    assert build.env_stamp(env, _source("copy", tmp_path / "one")) == build.env_stamp(env, _source("copy", tmp_path / "two"))


def test_machine_pip_args_reach_every_install_and_the_stamp(monkeypatch: pytest.MonkeyPatch) -> None:
    env = _env(pip_args=["--index-strategy", "unsafe-best-match"])
    monkeypatch.delenv("COMPAT_CLONE_PIP_ARGS", raising=False)
    plain = build.env_stamp(env, _source("copy", Path("x")))
    monkeypatch.setenv("COMPAT_CLONE_PIP_ARGS", "--find-links '/some dir/wheels'")
    assert install.machine_pip_args() == ["--find-links", "/some dir/wheels"]
    assert build.env_stamp(env, _source("copy", Path("x"))) != plain


def test_copy_install_rewrites_nothing_when_the_files_are_the_same(tmp_path: Path) -> None:
    pkg = tmp_path / "compat_clone"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("X = 1\n")
    site = tmp_path / "site"
    site.mkdir()
    log: List[str] = []

    class _Log:
        def write(self, text: str) -> None:
            log.append(text)

    copy_package(_source("copy", pkg), site, _Log())  # type: ignore[arg-type]
    installed = site / "compat_clone" / "__init__.py"
    before = installed.stat().st_mtime_ns
    time.sleep(0.01)
    copy_package(_source("copy", pkg), site, _Log())  # type: ignore[arg-type]
    assert installed.stat().st_mtime_ns == before and len(log) == 1
    (pkg / "__init__.py").write_text("X = 2\n")
    copy_package(_source("copy", pkg), site, _Log())  # type: ignore[arg-type]
    assert installed.read_text() == "X = 2\n" and len(log) == 2


def test_interpreter_for_a_version_is_one_that_runs() -> None:
    here = "{}.{}".format(*sys.version_info[:2])
    found = build.interpreter_for(here)
    out = subprocess.run(
        [found, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == here
    assert build.interpreter_for("/a/path/python3") == "/a/path/python3"
    assert build.interpreter_for("9.99") == "9.99"  # none here: uv gets the version


def test_convert_environments_default_to_the_user_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("COMPAT_CLONE_ENVS_DIR", "COMPAT_CLONE_MATRIX_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.chdir(tmp_path)
    if sys.platform.startswith("linux"):
        assert default_matrix_dir() == (tmp_path / "xdg" / "compat-clone" / "envs").resolve()
        monkeypatch.setenv("XDG_CACHE_HOME", "relative/ignored")  # the XDG spec: absolute only
        assert default_matrix_dir() == Path.home() / ".cache" / "compat-clone" / "envs"
    assert ".matrix" not in default_matrix_dir().parts
    monkeypatch.setenv("COMPAT_CLONE_MATRIX_DIR", str(tmp_path / "m"))  # inside `compat-clone matrix`
    assert default_matrix_dir() == (tmp_path / "m").resolve()
    monkeypatch.setenv("COMPAT_CLONE_ENVS_DIR", str(tmp_path / "mine"))  # the user's choice wins
    assert default_matrix_dir() == (tmp_path / "mine").resolve()


def test_convert_cli_names_the_cache_and_creates_nothing_here(tmp_path: Path) -> None:
    """From a folder that is not the checkout: a missing environment is looked for in the cache."""
    work = tmp_path / "project"
    work.mkdir()
    (work / "old.h5").write_bytes(b"\x89HDF\r\n\x1a\n" + b"\0" * 64)
    environ = {k: v for k, v in os.environ.items() if not k.startswith("COMPAT_CLONE_")}
    environ["XDG_CACHE_HOME"] = str(tmp_path / "xdg")
    proc = subprocess.run(
        [sys.executable, "-m", "compat_clone", "convert", "old.h5", "-o", "new.keras", "--from", "keras-2.2.4", "--no-build"],
        cwd=str(work),
        env=environ,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert str(tmp_path / "xdg" / "compat-clone" / "envs") in proc.stderr, proc.stderr
    assert sorted(p.name for p in work.iterdir()) == ["old.h5"]


def test_a_build_says_how_long_it_has_run_and_where_its_log_is(tmp_path: Path) -> None:
    said: List[Tuple[str, str]] = []
    lock = threading.Lock()

    def say(name: str, text: str) -> None:
        with lock:
            said.append((name, text))

    with ticking(say, "env-a", tmp_path / "last.log", 0.05):
        time.sleep(0.3)
    assert len(said) >= 2 and all(n == "env-a" for n, _ in said)
    assert all("so far; log: " + str(tmp_path / "last.log") in t for _, t in said), said
    count = len(said)
    time.sleep(0.15)
    assert len(said) == count  # stopped with the block


# --------------------------------------------------------------------------- CI install sources


def test_install_sources(tmp_path: Path) -> None:
    checkout = tmp_path / "vendor" / "compat-clone"
    checkout.mkdir(parents=True)
    (checkout / "pyproject.toml").write_text('[project]\nname = "compat-clone"\n')
    (tmp_path / "dist").mkdir()
    (tmp_path / "dist" / "compat_clone-0.2.0-py3-none-any.whl").write_text("")
    req = lambda source: ci_install.install_requirement(source, tmp_path)  # noqa: E731
    assert req("0.2.0") == "compat-clone==0.2.0" and req("v1.0rc1") == "compat-clone==1.0rc1"
    assert req("git+https://github.com/x/compat_clone@v0.2") == "compat-clone @ git+https://github.com/x/compat_clone@v0.2"
    assert req("compat-clone>=0.2,<0.3") == "compat-clone>=0.2,<0.3"
    assert req("vendor/compat-clone") == "./vendor/compat-clone"
    assert req("./dist/compat_clone-0.2.0-py3-none-any.whl") == "./dist/compat_clone-0.2.0-py3-none-any.whl"
    for bad, message in [
        (str(checkout), "a path inside the project"),
        ("../x", "inside the project"),
        ("vendor", "not installable"),
        ("nowhere/cc", "no such path"),
    ]:
        with pytest.raises(ci_install.InstallSourceError, match=message):
            req(bad)


def test_default_install_source(tmp_path: Path) -> None:
    def version() -> Any:  # the running compat_clone, as version 9.9.9
        return dataclasses.replace(_matrix.running_compat_clone(), version="9.9.9")

    # compat_clone's own checkout installs itself
    assert ci_install.default_install_source(REPO, version)[0] == "."
    # a project's pin: a requirements line, a path to a vendored checkout, pyproject's dependencies
    (tmp_path / "requirements").mkdir()
    (tmp_path / "requirements" / "dev.txt").write_text("-e ../vendor/cc  # vendored\n")
    (tmp_path / "vendor" / "cc").mkdir(parents=True)
    (tmp_path / "vendor" / "cc" / "pyproject.toml").write_text('[project]\nname = "compat_clone"\n')
    assert ci_install.default_install_source(tmp_path, version) == ("./vendor/cc", "the project's pin in dev.txt")
    (tmp_path / "requirements" / "dev.txt").write_text("compat_clone==0.2.0\n")
    assert ci_install.default_install_source(tmp_path, version) == ("compat_clone==0.2.0", "the project's pin in dev.txt")
    (tmp_path / "requirements" / "dev.txt").unlink()
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "mylib"\n[project.optional-dependencies]\n'
        "test = [\"compat-clone[test]>=0.2; python_version >= '3.9'\"]\n"
    )
    assert ci_install.default_install_source(tmp_path, version)[0] == "compat-clone[test]>=0.2"
    # nothing CI can resolve (no index serves compat-clone yet): a refusal that says how, never `compat-clone==9.9.9`
    (tmp_path / "pyproject.toml").unlink()
    with pytest.raises(ci_install.InstallSourceError, match=r"no package index serves it yet.*--install-from vendor/"):
        ci_install.default_install_source(tmp_path, version)
    (tmp_path / "dist").mkdir()
    (tmp_path / "dist" / "compat_clone-9.9.9-py3-none-any.whl").write_bytes(b"")  # dist/ is not committed
    with pytest.raises(ci_install.InstallSourceError):
        ci_install.default_install_source(tmp_path, version)
    (tmp_path / "compat_clone-9.9.9-py3-none-any.whl").write_bytes(b"")
    assert ci_install.default_install_source(tmp_path, version) == (
        "./compat_clone-9.9.9-py3-none-any.whl",
        "the compat_clone wheel in the project",
    )
