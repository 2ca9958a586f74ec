"""README.md as a user reads it: its Python blocks run as written, its links resolve.

Every ```python block of the README runs in a fresh interpreter, in each
environment it applies to, and fails the test on any error. A block that
needs one family is marked on the line before it:

    <!-- readme-test: tf_keras>=2.16 -->

a family (``keras2``, ``tf_keras``, ``keras3``), an optional version
specifier over the family's version, and an optional ``backend=NAME``
(``<!-- readme-test: keras3 backend=jax -->``). An unmarked block runs
everywhere. In a matrix environment the family is the table's claim
(``COMPAT_CLONE_EXPECT_*``); in the default ``.venv`` it is every family
installed there (Keras 3 on ``$KERAS_BACKEND``). A marked block
must apply to at least one environment of `make test` (the enabled
environments of the built-in table), so that every block runs somewhere.

Also checked here: the README's length, its generated compatibility table
(the markers ``compat_clone_matrix/report.py`` rewrites), relative links
in README.md and docs/, that docs/architecture.md's file map names every
file of the package, no more and no less, and that each command's manual in
docs/ mentions every option of that command.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, List, NamedTuple, Optional, Tuple

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
TABLE = ROOT / "src" / "compat_clone_matrix" / "matrix.toml"
MAX_LINES = 250

FAMILIES = ("keras2", "tf_keras", "keras3")
_MARKER = re.compile(r"^<!--\s*readme-test:\s*(?P<spec>.*?)\s*-->$")
_REQUIREMENT = re.compile(r"^(?P<family>[a-z_0-9]+)\s*(?P<versions>(?:[<>=!~][^ ]*)?)(?:\s+backend=(?P<backend>[a-z]+))?$")
_FENCE = re.compile(r"^```(?P<lang>\S*)\s*$")
_LANGUAGES = {"python", "bash", "console", "text"}


class Block(NamedTuple):
    line: int  # 1-based line of the opening fence
    lang: str
    code: str
    requirement: Optional[str]  # the marker's text, None when unmarked


def _blocks(path: Path) -> List[Block]:
    """Every fenced block of a markdown file, with the marker before it, if any."""
    lines = path.read_text(encoding="utf-8").split("\n")
    blocks: List[Block] = []
    marker: Optional[Tuple[int, str]] = None
    i = 0
    while i < len(lines):
        stripped = lines[i].strip()
        found = _MARKER.match(stripped)
        if found:
            marker = (i + 1, found.group("spec"))
            i += 1
            continue
        fence = _FENCE.match(stripped)
        if fence and lines[i].startswith("```"):
            end = next((j for j in range(i + 1, len(lines)) if lines[j].startswith("```")), None)
            if end is None:
                raise AssertionError(f"{path.name}:{i + 1}: a code block is never closed")
            requirement = None
            if marker is not None:
                requirement = marker[1]
                marker = None
            blocks.append(Block(i + 1, fence.group("lang"), "\n".join(lines[i + 1 : end]) + "\n", requirement))
            i = end + 1
            continue
        if stripped and marker is not None:
            raise AssertionError(
                f"{path.name}:{marker[0]}: a `readme-test` marker must stand right before a ```python block; "
                f"line {i + 1} comes first: {stripped!r}"
            )
        i += 1
    return blocks


class Served(NamedTuple):
    """One family an environment serves: ``("tf_keras", "2.16", "tensorflow")``."""

    family: str
    version: str
    backend: str


def _parse_requirement(spec: str) -> Tuple[str, str, Optional[str]]:
    """``"keras3>=3.6 backend=jax"`` -> ``("keras3", ">=3.6", "jax")``; refuses anything else by name."""
    found = _REQUIREMENT.match(spec)
    if not found or found.group("family") not in FAMILIES:
        raise AssertionError(
            f"readme-test marker {spec!r}: expected a family ({', '.join(FAMILIES)}), an optional "
            "version specifier and an optional `backend=NAME`, e.g. `tf_keras>=2.16` or `keras3 backend=jax`"
        )
    return found.group("family"), found.group("versions").strip(), found.group("backend")


def _satisfies(requirement: Optional[str], served: Served) -> bool:
    if requirement is None:
        return True
    from packaging.specifiers import SpecifierSet
    from packaging.version import Version

    family, versions, backend = _parse_requirement(requirement)
    if family != served.family or (backend is not None and backend != served.backend):
        return False
    return not versions or SpecifierSet(versions).contains(Version(served.version), prereleases=True)


def _served_here() -> List[Served]:
    """What this environment serves: the matrix claim, else every family installed here.

    An environment that runs the framework-free tests only (``COMPAT_CLONE_SUITE``:
    tf.keras-2.4, a conversion source whose TensorFlow has no ``keras`` package
    to ``import keras``) serves no README block.
    """
    if os.environ.get("COMPAT_CLONE_SUITE") == "framework-free":
        return []
    family = os.environ.get("COMPAT_CLONE_EXPECT_FAMILY")
    if family:
        return [
            Served(
                family,
                os.environ.get("COMPAT_CLONE_EXPECT_VERSION") or "0",
                os.environ.get("COMPAT_CLONE_EXPECT_BACKEND") or "tensorflow",
            )
        ]
    from importlib import metadata  # the default .venv (Python >= 3.8)

    from compat_clone.families.registry import family_for

    served = []
    for package, dists in (("keras", ("keras",)), ("tf_keras", ("tf_keras", "tf-keras"))):
        for dist in dists:
            try:
                version = metadata.version(dist)
            except metadata.PackageNotFoundError:
                continue
            served_family = family_for(package, version)
            backend = os.environ.get("KERAS_BACKEND", "tensorflow") if served_family == "keras3" else "tensorflow"
            served.append(Served(served_family, version, backend))
            break
    return served


def _make_test_envs() -> List[Tuple[str, Served]]:
    """Every environment `make test` runs (the enabled ones, with our overlay's variables), with its claim."""
    from compat_clone_matrix.overlay import apply_overlay
    from compat_clone_matrix.table import load_table

    envs = []
    for env in apply_overlay(load_table(TABLE), ROOT / "tests" / "matrix-overlay.toml"):
        if env.enabled and dict(env.env).get("COMPAT_CLONE_SUITE") != "framework-free":
            claim = dict(env.expect)
            envs.append((env.name, Served(claim["family"], claim["version"], claim.get("backend", "tensorflow"))))
    return envs


README_BLOCKS = _blocks(README)
PYTHON_BLOCKS = [b for b in README_BLOCKS if b.lang == "python"]


def test_the_readme_has_python_blocks_to_run() -> None:
    assert PYTHON_BLOCKS, "README.md has no ```python block: the quick start is gone"


# Each block runs in a fresh interpreter (some 10-25 s with a framework's import): in `make test` in one
# environment per family, backend, module and TensorFlow major (marker `per_claim`), in all in make test-wide.
@pytest.mark.per_claim
@pytest.mark.parametrize("block", PYTHON_BLOCKS, ids=[f"README.md:{b.line}" for b in PYTHON_BLOCKS])
def test_readme_python_block_runs(block: Block, tmp_path: Path) -> None:
    served = _served_here()
    if not any(_satisfies(block.requirement, one) for one in served):
        pytest.skip(f"for {block.requirement}; this environment serves {served}")
    # A fresh interpreter in an empty folder: the block imports the compat_clone
    # this environment has (installed or on PYTHONPATH), as a user's script would.
    # A relative PYTHONPATH entry (`PYTHONPATH=. pytest`) still means the checkout.
    environ = dict(os.environ)
    if environ.get("PYTHONPATH"):
        environ["PYTHONPATH"] = os.pathsep.join(os.path.abspath(p) if p else p for p in environ["PYTHONPATH"].split(os.pathsep))
    proc = subprocess.run(
        [sys.executable, "-c", block.code],
        cwd=tmp_path,
        env=environ,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, (
        f"README.md line {block.line}: the block failed (exit {proc.returncode}):\n"
        f"{proc.stderr[-6000:]}\n--- stdout ---\n{proc.stdout[-2000:]}"
    )


def test_every_marked_block_runs_in_make_test(monkeypatch: Any) -> None:
    import conftest

    envs = _make_test_envs()
    assert envs, f"no enabled environment in {TABLE}"
    # The blocks run where `make test` runs the `per_claim` tests: the claim hosts of its environments.
    monkeypatch.delenv("COMPAT_CLONE_TABLE", raising=False)
    run = [name for name, _ in envs]
    envs = [(name, served) for name, served in envs if conftest._claim_host(name, run=run, wide=False) == name]
    for block in PYTHON_BLOCKS:
        runs_in = [name for name, served in envs if _satisfies(block.requirement, served)]
        assert runs_in, (
            f"README.md line {block.line}: marked {block.requirement!r}, which no environment of `make test` "
            f"that runs the blocks serves ({', '.join(f'{n}: {s}' for n, s in envs)}): it would never run"
        )
    for name, served in envs:
        assert any(_satisfies(b.requirement, served) for b in PYTHON_BLOCKS), f"no README block runs in {name} ({served})"


def test_markers_and_languages_are_known() -> None:
    for block in README_BLOCKS:
        assert block.lang in _LANGUAGES, (
            f"README.md line {block.line}: code block language {block.lang!r}; expected one of "
            f"{sorted(_LANGUAGES)} (a ```python block is run by this test, the others are not)"
        )
        if block.requirement is not None:
            assert block.lang == "python", f"README.md line {block.line}: a readme-test marker on a {block.lang} block"
            _parse_requirement(block.requirement)


def test_marker_grammar() -> None:
    assert _satisfies("tf_keras>=2.16", Served("tf_keras", "2.16", "tensorflow"))
    assert _satisfies("tf_keras>=2.16", Served("tf_keras", "2.21.0", "tensorflow"))
    assert not _satisfies("tf_keras>=2.16", Served("tf_keras", "2.15", "tensorflow"))
    assert not _satisfies("tf_keras>=2.16", Served("keras3", "3.15", "tensorflow"))
    assert _satisfies("keras3 backend=jax", Served("keras3", "3.15", "jax"))
    assert _satisfies("keras3>=3.6 backend=jax", Served("keras3", "3.15", "jax"))
    assert not _satisfies("keras3>=3.6 backend=jax", Served("keras3", "3.15", "torch"))
    assert _satisfies("keras2", Served("keras2", "2.2.4", "tensorflow"))
    assert _satisfies(None, Served("keras2", "2.2.4", "tensorflow"))
    for bad in ("tensorflow>=2", "keras3 jax", "keras3 backend="):
        with pytest.raises(AssertionError, match="expected a family"):
            _parse_requirement(bad)


def test_the_readme_is_short() -> None:
    lines = README.read_text(encoding="utf-8").count("\n")
    assert lines <= MAX_LINES, f"README.md has {lines} lines; at most {MAX_LINES} (manuals go to docs/)"


def test_the_compatibility_table_is_generated(tmp_path: Path) -> None:
    from compat_clone_matrix import report

    text = README.read_text(encoding="utf-8")
    assert text.count(report.START_MARKER) == 1 and text.count(report.END_MARKER) == 1, (
        "README.md must hold the compat-table markers once each: `make test` writes the table between them"
    )
    start, end = text.index(report.START_MARKER), text.index(report.END_MARKER)
    assert start < end
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert "--readme README.md" in makefile, "the Makefile no longer regenerates the README's table"
    # What `--readme README.md` does to it: the table between the markers is
    # replaced, every other byte is kept.
    copy = tmp_path / "README.md"
    copy.write_text(text, encoding="utf-8")
    assert report.update_readme(copy, "| feature | `env` |\n|---|:-:|\n| `x` | ✅ ✅ |\n")
    new = copy.read_text(encoding="utf-8")
    assert new[: start + len(report.START_MARKER)] == text[: start + len(report.START_MARKER)]
    assert new[new.index(report.END_MARKER) :] == text[end:]
    assert "| `x` | ✅ ✅ |" in new


_LINK = re.compile(r"\[[^\]]*\]\((?P<target>[^)\s]+)\)")


@pytest.mark.parametrize("doc", [README, *sorted(DOCS.glob("*.md"))], ids=lambda p: p.relative_to(ROOT).as_posix())
def test_relative_links_resolve(doc: Path) -> None:
    text = doc.read_text(encoding="utf-8")
    # links inside code blocks are code, not links
    prose = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    broken = []
    for found in _LINK.finditer(prose):
        target = found.group("target")
        if re.match(r"^[a-z]+:", target) or target.startswith("#"):
            continue
        path = (doc.parent / target.split("#", 1)[0]).resolve()
        if not path.exists():
            broken.append(target)
    assert not broken, f"{doc.relative_to(ROOT)}: relative links to nothing: {broken}"


_FILE_NAME = re.compile(r"^(?:[\w.]+\.(?:py|toml|typed)|[\w.]+/)$")


def _file_map() -> List[str]:
    """The package paths docs/architecture.md's file map names (files, not folders)."""
    block = next((b for b in _blocks(DOCS / "architecture.md") if b.lang == "text" and b.code.startswith("compat_clone/")), None)
    assert block is not None, "docs/architecture.md has no ```text block starting with `compat_clone/`"
    stack: List[Tuple[int, str]] = []
    paths: List[str] = []
    for line in block.code.splitlines():
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip(" "))
        while stack and stack[-1][0] >= indent:
            stack.pop()
        prefix = "".join(name for _, name in stack)
        for token in line.split():
            if not _FILE_NAME.match(token):
                break
            if token.endswith("/"):
                stack.append((indent, token))
            else:
                paths.append(prefix + token)
    return [p for p in paths if p.startswith(("compat_clone/", "compat_clone_matrix/"))]


def test_the_file_map_names_every_module() -> None:
    named = set(_file_map())
    packages = [ROOT / "src" / "compat_clone", ROOT / "src" / "compat_clone_matrix"]  # the src/ layout
    actual = {
        p.relative_to(ROOT / "src").as_posix()
        for package in packages
        for p in package.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
    }
    assert actual, "no package files found"
    assert not actual - named, f"docs/architecture.md's file map leaves out: {sorted(actual - named)}"
    assert not named - actual, f"docs/architecture.md's file map names files that do not exist: {sorted(named - actual)}"


_MANUALS = [
    ("compat_clone_matrix.cli", "matrix.md"),
    ("compat_clone.tools.convert.cli", "convert.md"),
    ("compat_clone.tools.migrate.cli", "migrate.md"),
]


@pytest.mark.parametrize("module, manual", _MANUALS, ids=[m for _, m in _MANUALS])
def test_each_manual_documents_its_command_options(module: str, manual: str) -> None:
    import argparse
    import importlib

    parser = argparse.ArgumentParser()
    importlib.import_module(module).add_arguments(parser)
    options = {o for action in parser._actions for o in action.option_strings if o.startswith("--")} - {"--help"}
    text = (DOCS / manual).read_text(encoding="utf-8")
    undocumented = sorted(o for o in options if not re.search(re.escape(o) + r"(?![\w-])", text))
    assert not undocumented, f"docs/{manual} never mentions {undocumented}"
    # the first column of its option tables names only real options
    tabled = set(re.findall(r"^\| `(--[\w-]+)", text, flags=re.M))
    assert not tabled - options, f"docs/{manual} documents options the command does not have: {sorted(tabled - options)}"
